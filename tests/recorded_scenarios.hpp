// Shared by the record-and-replay tests: scenarios (heap shapes run on the emulation backend, with collections and
// a trigger), the session configuration and names their recordings use, and the profile of a run not recorded.
#pragma once

#include "ojx/emulation/heap_shapes.hpp"
#include "ojx/emulation/session.hpp"
#include "ojx/emulation/trace_recorder.hpp"
#include "ojx/report.hpp"

#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace ojx::testing {

struct scenario {
    std::string label;
    std::vector<emulation::context_shape> shapes;
    std::uint32_t collect_every = 0;
    emulation::watch_trigger trigger = emulation::watch_trigger::loads_and_stores;
};

// Five ways heaps replicate (groups, runs with mutation, partial replicas, moving collections, comparing at the
// sample), each next to a control context of random contents.
inline std::vector<scenario> scenarios() {
    const emulation::context_shape control{.name = "control", .object_size = 1024,
                                           .group_sizes = std::vector<std::uint32_t>(60, 1)};
    return {
        {"shuffled groups", {{.name = "groups", .object_size = 1024, .group_sizes = {40, 30, 20, 10}}, control}},
        {"runs, mutated", {{.name = "runs", .object_size = 2048, .repeat_probability = 0.9, .objects = 150,
                            .mutated_words = 3}, control}},
        {"partial replicas", {{.name = "sparse", .object_size = 2048, .group_sizes = {120}, .differing_words = 4,
                               .zero_fraction = 0.9}, control}},
        {"moving collections", {{.name = "moved", .object_size = 1024, .group_sizes = {60, 60},
                                 .order = emulation::ordering::runs}, control}, 40},
        {"compared at the sample", {{.name = "at sample", .object_size = 1024, .group_sizes = {80, 20}}, control}, 0,
         emulation::watch_trigger::at_sample},
    };
}

// Odd seeds sample at random gaps, even seeds at a fixed period.
inline emulation::session_config config_for(const scenario& s, std::uint64_t seed) {
    emulation::session_config config;
    config.profiler.seed = seed;
    config.profiler.context_tree_capacity = 1024;
    config.sampler = {.period = 61, .randomized = seed % 2 == 1, .seed = seed * 31 + 7};
    config.heap_bytes = std::size_t{4} << 20;
    config.trigger = s.trigger;
    return config;
}

// Refers to `shapes`, which must outlive it.
inline report_naming naming_for(const std::vector<emulation::context_shape>& shapes) {
    return {[&shapes](std::uint64_t frame) { return emulation::synthetic_frame_name(frame, shapes); },
            [&shapes](type_id type) { return type < shapes.size() ? shapes[type].type : std::string("?"); }};
}

// A recorded run: the live profile, the trace, what the replay must deliver (profiler events for a trace of samples
// and traps, accesses for a trace of every access) and the workload's truth.
struct recorded_run {
    std::string live_json;
    std::vector<std::byte> trace;
    std::uint64_t events = 0;
    emulation::workload_result workload;
};

// The finished trace's bytes; the test fails if the writer dropped any event.
inline std::vector<std::byte> finished_trace(emulation::in_memory_trace& trace) {
    const auto bytes = trace.finish();
    REQUIRE(trace.writer().events_dropped() == 0);
    return {bytes.begin(), bytes.end()};
}

// A session's profile as JSON; a recording session's trace gets the heap view then, as an agent's does.
template <class Session>
std::string profile_json(Session& s, const report_naming& naming) {
    if constexpr (requires { s.record_heap_view(); }) s.record_heap_view();
    std::ostringstream out;
    write_json(out, s.prof.report(), s.prof.contexts(), naming, s.facts());
    return out.str();
}

// The scenario's run without recording: recording must not change what the profiler does.
template <class Policies = emulation::policies<>>
std::string unrecorded_json(const scenario& s, std::uint64_t seed) {
    const auto naming = naming_for(s.shapes);
    emulation::session<Policies> plain(config_for(s, seed));
    run_workload(plain.machine, plain.prof.contexts(), s.shapes, {.seed = seed, .collect_every = s.collect_every});
    return profile_json(plain, naming);
}

} // namespace ojx::testing
