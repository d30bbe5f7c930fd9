#include "server/http_message.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>
#include <regex>

namespace cephscope {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// RFC 9110 token characters: what a method or a header name may contain.
bool is_token(std::string_view s) {
  static constexpr std::string_view kExtra = "!#$%&'*+-.^_`|~";
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isalnum(c) != 0 || kExtra.find(static_cast<char>(c)) != std::string_view::npos;
  });
}

// Splits off the next line (without its CR LF or LF) from `rest`.
std::string_view next_line(std::string_view& rest) {
  const auto nl = rest.find('\n');
  std::string_view line = rest.substr(0, nl);
  rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
  if (!line.empty() && line.back() == '\r') {
    line.remove_suffix(1);
  }
  return line;
}

// A q-value of an Accept-Encoding element ("q=0.5"); 1 when absent, -1 when malformed.
double q_value(std::string_view params) {
  double q = 1;
  while (!params.empty()) {
    const auto semi = params.find(';');
    const std::string_view param = trim(params.substr(0, semi));
    params.remove_prefix(semi == std::string_view::npos ? params.size() : semi + 1);
    if (param.size() < 2 || lower(param.substr(0, 2)) != "q=") {
      continue;
    }
    const std::string_view value = param.substr(2);
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), q);
    if (ec != std::errc() || end != value.data() + value.size() || !(q >= 0 && q <= 1)) {
      return -1;
    }
  }
  return q;
}

}  // namespace

std::optional<std::string_view> HttpRequest::header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (key == name) {
      return std::string_view(value);
    }
  }
  return std::nullopt;
}

std::optional<std::size_t> request_head_end(std::string_view data) {
  // Leading empty lines are allowed before the request line (RFC 9112 2.2).
  std::size_t start = 0;
  while (start < data.size() && (data[start] == '\r' || data[start] == '\n')) {
    ++start;
  }
  for (std::size_t i = start; i < data.size(); ++i) {
    if (data[i] != '\n') {
      continue;
    }
    if (i + 1 < data.size() && data[i + 1] == '\n') {
      return i + 2;
    }
    if (i + 2 < data.size() && data[i + 1] == '\r' && data[i + 2] == '\n') {
      return i + 3;
    }
  }
  return std::nullopt;
}

std::optional<HttpRequest> parse_request_head(std::string_view head) {
  while (!head.empty() && (head.front() == '\r' || head.front() == '\n')) {
    head.remove_prefix(1);
  }
  const std::string_view request_line = next_line(head);
  const auto sp1 = request_line.find(' ');
  const auto sp2 = request_line.rfind(' ');
  if (sp1 == std::string_view::npos || sp2 == sp1) {
    return std::nullopt;
  }
  HttpRequest req;
  req.method = request_line.substr(0, sp1);
  req.target = request_line.substr(sp1 + 1, sp2 - sp1 - 1);
  req.version = request_line.substr(sp2 + 1);
  // The target is visible ASCII (RFC 3986: anything else is percent-encoded).
  const auto visible = [](unsigned char c) { return c > 0x20 && c < 0x7f; };
  if (!is_token(req.method) || req.target.empty() || req.target.front() != '/' ||
      !std::all_of(req.target.begin(), req.target.end(), visible) ||
      (req.version != "HTTP/1.1" && req.version != "HTTP/1.0")) {
    return std::nullopt;
  }
  req.path = req.target.substr(0, req.target.find_first_of("?#"));
  while (!head.empty()) {
    const std::string_view line = next_line(head);
    if (line.empty()) {
      break;  // the blank line that ends the head
    }
    const auto colon = line.find(':');
    // A line starting with white space is obsolete folding, which RFC 9112 lets a server reject.
    if (colon == std::string_view::npos || !is_token(line.substr(0, colon)) ||
        line.find('\0') != std::string_view::npos) {  // RFC 9110 5.5: no NUL in a value
      return std::nullopt;
    }
    req.headers.emplace_back(lower(line.substr(0, colon)), trim(line.substr(colon + 1)));
  }
  return req;
}

namespace {

// Calls VISIT(value, params, q) for each element of a comma-separated header with q-values
// (Accept, Accept-Encoding): the lower-cased value, its parameters after the first ';' and
// their q-value (1 when absent, -1 when malformed).
template <typename Visit>
void for_each_element(std::string_view header, Visit visit) {
  while (!header.empty()) {
    const auto comma = header.find(',');
    const std::string_view element = trim(header.substr(0, comma));
    header.remove_prefix(comma == std::string_view::npos ? header.size() : comma + 1);
    const auto semi = element.find(';');
    const std::string_view params =
        semi == std::string_view::npos ? std::string_view() : element.substr(semi + 1);
    visit(lower(trim(element.substr(0, semi))), params, q_value(params));
  }
}

}  // namespace

