// `ojx run`, `ojx attach` and `ojx dump`: the JVM agent (libojx.so) driven from the command line — a JVM started
// with it, or a running JVM that it is loaded into (jvm_attach.hpp). `ojx run` of a command that is not `java`
// hands it to native_run.hpp. What the agent itself says (its report,
// its errors) goes to the JVM's standard error; these commands say what happened from the outside: whether the
// agent accepted, and where the profile is.
#include "agent_library.hpp"
#include "child_process.hpp"
#include "commands.hpp"
#include "jvm_attach.hpp"
#include "jvm_options.hpp"
#include "native_run.hpp"

#include "ojx/options.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

namespace ojx::tool {

namespace {

constexpr const char* profiling_options_help = R"(  --file FILE        where the profile goes (default ojx-%p.json; %p: the JVM's pid, %t: its start time)
  --rate N           memory-access samples per second per running thread (agent default 200)
  --track-rate N     allocations (at or above the threshold) tracked a second: the heap sampling interval moves
                     to meet it, a quieter program has them sampled every 4k (agent default 1000)
  --interval SIZE    a fixed heap sampling interval instead: one allocation sampled per SIZE bytes allocated
                     (8k gives much more evidence per second, at a cost that grows with allocation)
  --threshold SIZE   smallest object tracked, header included (default 1k)
  --duration TIME    write the profile and stop after this long (30s, 500ms; default: when the JVM exits)
  --option TEXT      agent options as they are, comma-separated (sampler=timer,slots=2); after the others,
                     so they win. `java -agentpath:libojx.so=help -version` lists them all
  --agent PATH       the agent, libojx.so (default: installed next to ojx, or in the build tree)
)";

constexpr const char* run_help_head = R"(usage: ojx run [OPTIONS] -- COMMAND [ARGS…]

Runs a program under an ojx agent and says where its profile is; ojx exits with the program's exit status.
SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to ojx go to the program.

A Java program (COMMAND is `java`): -agentpath:libojx.so=start,… goes right after the java command. At exit the
agent prints its ranked report of replicated allocation sites and writes the JSON profile.

Any other program runs with its whole process tree (a shell script, `timeout`, a build's compilers) under the
native agent, libojxpreload.so: each process writes its profile, quietly, and at the end ojx merges them into
the one profile --file names (%p: the command's pid), and prints one report on standard error.

options:
)";
constexpr const char* run_help_tail = R"(
examples:
  ojx run --file replicas.json --interval 8k --rate 1000 -- java -cp app.jar com.example.Main
  ojx run --file tree.json -- sh -c 'timeout 60 ./server'
)";

constexpr const char* attach_help_head = R"(usage: ojx attach PID [OPTIONS]

Starts profiling a running JVM (JDK 11 or later): loads the ojx agent into process PID through HotSpot's
attach mechanism, as the JVM's user or root. The agent profiles until `ojx dump PID --stop`, --duration, or
the JVM's exit, then writes the profile (a relative --file is taken from ojx's working directory) and prints
its report on the JVM's standard error.

options:
)";
constexpr const char* attach_help_tail = R"(
example:
  ojx attach 4242 --file /tmp/replicas.json --duration 60s
)";

constexpr const char* dump_help = R"(usage: ojx dump PID [--stop] [--file FILE] [--agent PATH]

Makes the ojx agent running in JVM PID (started with `ojx attach` or `ojx run`) write its profile now, and go on
profiling. It fails if the agent is not profiling.

options:
  --stop             write the profile and stop profiling (the JVM runs on unprofiled)
  --file FILE        write this profile to FILE (relative: to ojx's working directory) instead of the file
                     given at start; later profiles still go there
  --agent PATH       the agent, libojx.so (default: the one the JVM has loaded)

example:
  ojx dump 4242 --file /tmp/now.json
)";

int failure(const std::string& message) {
    std::fprintf(stderr, "ojx: %s\n", message.c_str());
    return exit_failed;
}

