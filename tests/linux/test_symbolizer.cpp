// The native symbolizer on this very process: functions of this file by demangled name and exact line (needs -g),
// a caller's line from its return address, libraries with and without debug information, a library loaded
// after the module list was read, addresses in no module, and the cache.
#include "ojx/hardware/symbolizer.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <dlfcn.h>
#include <unistd.h>
#include <string>

using ojx::hardware::symbolizer;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace ojx_symbolizer_test {

volatile int sink = 0;

__attribute__((noinline, noclone)) std::uint64_t return_address() {
    return reinterpret_cast<std::uint64_t>(__builtin_return_address(0));
}

// Returns the return address of a call made from the line it stores in `line`.
__attribute__((noinline, noclone)) std::uint64_t call_site(int& line) {
    line = __LINE__; const std::uint64_t pc = return_address();
    sink = sink + 1; // work after the call, so that it is not a tail call
    return pc;
}

// A call inside code inlined into `inlining_caller`: the frame is named by the function the symbol table knows,
// with the line in that function where the inlined code was called, not the inlined helper's own line.
__attribute__((always_inline)) inline std::uint64_t inlined_helper() {
    const std::uint64_t pc = return_address();
    sink = sink + 1;
    return pc;
}

__attribute__((noinline, noclone)) std::uint64_t inlining_caller(int& line) {
    line = __LINE__; const std::uint64_t pc = inlined_helper();
    sink = sink + 1;
    return pc;
}

__attribute__((noinline, noclone)) int entry_probe(int x) { return x * 3 + sink; } constexpr int entry_line = __LINE__;

template <class T>
struct holder {
    __attribute__((noinline, noclone)) static T twice(T x) { return x + x + sink; } static constexpr int at = __LINE__;
};

} // namespace ojx_symbolizer_test

namespace {

std::uint64_t address_of(void* symbol) { return reinterpret_cast<std::uint64_t>(symbol); }

// A function of a loaded library, its own definition (not a sanitizer's interceptor of the same name).
std::uint64_t library_function(const char* library, const char* name) {
    void* handle = dlopen(library, RTLD_NOW | RTLD_NOLOAD);
    REQUIRE(handle != nullptr);
    void* symbol = dlsym(handle, name);
    dlclose(handle);
    REQUIRE(symbol != nullptr);
    return address_of(symbol);
}

} // namespace

TEST_CASE("a function of this file: demangled name with namespace, file and line", "[symbolizer]") {
    namespace t = ojx_symbolizer_test;
    symbolizer names;
    CHECK(names.frame_name(reinterpret_cast<std::uint64_t>(&t::entry_probe), false) ==
          "ojx_symbolizer_test::entry_probe(int) (test_symbolizer.cpp:" + std::to_string(t::entry_line) + ")");
    CHECK(names.frame_name(reinterpret_cast<std::uint64_t>(&t::holder<long>::twice), false) ==
          "ojx_symbolizer_test::holder<long>::twice(long) (test_symbolizer.cpp:" +
              std::to_string(t::holder<long>::at) + ")");
    CHECK(t::entry_probe(1) + t::holder<long>::twice(2) >= 7); // they run
}

TEST_CASE("a return address names the line of the call", "[symbolizer]") {
    symbolizer names;
    int line = 0;
    const std::uint64_t pc = ojx_symbolizer_test::call_site(line);
    REQUIRE(line > 0);
    CHECK(names.frame_name(pc, true) ==
          "ojx_symbolizer_test::call_site(int&) (test_symbolizer.cpp:" + std::to_string(line) + ")");
    // Looked up as a leaf instead, the same address is still in the same function.
    CHECK_THAT(names.frame_name(pc, false), StartsWith("ojx_symbolizer_test::call_site(int&) (test_symbolizer.cpp:"));
}

TEST_CASE("a call from inlined code names the line where it was inlined", "[symbolizer]") {
    symbolizer names;
    int line = 0;
    const std::uint64_t pc = ojx_symbolizer_test::inlining_caller(line);
    CHECK(names.frame_name(pc, true) ==
          "ojx_symbolizer_test::inlining_caller(int&) (test_symbolizer.cpp:" + std::to_string(line) + ")");
}

TEST_CASE("libc functions are named by their source or their library", "[symbolizer]") {
    symbolizer names;
    const std::string name = names.frame_name(library_function("libc.so.6", "malloc"), false);
    INFO(name);
    CHECK_THAT(name, Contains("malloc"));
    CHECK_THAT(name, Contains("(libc.so.6)") || Contains(".c:"));
    CHECK_THAT(name, !StartsWith("0x"));
}

