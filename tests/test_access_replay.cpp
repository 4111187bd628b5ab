// Traces of every access (emulation/access_recorder.hpp) replayed through any configuration
// (replay/access_replay.hpp): with the recorded one the live run's profile comes back byte for byte; the same
// trace, configuration and seeds give the same profile every time; a trace of samples and traps refuses what it
// cannot answer; and on the same inputs, policies differ the way they should (over many seeds, stated tolerances).
#include "ojx/emulation/access_recorder.hpp"
#include "ojx/emulation/heap_shapes.hpp"
#include "ojx/emulation/session.hpp"
#include "ojx/emulation/trace_recorder.hpp"
#include "ojx/replay/replay_profile.hpp"
#include "ojx/replay/replica_truth.hpp"
#include "ojx/report.hpp"
#include "recorded_scenarios.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <utility>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace ojx;
using namespace ojx::emulation;
using namespace ojx::testing;

template <class Policies = policies<>>
recorded_run record(const scenario& s, std::uint64_t seed) {
    const auto naming = naming_for(s.shapes);
    access_recording_session<Policies> r(config_for(s, seed), naming);
    recorded_run run;
    run.workload = run_workload(r.machine, r.prof.contexts(), s.shapes, {.seed = seed, .collect_every = s.collect_every});
    run.live_json = profile_json(r, naming);
    run.events = r.machine.accesses();
    run.trace = finished_trace(r.trace);
    return run;
}

} // namespace

TEST_CASE("a trace of every access replayed as recorded gives the live profile byte for byte", "[replay][access]") {
    std::uint64_t bytes = 0;
    std::uint64_t accesses = 0;
    for (std::uint64_t seed = 1; seed <= 4; ++seed) {
        for (const scenario& s : scenarios()) {
            INFO(s.label << ", seed " << seed);
            const recorded_run run = record(s, seed);
            const auto replay = replay::replay_profile(run.trace, "run.ojxt");
            INFO(replay.error);
            REQUIRE(run.live_json == unrecorded_json(s, seed));
            REQUIRE(replay.error.empty());
            REQUIRE(replay.run.every_access);
            REQUIRE(replay.replay.complete);
            REQUIRE(replay.replay.undefined_contexts == 0);
            REQUIRE(replay.accesses == run.events);
            REQUIRE(replay.report.stats.comparisons > 0);
            REQUIRE(replay.json == run.live_json);
            bytes += run.trace.size();
            accesses += run.events;
        }
    }
    std::printf("every-access replay: %zu scenarios x 4 seeds replayed to the live profiles; %.2f trace bytes per "
                "access (allocations, symbols and framing included)\n",
                scenarios().size(), static_cast<double>(bytes) / static_cast<double>(accesses));
}

TEST_CASE("the same trace, configuration and seeds give the same profile every time", "[replay][access]") {
    const recorded_run run = record(scenarios()[0], 5);
    replay::replay_settings other;
    for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
             {"slots", "2"}, {"replacement", "oldest-first"}, {"pairing", "recent"}, {"period", "17"},
             {"sampling", "fixed"}, {"sampler-seed", "99"}, {"seed", "4"}, {"trigger", "at-sample"}, {"window", "32"}})
        REQUIRE_FALSE(replay::set_replay_setting(other, key, value));
    const auto first = replay::replay_profile(run.trace, "run.ojxt", other);
    REQUIRE(first.error.empty());
    REQUIRE(first.json != run.live_json);
    REQUIRE(first.facts.replacement == "oldest-first");
    REQUIRE(first.facts.pairing == "recent");
    REQUIRE(first.facts.sampler == "emulated (fixed period 17)");
    REQUIRE(first.facts.watchpoints == "emulated debug registers, 2 slots");
    REQUIRE(first.report.stats.comparisons > 0);
    for (int again = 0; again < 3; ++again) REQUIRE(replay::replay_profile(run.trace, "run.ojxt", other).json == first.json);
    // Another seed alone changes the profile.
    replay::replay_settings reseeded = other;
    reseeded.sampler_seed = 100;
    reseeded.randomized = true;
    const auto second = replay::replay_profile(run.trace, "run.ojxt", reseeded);
    REQUIRE(second.error.empty());
    REQUIRE(second.json != first.json);
}

