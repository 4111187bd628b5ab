// The `ojx` subcommands. Each takes the arguments after its name and returns the process's exit status:
// 0 done, 1 the work failed (e.g. a JVM refused the agent), 2 bad usage or bad input (the message, one line
// naming the file or option and the problem, is already on standard error).
#pragma once

#include <cstdio>
#include <span>
#include <string_view>

namespace ojx::tool {

using arguments = std::span<const std::string_view>;

inline constexpr int exit_ok = 0;
inline constexpr int exit_failed = 1;
inline constexpr int exit_usage = 2;

// "ojx COMMAND: MESSAGE" on standard error, for input a command cannot use (a missing or corrupt file); returns
// exit_usage.
inline int input_error(std::string_view command, std::string_view message) {
    std::fprintf(stderr, "ojx %.*s: %.*s\n", static_cast<int>(command.size()), command.data(),
                 static_cast<int>(message.size()), message.data());
    return exit_usage;
}

// "ojx COMMAND: MESSAGE (ojx COMMAND --help)" on standard error, for a command line the command cannot take (the
// option reader's message, or options that do not go together); returns exit_usage.
inline int usage_error(std::string_view command, std::string_view message) {
    std::fprintf(stderr, "ojx %.*s: %.*s (ojx %.*s --help)\n", static_cast<int>(command.size()), command.data(),
                 static_cast<int>(message.size()), message.data(), static_cast<int>(command.size()), command.data());
    return exit_usage;
}

int report_command(arguments args); // ojx report [options] PROFILE…
int merge_command(arguments args);  // ojx merge PROFILE… -o OUT
int run_command(arguments args);    // ojx run [options] -- COMMAND …
int attach_command(arguments args); // ojx attach PID [options]
int dump_command(arguments args);   // ojx dump PID [options]
int replay_command(arguments args); // ojx replay TRACE [options] -o OUT
int heap_command(arguments args);   // ojx heap TRACE --at gc:N|event:K

} // namespace ojx::tool
