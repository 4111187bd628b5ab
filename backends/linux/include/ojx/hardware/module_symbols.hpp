// One module's symbol table, read once and sorted by address, answering which symbol names an address with the
// answer libdwfl's dwfl_module_addrinfo gives.
//
// Why: dwfl_module_addrinfo reads every symbol of the module through gelf on every call (elfutils 0.188), so
// naming a few hundred frames in a program of thousands of symbols cost ≈ 20 ms of the native agent's exit here,
// more than everything else it does at exit. Here a lookup visits only the sized symbols that cover the address.
//
// The rules are libdwfl's, applied to the same symbols in the same order: eligible symbols are named, defined, and
// not section, file or TLS symbols; the module's global symbols are searched first and its local ones only when no
// global symbol answers; among the sized symbols covering the address, in table order, one replaces the best so
// far when it starts closer to the address or binds more strongly (global over weak over local), or when it
// starts at the same place and is smaller without binding less strongly, or is no larger and binds more strongly.
// Symbols without a size (assembly labels) enter libdwfl's answer only where no sized symbol covers the address,
// through rules that depend on sections: where one of them could answer (sizeless_may_answer), and no sized global
// symbol covers the address, dwfl_module_addrinfo itself answers.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

struct Dwfl_Module;

namespace ojx::hardware {

class module_symbols {
public:
    // Reads `module`'s symbol table (dwfl_module_getsym_info). The names stay valid while the module does.
    explicit module_symbols(Dwfl_Module* module);

    struct found {
        const char* name;
        std::uint64_t offset; // the address minus the symbol's
    };

    // The symbol naming `address` (an address of the process, as libdwfl's are), or nothing.
    std::optional<found> lookup(std::uint64_t address) const;

    std::size_t sized_count() const noexcept { return sized_.size(); }

private:
    struct symbol {
        std::uint64_t start;
        std::uint64_t size;
        const char* name;
        std::uint32_t index;   // in the module's symbol table
        std::uint8_t strength; // libdwfl's binding order: global 3, weak 2, local 1, other 0
    };

    // The best sized symbol covering `address` among those with index in [first, end), or null.
    const symbol* best_sized(std::uint64_t address, std::uint32_t first, std::uint32_t end) const;
    bool sizeless_may_answer(std::uint64_t address) const noexcept;
    // libdwfl searches the symbols from here on first (all of them where the table has no locals apart).
    std::uint32_t global_pass_start() const noexcept { return first_global_ == 0 ? 1 : first_global_; }

    Dwfl_Module* module_;
    std::vector<symbol> sized_;          // by start
    std::vector<std::uint64_t> reach_;   // reach_[i]: the largest start + size of sized_[0 .. i]
    std::uint32_t symbol_count_ = 0;     // entries of the table, the null symbol 0 included
    std::uint32_t first_global_ = 0;     // dwfl_module_getsymtab_first_global
    std::vector<std::uint64_t> global_reach_;    // the same over the symbols of the global pass only
    std::vector<std::uint64_t> sizeless_starts_; // of the eligible symbols without a size, sorted
};

} // namespace ojx::hardware
