// One emulated profiling session, wired: a synthetic heap, the emulated sampler and debug registers, a profiler
// built with the chosen replacement and pairing policies, and the machine that drives it. What tests, examples
// and benchmarks instantiate instead of wiring the parts by hand.
#pragma once

#include "ojx/emulation/emulated_machine.hpp"
#include "ojx/emulation/emulated_sampler.hpp"
#include "ojx/emulation/emulated_watchpoints.hpp"
#include "ojx/emulation/synthetic_heap.hpp"
#include "ojx/pairing_policy.hpp"
#include "ojx/profiler.hpp"
#include "ojx/report.hpp"
#include "ojx/watchpoint_pool.hpp"

#include <cstddef>
#include <string>

namespace ojx::emulation {

template <replacement_policy Replacement = reservoir_replacement, pairing_policy Pairing = reservoir_pairing>
using policies = policy_bundle<emulated_watchpoints, synthetic_heap, Replacement, Pairing>;

struct session_config {
    profiler_config profiler{};
    sampler_config sampler{};
    std::size_t heap_bytes = std::size_t{64} << 20;
    std::size_t watchpoint_slots = 4;
    watch_trigger trigger = watch_trigger::loads_and_stores;
};

// The profiler's configuration as an emulated machine with `trigger` runs it: a companion probe where pairs are
// compared at the sample, unless the configuration says otherwise (profiler_config::companion_probe).
inline profiler_config profiler_config_for(const profiler_config& profiler, watch_trigger trigger) {
    return resolved_for_backend(profiler, trigger == watch_trigger::at_sample);
}

// What a profile says about an emulated run.
template <class Policies>
run_facts emulation_facts(const emulated_sampler& sampler, const emulated_watchpoints& watchpoints) {
    return run_facts{"emulation (synthetic heap)", std::string(sampler.name()),
                     "emulated debug registers, " + std::to_string(watchpoints.slot_count()) + " slots",
                     std::string(Policies::pairing::name), std::string(Policies::replacement::name), {}};
}

template <class Policies = policies<>>
class session {
public:
    using profiler_type = profiler<Policies>;

    explicit session(const session_config& config)
        : heap(config.heap_bytes),
          sampler(config.sampler),
          watchpoints(config.watchpoint_slots, config.trigger),
          prof(profiler_config_for(config.profiler, config.trigger), watchpoints, heap),
          machine(heap, sampler, watchpoints, prof) {}

    run_facts facts() const { return emulation_facts<Policies>(sampler, watchpoints); }

    synthetic_heap heap;
    emulated_sampler sampler;
    emulated_watchpoints watchpoints;
    profiler_type prof;
    emulated_machine<profiler_type> machine;
};

} // namespace ojx::emulation
