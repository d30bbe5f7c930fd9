// HTTP/1.x request heads as the transport reads them: pure functions, so the parsing is tested
// and fuzzed without a socket.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cephscope {

struct HttpRequest {
  std::string method;                                        // "GET"
  std::string target;                                        // "/metrics?x=1"
  std::string path;                                          // "/metrics"
  std::string version;                                       // "HTTP/1.1"
  std::vector<std::pair<std::string, std::string>> headers;  // names in lower case

  // The first header of that name (lower case), nullopt when absent.
  [[nodiscard]] std::optional<std::string_view> header(std::string_view name) const;
};

// The largest request head the endpoint reads; a longer one is answered 431.
inline constexpr std::size_t kMaxRequestHead = 8192;

// Where the head ends in `data` (the offset just past its blank line), nullopt while the
// blank line has not arrived.
std::optional<std::size_t> request_head_end(std::string_view data);

// Parses a complete head (request line and header lines, CRLF or LF); nullopt when malformed.
std::optional<HttpRequest> parse_request_head(std::string_view head);

// What the bytes a connection has sent so far come to.
struct HeadRead {
  enum class Kind { kIncomplete, kTooLarge, kMalformed, kComplete } kind = Kind::kIncomplete;
  HttpRequest request;  // when complete
};
HeadRead read_request_head(std::string_view data);

// Blanks (space, tab) off both ends of a header value.
std::string_view trim_blanks(std::string_view s);

// S in ASCII lower case (header names and the tokens of their values).
std::string ascii_lower(std::string_view s);

}  // namespace cephscope
