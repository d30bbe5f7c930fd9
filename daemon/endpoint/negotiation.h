// What a request asks of the endpoint beyond its path: the exposition format and the encoding
// it accepts, and its query's values. Pure functions, tested without a socket.
#pragma once

#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "core/result.h"

namespace cephscope {

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

}  // namespace cephscope
