#include "collectors/collector.h"

namespace cephscope {

std::vector<std::unique_ptr<Collector>> make_collectors(const CollectorContext& ctx) {
  std::vector<std::unique_ptr<Collector>> out;
  const auto& c = ctx.config.collectors;
  if (c.syscall.enabled) {
    out.push_back(make_syscall_collector(ctx));
  }
  if (c.block.enabled) {
    out.push_back(make_block_collector(ctx));
  }
  if (c.vfs.enabled) {
    out.push_back(make_vfs_collector(ctx));
  }
  if (c.osd.enabled) {
    out.push_back(make_osd_collector(ctx));
  }
  if (c.rados.enabled) {
    out.push_back(make_rados_collector(ctx));
  }
  if (c.kclient.enabled) {
    out.push_back(make_kclient_collector(ctx));
  }
  if (!ctx.config.usdt.empty()) {
    out.push_back(make_usdt_collector(ctx));
  }
  return out;
}

}  // namespace cephscope