TEST_CASE("a trace of samples and traps refuses what it cannot answer, naming the setting and why", "[replay][access]") {
    const scenario s = scenarios()[0];
    const auto naming = naming_for(s.shapes);
    recording_session<> r(config_for(s, 1), naming);
    run_workload(r.machine, r.prof.contexts(), s.shapes, {.seed = 1});
    const auto bytes = finished_trace(r.trace);
    for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
             {"slots", "2"}, {"replacement", "keep-armed"}, {"pairing", "recent"}, {"period", "10"},
             {"sampling", "fixed"}, {"sampler-seed", "3"}, {"trigger", "loads-only"}, {"window", "0"}}) {
        replay::replay_settings settings;
        REQUIRE_FALSE(replay::set_replay_setting(settings, key, value));
        const auto refused = replay::replay_profile(bytes, "sampled.ojxt", settings);
        REQUIRE(refused.error == "sampled.ojxt: '" + key +
                                     "' needs a trace of every access; this one holds only the samples and traps its "
                                     "recording took, and another sampler, watchpoint or pairing setting would have "
                                     "taken other ones");
        REQUIRE(refused.json.empty());
    }
    replay::replay_settings judged;
    REQUIRE_FALSE(replay::set_replay_setting(judged, "confidence", "99%"));
    REQUIRE_FALSE(replay::set_replay_setting(judged, "min-comparisons", "5"));
    REQUIRE(replay::replay_profile(bytes, "sampled.ojxt", judged).error.empty());
}

TEST_CASE("settings are refused with one line naming the value they take", "[replay][access]") {
    replay::replay_settings settings;
    REQUIRE(replay::set_replay_setting(settings, "slots", "17") == "option 'slots=17': expected 0 to 16 slots");
    REQUIRE(replay::set_replay_setting(settings, "replacement", "lru") ==
            "option 'replacement=lru': expected one of reservoir, oldest-first, keep-armed");
    REQUIRE(replay::set_replay_setting(settings, "period", "0") == "option 'period=0': expected a count of at least 1");
    REQUIRE(replay::set_replay_setting(settings, "confidence", "1") ==
            "option 'confidence=1': expected a fraction above 0 and below 1, e.g. 0.99 or 99%");
    REQUIRE(replay::set_replay_setting(settings, "slots", "many") ==
            "option 'slots=many': expected a count: a non-negative integer, e.g. 100");
    REQUIRE(replay::set_replay_setting(settings, "slot", "1")->starts_with("unknown setting 'slot'; valid settings "
                                                                          "are: min-comparisons, confidence, seed"));
    // The trigger's user name and its alias, as traces spell it, are the same setting.
    REQUIRE_FALSE(replay::set_replay_setting(settings, "trigger", "sample"));
    REQUIRE(settings.trigger == emulation::watch_trigger::at_sample);
    settings.trigger.reset();
    REQUIRE_FALSE(replay::set_replay_setting(settings, "trigger", "at-sample"));
    REQUIRE(settings.trigger == emulation::watch_trigger::at_sample);
    REQUIRE_FALSE(settings.slots);
}

TEST_CASE("the truth of a trace of every access is the workload's own", "[replay][access]") {
    for (const scenario& s : scenarios()) {
        const recorded_run run = record(s, 7);
        const auto replayed = replay::replay_profile(run.trace, "run.ojxt");
        REQUIRE(replayed.error.empty());
        const auto truth = replay::find_replica_truth(run.trace, "run.ojxt", replayed.run.profiler,
                                                      replayed.run.profiler.compare_window);
        REQUIRE(truth.error.empty());
        for (std::size_t i = 0; i < s.shapes.size(); ++i) {
            INFO(s.label << ", " << s.shapes[i].name);
            const auto& expected = run.workload.truths[i];
            const auto found = truth.sites.find(run.workload.allocation_contexts[i]);
            REQUIRE(found != truth.sites.end());
            REQUIRE(found->second.site == synthetic_frame_name(synthetic_frame(i, frame_role::allocation), s.shapes));
            REQUIRE(found->second.objects == expected.objects);
            REQUIRE(found->second.largest_group == expected.largest_group);
            // The workload estimates θ from 5000 random comparisons (standard error at most 0.0071); the trace's
            // θ is exact.
            REQUIRE(std::abs(found->second.theta - expected.theta) <= 0.03);
        }
    }
}

namespace {

struct policy_outcome {
    std::uint64_t comparisons = 0;
    bool estimated = false;
    bool covers_ratio = false;
    bool measured_alpha = false; // the estimate had α comparisons
};

// Replays `trace` with `settings` and judges the estimate of context `site` against the trace's truth.
policy_outcome replay_with(const std::vector<std::byte>& trace, const replay::replay_settings& settings,
                           context_id site) {
    const auto replayed = replay::replay_profile(trace, "run.ojxt", settings);
    REQUIRE(replayed.error.empty());
    const auto truth = replay::find_replica_truth(trace, "run.ojxt", replayed.run.profiler,
                                                  replayed.run.profiler.compare_window);
    policy_outcome outcome{.comparisons = replayed.report.stats.comparisons};
    for (const context_report& c : replayed.report.contexts) {
        if (c.context != site || !c.estimate.reported) continue;
        const double ratio = truth.sites.at(site).largest_group_ratio;
        outcome.estimated = true;
        outcome.covers_ratio = c.estimate.omega <= ratio && ratio <= c.estimate.gamma;
        outcome.measured_alpha = c.estimate.alpha_comparisons > 0;
    }
    return outcome;
}

replay::replay_settings with(std::initializer_list<std::pair<const char*, const char*>> assignments) {
    replay::replay_settings settings;
    for (const auto& [key, value] : assignments) REQUIRE_FALSE(replay::set_replay_setting(settings, key, value));
    return settings;
}

} // namespace

