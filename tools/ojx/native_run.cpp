// `ojx run -- COMMAND` for a native program: the command and every process it starts run under the native agent
// (LD_PRELOAD, inherited by the whole tree), each writing its own profile into a directory of the run's; at the
// end ojx merges them (`ojx merge` semantics: evidence summed, estimates recomputed) into the one profile asked for,
// prints one report for the tree on standard error, and exits with the command's status. The agents stay quiet:
// ojx speaks for the tree.
#include "native_run.hpp"

#include "agent_library.hpp"
#include "child_process.hpp"
#include "commands.hpp"
#include "output_file.hpp"
#include "profile_merger.hpp"

#include "ojx/options.hpp"
#include "ojx/profile_writer.hpp"
#include "ojx/text_report.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <string>
#include <system_error>
#include <vector>

namespace ojx::tool {

namespace {

namespace fs = std::filesystem;

std::string now_text() {
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    return file_timestamp(local);
}

// Removes the run's directory and what the agents left in it, however the run ended.
struct scratch_directory {
    std::string path;
    ~scratch_directory() {
        std::error_code error;
        if (!path.empty()) fs::remove_all(path, error);
    }
};

} // namespace

int run_native(const run_command_line& line) {
    const profiling_options& profiling = line.profiling;
    for (const std::string& setting : profiling.settings)
        if (setting.starts_with("duration="))
            return usage_error("run", "--duration is for JVMs: the native agent writes each process's profile when it "
                                      "exits");
    const agent_library agent = find_agent_library(profiling.agent, agent_kind::native);
    if (!agent.ok()) {
        std::fprintf(stderr, "ojx: %s\n", agent.error.c_str());
        return profiling.agent.empty() ? exit_failed : exit_usage;
    }
    const char* tmp = std::getenv("TMPDIR");
    const std::string parent = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
    // mkdtemp replaces the trailing XXXXXX with a name no other directory has, and creates it mode 0700.
    std::string scratch_path = parent + "/ojx-run-XXXXXX";
    if (mkdtemp(scratch_path.data()) == nullptr) {
        std::fprintf(stderr, "ojx: cannot make a directory for the run's profiles in %s\n", parent.c_str());
        return exit_failed;
    }
    const scratch_directory scratch{scratch_path};

    // The agents' options: the user's, quiet (ojx speaks for the tree), and the file last so that it wins.
    std::string options = "quiet";
    for (const std::string& setting : profiling.settings) options += "," + setting;
    options += ",file=" + scratch.path + "/tree.json";
    const char* preload = std::getenv("LD_PRELOAD");
    const std::string preloads = agent.path + (preload != nullptr && *preload != '\0' ? ":" + std::string(preload) : "");
    setenv("LD_PRELOAD", preloads.c_str(), 1);
    setenv("OJX_OPTIONS", options.c_str(), 1);
    // This run's first process is the root of its tree, whatever profiled process started ojx.
    unsetenv("OJX_AGENT_ROOT_PID");
    unsetenv("OJX_AGENT_ROOT_DIR");

    const std::string started = now_text();
    std::fprintf(stderr, "ojx: running %s under the native agent; its process tree's profiles merge at its exit\n",
                 line.command.front().c_str());
    const child_exit child = run_child(line.command);
    if (!child.ok()) {
        std::fprintf(stderr, "ojx: %s\n", child.error.c_str());
        return exit_failed;
    }

    std::vector<std::string> written;
    std::error_code error;
    for (const auto& entry : fs::directory_iterator(scratch.path, error))
        if (entry.path().extension() == ".json") written.push_back(entry.path().string());
    std::sort(written.begin(), written.end());
    if (written.empty()) {
        std::fprintf(stderr,
                     "ojx: %s exited with status %d and no process of it wrote a profile (a static or set-user-ID "
                     "program is not preloaded; the agent's message, if any, is above)\n",
                     line.command.front().c_str(), child.exit_code);
        return child.exit_code;
    }
    profile merged;
    if (const auto problem = load_profiles(written, merged)) {
        std::fprintf(stderr, "ojx: the run's profiles cannot be merged: %s\n", problem->c_str());
        return exit_failed;
    }
    const std::string target =
        expand_file_name(profiling.profile_file(), static_cast<std::uint64_t>(child.pid), started);
    output_file out(target);
    if (out.ok()) write_profile_json(out.stream(), merged);
    if (const auto problem = out.commit()) {
        std::fprintf(stderr, "ojx: %s\n", problem->c_str());
        return exit_failed;
    }
    // The report goes to standard error, as the agents' own does: standard output is the program's.
    write_text_report(std::cerr, {target}, merged, 10);
    std::fprintf(stderr, "ojx: %zu process%s profiled; the merged profile is %s\n", written.size(),
                 written.size() == 1 ? "" : "es", target.c_str());
    return child.exit_code;
}

} // namespace ojx::tool
