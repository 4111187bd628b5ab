// `ojx run -- COMMAND` for a native program (native_run.cpp): the command's process tree under the native agent,
// its profiles merged into one, one report.
#pragma once

#include "jvm_options.hpp"

namespace ojx::tool {

// Runs line.command under libojxpreload.so; returns the command's exit status (or ojx's own failure status
// when it could not run or its profiles could not be merged and written).
int run_native(const run_command_line& line);

} // namespace ojx::tool
