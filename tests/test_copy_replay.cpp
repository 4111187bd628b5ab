// Value flow in traces (docs/trace-format.md, "Value flow"; docs/copy-profiling.md): a generated copy program
// recorded by the copy recording session — every access and every value flow event — replays to its copy graphs.
//
//   - With the recorded settings: the replay's exact graph is the live exact graph (and the planted one) edge for
//     edge, and the replayed profile, copy section included, is the live session's byte for byte; 6 programs × 2
//     sampler seeds.
//   - At another period and sampler seed: another sampled graph, whose 95 % copied-bytes intervals still cover the
//     exact bytes of the edges a load makes at about their level (asserted: ≥ 90 % over 12 programs × 8 seeds, as
//     the live sampled-graph test asserts).
//   - The value flow records' cost: bytes of the trace with them less the trace rewritten without them.
#include "ojx/emulation/copy_programs.hpp"
#include "ojx/emulation/copy_recording_session.hpp"
#include "ojx/emulation/register_machine.hpp"
#include "ojx/emulation/trace_recorder.hpp"
#include "ojx/copy_estimate.hpp"
#include "ojx/copy_graph.hpp"
#include "ojx/exact_copy_graph_builder.hpp"
#include "ojx/profile_writer.hpp"
#include "ojx/random.hpp"
#include "ojx/replay/replay_profile.hpp"
#include "ojx/trace_reader.hpp"
#include "ojx/value_flow_tee.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <iostream>
#include <memory>
#include <sstream>
#include <variant>
#include <string>
#include <vector>

using namespace ojx;
using namespace ojx::emulation;

namespace {

const report_naming naming{[](std::uint64_t frame) { return "Copies.f" + std::to_string(frame & 0xffff) + "()"; },
                           [](type_id type) { return "Record" + std::to_string(type); }};

session_config config_for(std::uint64_t period, std::uint64_t sampler_seed) {
    session_config config;
    config.profiler.seed = sampler_seed;
    config.profiler.min_object_size = 64; // the programs' records: the replica side tracks them too
    config.sampler = {.period = period, .randomized = true, .seed = sampler_seed};
    config.heap_bytes = std::size_t{1} << 20;
    return config;
}

copy_program_config program(std::uint64_t seed, address statics) {
    fast_random shape(seed);
    return {.seed = seed,
            .chains = static_cast<std::uint32_t>(1 + shape.below(3)),
            .clones = static_cast<std::uint32_t>(1 + shape.below(2)),
            .carriers = static_cast<std::uint32_t>(shape.below(3)),
            .controls = 1,
            .references = static_cast<std::uint32_t>(shape.below(2)),
            .min_repetitions = 60,
            .max_repetitions = 240,
            .collect_every = static_cast<std::uint32_t>(seed % 3 == 0 ? 0 : 7 + seed),
            .static_area = statics};
}

struct recorded_run {
    std::vector<std::byte> trace;
    copy_graph exact;        // the live exact builder's, beside the recording
    copy_graph planted;      // what the program says it made
    std::string live_json;   // the live session's profile, copy section included
    sampled_copy_graph live_sampled;
};

recorded_run record(std::uint64_t program_seed, std::uint64_t period, std::uint64_t sampler_seed) {
    const auto s = std::make_unique<copy_recording_session<>>(config_for(period, sampler_seed), naming);
    exact_copy_graph_builder exact;
    value_flow_tee<copy_recording_session<>::flow_type, exact_copy_graph_builder> flow(s->flow, exact);
    register_machine machine(s->recorder, flow);
    recorded_run run;
    run.planted = run_copy_program(machine, s->live.prof.contexts(), program(program_seed, s->live.heap.statics())).graph;
    std::ostringstream live;
    write_profile_json(live, s->live.profile(naming));
    run.live_json = live.str();
    run.live_sampled = s->live.builder.graph();
    run.exact = exact.graph();
    const auto bytes = s->trace.finish();
    REQUIRE(s->trace.writer().events_dropped() == 0);
    run.trace.assign(bytes.begin(), bytes.end());
    return run;
}

} // namespace

