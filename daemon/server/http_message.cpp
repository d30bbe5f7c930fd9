#include "server/http_message.h"

#include <algorithm>
#include <cctype>

namespace cephscope {

std::string_view trim_blanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  return s;
}

std::string ascii_lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

namespace {

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
    req.headers.emplace_back(ascii_lower(line.substr(0, colon)),
                             trim_blanks(line.substr(colon + 1)));
  }
  return req;
}

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

}  // namespace cephscope
