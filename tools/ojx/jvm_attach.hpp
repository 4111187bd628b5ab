// HotSpot's dynamic attach protocol, spoken directly (what jcmd and jattach do), to load an agent into a running
// JVM: no JDK tools needed, and the agent's options travel as one argument, untouched.
//
// The protocol: the JVM listens on the UNIX socket /tmp/.java_pid<pid> once its attach listener runs. It starts
// that listener when it receives SIGQUIT while a file .attach_pid<pid> exists in its working directory or /tmp.
// A client writes "1\0" (the protocol version), the command and exactly three arguments, each NUL-terminated,
// then reads: a line with the command's status (0: done), then the command's output. For `load` the output's
// first line is what Agent_OnAttach returned ("return code: N"; plain "N" before JDK 9).
//
// Paths go through /proc/<pid>/root and /proc/<pid>/cwd, and the JVM's own pid is read from NSpid, so that a JVM
// in a container (another mount or pid namespace) is reached too. SIGQUIT is sent only to a process that has
// libjvm.so mapped and catches SIGQUIT: to any other process (or a JVM started with -Xrs) it is fatal.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>

namespace ojx::tool {

struct attach_timeouts {
    std::chrono::milliseconds listener{10'000}; // for the attach socket to appear after SIGQUIT
    std::chrono::milliseconds response{60'000}; // for the JVM's answer (an agent's start can take seconds)
};

// The JVM's answer to `load`, or why there is none.
struct agent_load_result {
    std::string error;         // empty: Agent_OnAttach ran; else one line naming the process and the problem
    int agent_return_code = 0; // what Agent_OnAttach returned: 0 (JNI_OK) when the agent accepted
    std::string jvm_text;      // whatever else the JVM wrote, on one line and printable (usually nothing)
    bool ok() const noexcept { return error.empty(); }
};

// Loads the agent at `agent_path` (absolute) into JVM `pid` with `options`: Agent_OnAttach runs in the JVM.
// The peer is checked as the JDK's client checks it (the socket's owner, group and mode) and by its credentials
// (the target's process and user); at most 1 MiB of its answer is read, and none of it is returned unescaped.
agent_load_result load_agent(pid_t pid, const std::string& agent_path, const std::string& options,
                             const attach_timeouts& timeouts = {});

// Reads a `load` response (the status line, the agent's return code, any text). Exposed for its tests.
agent_load_result parse_load_response(pid_t pid, const std::string& response);

} // namespace ojx::tool