HeadRead read_request_head(std::string_view data) {
  const auto end = request_head_end(data);
  if (end ? *end > kMaxRequestHead : data.size() > kMaxRequestHead) {
    return {.kind = HeadRead::Kind::kTooLarge, .request = {}};
  }
  if (!end) {
    return {};
  }
  auto request = parse_request_head(data.substr(0, *end));
  if (!request) {
    return {.kind = HeadRead::Kind::kMalformed, .request = {}};
  }
  return {.kind = HeadRead::Kind::kComplete, .request = std::move(*request)};
}

bool accepts_gzip(std::string_view accept_encoding) {
  double gzip = -1;
  double any = -1;
  for_each_element(accept_encoding, [&](const std::string& coding, std::string_view, double q) {
    if (coding == "gzip" || coding == "x-gzip") {
      gzip = std::max(gzip, q);
    } else if (coding == "*") {
      any = std::max(any, q);
    }
  });
  return gzip >= 0 ? gzip > 0 : any > 0;
}

ExpositionFormat preferred_exposition(std::string_view accept) {
  double protobuf = -1;
  double openmetrics = -1;
  double other = -1;
  for_each_element(accept, [&](const std::string& type, std::string_view params, double q) {
    const std::string p = lower(params);
    if (type == "application/vnd.google.protobuf") {
      // Only the length-delimited stream of MetricFamily messages is served.
      if (p.find("proto=io.prometheus.client.metricfamily") != std::string::npos &&
          p.find("encoding=delimited") != std::string::npos) {
        protobuf = std::max(protobuf, q);
      }
    } else if (type == "application/openmetrics-text") {
      // 1.0.0 is served; 0.0.1, its draft, reads the same; another version is not this one.
      const auto at = p.find("version=");
      const std::string_view version =
          at == std::string::npos
              ? std::string_view()
              : trim(std::string_view(p).substr(at + 8, p.find(';', at) - at - 8));
      if (version.empty() || version == "1.0.0" || version == "0.0.1") {
        openmetrics = std::max(openmetrics, q);
      }
    } else if (!type.empty()) {
      other = std::max(other, q);
    }
  });
  if (protobuf > 0 && protobuf >= std::max(openmetrics, other)) {
    return ExpositionFormat::kProtobuf;
  }
  if (openmetrics > 0 && openmetrics >= other) {
    return ExpositionFormat::kOpenMetrics;
  }
  return ExpositionFormat::kText;
}

Result<std::string> gzip_compress(std::string_view data) {
  if (data.size() > std::numeric_limits<uInt>::max()) {
    return make_error(ErrorKind::kInvalidInput, "gzip: " + std::to_string(data.size()) +
                                                    " bytes are more than zlib takes at once");
  }
  z_stream zs{};
  // 15 window bits + 16: a gzip header and trailer rather than zlib's. Fastest level: metric
  // text compresses about tenfold even so, and the scrape's CPU time stays small.
  if (deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return make_error(ErrorKind::kSystem, "gzip: deflateInit2 failed");
  }
  std::string out(deflateBound(&zs, data.size()), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) {
    return make_error(ErrorKind::kSystem, "gzip: deflate returned " + std::to_string(rc));
  }
  return out;
}

const char* status_text(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 409:
      return "Conflict";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Unknown";
  }
}

std::string serialize_response(const HttpResponse& response, bool head_only) {
  std::string out = "HTTP/1.1 " + std::to_string(response.status) + " " +
                    status_text(response.status) + "\r\nContent-Type: " + response.content_type +
                    "\r\nContent-Length: " + std::to_string(response.body.size()) + "\r\n";
  for (const auto& [name, value] : response.headers) {
    out.append(name).append(": ").append(value).append("\r\n");
  }
  out += "Connection: close\r\n\r\n";
  if (!head_only) {
    out += response.body;
  }
  return out;
}

std::optional<std::map<std::string, std::string, std::less<>>> query_parameters(
    std::string_view target, std::initializer_list<std::string_view> known) {
  std::map<std::string, std::string, std::less<>> out;
  const auto q = target.find('?');
  std::string_view query = q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    const auto eq = pair.find('=');
    const std::string_view key = pair.substr(0, eq);
    if (std::find(known.begin(), known.end(), key) == known.end() ||
        !out.emplace(key, eq == std::string_view::npos ? "" : pair.substr(eq + 1)).second) {
      return std::nullopt;
    }
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
  }
  return out;
}

std::optional<std::pair<std::string, std::string>> parse_osd_query(std::string_view target) {
  static const std::regex kOsd(R"(osd\.[0-9]{1,9})");
  static const std::regex kFsid("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
  auto params = query_parameters(target, {"ceph_daemon", "fsid"});
  if (!params) {
    return std::nullopt;
  }
  std::string who = (*params)["ceph_daemon"];
  std::string fsid = (*params)["fsid"];
  if (!std::regex_match(who, kOsd) || (!fsid.empty() && !std::regex_match(fsid, kFsid))) {
    return std::nullopt;
  }
  return std::pair{who, fsid};
}

}  // namespace cephscope
