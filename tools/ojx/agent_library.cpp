#include "agent_library.hpp"

#include <filesystem>
#include <fstream>
#include <system_error>
#include <vector>

namespace ojx::tool {

namespace {

namespace fs = std::filesystem;

// The installed agents, relative to the directory of the installed command (set by tools/ojx/CMakeLists.txt from
// GNUInstallDirs: "../lib/libojx.so", or "../lib/x86_64-linux-gnu/libojx.so" on Debian's multiarch layout).
#ifndef OJX_INSTALLED_AGENT_FROM_BINDIR
#define OJX_INSTALLED_AGENT_FROM_BINDIR "../lib/libojx.so"
#endif
#ifndef OJX_INSTALLED_PRELOAD_FROM_BINDIR
#define OJX_INSTALLED_PRELOAD_FROM_BINDIR "../lib/libojxpreload.so"
#endif

std::vector<fs::path> usual_places(agent_kind kind) {
    std::vector<fs::path> places;
    std::error_code error;
    const fs::path self = fs::read_symlink("/proc/self/exe", error);
    if (!error)
        places.push_back(self.parent_path() / (kind == agent_kind::jvm ? OJX_INSTALLED_AGENT_FROM_BINDIR
                                                                        : OJX_INSTALLED_PRELOAD_FROM_BINDIR));
    // The agents this build tree builds (they may not be built yet).
#ifdef OJX_BUILD_TREE_AGENT
    if (kind == agent_kind::jvm) places.emplace_back(OJX_BUILD_TREE_AGENT);
#endif
#ifdef OJX_BUILD_TREE_PRELOAD
    if (kind == agent_kind::native) places.emplace_back(OJX_BUILD_TREE_PRELOAD);
#endif
    return places;
}

bool is_file(const fs::path& path) {
    std::error_code error;
    return fs::is_regular_file(path, error);
}

// The file exists (checked before), so canonical() resolves it.
std::string absolute_path(const fs::path& path) {
    std::error_code error;
    const fs::path canonical = fs::canonical(path, error);
    return error ? path.string() : canonical.string();
}

} // namespace

agent_library find_agent_library(const std::string& given, agent_kind kind) {
    if (!given.empty()) {
        if (!is_file(given)) return {{}, "--agent " + given + ": no such file"};
        return {absolute_path(given), {}};
    }
    std::string tried;
    for (const fs::path& place : usual_places(kind)) {
        if (is_file(place)) return {absolute_path(place), {}};
        tried += (tried.empty() ? "" : ", ") + place.lexically_normal().string();
    }
    return {{}, std::string(kind == agent_kind::jvm ? "cannot find the JVM agent libojx.so"
                                                    : "cannot find the native agent libojxpreload.so") +
                    " (looked at " + tried + "); give it with --agent PATH"};
}

std::string agent_loaded_in(pid_t pid) {
    std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
    const std::string name = "/libojx.so";
    for (std::string line; std::getline(maps, line);) {
        const std::size_t path = line.find('/');
        if (path != std::string::npos && line.ends_with(name)) return line.substr(path);
    }
    return {};
}

} // namespace ojx::tool
