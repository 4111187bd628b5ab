// The options every ojx agent accepts (the native LD_PRELOAD agent and the JVMTI agent), in the syntax of
// ojx/options.hpp, and their translation into a profiling session's settings; the agent's help; the names of its
// files. Each agent adds a table of its own options (allocation tracking's track_rate and interval, with its own
// defaults; the JVM agent's start/stop) to this one, and parses and lists both with parse_agent_options and
// agent_help.
#pragma once

#include "ojx/hardware/profiling_session.hpp"
#include "ojx/options.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ojx::agents {

using hardware::recording_summary;
using hardware::session_options;

std::vector<option_spec> common_agent_options();

// How an agent tracks allocations (track_rate=, interval=, exact): every allocation at or above the threshold
// (exact, or interval=0), one per `interval` bytes allocated on average, or adaptively about `track_rate` a
// second.
struct allocation_tracking {
    std::uint64_t interval = 0;   // with track_rate 0: the fixed sampling interval; 0: every allocation
    std::uint64_t track_rate = 0; // tracked allocations a second aimed at; 0: the interval is fixed
};

// Session settings from parsed values (declared with common_agent_options). Error message for values that parse
// but make no sense (e.g. rate=0).
struct agent_settings {
    session_options session;
    std::string file_pattern; // with %p and %t still in it
    std::string record_pattern; // the trace's file (record=), likewise; empty: no recording
    bool quiet = false;   // nothing on standard error but errors
    bool verbose = false; // the start line in full, and a profiled process's descendants speak too
    bool help = false;
    // exact: the verification mode. The agent tracks every allocation at or above the threshold and digests
    // with no budget (its own settings); the session keeps every distinct content of a site.
    bool exact = false;
    allocation_tracking tracking; // filled by parse_agent_options
};

// copies=: instructions a sampled load's value may be followed for. Each is a single step (a few µs), so the
// bound caps what one sample can cost.
inline constexpr std::uint64_t max_follow_bound = 64;

// Distinct contents a site keeps in the exact mode: every one a run can have (the table grows as they come).
inline constexpr std::size_t exact_content_groups = std::size_t{1} << 30;

// A digest budget as an agent runs it: none (0) in the exact mode.
inline std::uint64_t digest_budget(const agent_settings& settings, std::uint64_t bytes) noexcept {
    return settings.exact ? 0 : bytes;
}
std::optional<std::string> to_agent_settings(const option_values& values, agent_settings& settings);

// The allocation-tracking options every agent declares besides these: track_rate (a count of allocations a second)
// and interval (a size). What each tracks differs (the native agent its allocations, the JVM agent JVMTI's heap
// samples), so the agent gives their defaults and help, literals that outlive the table.
struct allocation_tracking_words {
    std::string_view default_track_rate, track_rate_help;
    std::string_view default_interval, interval_help;
};
std::vector<option_spec> allocation_tracking_options(const allocation_tracking_words& words);

// The allocation-tracking options checked against each other and exact: the message for a combination that makes
// no sense.
std::optional<std::string> check_allocation_tracking(const option_values& values);

// An agent's option string parsed against its table (common_agent_options() and its own, which declares
// track_rate and interval): the values, for the agent's own options, and the settings of the common ones and of
// allocation tracking.
struct parsed_agent_options {
    option_values values;
    agent_settings settings;
};
// Error message for a string that does not parse, a value that makes no sense, or options that do not go
// together.
std::optional<std::string> parse_agent_options(std::string_view text, std::span<const option_spec> specs,
                                               parsed_agent_options& into);

// "ojx AGENT options (SYNTAX):" and the table's options, a line each.
std::string agent_help(std::string_view agent, std::string_view syntax, std::span<const option_spec> specs);

// What an agent says at exit about its trace (record=): problems always, one line each; the summary (events,
// bytes per event, records lost) unless `quiet`. To standard error.
void report_recording(const recording_summary& summary, bool quiet);

// The local time as file names show it (`%t` in `file=`): 20261122-071500.
std::string start_time_text();

// One agent per process, and processes start others that inherit it (LD_PRELOAD, JAVA_TOOL_OPTIONS): a shell,
// `timeout`, a compiler driver and its passes all profiled with one `file=`. The first profiled process of a tree
// (the root) names itself and its start directory in the environment its descendants inherit; a descendant that
// finds a root other than itself writes, for a name without %p, `<name>.<pid><extension>` (replicas.json →
// replicas.4242.json), so every process keeps its own profile and trace, and the root writes the name as given.
// Relative names are resolved against the root's start directory, once, at start: a later chdir moves nothing.
inline constexpr const char* agent_root_pid_variable = "OJX_AGENT_ROOT_PID";
inline constexpr const char* agent_root_directory_variable = "OJX_AGENT_ROOT_DIR";

struct agent_files {
    std::string profile;       // absolute
    std::string trace;         // absolute; empty: no recording
    std::uint64_t root_pid = 0; // the profiled ancestor whose environment this process inherited; 0: none
};

// Whether this process speaks on standard error beyond its errors: not with `quiet`, and not in a descendant of a
// profiled process (the first process of a tree speaks for it) unless `verbose` asks.
inline bool speaks(const agent_settings& settings, const agent_files& files) noexcept {
    return !settings.quiet && (files.root_pid == 0 || settings.verbose);
}

// This process's files from the patterns in `settings` (%p, %t expanded with `pid` and `start_time`). With
// `mark_environment`, a root sets the variables above for its descendants (only before the program starts
// threads: setenv is not thread-safe). Error: the start directory cannot be named.
std::optional<std::string> resolve_agent_files(const agent_settings& settings, std::uint64_t pid,
                                               const std::string& start_time, bool mark_environment,
                                               agent_files& into);

// `name` with ".<pid>" before the extension of its last component (a leading dot starts no extension).
std::string with_process_suffix(const std::string& name, std::uint64_t pid);

// The line an agent says at start about its files: "profile: P" and, where inherited, whose name it derives from.
std::string describe_agent_files(const agent_files& files);

// This process's files (resolve_agent_files, with its pid and the start time now), and a check that the profile
// can be written there (a profile that cannot is known at start: the agent then does not profile). Error message.
std::optional<std::string> prepare_agent_files(const agent_settings& settings, bool mark_environment,
                                               agent_files& into);

} // namespace ojx::agents
