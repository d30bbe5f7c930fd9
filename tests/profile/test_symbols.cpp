#include <catch2/catch.hpp>

#include "profile/elf_file.h"
#include "profile/x86.h"
#include "resolver/symbols.h"

using namespace cephscope::profile;

TEST_CASE("qualified names from demangled names", "[unit][symbols]") {
  CHECK(qualified_name("OSD::dequeue_op(boost::intrusive_ptr<PG>, std::shared_ptr<OpRequest>, "
                       "ThreadPool::TPHandle&)") == "OSD::dequeue_op");
  CHECK(qualified_name("OSD::dequeue_op(int) [clone .isra.0]") == "OSD::dequeue_op");
  CHECK(qualified_name("OSD::dequeue_op(int) [clone .isra.0] [clone .cold]") == "OSD::dequeue_op");
  CHECK(qualified_name("BlueStore::TransContext::~TransContext()") ==
        "BlueStore::TransContext::~TransContext");
  CHECK(qualified_name("void std::vector<int, std::allocator<int> >::_M_realloc_insert<int "
                       "const&>(int const&)") ==
        "std::vector<int, std::allocator<int> >::_M_realloc_insert<int const&>");
  CHECK(qualified_name("(anonymous namespace)::helper(int)") == "(anonymous namespace)::helper");
  CHECK(qualified_name("Foo::operator()(int) const") == "Foo::operator()");
  CHECK(qualified_name("operator new(unsigned long)") == "operator new");
  CHECK(qualified_name("Message::get_type_name[abi:cxx11]() const") == "Message::get_type_name");
  CHECK(qualified_name("main") == "main");
  CHECK(demangle("_ZN3OSD10dequeue_opEv") == "OSD::dequeue_op()");
  CHECK(demangle("not_mangled") == "not_mangled");
  CHECK(demangle("_Zgarbage") == "_Zgarbage");
  CHECK(is_clone("_ZN3OSD10dequeue_opEv.isra.0"));
  CHECK(is_clone("_ZN3OSD10dequeue_opEv.cold"));
  CHECK_FALSE(is_clone("_ZN3OSD10dequeue_opEv"));
  CHECK(scope_of("a::B<c::D>::f") == "a::B<c::D>");
  CHECK(last_component("a::B<c::D>::f") == "f");
  CHECK(scope_of("f").empty());
}

TEST_CASE("symbol index finds overloads and scopes", "[unit][symbols]") {
  auto elf = ElfFile::open(FIXTURE_O2);
  REQUIRE(elf.ok());
  auto syms = read_function_symbols(*elf);
  REQUIRE(syms.ok());
  SymbolIndex index(std::move(syms).value());
  auto scale = index.named("fx::Derived::scale");
  CHECK(scale.size() == 2);  // long and double overloads
  auto derived = index.in_scope("fx::Derived");
  CHECK(derived.size() >= 5);
  CHECK(index.named("fx::Derived::nothing").empty());
  // Only candidates were demangled, not the whole table.
  CHECK(index.demangled_count() < index.size());
  REQUIRE_FALSE(scale.empty());
  CHECK(index.at(scale[0]->vaddr) == scale[0]);
}

TEST_CASE("entry instruction kinds", "[unit][insn]") {
  using B = std::vector<uint8_t>;
  auto x86 = X86Decoder::open();
  REQUIRE(x86.ok());
  auto kind = [&](const B& code) { return x86->entry_kind(code); };
  CHECK(kind(B{0x55, 0x48, 0x89, 0xe5}) == "push");
  CHECK(kind(B{0x41, 0x57}) == "push");
  CHECK(kind(B{0x6a, 0x01}) == "other");  // push $1: not a register, single-stepped
  CHECK(kind(B{0xf3, 0x0f, 0x1e, 0xfa}) == "endbr64");
  CHECK(kind(B{0xe9, 0, 0, 0, 0}) == "branch");
  CHECK(kind(B{0xe8, 0, 0, 0, 0}) == "branch");
  CHECK(kind(B{0x74, 0x05}) == "branch");
  CHECK(kind(B{0xff, 0xe0}) == "other");  // jmp *%rax: indirect, single-stepped
  CHECK(kind(B{0x0f, 0x1f, 0x44, 0x00, 0x00}) == "nop");
  CHECK(kind(B{0x90}) == "nop");
  CHECK(kind(B{0xc3}) == "ret");
  CHECK(kind(B{0xf3, 0xc3}) == "ret");
  CHECK(kind(B{0x48, 0x89, 0xf8}) == "other");  // mov: single-stepped
  CHECK(kind(B{0x0f, 0x0b}) == "other");        // ud2
  CHECK(kind(B{}).empty());
  CHECK(kind(B{0x48}).empty());  // a prefix alone: no instruction
}