// On the same recorded inputs (one trace per seed, every policy replayed on it), over 16 seeds.
TEST_CASE("on the same inputs, policies differ as they should", "[replay][access][statistical]") {
    constexpr std::uint64_t seeds = 16;
    const context_shape control{.name = "control", .object_size = 1024,
                                .group_sizes = std::vector<std::uint32_t>(60, 1)};
    // Partial replicas: every object differs from the others in a few words, so X_N/X is 1/X, but most words
    // agree (θ high). Only a pair compared at two probes shows the differing words (α), which is what brings ω
    // down: one slot cannot arm two probes of a pair, four can. Without α evidence ω claims nothing (0), so
    // both cover X_N/X; one slot by saying nothing, four by measuring α.
    const scenario partial{"partial replicas", {{.name = "partial", .object_size = 2048, .group_sizes = {100},
                                                 .differing_words = 6, .zero_fraction = 0.9}, control}};
    // Replicas in runs: each object equals the previous one with probability 0.95; random pairs rarely agree.
    // Pairing with the most recent object measures "equal to the last one" and ω overshoots X_N/X; reservoir
    // pairing counts every pair alike.
    const scenario runs{"runs", {{.name = "runs", .object_size = 1024, .repeat_probability = 0.95, .objects = 160},
                                 control}};
    std::uint64_t one_slot = 0, four_slots = 0, more_with_four = 0;
    std::uint64_t partial_covered_one = 0, partial_covered_four = 0, alpha_measured_one = 0, alpha_measured_four = 0;
    std::uint64_t runs_covered_reservoir = 0, runs_covered_recent = 0;
    for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
        INFO("seed " << seed);
        const recorded_run p = record(partial, seed);
        const context_id partial_site = p.workload.allocation_contexts[0];
        const auto one = replay_with(p.trace, with({{"slots", "1"}}), partial_site);
        const auto four = replay_with(p.trace, with({{"slots", "4"}}), partial_site);
        one_slot += one.comparisons;
        four_slots += four.comparisons;
        more_with_four += four.comparisons > one.comparisons ? 1 : 0;
        partial_covered_one += one.covers_ratio ? 1 : 0;
        partial_covered_four += four.covers_ratio ? 1 : 0;
        alpha_measured_one += one.measured_alpha ? 1 : 0;
        alpha_measured_four += four.measured_alpha ? 1 : 0;

        const recorded_run r = record(runs, seed);
        const context_id runs_site = r.workload.allocation_contexts[0];
        runs_covered_reservoir += replay_with(r.trace, with({{"pairing", "reservoir"}}), runs_site).covers_ratio ? 1 : 0;
        runs_covered_recent += replay_with(r.trace, with({{"pairing", "recent"}}), runs_site).covers_ratio ? 1 : 0;
    }
    std::printf("policies on the same inputs, %llu seeds: comparisons with 1 slot %llu, with 4 slots %llu (more in %llu "
                "seeds); partial replicas: [ω, γ] covers X_N/X with 1 slot %llu, with 4 slots %llu; replicas in runs: "
                "covered with reservoir pairing %llu, with recent pairing %llu\n",
                static_cast<unsigned long long>(seeds), static_cast<unsigned long long>(one_slot),
                static_cast<unsigned long long>(four_slots), static_cast<unsigned long long>(more_with_four),
                static_cast<unsigned long long>(partial_covered_one), static_cast<unsigned long long>(partial_covered_four),
                static_cast<unsigned long long>(runs_covered_reservoir),
                static_cast<unsigned long long>(runs_covered_recent));
    std::printf("partial replicas: alpha measured with 1 slot in %llu seeds, with 4 slots in %llu\n",
                static_cast<unsigned long long>(alpha_measured_one),
                static_cast<unsigned long long>(alpha_measured_four));
    // Measured (seeds 1-16): 2457 vs 4984 comparisons, more with 4 slots in 16 of 16; partial replicas covered
    // 16 of 16 with one slot and with four (with α taken as 0 without evidence, one slot covered 0 of 16), α
    // measured in 0 of 16 with one slot and 16 of 16 with four; runs covered 16 of 16 with reservoir pairing, 2 of
    // 16 with recent.
    // Tolerances: half that margin on comparisons, and at least 13 of 16 (80 %) where a policy should cover, at
    // most 3 (resp. 6) of 16 where it should not.
    REQUIRE(four_slots * 2 >= one_slot * 3);
    REQUIRE(more_with_four >= 14);
    REQUIRE(partial_covered_four >= 13);
    REQUIRE(partial_covered_one >= 13);
    REQUIRE(alpha_measured_one <= 3);
    REQUIRE(alpha_measured_four >= 13);
    REQUIRE(runs_covered_reservoir >= 13);
    REQUIRE(runs_covered_recent <= 6);
}
