// What this binary is: version, the git revision it was built from, and when. Generated at
// build time by daemon/core/build_info.cmake, so a new commit changes one object file only.
#pragma once

namespace cephscope {

struct BuildInfo {
  const char* version;
  const char* revision;    // git describe of the source tree, "unknown" outside git
  const char* build_date;  // UTC, from SOURCE_DATE_EPOCH when set (reproducible builds)
};

const BuildInfo& build_info();

}  // namespace cephscope
