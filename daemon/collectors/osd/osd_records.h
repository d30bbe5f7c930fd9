// The OSD programs' op records (bpf/osd.h, struct osd_slow_record): a thread reads them from
// their ring buffer and names their OSD; a slow op's is kept in the SlowOpLog and logged, and
// a series' new slowest op goes to the collector's exemplars.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "bpf/osd.h"
#include "collectors/exemplars.h"
#include "collectors/ring_reader.h"
#include "collectors/slow_ops.h"

namespace cephscope {

// An OSD series: its target, kind (OSD_KIND_*) and op (OSD_OP_*).
using OsdSeriesId = std::tuple<std::uint32_t, int, int>;
using OsdExemplars = ExemplarTable<OsdSeriesId>;

// A record as the endpoint shows it, for the OSD WHO of cluster FSID.
SlowOp to_slow_op(const osd_slow_record& r, const std::string& who, const std::string& fsid);

class SlowOpReader {
 public:
  // The OSD (ceph_daemon, fsid) of a process, nullopt when it is going: its records are dropped.
  using Names = std::function<std::optional<std::pair<std::string, std::string>>(std::uint32_t)>;

  // Reads the ring buffer at RINGBUF_FD into LOG and EXEMPLARS; nullptr (and a warning) when
  // it cannot.
  static std::unique_ptr<SlowOpReader> start(int ringbuf_fd, SlowOpLog& log,
                                             OsdExemplars& exemplars, Names names);
  ~SlowOpReader() = default;
  SlowOpReader(const SlowOpReader&) = delete;
  SlowOpReader& operator=(const SlowOpReader&) = delete;
  SlowOpReader(SlowOpReader&&) = delete;
  SlowOpReader& operator=(SlowOpReader&&) = delete;

 private:
  SlowOpReader(SlowOpLog& log, OsdExemplars& exemplars, Names names)
      : log_(log), exemplars_(exemplars), names_(std::move(names)) {}
  void take(const osd_slow_record& r);

  SlowOpLog& log_;
  OsdExemplars& exemplars_;
  Names names_;
  std::unique_ptr<RingReader> reader_;  // last: stops first
};

}  // namespace cephscope
