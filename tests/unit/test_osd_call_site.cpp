// Call sites: the resolver's direct calls to one callee with the constant in ecx before each
// (profile/x86.h), on hand-assembled x86-64 (the shape GCC gives BlueStore::_txc_state_proc),
// and the io_done call the OSD collector picks among them.
#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "collectors/osd/osd_call_site.h"
#include "profile/x86.h"

using namespace cephscope::osd;
using cephscope::profile::CallSite;
using cephscope::profile::X86Decoder;

namespace {

constexpr uint64_t kFunc = 0x1000;    // vaddr of the scanned function
constexpr uint64_t kOffset = 0x800;   // its file offset
constexpr uint64_t kCallee = 0x5000;  // log_state_latency

void put32(std::vector<uint8_t>& code, uint32_t v) {
  for (int i = 0; i < 4; ++i) {
    code.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
}

// mov $id,%ecx; mov %rbp,%rsi; call TARGET
void logged_call(std::vector<uint8_t>& code, uint32_t id, uint64_t target = kCallee) {
  code.push_back(0xb9);
  put32(code, id);
  code.insert(code.end(), {0x48, 0x89, 0xee});
  code.push_back(0xe8);
  put32(code, static_cast<uint32_t>(target - (kFunc + code.size() + 4)));
}

std::vector<CallSite> find_calls(const std::vector<uint8_t>& code) {
  auto x86 = X86Decoder::open();
  REQUIRE(x86.ok());
  return x86->calls_to(code, kFunc, kOffset, kCallee);
}

}  // namespace

TEST_CASE("calls to one callee are found with the id moved into ecx", "[unit][call_site]") {
  std::vector<uint8_t> code = {0x41, 0x57, 0x41, 0x56};  // push r15; push r14
  logged_call(code, 732436);                             // aio_wait
  code.insert(code.end(), {0x90, 0x90});
  logged_call(code, 732437);                  // io_done
  logged_call(code, 732437, kCallee + 0x40);  // same id, another callee: not ours
  logged_call(code, 732435);                  // prepare
  logged_call(code, 732440);                  // kv_done

  const auto calls = find_calls(code);
  REQUIRE(calls.size() == 4);
  CHECK(calls[0].ecx == 732436u);
  CHECK(calls[1].ecx == 732437u);
  CHECK(calls[1].vaddr == kFunc + 4 + 13 + 2 + 8);
  CHECK(calls[1].file_offset == calls[1].vaddr - kFunc + kOffset);
  for (const auto& c : calls) {
    CHECK(c.rsi_saved_in == "rbp");  // mov %rbp,%rsi: rbp keeps the transaction past the call
  }

  const auto io_done = third_state_call(calls);
  REQUIRE(io_done.ok());
  CHECK(io_done->vaddr == calls[1].vaddr);
}

TEST_CASE("a mov into r9d is not an id, and a broken run of ids is refused", "[unit][call_site]") {
  std::vector<uint8_t> code;
  code.insert(code.end(), {0x41, 0xb9});  // mov $imm,%r9d
  put32(code, 7);
  code.push_back(0xe8);
  put32(code, static_cast<uint32_t>(kCallee - (kFunc + code.size() + 4)));
  auto calls = find_calls(code);
  REQUIRE(calls.size() == 1);
  CHECK_FALSE(calls[0].ecx.has_value());
  CHECK_FALSE(third_state_call(calls).ok());

  code.clear();
  logged_call(code, 10);
  logged_call(code, 12);  // no 11: not the prepare, aio_wait, io_done run
  CHECK_FALSE(third_state_call(find_calls(code)).ok());

  code.clear();
  logged_call(code, 10);
  logged_call(code, 11);
  logged_call(code, 12);
  logged_call(code, 12);  // two candidates: ambiguous
  CHECK_FALSE(third_state_call(find_calls(code)).ok());
  CHECK(find_calls({}).empty());
}

TEST_CASE("the register that keeps rsi past a call is named only when nothing can change it",
          "[unit][call_site]") {
  auto jump_to = [](std::vector<uint8_t>& code, uint64_t target) {  // jmp rel32
    code.push_back(0xe9);
    put32(code, static_cast<uint32_t>(target - (kFunc + code.size() + 4)));
  };
  std::vector<uint8_t> code;
  logged_call(code, 10);
  code.insert(code.end(), {0x48, 0x89, 0xde});  // mov %rbx,%rsi
  code.push_back(0xe8);
  put32(code, static_cast<uint32_t>(kCallee - (kFunc + code.size() + 4)));
  code.insert(code.end(), {0x48, 0x89, 0xfe});  // mov %rdi,%rsi: rdi is the callee's to change
  code.push_back(0xe8);
  put32(code, static_cast<uint32_t>(kCallee - (kFunc + code.size() + 4)));
  code.insert(code.end(), {0x4c, 0x89, 0xe6, 0x41, 0xbc});  // mov %r12,%rsi; mov $1,%r12d
  put32(code, 1);
  code.push_back(0xe8);
  put32(code, static_cast<uint32_t>(kCallee - (kFunc + code.size() + 4)));
  auto calls = find_calls(code);
  REQUIRE(calls.size() == 4);
  CHECK(calls[0].rsi_saved_in == "rbp");
  CHECK(calls[1].rsi_saved_in == "rbx");
  CHECK_FALSE(calls[2].rsi_saved_in.has_value());
  CHECK_FALSE(calls[3].rsi_saved_in.has_value());  // r12 was written after the copy

  // A jump onto a return address, or into a call's set-up, brings other registers there.
  code.clear();
  logged_call(code, 10);
  logged_call(code, 11);
  const uint64_t second_setup = kFunc + 13 + 5;  // the second call's mov %rbp,%rsi
  jump_to(code, kFunc + 13);                     // the first call's return address
  jump_to(code, second_setup + 3);               // between the second's copy and its call
  calls = find_calls(code);
  REQUIRE(calls.size() == 2);
  CHECK_FALSE(calls[0].rsi_saved_in.has_value());
  CHECK_FALSE(calls[1].rsi_saved_in.has_value());
}
