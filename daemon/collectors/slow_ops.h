// The last slow-op records: one per client op over collectors.osd.slow_op_threshold, sent by
// the OSD programs through a ring buffer (the only per-op traffic to user space, rare by
// design), kept here in bounded memory and served as JSON at /debug/slow-ops; and the ops
// that scrapes exported as exemplars (collectors/exemplars.h), for their trace ids.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cephscope {

struct SlowOp {
  // "osd": an op on its primary; "replica": its sub-op on a replica; "client": as a librados
  // client saw it
  std::string kind = "osd";
  std::uint64_t time_ns = 0;  // realtime, at the reply
  std::string ceph_daemon;    // osd.N
  std::string fsid;
  std::string op;      // read, write, other
  std::string client;  // client.4177
  std::uint64_t tid = 0;
  std::string request_id;  // Ceph's osd_reqid_t as Ceph prints it, "client.4177.0:12"; "": unknown
  std::string trace_id;    // trace_id(fsid, request_id); "": either is unknown
  bool slow = true;        // over the slow threshold; false: kept as an exemplar
  std::optional<std::uint64_t> pool;
  std::string pg;                     // "2.b", empty when unknown
  std::string object;                 // as much of the name as was read
  bool object_truncated = false;      // the name is longer than what was read
  std::vector<std::string> replicas;  // the OSDs it waited for ("1", "2")
  // tier 2: each replica's commit reply as the primary took it, in that order: the OSD and
  // the time from the op's start (none when the start is not known); the last one is the
  // replica the op waited for last
  std::vector<std::pair<std::string, std::optional<double>>> replica_commits;
  double seconds = 0;                                  // the whole op
  std::vector<std::pair<std::string, double>> stages;  // measured stages, in path order
  // client records
  std::string process;
  std::uint32_t pid = 0;
  std::optional<int> acting_osd;  // the OSD the op was last sent to
  std::uint32_t resends = 0;
  std::string error;  // the error class, empty when the op succeeded
};

// Bytes from a client, for the log: printable ASCII, the rest as '?'.
std::string printable(std::string s);

// Ceph's request id (osd_reqid_t) as Ceph prints it: "client.4177.0:12" for entity type 8
// (CEPH_ENTITY_TYPE_CLIENT), global id 4177, incarnation 0, tid 12; "" for an entity type
// Ceph does not name.
std::string request_id(std::uint8_t entity_type, std::int64_t num, std::int32_t inc,
                       std::uint64_t tid);

// The trace id of request REQUEST_ID in cluster FSID (lower-case UUID text): the first 16
// bytes of SHA-256("<fsid> <request id>"), in hex (W3C trace-context's size), the same on
// every host that sees the op; "" when either is unknown. docs/collectors/osd.md ("One op,
// end to end") gives the shell line that computes it.
std::string trace_id(std::string_view fsid, std::string_view request_id);

// 16 bytes of a uuid_d as its text (lower case); "" when all are zero (not known yet).
std::string uuid_text(const std::uint8_t (&bytes)[16]);

// True for 32 lower-case hex digits.
bool is_trace_id(std::string_view text);

class SlowOpLog {
 public:
  explicit SlowOpLog(std::size_t capacity) : capacity_(capacity) {}

  // Also hands every op added or kept to LISTENER (spans out), outside the log's lock; set
  // before any record comes.
  void set_listener(std::function<void(const SlowOp&)> listener) {
    listener_ = std::move(listener);
  }
  // Keeps OP, dropping the oldest beyond the capacity.
  void add(SlowOp op);
  // Keeps OP, an op a scrape exported as an exemplar (not slow), for trace_json() alone, in
  // room of its own (kExemplarRoom times the capacity): exemplars come with every scrape.
  void keep(SlowOp op);
  // One record of a series' new maximum came (exemplars), for "exemplar_records".
  void count_exemplar_record();
  // {"capacity": N, "recorded": slow ops since start, "exemplar_records": records of new
  // maxima since start, "exemplars_kept": M, "ops": [newest first]}.
  [[nodiscard]] std::string json() const;
  // Every part of trace TRACE this daemon kept, slow or exemplar, oldest start first:
  // {"trace_id": T, "parts": [...]}; nullopt when none is kept.
  [[nodiscard]] std::optional<std::string> trace_json(std::string_view trace) const;

  static constexpr std::size_t kExemplarRoom = 4;

 private:
  std::function<void(const SlowOp&)> listener_;
  mutable std::mutex mu_;
  std::deque<SlowOp> ops_;
  std::deque<SlowOp> exemplar_ops_;
  std::size_t capacity_;
  std::uint64_t recorded_ = 0;
  std::uint64_t exemplar_records_ = 0;
};

// The OSD ids of a "waiting for subops from 1,2" event's text (EC shards "1(0)" give 1);
// empty for any other text.
std::vector<std::string> replicas_of(std::string_view event);

}  // namespace cephscope