TEST_CASE("without line information: demangled name, offset, library", "[symbolizer]") {
    symbolizer names;
    // libstdc++ ships without debug information unless its -dbg package is installed.
    const std::uint64_t new_ = library_function("libstdc++.so.6", "_Znwm");
    const std::string at_entry = names.frame_name(new_, false);
    INFO(at_entry);
    CHECK_THAT(at_entry, StartsWith("operator new(unsigned long) ("));
    // The library is named by its file's name as mapped (here libstdc++.so.6.0.30, the soname's link target).
    CHECK_THAT(at_entry, Contains("(libstdc++.so.6") || Contains(":"));
    CHECK_THAT(at_entry, !Contains("+0x")); // no offset at the function's first byte
    const std::string inside = names.frame_name(new_ + 4, false);
    INFO(inside);
    CHECK((StartsWith("operator new(unsigned long)+0x4 (libstdc++.so.6").match(inside) ||
           (StartsWith("operator new(unsigned long) (").match(inside) && Contains(":").match(inside))));
}

TEST_CASE("a library loaded after the module list was read is found", "[symbolizer]") {
    symbolizer names;
    CHECK(names.stats().module_list_reads == 0); // nothing read before the first lookup
    CHECK_THAT(names.frame_name(reinterpret_cast<std::uint64_t>(&ojx_symbolizer_test::entry_probe), false),
               StartsWith("ojx_symbolizer_test::entry_probe(int)"));
    CHECK(names.stats().module_list_reads == 1);

    if (dlopen("libcrypt.so.1", RTLD_NOW | RTLD_NOLOAD) != nullptr) FAIL("libcrypt.so.1 is already loaded");
    void* crypt_library = dlopen("libcrypt.so.1", RTLD_NOW | RTLD_LOCAL);
    REQUIRE(crypt_library != nullptr);
    void* crypt_r = dlsym(crypt_library, "crypt_r"); // 0x34 bytes long in libxcrypt 4.4
    REQUIRE(crypt_r != nullptr);
    const std::string name = names.frame_name(address_of(crypt_r) + 0x10, true);
    INFO(name);
    // The caller-frame offset shown is pc's own (0x10), although pc - 1 was looked up. The name may be any alias
    // at that address (libxcrypt's symbol table has crypt_r and xcrypt_r).
    CHECK((Contains("crypt_r+0x10 (libcrypt.so.1").match(name) ||
           (Contains("crypt_r (").match(name) && Contains(":").match(name))));
    CHECK(names.stats().module_list_reads == 2);
    dlclose(crypt_library);
}

TEST_CASE("an address of a module that no symbol covers is named by its offset in the module", "[symbolizer]") {
    // The ELF header at a library's start is covered by no symbol; its offset is the same in every run, where
    // the address moves with address-space randomization.
    Dl_info info{};
    // getpid: libc's own under every sanitizer (ASan's malloc is its runtime's).
    REQUIRE(dladdr(reinterpret_cast<void*>(&getpid), &info) != 0);
    symbolizer names;
    const std::string name = names.frame_name(address_of(info.dli_fbase) + 0x10, false);
    INFO(name);
    CHECK_THAT(name, StartsWith("libc.so.6+0x10"));
}

TEST_CASE("an address in no module is a hex number, and does not reread the modules", "[symbolizer]") {
    symbolizer names;
    CHECK(names.frame_name(0x10, false) == "0x10");
    const auto reads = names.stats().module_list_reads;
    CHECK(names.frame_name(0x18, true) == "0x18"); // the shown address is pc, not pc - 1
    CHECK(names.frame_name(0, true) == "0x0");
    CHECK(names.frame_name(0xffff800000001234, false) == "0xffff800000001234");
    CHECK(names.stats().module_list_reads == reads);
}

TEST_CASE("names are cached per address and kind of lookup", "[symbolizer]") {
    symbolizer names;
    int line = 0;
    const std::uint64_t pc = ojx_symbolizer_test::call_site(line);
    const std::string first = names.frame_name(pc, true);
    CHECK(names.stats().lookups == 1);
    CHECK(names.stats().cache_hits == 0);
    CHECK(names.frame_name(pc, true) == first);
    CHECK(names.stats().cache_hits == 1);
    names.frame_name(pc, false); // a different question about the same address
    CHECK(names.stats().cache_hits == 1);
    names.frame_name(pc, false);
    names.frame_name(0x10, false);
    names.frame_name(0x10, false);
    CHECK(names.stats().lookups == 6);
    CHECK(names.stats().cache_hits == 3);
    CHECK(names.stats().module_list_reads == 1);
}