// The agent: --agent, or found in the usual places. A missing --agent file is bad input (2); no agent anywhere, a
// failed run (1).
bool locate_agent(const char* command, const std::string& given, std::string& path, int& status) {
    const agent_library agent = find_agent_library(given);
    if (agent.ok()) {
        path = agent.path;
        return true;
    }
    status = given.empty() ? failure(agent.error) : usage_error(command, agent.error);
    return false;
}

// A JVM opens the profile file from its own working directory; the user meant ojx's.
std::string from_here(const std::string& file) {
    if (file.empty() || file.front() == '/') return file;
    std::error_code error;
    const std::filesystem::path here = std::filesystem::current_path(error);
    return error ? file : (here / file).string();
}

bool process_exists(pid_t pid) {
    struct stat info {};
    return stat(("/proc/" + std::to_string(pid)).c_str(), &info) == 0;
}

// The profile a finished `run` left: the agent's file for this JVM, or its fallback when that was unwritable.
// Only a file written since the JVM started counts.
std::string written_profile(const std::string& pattern, pid_t pid, std::time_t started) {
    const std::string candidates[] = {expand_file_name(pattern, static_cast<std::uint64_t>(pid), "%t"),
                                      "/tmp/ojx-" + std::to_string(pid) + ".json"};
    for (const std::string& candidate : candidates) {
        struct stat info {};
        if (candidate.find("%t") == std::string::npos && stat(candidate.c_str(), &info) == 0 &&
            info.st_mtime >= started)
            return candidate;
    }
    return {};
}

// Whether `file` is there as JVM `pid` sees it (through its root: in a container the path is the container's).
bool visible_to(pid_t pid, const std::string& file) {
    struct stat info {};
    const std::string root = "/proc/" + std::to_string(pid) + "/root";
    return stat((stat(root.c_str(), &info) == 0 ? root + file : file).c_str(), &info) == 0;
}

// What ojx may say about where the agent writes: the file it was asked for only when nothing says otherwise.
// The JVM's answer (printed above when it has text) may name another file; and an agent that cannot create
// the file says so, and where the profile goes instead, on the JVM's standard error, which ojx cannot see.
std::string where_asked(pid_t pid, const std::string& file, const agent_load_result& answer) {
    if (!answer.jvm_text.empty()) return "the file it was asked for, " + file + ", unless its answer above says otherwise";
    if (file.find('%') == std::string::npos && !visible_to(pid, file))
        return file + " if it can write it (it does not exist yet; if the JVM's user cannot create it, the agent "
                      "says where the profile goes instead on process " + std::to_string(pid) + "'s standard error)";
    return file;
}

void report_jvm_text(pid_t pid, const agent_load_result& answer) {
    if (!answer.jvm_text.empty()) std::fprintf(stderr, "ojx: process %d says: %s\n", static_cast<int>(pid), answer.jvm_text.c_str());
}

} // namespace

int run_command(arguments args) {
    const parsed<run_command_line> parsed = parse_run_command_line(args);
    if (!parsed.ok()) return usage_error("run", parsed.error);
    if (parsed.line.help) {
        std::printf("%s%s%s", run_help_head, profiling_options_help, run_help_tail);
        return exit_ok;
    }
    // A program that is not a JVM runs, with its process tree, under the native agent.
    if (std::filesystem::path(parsed.line.command.front()).filename() != "java") return run_native(parsed.line);
    const profiling_options& profiling = parsed.line.profiling;
    std::string agent;
    if (int status = 0; !locate_agent("run", profiling.agent, agent, status)) return status;

    std::vector<std::string> command = parsed.line.command;
    command.insert(command.begin() + 1, "-agentpath:" + agent + "=" + profiling.agent_options());
    const std::time_t started = std::time(nullptr);
    const child_exit java = run_child(command);
    if (!java.ok()) return failure(java.error);

    const std::string pattern = profiling.profile_file();
    if (const std::string profile = written_profile(pattern, java.pid, started); !profile.empty()) {
        std::fprintf(stderr, "ojx: profile of process %d: %s\n", static_cast<int>(java.pid), profile.c_str());
    } else if (pattern.find("%t") != std::string::npos) {
        std::fprintf(stderr, "ojx: the profile of process %d is %s, %%t its start time\n", static_cast<int>(java.pid),
                     expand_file_name(pattern, static_cast<std::uint64_t>(java.pid), "%t").c_str());
    } else {
        std::fprintf(stderr, "ojx: %s exited with status %d and wrote no profile (the agent's message, if any, is above)\n",
                     command.front().c_str(), java.exit_code);
    }
    return java.exit_code;
}