TEST_CASE("a recorded copy program replays to its exact graph and its live copy section byte for byte") {
    for (std::uint64_t p = 1; p <= 6; ++p)
        for (std::uint64_t seed = 1; seed <= 2; ++seed) {
            INFO("program " << p << " sampler seed " << seed);
            const recorded_run run = record(p, 16, 100 * p + seed);
            REQUIRE(run.exact == run.planted);
            const auto replayed = replay::replay_profile(run.trace, "copies.ojxt");
            INFO(replayed.error);
            REQUIRE(replayed.error.empty());
            REQUIRE(replayed.copies);
            REQUIRE(replayed.copies->exact.edges().size() == run.exact.edges().size());
            REQUIRE(replayed.copies->exact == run.exact);
            REQUIRE(replayed.copies->sampled == run.live_sampled);
            REQUIRE(replayed.json.find("\"copies\"") != std::string::npos);
            REQUIRE(replayed.json == run.live_json);
        }
}

TEST_CASE("value flow costs a trace of every access about two bytes an event") {
    const recorded_run run = record(2, 16, 7);
    trace_reader reader(run.trace, "copies.ojxt");
    in_memory_trace without; // the same trace less its value flow
    std::uint64_t flow_events = 0, other_events = 0;
    while (const auto event = reader.next()) {
        if (std::holds_alternative<value_flow_event>(*event)) {
            ++flow_events;
        } else {
            ++other_events;
            without.writer().append(*event);
        }
    }
    REQUIRE(reader.complete());
    const auto plain = without.finish();
    const double per_flow_event = static_cast<double>(run.trace.size() - plain.size()) / static_cast<double>(flow_events);
    std::cout << "copy program 2: " << run.trace.size() << " bytes, " << flow_events << " value flow events and "
              << other_events << " others; without value flow " << plain.size() << " bytes; " << per_flow_event
              << " bytes per value flow event\n";
    CHECK(per_flow_event < 2.5);
}

TEST_CASE("a replay at another period gives another sampled graph, its intervals covering the exact bytes") {
    constexpr std::uint64_t period = 8;
    std::uint64_t intervals = 0, covered = 0, differing = 0, runs = 0;
    for (std::uint64_t p = 1; p <= 12; ++p) {
        const recorded_run run = record(p, 32, p);
        for (std::uint64_t seed = 1; seed <= 8; ++seed) {
            INFO("program " << p << " replay seed " << seed);
            replay::replay_settings settings;
            settings.period = period;
            settings.sampler_seed = 1000 * p + seed;
            const auto replayed = replay::replay_profile(run.trace, "copies.ojxt", settings);
            REQUIRE(replayed.error.empty());
            REQUIRE(replayed.copies);
            REQUIRE(replayed.copies->exact == run.exact); // the truth does not depend on the sampler
            REQUIRE(replayed.copies->sampled_stats.unmatched_samples == 0);
            ++runs;
            differing += !(replayed.copies->sampled == run.live_sampled);
            for (const auto& [edge, volume] : run.exact.edges()) {
                if (edge.from.kind == copy_node_kind::allocation) continue; // no load makes them
                const auto it = replayed.copies->sampled.edges().find(edge);
                const sampled_volume seen =
                    it != replayed.copies->sampled.edges().end() ? it->second : sampled_volume{.max_weight = period};
                ++intervals;
                covered += estimate_copies(seen, edge.width, 0.95).bytes_interval.contains(static_cast<double>(volume.bytes));
            }
            for (const auto& [edge, volume] : replayed.copies->sampled.edges()) REQUIRE(run.exact.edges().contains(edge));
        }
    }
    const double coverage = static_cast<double>(covered) / static_cast<double>(intervals);
    std::cout << "replayed at period " << period << ": " << differing << "/" << runs
              << " sampled graphs differ from the recording's; 95% bytes intervals cover " << covered << "/"
              << intervals << " = " << coverage << "\n";
    CHECK(differing == runs);
    CHECK(coverage >= 0.9);
}
