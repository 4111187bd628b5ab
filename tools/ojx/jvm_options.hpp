// The command lines of `ojx run`, `ojx attach` and `ojx dump`, and their translation into the JVM agent's option
// string (`start,file=…,rate=…`). Pure: no process is started and no file is touched, so that every rule here is
// a unit test. Typed options are checked with the agent's own syntax (ojx/options.hpp) before any JVM is
// involved, so that a typo is a usage error naming the option rather than a JVM that refuses to start.
#pragma once

#include "commands.hpp"

#include <sys/types.h>

#include <string>
#include <vector>

namespace ojx::tool {

// What starting the agent needs: where libojx.so is and the options it gets.
struct profiling_options {
    std::string agent;                  // --agent PATH; empty: look for it (agent_library.hpp)
    std::string file = "ojx-%p.json";   // --file; the agent expands %p and %t
    std::vector<std::string> settings;  // "rate=1000", "interval=8k", … and raw --option text, in the order given

    // The agent's option string: "start,file=F" then the settings (the agent takes the last of repeats, so a
    // raw --option after --rate wins, as it was written later).
    std::string agent_options() const;

    // The file the agent will write, as given (with %p, %t): the last `file=` among the options, raw ones too.
    std::string profile_file() const;
};

struct run_command_line {
    bool help = false;
    profiling_options profiling;
    std::vector<std::string> command; // everything after `--`: the java launcher and its arguments
};

struct attach_command_line {
    bool help = false;
    pid_t pid = 0;
    profiling_options profiling;
};

struct dump_command_line {
    bool help = false;
    pid_t pid = 0;
    bool stop = false;
    std::string file;  // --file: write this dump there instead of the file given at start
    std::string agent; // --agent PATH

    std::string agent_options() const; // "dump" or "stop", and "file=F" when given
};

// A parsed command line, or the one-line reason it was rejected (naming the option; no "ojx:" prefix).
template <typename Line>
struct parsed {
    Line line;
    std::string error;
    bool ok() const noexcept { return error.empty(); }
};

parsed<run_command_line> parse_run_command_line(arguments args);
parsed<attach_command_line> parse_attach_command_line(arguments args);
parsed<dump_command_line> parse_dump_command_line(arguments args);

} // namespace ojx::tool
