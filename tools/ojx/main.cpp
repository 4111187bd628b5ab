// ojx: read, merge and convert replica profiles, and profile JVMs with the agent.
#include "commands.hpp"

#include <cstdio>
#include <string_view>
#include <vector>

namespace {

constexpr const char* usage = R"(usage: ojx COMMAND [ARGS…]

Find replica objects — objects allocated at the same site whose contents are identical — and act on them.

commands:
  report PROFILE…       ranked table of replicated allocation sites (merges several profiles first);
                        --html, --collapsed and --pprof write the same profile for a browser, flame graph
                        tools and continuous-profiling systems
  merge PROFILE… -o OUT one profile from many (threads, processes, hosts), estimates recomputed from the
                        summed evidence
  run [OPTIONS] -- COMMAND …
                        run a program (a JVM, or a native program and its process tree) under an ojx agent
                        and print its report at exit
  attach PID [OPTIONS]  start profiling a running JVM (dynamic attach)
  dump PID [OPTIONS]    write a running JVM's profile now (and with --stop, stop profiling)
  replay TRACE -o OUT   analyse a recorded trace again (same profile, or other estimator settings)
  heap TRACE --at gc:N|event:K
                        a recorded trace's heap at that point: live objects by context and type, with
                        consistency checks

`ojx COMMAND --help` says more about each. Profiles are the JSON the agents write (docs/profile-format.md).
)";

} // namespace

int main(int argc, char** argv) {
    using namespace ojx::tool;
    const std::vector<std::string_view> all(argv + 1, argv + argc);
    if (all.empty()) {
        std::fputs(usage, stderr);
        return exit_usage;
    }
    const std::string_view command = all.front();
    if (command == "--help" || command == "-h" || command == "help") {
        std::fputs(usage, stdout);
        return exit_ok;
    }
    const arguments rest(all.data() + 1, all.size() - 1);
    if (command == "report") return report_command(rest);
    if (command == "merge") return merge_command(rest);
    if (command == "run") return run_command(rest);
    if (command == "attach") return attach_command(rest);
    if (command == "dump") return dump_command(rest);
    if (command == "replay") return replay_command(rest);
    if (command == "heap") return heap_command(rest);
    std::fprintf(stderr, "ojx: unknown command '%.*s' (report, merge, run, attach, dump, replay, heap; ojx --help)\n",
                 static_cast<int>(command.size()), command.data());
    return exit_usage;
}