int attach_command(arguments args) {
    parsed<attach_command_line> parsed = parse_attach_command_line(args);
    if (!parsed.ok()) return usage_error("attach", parsed.error);
    if (parsed.line.help) {
        std::printf("%s%s%s", attach_help_head, profiling_options_help, attach_help_tail);
        return exit_ok;
    }
    const pid_t pid = parsed.line.pid;
    profiling_options& profiling = parsed.line.profiling;
    profiling.file = from_here(profiling.file);
    // An agent already loaded is the one to ask (it answers "already profiling"); a second copy of the
    // library would be a second agent, which the JVM refuses the capabilities it needs.
    std::string agent = profiling.agent.empty() ? agent_loaded_in(pid) : std::string();
    if (int status = 0; agent.empty() && !locate_agent("attach", profiling.agent, agent, status)) return status;

    const agent_load_result answer = load_agent(pid, agent, profiling.agent_options());
    if (!answer.ok()) return failure(answer.error);
    report_jvm_text(pid, answer);
    if (answer.agent_return_code != 0)
        return failure("the agent did not start in process " + std::to_string(pid) + " (return code " +
                       std::to_string(answer.agent_return_code) +
                       "): already profiling, an option it refused, or a JVM it cannot profile; its message is on the "
                       "JVM's standard error");
    const std::string file = expand_file_name(profiling.profile_file(), static_cast<std::uint64_t>(pid), "%t");
    std::fprintf(stderr, "ojx: profiling process %d; the profile goes to %s at its exit or at `ojx dump %d`\n",
                 static_cast<int>(pid), where_asked(pid, file, answer).c_str(), static_cast<int>(pid));
    return exit_ok;
}

int dump_command(arguments args) {
    parsed<dump_command_line> parsed = parse_dump_command_line(args);
    if (!parsed.ok()) return usage_error("dump", parsed.error);
    if (parsed.line.help) {
        std::printf("%s", dump_help);
        return exit_ok;
    }
    dump_command_line& line = parsed.line;
    const pid_t pid = line.pid;
    line.file = from_here(line.file);
    if (!process_exists(pid)) return failure("process " + std::to_string(pid) + " does not exist");
    std::string agent = line.agent;
    if (agent.empty()) {
        agent = agent_loaded_in(pid);
        if (agent.empty())
            return failure("process " + std::to_string(pid) + " has no ojx agent loaded, so nothing to dump; " +
                           "start profiling with `ojx attach " + std::to_string(pid) + "`");
    } else if (int status = 0; !locate_agent("dump", line.agent, agent, status)) {
        return status;
    }

    const agent_load_result answer = load_agent(pid, agent, line.agent_options());
    if (!answer.ok()) return failure(answer.error);
    report_jvm_text(pid, answer);
    if (answer.agent_return_code != 0)
        return failure("process " + std::to_string(pid) + " wrote no profile (return code " +
                       std::to_string(answer.agent_return_code) +
                       "): its agent is not profiling (stopped already?) or could not write the file; its message is "
                       "on the JVM's standard error");
    const std::string where =
        line.file.empty() ? "the file given when profiling started" : where_asked(pid, line.file, answer);
    std::fprintf(stderr, "ojx: process %d wrote its profile to %s%s\n", static_cast<int>(pid), where.c_str(),
                 line.stop ? " and stopped profiling" : "");
    return exit_ok;
}

} // namespace ojx::tool
