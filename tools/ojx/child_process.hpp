// A command run as a child of ojx, as a shell would run it, for `ojx run`: found on PATH, sharing ojx's terminal,
// standard streams and process group, and waited for. ojx stands between the user and the JVM, so a SIGINT,
// SIGTERM, SIGHUP or SIGQUIT sent to ojx by kill(2) is passed on to the child (which then writes its profile and
// exits as it would have); the same signals typed at the terminal reach the child directly and are not doubled.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace ojx::tool {

struct child_exit {
    std::string error;  // the command could not be started (not found, not executable); nothing ran
    pid_t pid = 0;      // the child's process id
    int exit_code = 0;  // its exit status, or 128 + the signal that ended it (as a shell reports it)
    int signal = 0;     // that signal, or 0
    bool ok() const noexcept { return error.empty(); }
};

child_exit run_child(const std::vector<std::string>& command);

} // namespace ojx::tool
