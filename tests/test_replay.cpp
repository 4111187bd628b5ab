// Record once, analyse again: emulated runs recorded as traces (emulation/trace_recorder.hpp) and replayed into a
// fresh profiler (replay/replay_profile.hpp) must give the live run's JSON profile byte for byte; other estimator
// settings must change only how the evidence is judged; a damaged trace must give the reader's error and no profile.
#include "ojx/emulation/heap_shapes.hpp"
#include "ojx/emulation/session.hpp"
#include "ojx/emulation/trace_recorder.hpp"
#include "ojx/replay/replay_profile.hpp"
#include "ojx/report.hpp"
#include "recorded_scenarios.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <span>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace ojx;
using namespace ojx::emulation;
using namespace ojx::testing;

template <class Pairing = reservoir_pairing>
recorded_run record(const scenario& s, std::uint64_t seed) {
    const auto naming = naming_for(s.shapes);
    recording_session<recording_policies<reservoir_replacement, Pairing>> r(config_for(s, seed), naming);
    run_workload(r.machine, r.prof.contexts(), s.shapes,
                 {.seed = seed, .collect_every = s.collect_every});
    recorded_run run;
    run.live_json = profile_json(r, naming);
    run.trace = finished_trace(r.trace);
    run.events = r.recorder.events();
    return run;
}

} // namespace

TEST_CASE("a replayed trace gives the live run's profile byte for byte", "[replay]") {
    std::size_t replayed = 0;
    std::uint64_t trace_bytes = 0;
    std::uint64_t events = 0;
    for (const scenario& s : scenarios()) {
        for (std::uint64_t seed = 1; seed <= 6; ++seed) {
            INFO(s.label << ", seed " << seed);
            const recorded_run run = record(s, seed);
            REQUIRE(run.live_json == unrecorded_json(s, seed));
            const auto replay = replay::replay_profile(run.trace, "run.ojxt");
            REQUIRE(replay.error.empty());
            REQUIRE(replay.replay.complete);
            REQUIRE(replay.replay.events == run.events);
            REQUIRE(replay.replay.watchpoint_differences == 0);
            REQUIRE(replay.replay.undefined_contexts == 0);
            REQUIRE(replay.report.stats.comparisons > 0);
            REQUIRE(replay.json == run.live_json);
            // Compared at the sample, objects got companion probes; the trace says so and the replay read them.
            const bool at_sample = s.trigger == emulation::watch_trigger::at_sample;
            REQUIRE(replay.run.profiler.companion_probe == at_sample);
            REQUIRE((replay.report.stats.companion_probes > 0) == at_sample);
            ++replayed;
            trace_bytes += run.trace.size();
            events += run.events;
        }
    }
    std::printf("replay: %zu recorded runs (%zu shapes x 6 seeds) replayed to identical profiles; the traces hold "
                "%.2f bytes per profiler event (allocation, free, move, collection, sample, trap), file framing, "
                "symbols, memory read and watchpoint calls included\n",
                replayed, scenarios().size(), static_cast<double>(trace_bytes) / static_cast<double>(events));
}

TEST_CASE("recent pairing is replayed with recent pairing", "[replay]") {
    const scenario s = scenarios()[1];
    for (std::uint64_t seed = 1; seed <= 3; ++seed) {
        const recorded_run run = record<recent_pairing>(s, seed);
        REQUIRE(run.live_json == unrecorded_json<policies<reservoir_replacement, recent_pairing>>(s, seed));
        const auto replay = replay::replay_profile(run.trace, "run.ojxt");
        REQUIRE(replay.error.empty());
        REQUIRE(replay.run.facts.pairing == "recent");
        REQUIRE(replay.json == run.live_json);
    }
}

