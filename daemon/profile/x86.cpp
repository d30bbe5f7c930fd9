#include "profile/x86.h"

#include <capstone/capstone.h>

#include <cstdio>
#include <string>

namespace cephscope::profile {
namespace {

constexpr std::uint64_t kArgWindow = 24;  // a call's argument set-up sits right before it

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%#llx", static_cast<unsigned long long>(v));
  return buf;
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
  Insns insns(handle_->cs, code, vaddr);
  std::optional<std::uint32_t> ecx;  // the last `mov $imm32, %ecx` and where it started
  std::uint64_t ecx_at = 0;
  for (const cs_insn* i = insns.next(); i != nullptr; i = insns.next()) {
    const cs_x86_op* op = first_operand(i);
    if (i->id == X86_INS_MOV && op != nullptr && i->detail->x86.op_count == 2 &&
        op->type == X86_OP_REG && op->reg == X86_REG_ECX &&
        i->detail->x86.operands[1].type == X86_OP_IMM) {
      ecx = static_cast<std::uint32_t>(i->detail->x86.operands[1].imm);
      ecx_at = i->address;
    } else if (i->id == X86_INS_CALL && op != nullptr && op->type == X86_OP_IMM &&
               static_cast<std::uint64_t>(op->imm) == callee) {
      const bool near = ecx && i->address - ecx_at <= kArgWindow;
      out.push_back({i->address, file_offset + (i->address - vaddr), near ? ecx : std::nullopt});
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
      return make_error(ErrorKind::kInvalidInput, "no valid instruction at " +
                                                      hex(insns.address()) + " on the way from " +
                                                      hex(vaddr) + " to " + hex(target));
    }
  }
  if (insns.address() != target) {
    return make_error(ErrorKind::kInvalidInput, hex(target) + " is inside an instruction " +
                                                    "(disassembled from " + hex(vaddr) + ")");
  }
  if (insns.next() == nullptr) {
    return make_error(ErrorKind::kInvalidInput, "no valid instruction at " + hex(target));
  }
  return ok_status();
}

}  // namespace cephscope::profile
