// Why a probe is not attached or an OSD stage not measured: the `reason` label of
// cephscope_probe_attached and cephscope_osd_stage_available. A small fixed set, so that alerts
// and dashboards can match on it; the detail (errno text, the missing symbol, the resolver's
// last words) goes to the log and to `cephscope --check`. docs/metrics.md lists the set.
#pragma once

#include <array>
#include <cerrno>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "core/result.h"

namespace cephscope {

enum class Reason {
  kOk,                    // attached, measured
  kDisabled,              // turned off in the config
  kKernelFeatureMissing,  // no BTF, kprobes, tracefs or tracepoint; an unknown tracepoint shape
  kPermissionDenied,      // EPERM or EACCES: capabilities, lockdown, an unreadable file
  kResourceLimit,         // ENOMEM, E2BIG: RLIMIT_MEMLOCK, the memory cgroup, map sizes
  kLoadFailed,            // the BPF object did not open or load (the verifier said no)
  kAttachFailed,          // the program loaded but did not attach
  kBinaryRefused,         // the ceph-osd executable cannot be identified (deleted, replaced)
  kProfileUnavailable,    // no probe profile for this build
  kResolverFailed,        // the resolver process failed: timeout, crash, bad output
  kSymbolNotFound,        // the function or call site is not in this build
  kMembersMissing,        // struct members the program reads are not in this build's debuginfo
  kProbeNotAttached,      // a stage needs a probe that is not attached
  kNoDebuginfo,           // members needed, and no debuginfo or profile for this build
  kOffsetUnverified,      // a profile from a container's files names an offset its binary denies
  kInternal,              // a daemon-side failure (a BPF map update)
  kModuleNotLoaded,       // the kernel module whose functions the probe hooks is not loaded
};

inline constexpr std::array<std::string_view, 17> kReasonWords = {
    "ok",
    "disabled",
    "kernel_feature_missing",
    "permission_denied",
    "resource_limit",
    "load_failed",
    "attach_failed",
    "binary_refused",
    "profile_unavailable",
    "resolver_failed",
    "symbol_not_found",
    "members_missing",
    "probe_not_attached",
    "no_debuginfo",
    "offset_unverified",
    "internal_error",
    "module_not_loaded",
};

constexpr std::string_view to_string(Reason r) {
  return kReasonWords.at(static_cast<std::size_t>(r));
}

constexpr std::optional<Reason> reason_from_word(std::string_view word) {
  for (std::size_t i = 0; i < kReasonWords.size(); ++i) {
    if (kReasonWords[i] == word) {
      return static_cast<Reason>(i);
    }
  }
  return std::nullopt;
}

// Why something does not work: the word for the metric label, the detail for people.
struct Cause {
  Reason reason = Reason::kOk;
  std::string detail;  // "" when ok
  [[nodiscard]] bool ok() const { return reason == Reason::kOk; }
};

// What an errno says, where it says something of its own; else FALLBACK.
constexpr Reason reason_of_errno(int err, Reason fallback) {
  switch (err) {
    case EPERM:
    case EACCES:
      return Reason::kPermissionDenied;
    case ENOMEM:
    case E2BIG:
      return Reason::kResourceLimit;
    default:
      return fallback;
  }
}

// An error's reason: its `reason` word when that is one of the set, else what its errno says,
// else FALLBACK.
inline Reason reason_of(const Error& e, Reason fallback) {
  if (auto r = reason_from_word(e.reason)) {
    return *r;
  }
  return reason_of_errno(e.code, fallback);
}

// An error as a cause: its reason (see reason_of) and its message.
inline Cause cause_of(const Error& e, Reason fallback) {
  return {reason_of(e, fallback), e.message};
}

// An error whose `reason` word is REASON's, so that reason_of() finds it again.
inline Error error_with(Reason reason, ErrorKind kind, std::string message, int code = 0) {
  Error e = make_error(kind, std::move(message), code);
  e.reason = std::string(to_string(reason));
  return e;
}

}  // namespace cephscope
