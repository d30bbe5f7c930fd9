#pragma once

namespace cephscope {

// Routes libbpf's messages through spdlog: warnings as warnings, the rest at debug.
void route_libbpf_log_to_spdlog();

}  // namespace cephscope