TEST_CASE("other estimator settings change the judgement, not the evidence", "[replay]") {
    const scenario s = scenarios()[0];
    const recorded_run run = record(s, 3);
    const auto as_recorded = replay::replay_profile(run.trace, "run.ojxt");
    const auto strict = replay::replay_profile(run.trace, "run.ojxt", {.min_comparisons = 1'000'000, .confidence = 0.99});
    REQUIRE(as_recorded.error.empty());
    REQUIRE(strict.error.empty());
    REQUIRE(strict.report.estimator.min_comparisons == 1'000'000);
    REQUIRE(strict.report.estimator.confidence == 0.99);
    REQUIRE(strict.replay.watchpoint_differences == 0);
    REQUIRE(strict.json != as_recorded.json);
    // Counters and evidence are the same; no context has enough comparisons to be reported any more.
    REQUIRE(std::memcmp(&strict.report.stats, &as_recorded.report.stats, sizeof(profiler_stats)) == 0);
    REQUIRE(strict.report.contexts.size() == as_recorded.report.contexts.size());
    std::size_t reported_before = 0;
    for (const context_report& before : as_recorded.report.contexts) {
        const auto after = std::find_if(strict.report.contexts.begin(), strict.report.contexts.end(),
                                        [&](const context_report& c) { return c.context == before.context; });
        REQUIRE(after != strict.report.contexts.end());
        REQUIRE(after->objects == before.objects);
        REQUIRE(after->evidence.equal == before.evidence.equal);
        REQUIRE(after->evidence.different == before.evidence.different);
        REQUIRE(after->evidence.weighted_equal == before.evidence.weighted_equal);
        REQUIRE(after->evidence.sum_total_squared == before.evidence.sum_total_squared);
        REQUIRE_FALSE(after->estimate.reported);
        reported_before += before.estimate.reported ? 1 : 0;
    }
    REQUIRE(reported_before > 0);
}

TEST_CASE("a damaged trace gives the reader's error and no profile", "[replay]") {
    const recorded_run run = record(scenarios()[0], 1);
    REQUIRE(run.trace.size() > 1000);

    const auto cut = std::span(run.trace).first(run.trace.size() / 2);
    const auto truncated = replay::replay_profile(cut, "cut.ojxt");
    INFO(truncated.error);
    REQUIRE(truncated.error.starts_with("cut.ojxt: truncated: block "));
    REQUIRE(truncated.json.empty());

    std::vector<std::byte> flipped = run.trace;
    flipped[flipped.size() / 3] ^= std::byte{0x10};
    const auto corrupt = replay::replay_profile(flipped, "flipped.ojxt");
    INFO(corrupt.error);
    REQUIRE(corrupt.error.starts_with("flipped.ojxt: "));
    REQUIRE(corrupt.json.empty());

    const std::string text = "{\"ojx_profile_version\": 1}";
    const auto foreign = replay::replay_profile(std::as_bytes(std::span(text.data(), text.size())), "profile.json");
    REQUIRE(foreign.error == "profile.json: not an ojx trace (bad magic)");
}

TEST_CASE("a trace without its run's description is refused", "[replay]") {
    in_memory_trace trace;
    trace.writer().append(allocation_event{.where = 4096, .size = 2048, .context = 1, .type = 0});
    const auto bytes = trace.finish();
    const auto result = replay::replay_profile(bytes, "bare.ojxt");
    REQUIRE(result.error ==
            "bare.ojxt: the trace does not describe its run (no run attribute watchpoint_slots): it cannot be replayed");
}

TEST_CASE("a trace whose recorder could not keep all it read for an event is refused, in one line", "[replay]") {
    // Windows of 64 KiB in 64 KiB objects: a sample's digest reads more than the recorder's notes hold.
    static_assert(profiler_effects::max_bytes < 65536);
    const std::vector<context_shape> shapes = {
        {.name = "huge", .object_size = 65536, .group_sizes = {20, 20}}};
    session_config config = config_for(scenario{"huge windows", shapes}, 3);
    config.profiler.compare_window = 65536;
    const auto naming = naming_for(shapes);
    recording_session<recording_policies<reservoir_replacement, reservoir_pairing>> r(config, naming);
    run_workload(r.machine, r.prof.contexts(), shapes, {.seed = 3});
    const auto bytes = r.trace.finish();
    REQUIRE(r.recorder.incomplete_events() > 0);

    const auto result = replay::replay_profile(bytes, "overflowed.ojxt");
    INFO(result.error);
    CHECK(result.json.empty());
    CHECK(result.error.starts_with("overflowed.ojxt: "));
    CHECK(result.error.find("the recorder could not keep all the memory the profiler read") != std::string::npos);
    CHECK(result.error.find(std::to_string(r.recorder.incomplete_events()) + " events") != std::string::npos);
    CHECK(result.error.find('\n') == std::string::npos);
}

TEST_CASE("a recording whose tracking stayed at interval 0 tells its replay so", "[replay]") {
    // The live profiler was told before its report (profiler::note_tracking_stayed_exact); the replay's must be,
    // or its counts would be estimates and its sites' populations unknown where the live ones were exact.
    trace_run_description run;
    CHECK_FALSE(run.tracking_stayed_exact);
    CHECK_FALSE(apply_run_attribute(run, {std::string(tracking_stayed_exact_attribute), "true"}));
    CHECK(run.tracking_stayed_exact);
    const auto malformed = apply_run_attribute(run, {std::string(tracking_stayed_exact_attribute), "yes"});
    REQUIRE(malformed);
    CHECK(*malformed == "run attribute profiler.tracking_stayed_exact has a malformed value 'yes'");
}

