// The rados collector's per-build map entries (rados_layouts, rados_marker_sites): keyed by
// probe and address modulo the page, shared by the libraries of one build, refused to a second
// build whose key collides. See bpf/rados.h.
#pragma once

#include <bpf/bpf.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "core/reason.h"

namespace cephscope {

// Entries of an array or hash the probes of several library builds share, keyed by probe and
// address modulo the page: the value each holds, and how many libraries put it there.
template <typename Value>
using PlacedEntries = std::map<std::uint32_t, std::pair<Value, std::size_t>>;

// Puts VALUE at KEY of map FD for one more library, or says why not: another build's value
// there (two builds whose probe offsets agree modulo the page), or the map's refusal.
template <typename Value>
std::optional<Cause> place(PlacedEntries<Value>& placed, int fd, std::uint32_t key,
                           const Value& value) {
  auto& [held, users] = placed[key];
  if (users != 0 && std::memcmp(&held, &value, sizeof(Value)) != 0) {
    return Cause{Reason::kAttachFailed,
                 "its offset modulo the page is another probed build's (that build's clients "
                 "are measured)"};
  }
  if (users == 0 && bpf_map_update_elem(fd, &key, &value, BPF_ANY) != 0) {
    const int err = errno;
    placed.erase(key);
    return Cause{err == E2BIG ? Reason::kResourceLimit : Reason::kInternal, std::strerror(err)};
  }
  held = value;
  ++users;
  return std::nullopt;
}

// One library fewer at each of KEYS: an entry none holds any more is cleared (an array's
// slot zeroed, a hash's entry deleted).
template <typename Value>
void unplace(PlacedEntries<Value>& placed, int fd, const std::vector<std::uint32_t>& keys,
             bool hash) {
  for (const std::uint32_t key : keys) {
    auto it = placed.find(key);
    if (it != placed.end() && --it->second.second == 0) {
      const Value none{};
      if (hash) {
        bpf_map_delete_elem(fd, &key);
      } else {
        bpf_map_update_elem(fd, &key, &none, BPF_ANY);
      }
      placed.erase(it);
    }
  }
}

}  // namespace cephscope
