// Names native code addresses of the current process for the report, in the frame format of
// docs/profile-format.md: `function (file.cpp:line)` when DWARF line information is available (demangled C++
// name, the source file's base name), else `function+0x1f (libfoo.so)` from the symbol table, else
// `0x7f… (libfoo.so)` inside a known module, else `0x…`. Built on elfutils' libdwfl over /proc/self/maps.
//
// NOT signal-safe and NOT thread-safe: it allocates, reads files and takes the dynamic loader's lock. Samplers
// record raw addresses; the report writer names them with one symbolizer, from one thread at a time.
//
// Debug information is found the way elfutils finds it (build-id and .gnu_debuglink under /usr/lib/debug, next
// to the file, ...). If DEBUGINFOD_URLS is set in the profiled process's environment, that includes downloading
// it from a debuginfod server, which can make the first report slow; without DEBUGINFOD_URLS, libdebuginfod (and
// the libcurl it loads) is never touched.
#pragma once

#include "ojx/hardware/module_symbols.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

struct Dwfl; // elfutils' session; libdwfl.h stays out of this header
struct Dwfl_Module;

namespace ojx::hardware {

class symbolizer {
public:
    symbolizer() noexcept; // cheap: the module list is read at the first lookup
    ~symbolizer();
    symbolizer(const symbolizer&) = delete;
    symbolizer& operator=(const symbolizer&) = delete;

    // The frame name of code address `pc`. For a return address (every frame but the leaf of a stack) the
    // instruction before it is looked up, so the line is the call's, not the next statement's; a shown offset
    // is still pc's. Names are cached per (pc, is_return_address) for the symbolizer's lifetime. An address in no
    // known module rereads the module list when the dynamic loader has loaded or unloaded a library since it was
    // last read.
    std::string frame_name(std::uint64_t pc, bool is_return_address);

    struct statistics {
        std::uint64_t lookups = 0;          // frame_name calls
        std::uint64_t cache_hits = 0;       // of which answered from the cache
        std::uint64_t module_list_reads = 0; // the first read and every refresh
    };
    const statistics& stats() const noexcept { return stats_; }

private:
    struct dwfl_deleter {
        void operator()(Dwfl* dwfl) const noexcept;
    };

    std::string resolve(std::uint64_t pc, bool is_return_address);
    void read_module_list();
    const module_symbols& symbols_of(Dwfl_Module* module);

    std::unique_ptr<Dwfl, dwfl_deleter> dwfl_;
    bool dwfl_failed_ = false;
    std::uint64_t loader_changes_seen_ = 0; // the loader's load + unload count when the module list was read
    std::unordered_map<std::uint64_t, std::string> cache_[2]; // [is_return_address]
    std::unordered_map<Dwfl_Module*, module_symbols> symbols_; // of the modules named so far; reset with the list
    statistics stats_;
};

} // namespace ojx::hardware
