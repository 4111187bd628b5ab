// A whole replay, from a trace's bytes to the profile: read the run's description, apply the analysis settings a
// replay may change, build the profiler with the recorded policies and settings, replay the trace into it, and
// write the JSON profile. What `ojx replay` and the tests call.
#pragma once

#include "ojx/profiler.hpp"
#include "ojx/replay/replay_memory.hpp"
#include "ojx/replay/replay_watchpoints.hpp"
#include "ojx/replay/trace_replay.hpp"
#include "ojx/report.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <string_view>

namespace ojx::replay {

// The settings a trace of samples and traps can be analysed again with (trace_replay.hpp says why only these).
// Unset: as recorded.
struct replay_settings {
    std::optional<std::uint64_t> min_comparisons;
    std::optional<double> confidence;
    // The profiler's seed. Another seed than the recorded one makes the profiler pair and watch other objects than
    // the recording did, so the recorded traps no longer match (they count as stale): allowed, for studying exactly
    // that, and reported as watchpoint differences.
    std::optional<std::uint64_t> seed;
};

struct replayed_profile {
    std::string error;  // one line naming the trace; nothing below is meaningful when it is set
    trace_run_description run; // as recorded, with the settings applied
    replay_result replay;
    replica_report report;
    std::string json;   // the profile (docs/profile-format.md)
};

inline replayed_profile replay_profile(std::span<const std::byte> file, std::string_view name,
                                       const replay_settings& settings = {}) {
    replayed_profile result;
    run_reading reading = read_run_description(file, name);
    if (!reading.run) {
        result.error = std::move(reading.error);
        return result;
    }
    result.run = *reading.run;
    profiler_config& config = result.run.profiler;
    if (settings.min_comparisons) config.estimator.min_comparisons = *settings.min_comparisons;
    if (settings.confidence) config.estimator.confidence = *settings.confidence;
    if (settings.seed) config.seed = *settings.seed;

    const bool known = with_recorded_policies(result.run.facts, [&]<class Policies>(std::type_identity<Policies>) {
        replay_watchpoints watchpoints(result.run.watchpoint_slots);
        replay_memory memory;
        profiler<Policies> prof(config, watchpoints, memory);
        result.replay = trace_replayer<Policies>(prof, watchpoints, memory).run(file, name);
        if (!result.replay.error.empty()) return;
        result.report = prof.report();
        std::ostringstream out;
        write_json(out, result.report, prof.contexts(), result.replay.naming(), result.run.facts);
        result.json = out.str();
    });
    if (!known) {
        result.error = std::string(name) + ": the recording used pairing '" + result.run.facts.pairing +
                       "' and replacement '" + result.run.facts.replacement + "', which this replay does not have";
    } else if (!result.replay.error.empty()) {
        result.error = result.replay.error;
    }
    return result;
}

} // namespace ojx::replay