TEST_CASE("a run whose backend refused arms replays to its live profile byte for byte", "[replay]") {
    // Every 3rd (then every 2nd) arm refused, as a kernel that refuses a thread's breakpoint does: the profiler
    // counts each failure and frees the slot, so that the pairs it watches next differ from an unrefused run. The
    // replay must refuse the same arms (the trace records them) or its profile differs from the live one.
    std::size_t replayed = 0;
    for (const std::uint64_t every : {3u, 2u}) {
        for (const scenario& s : scenarios()) {
            for (std::uint64_t seed = 1; seed <= 2; ++seed) {
                INFO(s.label << ", seed " << seed << ", every " << every << " arms refused");
                const auto naming = naming_for(s.shapes);
                recording_session<recording_policies<>> r(config_for(s, seed), naming);
                r.watchpoints.refuse_every(every);
                run_workload(r.machine, r.prof.contexts(), s.shapes, {.seed = seed, .collect_every = s.collect_every});
                const std::string live_json = profile_json(r, naming);
                const auto trace = finished_trace(r.trace);
                REQUIRE(r.watchpoints.refused() > 0);
                REQUIRE(r.prof.stats().watch_arm_failures == r.watchpoints.refused());

                // Recording changes nothing the profiler does, refusals included.
                session<> plain(config_for(s, seed));
                plain.watchpoints.refuse_every(every);
                run_workload(plain.machine, plain.prof.contexts(), s.shapes,
                             {.seed = seed, .collect_every = s.collect_every});
                REQUIRE(profile_json(plain, naming) == live_json);

                const auto replay = replay::replay_profile(trace, "refused.ojxt");
                REQUIRE(replay.error.empty());
                REQUIRE(replay.replay.complete);
                REQUIRE(replay.replay.watchpoint_differences == 0);
                REQUIRE(replay.report.stats.watch_arm_failures == r.watchpoints.refused());
                REQUIRE(replay.report.stats.comparisons > 0);
                REQUIRE(replay.json == live_json);
                ++replayed;
            }
        }
    }
    std::printf("replay with refused arms: %zu recorded runs replayed to identical profiles\n", replayed);
}

TEST_CASE("a recorded refusal the replayed profiler never asks for is a difference", "[replay]") {
    replay::replay_watchpoints watchpoints(4);
    // Refused for the next event, and asked for: refused, no difference.
    watchpoints.recorded(watchpoint_arm_refused_event{1, 4096, 8});
    watchpoints.start_event();
    REQUIRE_FALSE(watchpoints.arm(1, 4096, 8));
    REQUIRE(watchpoints.arm(1, 4096, 8)); // one refusal recorded: the second asking is armed
    watchpoints.recorded(watchpoint_arm_event{1, 4096, 8});
    REQUIRE(watchpoints.differences() == 0);
    // Refused for the next event, which asks for another address: armed, and both are differences (the arm was
    // not recorded, the refusal was not asked for).
    watchpoints.recorded(watchpoint_arm_refused_event{2, 8192, 8});
    watchpoints.start_event();
    REQUIRE(watchpoints.arm(2, 8200, 8));
    watchpoints.start_event();
    REQUIRE(watchpoints.differences() == 2);
}

TEST_CASE("whole-object digests replay from their recorded fingerprints to the live profile byte for byte", "[replay]") {
    // The live profiler digests the survivors of each run in sweeps within a budget (some drawn, some skipped),
    // and the trace keeps what each sweep decided, not the bytes it read: the replay, which has no heap, must
    // settle the same objects with the same weights, and count the same skipped ones.
    for (const scenario& s : scenarios()) {
        INFO(s.label);
        const auto naming = naming_for(s.shapes);
        recording_session<recording_policies<>> r(config_for(s, 3), naming);
        run_workload(r.machine, r.prof.contexts(), s.shapes, {.seed = 3, .collect_every = s.collect_every});
        const auto note = [&](const whole_object_digest& decided) { r.trace.writer().append(decided); };
        const auto swept = r.prof.digest_tracked_objects(r.prof.tracked_objects() * 400, note);
        REQUIRE(swept.digested > 0);
        REQUIRE(swept.skipped > 0);
        const std::string live_json = profile_json(r, naming);
        const auto trace = finished_trace(r.trace);

        const auto replay = replay::replay_profile(trace, "digests.ojxt");
        REQUIRE(replay.error.empty());
        REQUIRE(replay.report.stats.objects_digested == swept.digested);
        REQUIRE(replay.report.stats.digests_skipped_budget == swept.skipped);
        REQUIRE(replay.json == live_json);
    }
}

