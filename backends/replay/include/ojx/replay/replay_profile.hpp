// A whole replay, from a trace's bytes to the profile: read the run's description, apply the settings the trace can
// answer (replay_settings.hpp), build the profiler with the recorded policies and settings or the ones asked for,
// replay the trace into it, and write the JSON profile. A trace of samples and traps is replayed by trace_replay.hpp,
// a trace of every access by access_replay.hpp. What `ojx replay` and the tests call.
#pragma once

#include "ojx/profile_writer.hpp"
#include "ojx/profiler.hpp"
#include "ojx/replay/access_replay.hpp"
#include "ojx/replay/replay_memory.hpp"
#include "ojx/replay/replay_settings.hpp"
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

struct replayed_profile {
    std::string error;  // one line naming the trace; nothing below is meaningful when it is set
    trace_run_description run; // as recorded, with the settings applied
    replay_result replay;
    replica_report report;
    run_facts facts;    // as the profile states them
    std::string json;   // the profile (docs/profile-format.md)
    // A trace of every access: the accesses the replayed machine saw and the traps its debug registers took.
    std::uint64_t accesses = 0;
    std::uint64_t traps = 0;
    // A trace of every access with value flow: the copy graphs the replay rebuilt.
    std::optional<replayed_copies> copies;
};

namespace detail {

// The policies named, as `use(std::type_identity<Bundle<Replacement, Pairing>>{})`; false when one is unknown.
template <template <class, class> class Bundle, class Use>
bool with_policies(std::string_view replacement, std::string_view pairing, Use&& use) {
    const auto with_pairing = [&]<class Replacement>(std::type_identity<Replacement>) {
        if (pairing == reservoir_pairing::name) use(std::type_identity<Bundle<Replacement, reservoir_pairing>>{});
        else if (pairing == recent_pairing::name) use(std::type_identity<Bundle<Replacement, recent_pairing>>{});
        else return false;
        return true;
    };
    if (replacement == reservoir_replacement::name) return with_pairing(std::type_identity<reservoir_replacement>{});
    if (replacement == oldest_first_replacement::name) return with_pairing(std::type_identity<oldest_first_replacement>{});
    if (replacement == keep_armed_replacement::name) return with_pairing(std::type_identity<keep_armed_replacement>{});
    return false;
}

inline void replay_recorded_accesses(replayed_profile& result, std::span<const std::byte> file, std::string_view name,
                                     const replay_settings& settings) {
    trace_run_description& run = result.run;
    access_replay_config config = recorded_access_config(run);
    if (settings.period) config.sampler.period = *settings.period;
    if (settings.randomized) config.sampler.randomized = *settings.randomized;
    if (settings.sampler_seed) config.sampler.seed = *settings.sampler_seed;
    if (settings.slots) config.watchpoint_slots = *settings.slots;
    if (settings.trigger) {
        config.trigger = *settings.trigger;
        config.profiler.companion_probe.reset(); // the recorded choice was for the recorded trigger
    }
    if (settings.window) config.profiler.compare_window = *settings.window;
    if (settings.replacement) run.facts.replacement = *settings.replacement;
    if (settings.pairing) run.facts.pairing = *settings.pairing;
    run.profiler = config.profiler;
    run.watchpoint_slots = config.watchpoint_slots;
    run.machine = {config.sampler.period, config.sampler.randomized, config.sampler.seed,
                   std::string(emulation::watch_trigger_name(config.trigger))};
    const bool known = with_policies<access_replay_policies>(
        run.facts.replacement, run.facts.pairing, [&]<class Policies>(std::type_identity<Policies>) {
            auto outcome = replay_every_access<Policies>(
                file, name, config, run.facts, [&](const profile& made) {
                    std::ostringstream out;
                    write_profile_json(out, made);
                    result.json = out.str();
                });
            result.replay = std::move(outcome.replay);
            result.report = std::move(outcome.report);
            result.facts = std::move(outcome.facts);
            result.accesses = outcome.accesses;
            result.traps = outcome.traps;
            result.copies = std::move(outcome.copies);
        });
    if (!known)
        result.error = std::string(name) + ": the recording used pairing '" + run.facts.pairing + "' and replacement '" +
                       run.facts.replacement + "', which this replay does not have";
}

inline void replay_samples_and_traps(replayed_profile& result, std::span<const std::byte> file, std::string_view name) {
    const bool known = with_policies<policies>(result.run.facts.replacement, result.run.facts.pairing,
                                               [&]<class Policies>(std::type_identity<Policies>) {
        replay_watchpoints watchpoints(result.run.watchpoint_slots);
        replay_memory memory;
        profiler<Policies> prof(result.run.profiler, watchpoints, memory);
        const bool followed = !result.run.followed_copies.empty();
        followed_copy_graph copies;
        if (followed) copies.prepare(); // as the live session did
        result.replay = trace_replayer<Policies>(prof, watchpoints, memory, followed ? &copies : nullptr).run(file, name);
        if (!result.replay.error.empty()) return;
        prof.note_tracking_stayed_exact(result.run.tracking_stayed_exact);
        result.report = prof.report();
        result.facts = result.run.facts;
        result.facts.seconds = result.replay.seconds;
        result.traps = prof.stats().traps;
        const report_naming naming = result.replay.naming();
        profile made = profile_of(result.report, prof.contexts(), naming, result.facts);
        if (followed)
            made.copies = followed_copy_section(copies.graph(), copies.code(), copies.stats(), result.run.followed_copies,
                                                result.report, prof.contexts(), naming);
        std::ostringstream out;
        write_profile_json(out, made);
        result.json = out.str();
    });
    if (!known)
        result.error = std::string(name) + ": the recording used pairing '" + result.run.facts.pairing +
                       "' and replacement '" + result.run.facts.replacement + "', which this replay does not have";
}

} // namespace detail

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

    if (result.run.every_access) {
        detail::replay_recorded_accesses(result, file, name, settings);
    } else if (const auto unanswerable = every_access_settings(settings); !unanswerable.empty()) {
        result.error = std::string(name) + ": '" + std::string(unanswerable.front()) +
                       "' needs a trace of every access; this one holds only the samples and traps its recording took, "
                       "and another sampler, watchpoint or pairing setting would have taken other ones";
        return result;
    } else {
        detail::replay_samples_and_traps(result, file, name);
    }
    if (result.error.empty() && !result.replay.error.empty()) result.error = result.replay.error;
    return result;
}

} // namespace ojx::replay
