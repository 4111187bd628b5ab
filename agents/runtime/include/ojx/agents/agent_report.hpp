// What every agent says and writes about its run, the same way: the line at start (what it profiles with which
// mechanisms, and where its files go), the profile's run.agent counters that every session has, and the profile
// itself, written whole or not at all (agent_output_file.hpp) with the exit summary on standard error.
#pragma once

#include "ojx/agents/agent_options.hpp"
#include "ojx/hardware/agent_output_file.hpp"
#include "ojx/hardware/profiling_session.hpp"
#include "ojx/copy_profile.hpp"
#include "ojx/exact_counts.hpp"
#include "ojx/followed_copy_graph.hpp"
#include "ojx/report.hpp"

#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <string_view>

namespace ojx::agents {

// Writes `text` to standard error, whatever has become of it: a failed write (standard error closed, a pipe with no
// reader) is ignored, as fprintf's is. fmt::print would throw there, and an exception out of an agent's hook or
// destructor ends the program.
void say(std::string_view text) noexcept;

// The line an agent says as it starts, newline included: one a person reads at a glance — "ojx: profiling pid P
// (RUNTIME): ALLOCATIONS; accesses …; profile: FILE" — or, `verbose`, every mechanism and why: "ojx: profiling pid P
// (RUNTIME); sampler: …; watchpoints: …; memory reads: …; signals: …; DETAILS; profile: …". `runtime` is left out
// when empty; `allocations` says briefly how allocations are tracked, `details` at length (the agent's own:
// allocation stacks, heap layout). The profile's run facts hold the long descriptions whatever is said here.
std::string start_line(const hardware::hardware_backend& backend, std::string_view runtime, std::string_view allocations,
                       std::string_view details, const agent_files& files, bool verbose);

// The run.agent counters every session has, appended to `facts` (after the health counters facts() gave): samples
// and traps dropped while the profiler was busy, single steps (and those refused at system calls), sampling
// interrupts.
void add_session_counters(const hardware::profiling_session& session, run_facts& facts);

// A profile as an agent writes it. `Tree`: the profiler's context tree, or a copy of it (ojx/report.hpp).
template <class Tree>
struct agent_profile {
    const replica_report& report;
    const Tree& tree;
    const report_naming& naming;
    const run_facts& facts;
    const copy_profile* copies = nullptr; // where values were followed (copies=)
    const exact_counts* exact = nullptr;  // where allocations were counted exactly (the JVM agent's count=)
};

// What a session's copy graph holds, taken with its analyses locked (followed_copies_of): none where the run
// followed no value (copies=0). The counters go to the profile's run.agent.
struct followed_copies {
    sampled_copy_graph graph;
    copy_code code;
    sampled_copy_stats stats;
    std::vector<std::pair<std::string, std::uint64_t>> counters;
};
std::optional<followed_copies> followed_copies_of(const followed_copy_graph& copies);

// The profile's copy section of what was taken (`sampling`: the session's followed_copies_description), its sites
// and the code that copied named as the profile names its contexts.
template <class Tree>
std::optional<copy_profile> copy_section(const std::optional<followed_copies>& copies, const replica_report& report,
                                         const Tree& tree, const report_naming& naming, std::string sampling) {
    if (!copies) return std::nullopt;
    return followed_copy_section(copies->graph, copies->code, copies->stats, std::move(sampling), report, tree, naming);
}

// How the exit summary goes.
struct summary_settings {
    bool quiet = false;         // only a failure is said
    std::string_view when;      // "at exit", "on request": "profile written WHEN to PATH"
    std::span<const std::string> agent_lines; // the agent's own, after the counts and the health lines
};

// The exit summary on standard error: unless quiet, `report_text` (the top sites, as `ojx report` prints them), the backend's counts, what the
// program was spared (health lines), the agent's lines and where the profile went; `error`, the write's failure,
// is one line, always, and last.
void print_summary(std::string_view report_text, const hardware::profiling_session& session, const std::string& path,
                   const std::optional<std::string>& error, const summary_settings& settings);

// Writes `profile` to `path` whole or not at all (a failure leaves any earlier file as it was) and says so
// (print_summary). Whether it was written.
template <class Tree>
bool write_agent_profile(const agent_profile<Tree>& profile, const std::string& path,
                   const hardware::profiling_session& session, const summary_settings& settings) {
    ojx::profile named = profile_of(profile.report, profile.tree, profile.naming, profile.facts);
    if (profile.copies) named.copies = *profile.copies;
    if (profile.exact) named.exact = *profile.exact;
    hardware::output_file out;
    std::optional<std::string> error = out.open(path);
    if (!error) {
        write_profile_json(out.stream(), named);
        error = out.commit();
    }
    std::ostringstream text;
    if (!settings.quiet) write_text_report(text, {}, named, 5);
    print_summary(text.view(), session, path, error, settings);
    return !error;
}

} // namespace ojx::agents
