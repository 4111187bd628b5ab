// Traces of every access (emulation/access_recorder.hpp) replayed through any configuration
// (replay/access_replay.hpp): with the recorded one the live run's profile comes back byte for byte; the same
// trace, configuration and seeds give the same profile every time; a trace of samples and traps refuses what it
// cannot answer; and on the same inputs, policies differ the way they should (over many seeds, stated tolerances).
#include "ojx/emulation/access_recorder.hpp"
#include "ojx/emulation/heap_shapes.hpp"
#include "ojx/emulation/session.hpp"
#include "ojx/emulation/trace_recorder.hpp"
#include "ojx/replay/replay_profile.hpp"
#include "ojx/report.hpp"

#include <catch2/catch.hpp>

#include <cstdio>
#include <utility>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace ojx;
using namespace ojx::emulation;

struct scenario {
    std::string label;
    std::vector<context_shape> shapes;
    std::uint32_t collect_every = 0;
    watch_trigger trigger = watch_trigger::loads_and_stores;
};

std::vector<scenario> scenarios() {
    const context_shape control{.name = "control", .object_size = 1024,
                                .group_sizes = std::vector<std::uint32_t>(40, 1)};
    return {
        {"shuffled groups", {{.name = "groups", .object_size = 1024, .group_sizes = {30, 20, 10}}, control}},
        {"runs, mutated", {{.name = "runs", .object_size = 2048, .repeat_probability = 0.9, .objects = 80,
                            .mutated_words = 3}, control}},
        {"sparse partial replicas", {{.name = "sparse", .object_size = 2048, .group_sizes = {60}, .differing_words = 4,
                                      .zero_fraction = 0.9}, control}},
        {"moving collections", {{.name = "moved", .object_size = 1024, .group_sizes = {40, 40},
                                 .order = ordering::runs}, control}, 30},
        {"compared at the sample", {{.name = "at sample", .object_size = 1024, .group_sizes = {50, 10}}, control}, 0,
         watch_trigger::at_sample},
    };
}

session_config config_for(const scenario& s, std::uint64_t seed) {
    session_config config;
    config.profiler.seed = seed;
    config.profiler.context_tree_capacity = 1024;
    config.sampler = {.period = 61, .randomized = seed % 2 == 1, .seed = seed * 31 + 7};
    config.heap_bytes = std::size_t{1} << 20;
    config.trigger = s.trigger;
    return config;
}

report_naming naming_for(const std::vector<context_shape>& shapes) {
    return {[&shapes](std::uint64_t frame) { return synthetic_frame_name(frame, shapes); },
            [&shapes](type_id type) { return type < shapes.size() ? shapes[type].type : std::string("?"); }};
}

struct recorded_run {
    std::string live_json;
    std::vector<std::byte> trace;
    std::uint64_t accesses = 0;
    workload_result workload;
};

template <class Policies = policies<>>
recorded_run record(const scenario& s, std::uint64_t seed) {
    const auto naming = naming_for(s.shapes);
    access_recording_session<Policies> r(config_for(s, seed), naming);
    recorded_run run;
    run.workload = run_workload(r.machine, r.prof.contexts(), s.shapes, {.seed = seed, .collect_every = s.collect_every});
    std::ostringstream out;
    write_json(out, r.prof.report(), r.prof.contexts(), naming, r.facts());
    run.live_json = out.str();
    run.accesses = r.machine.accesses();
    const auto bytes = r.trace.finish();
    run.trace.assign(bytes.begin(), bytes.end());
    REQUIRE(r.trace.writer().events_dropped() == 0);
    return run;
}

template <class Policies = policies<>>
std::string unrecorded_json(const scenario& s, std::uint64_t seed) {
    const auto naming = naming_for(s.shapes);
    session<Policies> plain(config_for(s, seed));
    run_workload(plain.machine, plain.prof.contexts(), s.shapes, {.seed = seed, .collect_every = s.collect_every});
    std::ostringstream out;
    write_json(out, plain.prof.report(), plain.prof.contexts(), naming, plain.facts());
    return out.str();
}

} // namespace

TEST_CASE("a trace of every access replayed as recorded gives the live profile byte for byte", "[replay][access]") {
    std::uint64_t bytes = 0;
    std::uint64_t accesses = 0;
    for (const scenario& s : scenarios()) {
        for (std::uint64_t seed = 1; seed <= 4; ++seed) {
            INFO(s.label << ", seed " << seed);
            const recorded_run run = record(s, seed);
            REQUIRE(run.live_json == unrecorded_json(s, seed));
            const auto replay = replay::replay_profile(run.trace, "run.ojxt");
            INFO(replay.error);
            REQUIRE(replay.error.empty());
            REQUIRE(replay.run.every_access);
            REQUIRE(replay.replay.complete);
            REQUIRE(replay.replay.undefined_contexts == 0);
            REQUIRE(replay.accesses == run.accesses);
            REQUIRE(replay.report.stats.comparisons > 0);
            REQUIRE(replay.json == run.live_json);
            bytes += run.trace.size();
            accesses += run.accesses;
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
    const auto bytes = r.trace.finish();
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
    REQUIRE(replay::set_replay_setting(settings, "slots", "17") == "slots takes 0 to 16, not '17'");
    REQUIRE(replay::set_replay_setting(settings, "replacement", "lru") ==
            "replacement takes reservoir, oldest-first or keep-armed, not 'lru'");
    REQUIRE(replay::set_replay_setting(settings, "period", "0") == "period takes a count >= 1, not '0'");
    REQUIRE(replay::set_replay_setting(settings, "confidence", "1") ==
            "confidence takes a fraction, e.g. 0.99 or 99%, not '1'");
    REQUIRE(replay::set_replay_setting(settings, "slot", "1")->starts_with("unknown setting 'slot' (valid: "));
    REQUIRE_FALSE(settings.slots);
}
