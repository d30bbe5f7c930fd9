#include "profile/x86.h"

#include <capstone/capstone.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "profile/elf_file.h"

namespace cephscope::profile {
namespace {

constexpr std::uint64_t kArgWindow = 24;  // a call's argument set-up sits right before it

// The 64-bit register a write of REG changes, for rsi and the callee-saved ones (a write of
// a 32-bit half clears the upper one; of a smaller part, changes it); REG itself otherwise.
unsigned full_register(unsigned reg) {
  static const std::map<unsigned, unsigned> kParts = {
      {X86_REG_ESI, X86_REG_RSI},  {X86_REG_SI, X86_REG_RSI},   {X86_REG_SIL, X86_REG_RSI},
      {X86_REG_EBX, X86_REG_RBX},  {X86_REG_BX, X86_REG_RBX},   {X86_REG_BL, X86_REG_RBX},
      {X86_REG_BH, X86_REG_RBX},   {X86_REG_EBP, X86_REG_RBP},  {X86_REG_BP, X86_REG_RBP},
      {X86_REG_BPL, X86_REG_RBP},  {X86_REG_R12D, X86_REG_R12}, {X86_REG_R12W, X86_REG_R12},
      {X86_REG_R12B, X86_REG_R12}, {X86_REG_R13D, X86_REG_R13}, {X86_REG_R13W, X86_REG_R13},
      {X86_REG_R13B, X86_REG_R13}, {X86_REG_R14D, X86_REG_R14}, {X86_REG_R14W, X86_REG_R14},
      {X86_REG_R14B, X86_REG_R14}, {X86_REG_R15D, X86_REG_R15}, {X86_REG_R15W, X86_REG_R15},
      {X86_REG_R15B, X86_REG_R15}};
  const auto it = kParts.find(reg);
  return it == kParts.end() ? reg : it->second;
}

// One decoded instruction at a time, in capstone's own buffer.
class Insns {
 public:
  Insns(csh handle, std::span<const std::uint8_t> code, std::uint64_t vaddr)
      : handle_(handle),
        insn_(cs_malloc(handle)),
        code_(code.data()),
        size_(code.size()),
        address_(vaddr) {}
  Insns(const Insns&) = delete;
  Insns& operator=(const Insns&) = delete;
  ~Insns() {
    if (insn_ != nullptr) {
      cs_free(insn_, 1);
    }
  }
  // The next instruction; nullptr at the end of the code or at bytes that decode to none.
  const cs_insn* next() {
    if (insn_ == nullptr || !cs_disasm_iter(handle_, &code_, &size_, &address_, insn_)) {
      return nullptr;
    }
    return insn_;
  }
  [[nodiscard]] std::uint64_t address() const { return address_; }  // of the next one

