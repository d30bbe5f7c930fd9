// The probe profile: everything the daemon needs to probe one build of one binary (keyed by
// build-id), resolved once from DWARF or the symbol table. Serialised by profile_json.h.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "profile/markers.h"

namespace cephscope::profile {

inline constexpr int kSchemaVersion = 3;
inline constexpr std::string_view kSchemaName = "cephscope-profile";

// Per item: a missing or inlined-only function is reported here, never fatal for the set.
enum class ItemStatus {
  kOk,           // resolved
  kInlinedOnly,  // no out-of-line copy: every instance is inlined into callers
  kNotFound,     // absent from this build
  kNoDebuginfo,  // needs DWARF and none was found (members, sizes)
  kError,        // the DWARF was there but could not be read (message says why)
};

struct FunctionInstance {
  std::string linkage_name;  // tells overloads apart; empty for inlined copies
  std::string symbol;        // the symbol at vaddr, when one exists (clones: "f.isra.0")
  uint64_t vaddr = 0;
  uint64_t file_offset = 0;  // what a uprobe takes
  uint64_t size = 0;
  bool inlined = false;
  bool clone = false;      // compiler-made copy: calling convention may differ
  std::string entry_insn;  // "push", "branch", "nop", "endbr64", "ret", "other": see x86.h
  std::string caller;      // inlined only: the function it was inlined into
};

struct FunctionEntry {
  std::string name;  // qualified, as asked: "OSD::dequeue_op"
  ItemStatus status = ItemStatus::kNotFound;
  std::string message;
  std::vector<FunctionInstance> instances;
};

struct MemberEntry {
  std::string type;  // "OpRequest"
  std::string path;  // "reqid.name._num"
  ItemStatus status = ItemStatus::kNotFound;
  std::string message;
  uint64_t offset = 0;  // bytes from the start of TYPE, through bases and nested members
  uint64_t size = 0;
  std::string type_name;
  std::optional<uint32_t> bit_offset;  // bit-fields only: bits from OFFSET
  std::optional<uint32_t> bit_size;
};

// A direct call inside a function (x86-64): call rel32, so its return address is 5 bytes on.
inline constexpr uint64_t kCallSize = 5;
// The registers a callee keeps (System V x86-64), the names CallSite::rsi_saved_in takes.
inline constexpr std::array<std::string_view, 6> kCalleeSaved = {"rbx", "rbp", "r12",
                                                                 "r13", "r14", "r15"};
struct CallSite {
  uint64_t vaddr = 0;
  uint64_t file_offset = 0;     // what a uprobe takes
  std::optional<uint32_t> ecx;  // `mov $imm32, %ecx` in its argument set-up, if any
  // The callee-saved register the set-up copied the second argument (rsi) from, when no direct
  // jump of the function lands in the set-up or on the return address: a probe there sees
  // that argument in it, and in rax what the callee returned.
  std::optional<std::string> rsi_saved_in;
};

// The direct calls of CALLEE in the out-of-line copy of FUNCTION, as the probe set asked.
struct CallSiteEntry {
  std::string function;
  std::string callee;
  ItemStatus status = ItemStatus::kNotFound;
  std::string message;
  std::vector<CallSite> sites;
};

struct TypeEntry {
  std::string name;
  ItemStatus status = ItemStatus::kNotFound;
  std::string message;
  uint64_t size = 0;
};

struct Profile {
  int schema_version = kSchemaVersion;
  std::string build_id;     // lower-case hex
  std::string object;       // "ceph-osd", "librados.so.2"
  std::string binary_path;  // where it was resolved from (informational)
  std::string source;       // "dwarf" or "symtab"
  std::string debug_file;   // empty for "symtab"
  std::string probe_set;    // name of the probe-set spec
  std::string probe_set_digest;
  std::string generator;  // "cephscope 0.1.0"
  std::string created;    // UTC, ISO 8601
  std::vector<FunctionEntry> functions;
  std::vector<TypeEntry> types;
  std::vector<MemberEntry> members;
  std::vector<CallSiteEntry> call_sites;
  std::vector<Marker> markers;  // every static marker of the binary, when the set asks

  [[nodiscard]] const FunctionEntry* function(std::string_view name) const;
  [[nodiscard]] const TypeEntry* type(std::string_view name) const;
  [[nodiscard]] const MemberEntry* member(std::string_view type, std::string_view path) const;
  [[nodiscard]] const CallSiteEntry* calls(std::string_view function,
                                           std::string_view callee) const;
};

// Reads the member offsets a collector's layout takes from a profile; the members the profile
// lacks are named in missing() ("Type::path, ...").
class MemberOffsets {
 public:
  explicit MemberOffsets(const Profile& p) : p_(p) {}
  // Sets INTO to TYPE::PATH's offset; false when the profile has it unresolved or not at all.
  bool operator()(std::string_view type, std::string_view path, uint32_t& into);
  // The same for a member a build may lack by design (one of two routes to a value, a detail
  // only some builds have): not named in missing().
  bool optional(std::string_view type, std::string_view path, uint32_t& into) const;
  [[nodiscard]] const std::string& missing() const { return missing_; }

 private:
  const Profile& p_;
  std::string missing_;
};

// The out-of-line copy of function NAME (not inlined, not a clone), or why there is none.
Result<const FunctionInstance*> out_of_line(const Profile& p, std::string_view name);
// Where a uprobe on F goes: past a CET endbr64, which the kernel would single-step.
uint64_t entry_offset(const FunctionInstance& f);

std::string_view to_string(ItemStatus s);
std::optional<ItemStatus> item_status_from(std::string_view s);
// "rdi" for 5, "" when out of range.
std::string_view dwarf_reg_name(int reg);
int dwarf_reg_from(std::string_view name);  // -1 when unknown

}  // namespace cephscope::profile
