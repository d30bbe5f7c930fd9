// Spans out (traces.otlp_endpoint): every op record the daemon keeps, slow or exemplar, sent
// as OTLP/HTTP JSON spans (metrics/otlp_spans.h) from a thread of its own, batched (up to
// kBatchRecords a request, at least every kFlushEvery), bounded (traces.queue_size records
// wait; beyond it the oldest go), retried on a connection error, 429 and 5xx (kAttempts
// tries, backing off), and every record that does not make it counted by reason. A record
// without a trace id is no span: counted too. The collectors' record threads only queue.
#pragma once

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "collectors/slow_ops.h"
#include "core/result.h"

namespace cephscope {

enum class SendResult { kOk, kRetry, kRejected };

struct OtlpCounts {
  std::uint64_t records_sent = 0;
  std::uint64_t spans_sent = 0;
  std::uint64_t send_errors = 0;  // failed attempts, retried or not
  // records that were not sent, by reason (kDropReasons)
  std::array<std::uint64_t, 4> dropped{};
  std::size_t queued = 0;
};

// The reasons of OtlpCounts::dropped, as cephscope_trace_records_dropped_total labels them.
inline constexpr std::array<const char*, 4> kDropReasons = {"queue_full", "send_failed", "rejected",
                                                            "no_trace_id"};

class OtlpExporter {
 public:
  struct Options {
    std::string endpoint;  // http(s)://host:port/v1/traces
    std::size_t queue_size = 2048;
    std::chrono::milliseconds timeout{5000};       // one request
    std::string host;                              // host.name of the spans
    std::chrono::milliseconds first_backoff{500};  // before the first retry; doubles
  };
  // Sends BODY (JSON); what became of it.
  using Send = std::function<SendResult(const std::string& body)>;

  static constexpr std::size_t kBatchRecords = 128;
  static constexpr std::chrono::milliseconds kFlushEvery{1000};
  static constexpr int kAttempts = 4;

  // Starts the sending thread; SEND defaults to libcurl POSTing to the endpoint. An error when
  // libcurl cannot be set up.
  static Result<std::unique_ptr<OtlpExporter>> start(Options options, Send send = nullptr);
  ~OtlpExporter();
  OtlpExporter(const OtlpExporter&) = delete;
  OtlpExporter& operator=(const OtlpExporter&) = delete;
  OtlpExporter(OtlpExporter&&) = delete;
  OtlpExporter& operator=(OtlpExporter&&) = delete;

  // Queues OP (never blocks on the network).
  void offer(const SlowOp& op);
  [[nodiscard]] OtlpCounts counts() const;

 private:
  OtlpExporter(Options options, Send send) : options_(std::move(options)), send_(std::move(send)) {}
  void run(const std::stop_token& stop);
  // Sends one batch, retrying; false when the thread is stopping.
  bool deliver(const std::vector<SlowOp>& batch, const std::stop_token& stop);

  const Options options_;
  const Send send_;
  mutable std::mutex mu_;
  std::condition_variable_any wake_;
  std::deque<SlowOp> queue_;
  OtlpCounts counts_;
  std::jthread thread_;  // last: stops first
};

// The libcurl sender: POST to ENDPOINT with Content-Type application/json, TIMEOUT for the
// whole request, http and https only, no redirects; 2xx is kOk, 429 and 5xx (and no answer)
// kRetry, anything else kRejected.
OtlpExporter::Send curl_sender(const std::string& endpoint, std::chrono::milliseconds timeout);

}  // namespace cephscope
