// The `ojx` subcommands. Each takes the arguments after its name and returns the process's exit status:
// 0 done, 1 the work failed (e.g. a JVM refused the agent), 2 bad usage or bad input (the message, one line
// naming the file or option and the problem, is already on standard error).
#pragma once

#include <span>
#include <string_view>

namespace ojx::tool {

using arguments = std::span<const std::string_view>;

inline constexpr int exit_ok = 0;
inline constexpr int exit_failed = 1;
inline constexpr int exit_usage = 2;

int report_command(arguments args); // ojx report [options] PROFILE…
int merge_command(arguments args);  // ojx merge PROFILE… -o OUT
int run_command(arguments args);    // ojx run [options] -- java …
int attach_command(arguments args); // ojx attach PID [options]
int dump_command(arguments args);   // ojx dump PID [options]
int replay_command(arguments args); // ojx replay TRACE [options] -o OUT
int heap_command(arguments args);   // ojx heap TRACE --at gc:N|event:K

} // namespace ojx::tool
