// A module's sorted symbol table with libdwfl's answer for an address (module_symbols.hpp).
#include "ojx/hardware/module_symbols.hpp"

#include <elfutils/libdwfl.h>

#include <algorithm>

namespace ojx::hardware {
namespace {

std::uint8_t strength_of(const GElf_Sym& symbol) noexcept {
    switch (GELF_ST_BIND(symbol.st_info)) {
    case STB_GLOBAL: return 3;
    case STB_WEAK: return 2;
    case STB_LOCAL: return 1;
    default: return 0;
    }
}

bool eligible(const char* name, const GElf_Sym& symbol) noexcept {
    const int type = GELF_ST_TYPE(symbol.st_info);
    return name != nullptr && name[0] != '\0' && symbol.st_shndx != SHN_UNDEF && type != STT_SECTION &&
           type != STT_FILE && type != STT_TLS;
}

} // namespace

module_symbols::module_symbols(Dwfl_Module* module) : module_(module) {
    const int count = dwfl_module_getsymtab(module);
    if (count <= 0) return;
    symbol_count_ = static_cast<std::uint32_t>(count);
    const int first_global = dwfl_module_getsymtab_first_global(module);
    first_global_ = first_global > 0 ? static_cast<std::uint32_t>(first_global) : 0;
    for (int i = 1; i < count; ++i) {
        GElf_Sym raw;
        GElf_Addr start = 0;
        const char* name = dwfl_module_getsym_info(module, i, &raw, &start, nullptr, nullptr, nullptr);
        if (!eligible(name, raw)) continue;
        if (raw.st_size == 0) {
            sizeless_starts_.push_back(start);
            continue;
        }
        sized_.push_back({start, raw.st_size, name, static_cast<std::uint32_t>(i), strength_of(raw)});
    }
    std::sort(sized_.begin(), sized_.end(), [](const symbol& a, const symbol& b) {
        return a.start != b.start ? a.start < b.start : a.index < b.index;
    });
    std::sort(sizeless_starts_.begin(), sizeless_starts_.end());
    reach_.reserve(sized_.size());
    global_reach_.reserve(sized_.size());
    std::uint64_t reach = 0;
    std::uint64_t global_reach = 0;
    for (const symbol& s : sized_) {
        reach = std::max(reach, s.start + s.size);
        if (s.index >= global_pass_start()) global_reach = std::max(global_reach, s.start + s.size);
        reach_.push_back(reach);
        global_reach_.push_back(global_reach);
    }
}

// libdwfl takes a sizeless symbol only where no sized symbol covers the address, only if it starts at or below
// the address, and only if it starts at or above the end of every eligible symbol of the global pass that starts
// at or below the address (its min_label, which the local pass only raises). So unless one starts in
// [end of the globals below, address], sizeless symbols cannot answer, whatever their sections; where one does,
// libdwfl's own search (with its section rule) decides. Conservative: a wider test only asks libdwfl more often.
bool module_symbols::sizeless_may_answer(std::uint64_t address) const noexcept {
    const auto above = std::upper_bound(sized_.begin(), sized_.end(), address,
                                        [](std::uint64_t a, const symbol& s) { return a < s.start; });
    const auto below = static_cast<std::size_t>(above - sized_.begin());
    const std::uint64_t label_floor = below == 0 ? 0 : global_reach_[below - 1];
    const auto first = std::lower_bound(sizeless_starts_.begin(), sizeless_starts_.end(), label_floor);
    return first != sizeless_starts_.end() && *first <= address;
}

const module_symbols::symbol* module_symbols::best_sized(std::uint64_t address, std::uint32_t first,
                                                         std::uint32_t end) const {
    // The covering symbols: below the first symbol starting after the address, back to where nothing earlier
    // reaches the address.
    std::vector<const symbol*> covering;
    const auto above = std::upper_bound(sized_.begin(), sized_.end(), address,
                                        [](std::uint64_t a, const symbol& s) { return a < s.start; });
    for (auto i = static_cast<std::size_t>(above - sized_.begin()); i > 0 && reach_[i - 1] > address; --i) {
        const symbol& s = sized_[i - 1];
        if (s.index >= first && s.index < end && address - s.start < s.size) covering.push_back(&s);
    }
    std::sort(covering.begin(), covering.end(), [](const symbol* a, const symbol* b) { return a->index < b->index; });
    const symbol* best = nullptr;
    for (const symbol* s : covering) {
        if (best == nullptr || best->start < s->start || best->strength < s->strength ||
            (best->start == s->start && ((best->size > s->size && best->strength <= s->strength) ||
                                         (best->size >= s->size && best->strength < s->strength))))
            best = s;
    }
    return best;
}

std::optional<module_symbols::found> module_symbols::lookup(std::uint64_t address) const {
    if (sizeless_may_answer(address)) {
        if (const symbol* s = best_sized(address, global_pass_start(), symbol_count_))
            return found{s->name, address - s->start};
        GElf_Off offset = 0;
        GElf_Sym raw;
        const char* name = dwfl_module_addrinfo(module_, address, &offset, &raw, nullptr, nullptr, nullptr);
        if (name == nullptr) return std::nullopt;
        return found{name, offset};
    }
    const symbol* s = best_sized(address, global_pass_start(), symbol_count_);
    if (s == nullptr && first_global_ > 1) s = best_sized(address, 1, first_global_);
    if (s == nullptr) return std::nullopt;
    return found{s->name, address - s->start};
}

} // namespace ojx::hardware
