// HTTP/1.x request heads and responses as the endpoint needs them: pure functions, so the
// parsing and the content negotiation are tested without a socket.
#pragma once

#include <cstddef>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"

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

// Whether an Accept-Encoding value admits gzip (gzip, x-gzip or *, with a q-value above 0).
bool accepts_gzip(std::string_view accept_encoding);

enum class ExpositionFormat { kText, kOpenMetrics, kProtobuf };

// The exposition an Accept value asks for most: Prometheus' protobuf (length-delimited
// io.prometheus.client.MetricFamily), OpenMetrics 1.0 (or its draft 0.0.1, or no version),
// else the text format; a tie goes to the first of those.
ExpositionFormat preferred_exposition(std::string_view accept);

// The query of a request target as KNOWN keys and their values (taken as they are: no
// percent-decoding); nullopt for another key or a key given twice.
std::optional<std::map<std::string, std::string, std::less<>>> query_parameters(
    std::string_view target, std::initializer_list<std::string_view> known);

// The OSD of a /debug/osd-detail request target: ceph_daemon=osd.N and an optional
// fsid=<uuid>; nullopt for anything else (another parameter, a malformed value).
std::optional<std::pair<std::string, std::string>> parse_osd_query(std::string_view target);
inline constexpr const char* kOpenMetricsType =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";
inline constexpr const char* kProtobufExpositionType =
    "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; "
    "encoding=delimited";

// `data` as a gzip member (RFC 1952).
Result<std::string> gzip_compress(std::string_view data);

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers
};

// The bytes on the wire: status line, headers and, unless `head_only`, the body. The
// connection is always closed after the response. Content-Length is the body's size either
// way, so a HEAD request learns what a GET would send.
std::string serialize_response(const HttpResponse& response, bool head_only);

const char* status_text(int status);

}  // namespace cephscope
