// What both agents say and write about a run (agent_report.hpp): the start line names the pid, the runtime, the
// backend's mechanisms, the agent's details and the files in one line; a profile is written whole with the exit
// summary ending "profile written WHEN to PATH", or not at all with one line saying why, last, quiet or not; the
// run.agent counters every session has follow the health counters.
#include "hardware_test_support.hpp"

#include "ojx/agents/agent_report.hpp"

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

using namespace ojx;
using namespace ojx::agents;
using ojx::hardware::profiling_session;
using ojx::hardware::testing::standard_error_of;

namespace {

// A context tree with its root alone (what a run that tracked nothing has).
struct root_only_tree {
    static constexpr context_id root = 0;
    std::size_t size() const noexcept { return 1; }
    context_id parent(context_id) const noexcept { return root; }
    std::uint64_t frame_of(context_id) const noexcept { return 0; }
};

std::string contents(const std::string& path) {
    std::ifstream in(path);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::size_t begin = 0;
    for (std::size_t end; (end = text.find('\n', begin)) != std::string::npos; begin = end + 1)
        lines.push_back(text.substr(begin, end - begin));
    return lines;
}

struct written_profile {
    bool written = false;
    std::string said;
};

written_profile write(const std::string& path, const summary_settings& settings) {
    const profiling_session session;
    const replica_report report;
    const root_only_tree tree;
    const report_naming naming;
    run_facts facts;
    facts.runtime = "test runtime";
    facts.agent_counters = {{"single_steps", 3}};
    written_profile result;
    result.said = standard_error_of(
        [&] { result.written = write_agent_profile(agent_profile{report, tree, naming, facts}, path, session, settings); });
    return result;
}

} // namespace

TEST_CASE("agent report: the start line says the pid, the runtime, the mechanisms, the agent's details and files") {
    const profiling_session session;
    const auto& backend = session.backend();
    agent_files files;
    files.profile = "/p/profile.json";
    const std::string pid = std::to_string(getpid());
    // Verbose: every mechanism and why.
    const std::string mechanisms = "; sampler: " + backend.sampler_description() + "; watchpoints: " +
                                   backend.watchpoint_description() + "; memory reads: " +
                                   backend.memory_read_description() + "; signals: " + backend.signal_description() +
                                   "; heap layout; profile: /p/profile.json\n";
    CHECK(start_line(backend, "OpenJDK 17 (G1)", "allocations sampled", "heap layout", files, true) ==
          "ojx: profiling pid " + pid + " (OpenJDK 17 (G1))" + mechanisms);
    CHECK(start_line(backend, "", "allocations sampled", "heap layout", files, true) ==
          "ojx: profiling pid " + pid + mechanisms);
    // At a glance: the allocations, whether accesses are sampled, the profile; one short line.
    const std::string brief = start_line(backend, "OpenJDK 17 (G1)", "allocations sampled", "heap layout", files, false);
    CHECK(brief.rfind("ojx: profiling pid " + pid + " (OpenJDK 17 (G1)): allocations sampled; accesses ", 0) == 0);
    CHECK(brief.find("profile: /p/profile.json\n") != std::string::npos);
    CHECK(brief.find("heap layout") == std::string::npos);
    CHECK(std::count(brief.begin(), brief.end(), '\n') == 1);
    CHECK(brief.size() <= 160);
}

TEST_CASE("agent report: a profile written whole, and the summary's last line says where") {
    const std::string path = "/tmp/ojx-agent-report-" + std::to_string(getpid()) + ".json";
    const std::vector<std::string> own = {"an agent's own line"};
    const written_profile profile = write(path, {false, "at exit", own});
    CHECK(profile.written);
    const std::string json = contents(path);
    CHECK(json.find("\"ojx_profile_version\"") != std::string::npos);
    CHECK(json.find(R"("agent": {"single_steps": 3})") != std::string::npos);
    struct stat status{};
    REQUIRE(stat(path.c_str(), &status) == 0);
    CHECK((status.st_mode & 0777) == 0600);
    const std::vector<std::string> lines = lines_of(profile.said);
    REQUIRE(lines.size() >= 4);
    CHECK(lines.front() == "ojx replica report");
    CHECK(lines[1] == "  runtime:     test runtime");
    CHECK(lines[lines.size() - 3].find(" samples (") != std::string::npos);
    CHECK(lines[lines.size() - 2] == "ojx: an agent's own line");
    CHECK(lines.back() == "ojx: profile written at exit to " + path);
    CHECK(write(path, {true, "at exit", own}).said.empty());
    std::remove(path.c_str());
}

TEST_CASE("agent report: a profile that cannot be written is one line, last, and nothing says it was written") {
    const std::string path = "/nonexistent-ojx-directory/p.json";
    for (const bool quiet : {false, true}) {
        const written_profile profile = write(path, {quiet, "at exit", {}});
        CHECK_FALSE(profile.written);
        const std::vector<std::string> lines = lines_of(profile.said);
        REQUIRE_FALSE(lines.empty());
        CHECK(lines.back() == "ojx: could not write the profile to " + path + ": No such file or directory");
        CHECK(profile.said.find("written") == std::string::npos);
        CHECK(lines.size() == (quiet ? 1u : lines.size()));
    }
}

TEST_CASE("agent report: every session's counters follow the health counters in run.agent") {
    const profiling_session session;
    run_facts facts;
    facts.agent_counters = {{"threads_unprofiled", 2}};
    add_session_counters(session, facts);
    std::vector<std::string> names;
    for (const auto& [name, value] : facts.agent_counters) names.push_back(name);
    CHECK(names == std::vector<std::string>{"threads_unprofiled", "samples_dropped_profiler_busy",
                                            "samples_staged_profiler_busy", "traps_dropped_profiler_busy", "single_steps",
                                            "single_steps_refused_at_system_calls", "sampling_interrupts"});
    CHECK(facts.agent_counters[0].second == 2);
}
