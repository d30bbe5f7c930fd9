// Profiles written by hand for the probe-plan tests: a member the resolver found, as it
// records one.
#pragma once

#include <cstdint>

#include "profile/profile.h"

namespace cephscope::test {

inline void add_resolved_member(profile::Profile& p, const char* type, const char* path,
                                std::uint64_t offset) {
  profile::MemberEntry m;
  m.type = type;
  m.path = path;
  m.status = profile::ItemStatus::kOk;
  m.offset = offset;
  p.members.push_back(m);
}

}  // namespace cephscope::test
