// Profile <-> JSON (schema "cephscope-profile", version kSchemaVersion; see docs/profiles.md).
//
// Profiles are untrusted input (shipped, cached, or from a container): every field is checked
// for type and range, unknown fields are refused, and a profile is never half-used. Errors
// start with a stable phrase the caller can count by:
//   "corrupt profile: ..."                   kInvalidInput
//   "unsupported profile schema_version N"   kUnsupported
//   "build-id mismatch: ..."                 kInvalidInput
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/result.h"
#include "profile/profile.h"

namespace cephscope::profile {

inline constexpr size_t kMaxProfileBytes = 64 << 20;

nlohmann::json profile_to_json(const Profile& p);
std::string dump_profile(const Profile& p);

Result<Profile> parse_profile(std::string_view text);

// Reads PATH and checks it describes EXPECTED_BUILD_ID (any when empty).
Result<Profile> load_profile(const std::string& path, std::string_view expected_build_id = {});

// Writes atomically (temporary file + rename), creating the directory if needed.
Status save_profile(const std::string& path, const Profile& p);

// True for a lower-case hex build-id of a plausible length.
bool is_build_id(std::string_view s);

}  // namespace cephscope::profile