// Adaptive tracking: each allocation carries the interval it was sampled at, which the trace keeps, so that the
// replay weighs every object as the live run did and reports the same interval range.
TEST_CASE("a run whose sampling interval moved replays to its live profile byte for byte", "[replay]") {
    const std::vector<scenario> all = scenarios();
    const scenario& s = all.front();
    for (std::uint64_t seed = 1; seed <= 4; ++seed) {
        INFO("seed " << seed);
        emulation::session_config config = config_for(s, seed);
        config.profiler.allocation_tracking_target = 2000;
        const auto naming = naming_for(s.shapes);
        recording_session<recording_policies<reservoir_replacement, reservoir_pairing>> r(config, naming);
        fast_random intervals(seed);
        const context_id site = r.prof.contexts().insert_path(std::vector<std::uint64_t>{7, 8});
        std::uint64_t interval = 0;
        for (int i = 0; i < 200; ++i) {
            if (i % 20 == 0) interval = intervals.below(3) == 0 ? 0 : 1024 << intervals.below(12); // a new window
            r.machine.allocate(1024 + 512 * intervals.below(8), site, 0, {.sampling_interval = interval});
        }
        run_workload(r.machine, r.prof.contexts(), s.shapes, {.seed = seed, .collect_every = s.collect_every});
        const std::string live = profile_json(r, naming);
        REQUIRE(live.find("\"allocation_sampling\": {\"targets_per_second\": [2000], \"interval_range\": [") !=
                std::string::npos);
        const auto replay = replay::replay_profile(finished_trace(r.trace), "run.ojxt");
        REQUIRE(replay.error.empty());
        REQUIRE(replay.replay.complete);
        REQUIRE(replay.run.profiler.allocation_tracking_target == 2000);
        REQUIRE(replay.json == live);
    }
}

// A JVM agent hands on_collection each survivor as its registry holds it; a trace's survivor records carry context,
// type and serial only, so the replay must keep the rest from the allocation, also for a survivor whose old place
// an allocation after the collection overlapped before the relocation record (which evicted it from the map).
TEST_CASE("a survivor overlapped at its old place before its relocation keeps its weight and typed layout", "[replay]") {
    for (const bool overlapped : {false, true}) {
        in_memory_trace trace;
        auto& writer = trace.writer();
        REQUIRE(writer.append(context_symbol{1, no_context, 7}));
        const allocation_shape typed{.sampling_interval = 4096, .typed_layout = true};
        REQUIRE(writer.append(allocation_event{1, 0x10000, 0x100, 1, 0, typed}));
        REQUIRE(writer.append(gc_start_event{1}));
        if (overlapped) REQUIRE(writer.append(allocation_event{1, 0x10080, 0x100, 1, 0, {}})); // after the collection
        REQUIRE(writer.append(relocated_object_event{0x10000, 0x20000, 0x100, {1, 0, 1}}));
        if (overlapped) REQUIRE(writer.append(relocated_object_event{0x10080, 0x10080, 0x100, {1, 0, 2}}));
        REQUIRE(writer.append(relocation_event{overlapped ? 2u : 1u}));
        const auto bytes = trace.finish();

        replay::replay_watchpoints watchpoints(4);
        replay::replay_memory memory;
        profiler_config config;
        config.context_tree_capacity = 64;
        config.min_object_size = 64;
        profiler<replay::policies<reservoir_replacement, reservoir_pairing>> prof(config, watchpoints, memory);
        const auto result = replay::trace_replayer(prof, watchpoints, memory).run(bytes, "overlap.ojxt");
        REQUIRE(result.error.empty());
        CHECK(prof.stats().objects_evicted_by_overlap == (overlapped ? 1u : 0u));
        const auto moved = prof.object_at(0x20000);
        REQUIRE(moved);
        CHECK(moved->serial == 1);
        CHECK(moved->typed_layout);
        CHECK(moved->allocation_weight > 1);
        if (overlapped) {
            const auto later = prof.object_at(0x10080);
            REQUIRE(later);
            CHECK(later->serial == 2);
            CHECK_FALSE(later->typed_layout);
        }
        CHECK_FALSE(prof.object_at(0x10008)); // inside no object's start
    }
}
