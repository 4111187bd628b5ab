// Where an agent is — the JVM agent, libojx.so, or the native one, libojxpreload.so: given with --agent, else
// installed next to the ojx command (<prefix>/bin/ojx → <prefix>/<libdir>/NAME.so), else in the build tree that
// built this ojx. A JVM loads it by
// absolute path, so the answer is always absolute. And which libojx.so a running JVM has loaded already: a later
// dump or stop must reach that copy (another path is another library, with no agent running in it).
#pragma once

#include <sys/types.h>

#include <string>

namespace ojx::tool {

enum class agent_kind { jvm, native };

struct agent_library {
    std::string path;  // absolute; empty when not found
    std::string error; // why not: the places tried
    bool ok() const noexcept { return error.empty(); }
};

// `given`: the --agent option, or empty to look in the usual places.
agent_library find_agent_library(const std::string& given, agent_kind kind = agent_kind::jvm);

// The path (as the process sees it) of the libojx.so mapped in process `pid`, or empty if none is.
std::string agent_loaded_in(pid_t pid);

} // namespace ojx::tool