 private:
  csh handle_;
  cs_insn* insn_;
  const std::uint8_t* code_;
  std::size_t size_;
  std::uint64_t address_;
};

const cs_x86_op* first_operand(const cs_insn* i) {
  return i->detail != nullptr && i->detail->x86.op_count > 0 ? &i->detail->x86.operands[0]
                                                             : nullptr;
}

}  // namespace

struct X86Decoder::Handle {
  csh cs = 0;
  Handle() = default;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() {
    if (cs != 0) {
      cs_close(&cs);
    }
  }
};

X86Decoder::X86Decoder(std::unique_ptr<Handle> handle) : handle_(std::move(handle)) {}
X86Decoder::X86Decoder(X86Decoder&&) noexcept = default;
X86Decoder& X86Decoder::operator=(X86Decoder&&) noexcept = default;
X86Decoder::~X86Decoder() = default;

Result<X86Decoder> X86Decoder::open() {
  auto h = std::make_unique<Handle>();
  if (cs_open(CS_ARCH_X86, CS_MODE_64, &h->cs) != CS_ERR_OK ||
      cs_option(h->cs, CS_OPT_DETAIL, CS_OPT_ON) != CS_ERR_OK) {
    return make_error(ErrorKind::kSystem, "capstone: cannot open an x86-64 disassembler");
  }
  return X86Decoder(std::move(h));
}

std::string_view X86Decoder::entry_kind(std::span<const std::uint8_t> code) const {
  Insns insns(handle_->cs, code, 0);
  const cs_insn* i = insns.next();
  if (i == nullptr) {
    return "";
  }
  const cs_x86_op* op = first_operand(i);
  switch (i->id) {
    case X86_INS_ENDBR64:
      return "endbr64";
    case X86_INS_PUSH:
      return op != nullptr && op->type == X86_OP_REG ? "push" : "other";
    case X86_INS_NOP:
      return "nop";
    case X86_INS_RET:
      return "ret";
    default:
      break;
  }
  const bool branch =
      cs_insn_group(handle_->cs, i, CS_GRP_JUMP) || cs_insn_group(handle_->cs, i, CS_GRP_CALL);
  return branch && op != nullptr && op->type == X86_OP_IMM ? "branch" : "other";
}

std::vector<CallSite> X86Decoder::calls_to(std::span<const std::uint8_t> code, std::uint64_t vaddr,
                                           std::uint64_t file_offset, std::uint64_t callee) const {
  std::vector<CallSite> out;
  std::vector<std::uint64_t> rsi_copied_at;  // per site: where rsi was copied, 0 if not known
  std::set<std::uint64_t> jump_targets;
  Insns insns(handle_->cs, code, vaddr);
  std::optional<std::uint32_t> ecx;  // the last `mov $imm32, %ecx` and where it started
  std::uint64_t ecx_at = 0;
  unsigned rsi_from = 0;  // the callee-saved register rsi was last copied from, and where
  std::uint64_t rsi_at = 0;
  for (const cs_insn* i = insns.next(); i != nullptr; i = insns.next()) {
    const cs_x86_op* op = first_operand(i);
    const bool two_operands = op != nullptr && i->detail->x86.op_count == 2;
    const bool jump = cs_insn_group(handle_->cs, i, CS_GRP_JUMP);
    if (jump && op != nullptr && op->type == X86_OP_IMM) {
      jump_targets.insert(static_cast<std::uint64_t>(op->imm));
    }
    if (i->id == X86_INS_CALL && op != nullptr && op->type == X86_OP_IMM &&
        static_cast<std::uint64_t>(op->imm) == callee) {
      const bool near = ecx && i->address - ecx_at <= kArgWindow;
      const bool kept = rsi_from != 0 && i->size == kCallSize;
      out.push_back(
          {i->address, file_offset + (i->address - vaddr), near ? ecx : std::nullopt,
           kept ? std::optional<std::string>(cs_reg_name(handle_->cs, rsi_from)) : std::nullopt});
      rsi_copied_at.push_back(kept ? rsi_at : 0);
    }
    if (i->id == X86_INS_MOV && two_operands && op->type == X86_OP_REG && op->reg == X86_REG_ECX &&
        i->detail->x86.operands[1].type == X86_OP_IMM) {
      ecx = static_cast<std::uint32_t>(i->detail->x86.operands[1].imm);
      ecx_at = i->address;
    }
    // A call, a jump or a write of rsi or of the register it came from ends what rsi holds.
    cs_regs read{}, written{};
    std::uint8_t n_read = 0, n_written = 0;
    if (cs_regs_access(handle_->cs, i, read, &n_read, written, &n_written) != CS_ERR_OK ||
        cs_insn_group(handle_->cs, i, CS_GRP_CALL) || jump) {
      rsi_from = 0;
      continue;
    }
    for (std::uint8_t w = 0; w < n_written; ++w) {
      const unsigned whole = full_register(written[w]);
      if (whole == X86_REG_RSI || (rsi_from != 0 && whole == rsi_from)) {
        rsi_from = 0;
      }
    }
    if (i->id == X86_INS_MOV && two_operands && op->type == X86_OP_REG && op->reg == X86_REG_RSI &&
        i->detail->x86.operands[1].type == X86_OP_REG &&
        std::find(kCalleeSaved.begin(), kCalleeSaved.end(),
                  cs_reg_name(handle_->cs, i->detail->x86.operands[1].reg)) != kCalleeSaved.end()) {
      rsi_from = i->detail->x86.operands[1].reg;
      rsi_at = i->address;
    }
  }
  // Another path into the set-up, or onto the return address, would bring other registers.
  for (std::size_t k = 0; k < out.size(); ++k) {
    auto& site = out[k];
    const auto in_setup = jump_targets.upper_bound(rsi_copied_at[k]);
    if (site.rsi_saved_in && ((in_setup != jump_targets.end() && *in_setup <= site.vaddr) ||
                              jump_targets.contains(site.vaddr + kCallSize))) {
      site.rsi_saved_in.reset();
    }
  }
  return out;
}

Status X86Decoder::boundary(std::span<const std::uint8_t> code, std::uint64_t vaddr,
                            std::uint64_t distance) const {
  Insns insns(handle_->cs, code, vaddr);
  const std::uint64_t target = vaddr + distance;
  while (insns.address() < target) {
    if (insns.next() == nullptr) {
      return make_error(ErrorKind::kInvalidInput,
                        "no valid instruction at " + hex_u64(insns.address()) +
                            " on the way from " + hex_u64(vaddr) + " to " + hex_u64(target));
    }
  }
  if (insns.address() != target) {
    return make_error(ErrorKind::kInvalidInput, hex_u64(target) + " is inside an instruction " +
                                                    "(disassembled from " + hex_u64(vaddr) + ")");
  }
  if (insns.next() == nullptr) {
    return make_error(ErrorKind::kInvalidInput, "no valid instruction at " + hex_u64(target));
  }
  return ok_status();
}

}  // namespace cephscope::profile
