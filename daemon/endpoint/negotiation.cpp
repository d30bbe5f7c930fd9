#include "endpoint/negotiation.h"

#include <zlib.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <regex>

#include "server/http_message.h"

namespace cephscope {
namespace {

// A q-value of an Accept-Encoding element ("q=0.5"); 1 when absent, -1 when malformed.
double q_value(std::string_view params) {
  double q = 1;
  while (!params.empty()) {
    const auto semi = params.find(';');
    const std::string_view param = trim_blanks(params.substr(0, semi));
    params.remove_prefix(semi == std::string_view::npos ? params.size() : semi + 1);
    if (param.size() < 2 || ascii_lower(param.substr(0, 2)) != "q=") {
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

// Calls VISIT(value, params, q) for each element of a comma-separated header with q-values
// (Accept, Accept-Encoding): the lower-cased value, its parameters after the first ';' and
// their q-value (1 when absent, -1 when malformed).
template <typename Visit>
void for_each_element(std::string_view header, Visit visit) {
  while (!header.empty()) {
    const auto comma = header.find(',');
    const std::string_view element = trim_blanks(header.substr(0, comma));
    header.remove_prefix(comma == std::string_view::npos ? header.size() : comma + 1);
    const auto semi = element.find(';');
    const std::string_view params =
        semi == std::string_view::npos ? std::string_view() : element.substr(semi + 1);
    visit(ascii_lower(trim_blanks(element.substr(0, semi))), params, q_value(params));
  }
}

}  // namespace

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
    const std::string p = ascii_lower(params);
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
              : trim_blanks(std::string_view(p).substr(at + 8, p.find(';', at) - at - 8));
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
