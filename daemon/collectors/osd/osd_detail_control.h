// What the endpoint may ask of the OSD collector: a tier-2 detail window on one OSD
// (POST /debug/osd-detail). The daemon owns it; the OSD collector answers while it runs.
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <utility>

namespace cephscope {

class OsdDetailControl {
 public:
  // HTTP status and body for a request naming an OSD (ceph_daemon, fsid; fsid may be empty
  // when the host runs one cluster).
  using Handler = std::function<std::pair<int, std::string>(const std::string& ceph_daemon,
                                                            const std::string& fsid)>;

  void set(Handler h) {
    std::lock_guard lock(mu_);
    handler_ = std::move(h);
  }
  [[nodiscard]] std::pair<int, std::string> request(const std::string& ceph_daemon,
                                                    const std::string& fsid) const {
    std::lock_guard lock(mu_);
    if (!handler_) {
      return {503, "the OSD collector is not running\n"};
    }
    return handler_(ceph_daemon, fsid);
  }

 private:
  mutable std::mutex mu_;
  Handler handler_;
};

}  // namespace cephscope
