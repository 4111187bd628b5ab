// Native frame names with elfutils' libdwfl: the module from /proc/self/maps, the function from the symbol table
// (demangled), the source line from DWARF. See the header for the format and the caveats.
#include "ojx/hardware/symbolizer.hpp"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <link.h>
#include <optional>
#include <string>
#include <string_view>
#include <unistd.h>
#include <zlib.h>

namespace ojx::hardware {

namespace {

bool debuginfod_configured() {
    const char* urls = std::getenv("DEBUGINFOD_URLS");
    return urls != nullptr && urls[0] != '\0';
}

// Whether `fd`'s whole contents have the CRC-32 a .gnu_debuglink names (zlib's CRC is the same function).
bool crc_matches(int fd, std::uint32_t expected) {
    uLong crc = crc32(0L, Z_NULL, 0);
    unsigned char buffer[1 << 16];
    for (;;) {
        const ssize_t got = ::read(fd, buffer, sizeof buffer);
        if (got < 0) return false;
        if (got == 0) break;
        crc = crc32(crc, buffer, static_cast<uInt>(got));
    }
    return ::lseek(fd, 0, SEEK_SET) == 0 && crc == expected;
}

// The .gnu_debuglink search libdwfl makes: next to the file, in its .debug/ directory, and under /usr/lib/debug.
int find_by_debuglink(const char* file_name, const char* debuglink_file, GElf_Word debuglink_crc,
                      char** debuginfo_file_name) {
    if (file_name == nullptr || debuglink_file == nullptr) return -1;
    const std::string_view file(file_name);
    const std::string directory(file.substr(0, file.rfind('/') == std::string_view::npos ? 0 : file.rfind('/')));
    for (const std::string& candidate : {directory + "/" + debuglink_file, directory + "/.debug/" + debuglink_file,
                                         "/usr/lib/debug" + directory + "/" + debuglink_file}) {
        if (candidate == file) continue;
        const int fd = ::open(candidate.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        if (debuglink_crc == 0 || crc_matches(fd, debuglink_crc)) {
            *debuginfo_file_name = ::strdup(candidate.c_str());
            return fd;
        }
        ::close(fd);
    }
    return -1;
}

// dwfl_standard_find_debuginfo ends, for a module with no local debug information (a stripped program, libc
// without libc6-dbg), by dlopen'ing libdebuginfod, which loads libcurl, gnutls and a dozen more libraries even
// when no server is configured: ≈ 15 ms of CPU at every exit here, a third of the native agent's fixed cost. So
// the standard search runs only when DEBUGINFOD_URLS names a server; otherwise the two local searches it makes
// first: by build id under /usr/lib/debug (Debian's -dbgsym packages), then by .gnu_debuglink.
int find_debuginfo(Dwfl_Module* module, void** userdata, const char* module_name, Dwarf_Addr base,
                   const char* file_name, const char* debuglink_file, GElf_Word debuglink_crc,
                   char** debuginfo_file_name) {
    if (debuginfod_configured())
        return dwfl_standard_find_debuginfo(module, userdata, module_name, base, file_name, debuglink_file,
                                            debuglink_crc, debuginfo_file_name);
    const int by_build_id = dwfl_build_id_find_debuginfo(module, userdata, module_name, base, file_name,
                                                         debuglink_file, debuglink_crc, debuginfo_file_name);
    if (by_build_id >= 0) return by_build_id;
    return find_by_debuglink(file_name, debuglink_file, debuglink_crc, debuginfo_file_name);
}

// Callbacks for a live process: modules are the files named in /proc/PID/maps; debug information is found on this
// machine, or by debuginfod where it is configured. Must outlive every Dwfl that uses it.
const Dwfl_Callbacks process_callbacks = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = find_debuginfo,
    .section_address = nullptr,
    .debuginfo_path = nullptr,
};

// How many times the dynamic loader has loaded or unloaded an object (glibc's dlpi_adds + dlpi_subs): a cheap
// test of whether the module list can have changed.
std::uint64_t loader_changes() {
    std::uint64_t changes = 0;
    dl_iterate_phdr(
        [](dl_phdr_info* info, std::size_t, void* out) {
            *static_cast<std::uint64_t*>(out) = info->dlpi_adds + info->dlpi_subs;
            return 1; // the counters are the same in every entry; one is enough
        },
        &changes);
    return changes;
}

// The module whose address range holds `address`. dwfl_addrmodule alone is not enough: in elfutils 0.188 it
// answers the highest module for any address above that module's end (a library dlopen'ed above it, or a
// nonsense address such as 0xffff800000001234).
Dwfl_Module* module_at(Dwfl* dwfl, Dwarf_Addr address) {
    Dwfl_Module* module = dwfl_addrmodule(dwfl, address);
    Dwarf_Addr start = 0;
    Dwarf_Addr end = 0;
    if (module == nullptr ||
        dwfl_module_info(module, nullptr, &start, &end, nullptr, nullptr, nullptr, nullptr) == nullptr)
        return nullptr;
    return start <= address && address < end ? module : nullptr;
}

std::string hex(std::uint64_t value) {
    char text[2 + 16 + 1];
    std::snprintf(text, sizeof text, "0x%" PRIx64, value);
    return text;
}

std::string base_name(std::string_view path) {
    const std::size_t slash = path.rfind('/');
    return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

std::string demangled(const char* symbol) {
    if (symbol[0] == '_' && symbol[1] == 'Z') {
        int status = 0;
        char* name = abi::__cxa_demangle(symbol, nullptr, nullptr, &status);
        if (status == 0 && name != nullptr) {
            std::string result(name);
            std::free(name);
            return result;
        }
        std::free(name);
    }
    return symbol;
}

// `file.cpp:line` of the address, in the function the symbol table names: when the address is in code inlined
// into that function, the line of the outermost inlined call, not a line of the inlined callee's (possibly
// header) source. Empty without line information.
std::string source_line(Dwfl_Module* module, Dwarf_Addr address) {
    const char* file = nullptr;
    int line = 0;
    if (Dwfl_Line* info = dwfl_module_getsrc(module, address))
        file = dwfl_lineinfo(info, nullptr, &line, nullptr, nullptr, nullptr);

    Dwarf_Addr bias = 0;
    if (Dwarf_Die* unit = dwfl_module_addrdie(module, address, &bias)) {
        Dwarf_Die* scopes = nullptr;
        const int count = dwarf_getscopes(unit, address - bias, &scopes); // innermost first
        Dwarf_Die* outermost_inline = nullptr;
        for (int i = 0; i < count; ++i) {
            const int tag = dwarf_tag(&scopes[i]);
            if (tag == DW_TAG_subprogram) break;
            if (tag == DW_TAG_inlined_subroutine) outermost_inline = &scopes[i];
        }
        Dwarf_Attribute attribute;
        Dwarf_Word file_index = 0;
        Dwarf_Word call_line = 0;
        Dwarf_Files* files = nullptr;
        std::size_t file_count = 0;
        if (outermost_inline != nullptr &&
            dwarf_formudata(dwarf_attr(outermost_inline, DW_AT_call_file, &attribute), &file_index) == 0 &&
            dwarf_formudata(dwarf_attr(outermost_inline, DW_AT_call_line, &attribute), &call_line) == 0 &&
            call_line > 0 && dwarf_getsrcfiles(unit, &files, &file_count) == 0 && file_index < file_count) {
            if (const char* call_file = dwarf_filesrc(files, file_index, nullptr, nullptr)) {
                file = call_file;
                line = static_cast<int>(call_line);
            }
        }
        std::free(scopes);
    }
    if (file == nullptr || line <= 0) return {};
    return base_name(file) + ":" + std::to_string(line);
}

// The C and C++ runtime: their frames (thread start, program start, operator new) are named from the symbol
// table alone. Their source lines point into glibc and libstdc++ sources, where no user acts, and looking them
// up means inflating the runtime's separate debug file when one is installed (libc6-dbg: ~75 ms of CPU at every
// exit here, the largest fixed cost of the native agent).
bool is_runtime_library(std::string_view module_name) {
    for (const std::string_view runtime : {"libc.so", "libc-", "ld-linux", "libstdc++.so", "libgcc_s.so", "libm.so",
                                           "libpthread.so", "libdl.so"}) {
        if (module_name.substr(0, runtime.size()) == runtime) return true;
    }
    return false;
}

} // namespace

void symbolizer::dwfl_deleter::operator()(Dwfl* dwfl) const noexcept { dwfl_end(dwfl); }

symbolizer::symbolizer() noexcept = default;
symbolizer::~symbolizer() = default;

void symbolizer::read_module_list() {
    if (!dwfl_) {
        dwfl_.reset(dwfl_begin(&process_callbacks));
        if (!dwfl_) {
            dwfl_failed_ = true; // every name will be a bare address
            return;
        }
    }
    ++stats_.module_list_reads;
    loader_changes_seen_ = loader_changes();
    symbols_.clear(); // a module not reported again is dropped, and its address may name another
    // Modules reported again keep what libdwfl has already loaded for them; modules not reported are dropped.
    dwfl_report_begin(dwfl_.get());
    dwfl_linux_proc_report(dwfl_.get(), getpid()); // on failure, the modules reported before it stay usable
    dwfl_report_end(dwfl_.get(), nullptr, nullptr);
}

const module_symbols& symbolizer::symbols_of(Dwfl_Module* module) {
    auto found = symbols_.find(module);
    if (found == symbols_.end()) found = symbols_.emplace(module, module_symbols(module)).first;
    return found->second;
}

std::string symbolizer::frame_name(std::uint64_t pc, bool is_return_address) {
    ++stats_.lookups;
    auto& cache = cache_[is_return_address ? 1 : 0];
    if (const auto found = cache.find(pc); found != cache.end()) {
        ++stats_.cache_hits;
        return found->second;
    }
    std::string name = resolve(pc, is_return_address);
    cache.emplace(pc, name);
    return name;
}

std::string symbolizer::resolve(std::uint64_t pc, bool is_return_address) {
    if (!dwfl_ && !dwfl_failed_) read_module_list();
    if (!dwfl_) return hex(pc);
    // The call instruction ends just before its return address; any byte of it names the call's line.
    const Dwarf_Addr address = is_return_address && pc != 0 ? pc - 1 : pc;
    Dwfl_Module* module = module_at(dwfl_.get(), address);
    if (module == nullptr && loader_changes() != loader_changes_seen_) { // e.g. a library dlopen'ed since
        read_module_list();
        module = module_at(dwfl_.get(), address);
    }
    if (module == nullptr) return hex(pc);

    Dwarf_Addr module_start = 0;
    const char* module_path =
        dwfl_module_info(module, nullptr, &module_start, nullptr, nullptr, nullptr, nullptr, nullptr);
    const std::string module_name = base_name(module_path != nullptr ? module_path : "");
    const std::optional<module_symbols::found> symbol = symbols_of(module).lookup(address);
    const char* symbol_name = symbol ? symbol->name : nullptr;
    const std::uint64_t offset = symbol ? symbol->offset : 0;
    const std::string line = is_runtime_library(module_name) ? std::string() : source_line(module, address);
    // Without a symbol, the offset in its module: the same in every run of the same binary, where the address
    // moves with address-space randomization (and would split one site into one per run in `ojx merge`).
    if (symbol_name == nullptr || symbol_name[0] == '\0')
        return module_name + "+" + hex(pc - module_start) + (line.empty() ? "" : " (" + line + ")");

    std::string name = demangled(symbol_name);
    if (!line.empty()) return name + " (" + line + ")";
    const std::uint64_t shown_offset = offset + (pc - address);
    if (shown_offset != 0) {
        name += '+';
        name += hex(shown_offset);
    }
    return name + " (" + module_name + ")";
}

} // namespace ojx::hardware
