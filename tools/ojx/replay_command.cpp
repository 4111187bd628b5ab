// `ojx replay`: analyse a recorded trace again (docs/trace-format.md), with the recorded settings or other
// estimator settings, and write the JSON profile. The replay backend (backends/replay) does the work.
#include "command_line.hpp"
#include "commands.hpp"
#include "output_file.hpp"
#include "whole_file.hpp"

#include "ojx/replay/replay_profile.hpp"

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace ojx::tool {
namespace {

constexpr const char* replay_help = R"(usage: ojx replay TRACE [OPTIONS] -o PROFILE.json

Analyses a recorded run again: feeds the trace's allocations, frees, moves, collections, access samples and
watchpoint traps, in the recorded order, to a profiler built with the recorded settings and policies, and writes
its JSON profile. With the recorded settings the profile is byte for byte the one the recording run wrote.
Traces come from the agents' record=FILE option — the JVM agent's (-agentpath:libojx.so=start,record=run.ojxt)
and the native one's (OJX_OPTIONS=record=run.ojxt LD_PRELOAD=libojxpreload.so) — and from
`ojx_synthetic_demo --record TRACE` (the emulation backend).

  -o, --output FILE        where the profile goes (written whole or not at all; '-' is standard output)
  --min-comparisons N      judge each site with this minimum number of comparisons (default: as recorded)
  --confidence X           confidence of the intervals, e.g. 0.99 or 99% (default: as recorded)
  --seed N                 the profiler's seed (default: as recorded; see below)

What a trace of samples and traps can answer: the same analysis, or the same evidence judged with other
estimator settings (--min-comparisons, --confidence). It cannot answer for another sampler, pairing or
replacement policy, number of watchpoints or comparison window, nor for another seed: those change which objects
are paired and watched, hence which traps would have happened, and the trace holds only the traps that did.
(A replay with another seed runs, but its watchpoints differ from the recording's and most recorded traps then
count as stale; ojx replay says how many watchpoint calls differed.) Those questions need a trace of every
access, which ojx does not record yet.

Exit status: 0 done; 1 the profile could not be written; 2 bad usage, or a missing, truncated, corrupt or
foreign trace (one line naming the file and the problem).

example: ojx replay run.ojxt --min-comparisons 50 -o strict.json && ojx report strict.json
)";

} // namespace

int replay_command(arguments args) {
    command_line line("replay", args);
    std::vector<std::string> inputs;
    std::string output;
    replay::replay_settings settings;
    while (line.next()) {
        if (!line.is_option()) {
            inputs.emplace_back(line.current());
        } else if (line.is("--help") || line.is("-h")) {
            std::fputs(replay_help, stdout);
            return exit_ok;
        } else if (line.is("-o") || line.is("--output")) {
            const std::optional<std::string> path = line.value();
            if (!path) return exit_usage;
            output = *path;
        } else if (line.is("--min-comparisons")) {
            settings.min_comparisons = line.count();
            if (!settings.min_comparisons) return exit_usage;
        } else if (line.is("--confidence")) {
            settings.confidence = line.fraction();
            if (!settings.confidence) return exit_usage;
            if (*settings.confidence <= 0 || *settings.confidence >= 1)
                return line.fail("--confidence: must be between 0 and 1 (exclusive)");
        } else if (line.is("--seed")) {
            settings.seed = line.count();
            if (!settings.seed) return exit_usage;
        } else {
            return line.unknown();
        }
    }
    if (inputs.empty()) return line.fail("no trace given (ojx replay --help)");
    if (inputs.size() > 1) return line.fail("one trace at a time (merge the profiles afterwards: ojx merge)");
    if (output.empty()) return line.fail("no output file: add -o PROFILE.json (or -o - for standard output)");

    const std::string& trace_path = inputs.front();
    std::string error;
    const auto trace = read_whole_file(trace_path, error);
    if (!trace) return line.fail(error);
    const replay::replayed_profile replayed = replay::replay_profile(*trace, trace_path, settings);
    if (!replayed.error.empty()) return line.fail(replayed.error);

    if (output == "-") {
        std::fputs(replayed.json.c_str(), stdout);
        if (std::fflush(stdout) != 0) return exit_failed;
    } else {
        output_file out(output);
        if (out.ok()) out.stream() << replayed.json;
        if (const auto write_error = out.commit()) {
            std::fprintf(stderr, "ojx replay: %s\n", write_error->c_str());
            return exit_failed;
        }
    }
    const replay::replay_result& r = replayed.replay;
    std::fprintf(stderr, "ojx replay: %llu events from %s%s\n", static_cast<unsigned long long>(r.events),
                 trace_path.c_str(), r.complete ? "" : " (no end record: the recording stopped early)");
    if (r.events_lost != 0)
        std::fprintf(stderr, "ojx replay: the recording lost %llu events; the profile misses them\n",
                     static_cast<unsigned long long>(r.events_lost));
    if (r.watchpoint_differences != 0)
        std::fprintf(stderr,
                     "ojx replay: %llu watchpoint arms and disarms differ from the recording's: the recorded traps do "
                     "not all match what this profiler watched (another seed?)\n",
                     static_cast<unsigned long long>(r.watchpoint_differences));
    return exit_ok;
}

} // namespace ojx::tool
