#include "metrics/otlp_exporter.h"

#include <curl/curl.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "metrics/otlp_spans.h"

namespace cephscope {
namespace {

enum Drop : std::size_t { kQueueFull, kSendFailed, kRejected, kNoTraceId };

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

// The response body is not needed: only its status.
std::size_t discard(char* /*data*/, std::size_t size, std::size_t n, void* /*user*/) {
  return size * n;
}

}  // namespace

OtlpExporter::Send curl_sender(const std::string& endpoint, std::chrono::milliseconds timeout) {
  // one handle for the thread that sends: its connection is kept between requests
  auto handle = std::shared_ptr<CURL>(curl_easy_init(), CurlDeleter{});
  auto headers = std::shared_ptr<curl_slist>(
      curl_slist_append(nullptr, "Content-Type: application/json"), SlistDeleter{});
  return [handle, headers, endpoint, timeout](const std::string& body) {
    CURL* c = handle.get();
    if (c == nullptr || !headers) {
      return SendResult::kRetry;
    }
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, endpoint.c_str());
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    const CURLcode rc = curl_easy_perform(c);
    if (rc != CURLE_OK) {
      spdlog::debug("traces: POST {}: {}", endpoint, curl_easy_strerror(rc));
      return SendResult::kRetry;
    }
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 200 && status < 300) {
      return SendResult::kOk;
    }
    spdlog::debug("traces: POST {}: HTTP {}", endpoint, status);
    return status == 429 || status >= 500 ? SendResult::kRetry : SendResult::kRejected;
  };
}

Result<std::unique_ptr<OtlpExporter>> OtlpExporter::start(Options options, Send send) {
  if (!send) {
    static const CURLcode init = curl_global_init(CURL_GLOBAL_DEFAULT);
    if (init != CURLE_OK) {
      return make_error(ErrorKind::kSystem,
                        std::string("traces: libcurl: ") + curl_easy_strerror(init));
    }
    send = curl_sender(options.endpoint, options.timeout);
  }
  std::unique_ptr<OtlpExporter> self(new OtlpExporter(std::move(options), std::move(send)));
  self->thread_ = std::jthread([raw = self.get()](const std::stop_token& stop) { raw->run(stop); });
  return self;
}

OtlpExporter::~OtlpExporter() {
  thread_.request_stop();
  wake_.notify_all();
}

void OtlpExporter::offer(const SlowOp& op) {
  {
    std::lock_guard lock(mu_);
    if (op.trace_id.empty()) {
      ++counts_.dropped[kNoTraceId];
      return;
    }
    if (options_.queue_size == 0) {
      ++counts_.dropped[kQueueFull];
      return;
    }
    if (queue_.size() >= options_.queue_size) {
      queue_.pop_front();  // the oldest go: the newest are what an operator looks for
      ++counts_.dropped[kQueueFull];
    }
    queue_.push_back(op);
  }
  wake_.notify_one();
}

OtlpCounts OtlpExporter::counts() const {
  std::lock_guard lock(mu_);
  OtlpCounts c = counts_;
  c.queued = queue_.size();
  return c;
}

void OtlpExporter::run(const std::stop_token& stop) {
  while (!stop.stop_requested()) {
    std::vector<SlowOp> batch;
    {
      std::unique_lock lock(mu_);
      // a full batch goes at once; a partial one waits up to kFlushEvery for company
      wake_.wait_for(lock, stop, kFlushEvery, [&] { return queue_.size() >= kBatchRecords; });
      const std::size_t n = std::min(queue_.size(), kBatchRecords);
      batch.assign(std::make_move_iterator(queue_.begin()),
                   std::make_move_iterator(queue_.begin() + static_cast<std::ptrdiff_t>(n)));
      queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
    }
    if (!batch.empty() && !deliver(batch, stop)) {
      return;
    }
  }
}

bool OtlpExporter::deliver(const std::vector<SlowOp>& batch, const std::stop_token& stop) {
  const std::string body = otlp_json(batch, options_.host);
  std::size_t spans = 0;
  for (const auto& op : batch) {
    spans += 1 + op.stages.size();
  }
  auto backoff = options_.first_backoff;
  for (int attempt = 1;; ++attempt) {
    const SendResult r = send_(body);
    std::unique_lock lock(mu_);
    if (r == SendResult::kOk) {
      counts_.records_sent += batch.size();
      counts_.spans_sent += spans;
      return true;
    }
    ++counts_.send_errors;
    if (r == SendResult::kRejected || attempt == kAttempts) {
      counts_.dropped[r == SendResult::kRejected ? kRejected : kSendFailed] += batch.size();
      spdlog::warn("traces: {} records not sent to {} ({})", batch.size(), options_.endpoint,
                   r == SendResult::kRejected ? "rejected" : "no answer after retries");
      return true;
    }
    // wait, but not past a stop
    if (wake_.wait_for(lock, stop, backoff, [] { return false; }); stop.stop_requested()) {
      return false;
    }
    backoff *= 2;
  }
}

}  // namespace cephscope
