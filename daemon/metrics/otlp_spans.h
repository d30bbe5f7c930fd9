// The op records as OpenTelemetry spans, in OTLP's JSON encoding (OTLP/HTTP, application/json:
// Debian has no OpenTelemetry C++ library). Each record is one part of one op: a client's
// (SPAN_KIND_CLIENT), its primary's or a replica's (SPAN_KIND_SERVER), and each measured stage
// a child of its part (SPAN_KIND_INTERNAL), laid end to end from the part's start in path
// order. The trace id is the record's (docs/collectors/osd.md, "One op, end to end"); span ids
// are derived the same way, so that hosts that never talk agree on them: a part's is the
// first 8 bytes of SHA-256("<trace id> <part>"), part "client", "osd" (the primary) or
// "replica osd.N", a stage's SHA-256("<trace id> <part> <stage>"). The client's part is the
// root, the primary's parent is the client's part, a replica's the primary's.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "collectors/slow_ops.h"

namespace cephscope {

// 16 hex digits: the span id of PART (and STAGE, when not empty) of trace TRACE_ID.
std::string span_id(std::string_view trace_id, std::string_view part, std::string_view stage = {});

// The part of an op a record is ("client", "osd", "replica osd.N").
std::string span_part(const SlowOp& op);

// An ExportTraceServiceRequest in JSON holding RECORDS (each with a trace id), made on HOST.
std::string otlp_json(const std::vector<SlowOp>& records, const std::string& host);

}  // namespace cephscope
