// module_symbols gives dwfl_module_addrinfo's answer (name and offset) for every address of the modules of this
// process: symbols' first, middle, last and one-past-last bytes, and addresses spread over each module.
#include "ojx/hardware/module_symbols.hpp"

#include "ojx/random.hpp"

#include <catch2/catch.hpp>

#include <elfutils/libdwfl.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

using ojx::hardware::module_symbols;

namespace {

const Dwfl_Callbacks callbacks = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = dwfl_build_id_find_debuginfo,
    .section_address = nullptr,
    .debuginfo_path = nullptr,
};

struct dwfl_end_deleter {
    void operator()(Dwfl* dwfl) const noexcept { dwfl_end(dwfl); }
};

struct comparison {
    std::string module;
    std::size_t addresses = 0;
    std::size_t named = 0; // addresses libdwfl names
    std::vector<std::string> differences;
};

void compare_at(Dwfl_Module* module, const module_symbols& index, std::uint64_t address, comparison& into) {
    GElf_Off offset = 0;
    GElf_Sym symbol;
    const char* expected = dwfl_module_addrinfo(module, address, &offset, &symbol, nullptr, nullptr, nullptr);
    const auto got = index.lookup(address);
    ++into.addresses;
    if (expected != nullptr) ++into.named;
    const bool same = expected == nullptr ? !got.has_value()
                                          : got.has_value() && std::strcmp(got->name, expected) == 0 &&
                                                got->offset == offset;
    if (!same && into.differences.size() < 5)
        into.differences.push_back(std::to_string(address) + ": libdwfl " + (expected ? expected : "(none)") + "+" +
                                   std::to_string(offset) + ", index " + (got ? got->name : "(none)") + "+" +
                                   std::to_string(got ? got->offset : 0));
}

} // namespace

TEST_CASE("every address of this process's modules is named as libdwfl names it", "[symbolizer]") {
    std::unique_ptr<Dwfl, dwfl_end_deleter> dwfl(dwfl_begin(&callbacks));
    REQUIRE(dwfl != nullptr);
    dwfl_report_begin(dwfl.get());
    REQUIRE(dwfl_linux_proc_report(dwfl.get(), getpid()) == 0);
    dwfl_report_end(dwfl.get(), nullptr, nullptr);

    std::vector<comparison> results;
    dwfl_getmodules(
        dwfl.get(),
        [](Dwfl_Module* module, void**, const char* name, Dwarf_Addr start, void* raw) -> int {
            auto& found = *static_cast<std::vector<comparison>*>(raw);
            const std::string module_name = name != nullptr ? name : "";
            if (module_name.find("[vdso") != std::string::npos) return DWARF_CB_OK;
            comparison c{module_name, 0, 0, {}};
            const module_symbols index(module);
            // dwfl_module_addrinfo reads the whole table at every call: a stride keeps the test to a second.
            const int count = dwfl_module_getsymtab(module);
            const int stride = count / 400 + 1;
            for (int i = 1; i < count; i += stride) {
                GElf_Sym symbol;
                GElf_Addr at = 0;
                if (dwfl_module_getsym_info(module, i, &symbol, &at, nullptr, nullptr, nullptr) == nullptr) continue;
                if (at < start) continue;
                for (const std::uint64_t delta : {std::uint64_t{0}, symbol.st_size / 2, symbol.st_size})
                    compare_at(module, index, at + delta, c);
                if (symbol.st_size > 0) compare_at(module, index, at + symbol.st_size - 1, c);
            }
            Dwarf_Addr end = 0;
            dwfl_module_info(module, nullptr, nullptr, &end, nullptr, nullptr, nullptr, nullptr);
            ojx::fast_random rng(static_cast<std::uint64_t>(start));
            for (int i = 0; i < 400 && end > start; ++i) compare_at(module, index, start + rng.below(end - start), c);
            found.push_back(std::move(c));
            return DWARF_CB_OK;
        },
        &results, 0);

    bool libc_seen = false;
    for (const comparison& c : results) {
        INFO(c.module << ": " << c.addresses << " addresses, " << c.named << " named by libdwfl");
        for (const std::string& d : c.differences) UNSCOPED_INFO(d);
        CHECK(c.differences.empty());
        if (c.module.find("libc.so") != std::string::npos) {
            libc_seen = true;
            CHECK(c.named > 1000); // the comparison covered a real symbol table
        }
    }
    REQUIRE(libc_seen);
}
