// Shared by the statistical tests: run one heap shape through the full profiler on the emulation backend,
// next to a control context with random contents (so the shape competes for watchpoints as in a real
// program), and return what the profiler estimated together with the ground truth.
#pragma once

#include "ojx/emulation/heap_shapes.hpp"
#include "ojx/emulation/session.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace ojx::testing {

struct shape_run {
    replica_estimate estimate;
    emulation::context_truth truth;
};

struct run_settings {
    std::size_t compare_window = profiler_config{}.compare_window;
    std::uint64_t sampling_period = 61;
    std::uint32_t collect_every = 0;
    std::size_t control_objects = 100;
    emulation::watch_trigger trigger = emulation::watch_trigger::loads_and_stores;
    std::optional<bool> companion_probe; // unset: as the session decides (on at the sample)
};

template <class Pairing = reservoir_pairing>
shape_run run_shape(const emulation::context_shape& shape, std::uint64_t seed, const run_settings& settings = {}) {
    using namespace emulation;
    const std::vector<context_shape> shapes{
        shape, {.name = "control", .object_size = 1024,
                .group_sizes = std::vector<std::uint32_t>(settings.control_objects, 1)}};
    session_config config;
    config.profiler.seed = seed;
    config.profiler.compare_window = settings.compare_window;
    config.sampler = {.period = settings.sampling_period, .randomized = true, .seed = seed * 31 + 7};
    config.heap_bytes = std::size_t{4} << 20;
    config.profiler.context_tree_capacity = 1024;
    config.trigger = settings.trigger;
    config.profiler.companion_probe = settings.companion_probe;
    session<policies<reservoir_replacement, Pairing>> s(config);
    const auto result = run_workload(s.machine, s.prof.contexts(), shapes,
                                     {.seed = seed, .compare_window = settings.compare_window,
                                      .collect_every = settings.collect_every});
    const replica_evidence* evidence = s.prof.evidence(result.allocation_contexts[0]);
    shape_run run;
    run.truth = result.truths[0];
    if (evidence) run.estimate = evidence->estimate(run.truth.objects, s.prof.config().estimator);
    return run;
}

} // namespace ojx::testing
