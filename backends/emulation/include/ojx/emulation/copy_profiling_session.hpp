// One emulated profiling session of a program with registers (register_machine.hpp, copy_programs.hpp): the
// replica profiler and the sampled copy graph builder sit on one analysis host (analysis_host.hpp), fed by the
// same sampler — the host hands each sample to the builder, which follows a sampled load through the program's
// value flow — and the profile the session makes has the replica contexts and the copy section
// (copy_profile.hpp). What tests instantiate to profile copies end to end, as `session` is for replicas alone.
#pragma once

#include "ojx/emulation/emulated_machine.hpp"
#include "ojx/emulation/emulated_sampler.hpp"
#include "ojx/emulation/emulated_watchpoints.hpp"
#include "ojx/emulation/register_machine.hpp"
#include "ojx/emulation/session.hpp"
#include "ojx/emulation/synthetic_heap.hpp"
#include "ojx/analysis_host.hpp"
#include "ojx/analysis_sink.hpp"
#include "ojx/copy_profile.hpp"
#include "ojx/profile.hpp"
#include "ojx/profiler.hpp"
#include "ojx/report.hpp"
#include "ojx/sampled_copy_graph_builder.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

namespace ojx::emulation {

// The builder's place on the host: each sample goes to the builder, and the type first allocated at each context
// is kept, to name the graph's sites.
class copy_sampling {
public:
    explicit copy_sampling(sampled_copy_graph_builder& builder) noexcept : builder_(builder) {}

    void on_sample(const resolved_sample& resolved) { builder_.on_sample(resolved.sample); }
    void on_allocation(const allocation_event& allocation, const std::optional<object_info>&) {
        types_.try_emplace(allocation.context, allocation.type);
    }

    type_id type_of(context_id context) const {
        const auto it = types_.find(context);
        return it == types_.end() ? no_type : it->second;
    }

private:
    sampled_copy_graph_builder& builder_;
    std::map<context_id, type_id> types_;
};

// How the copy samples were taken, as the copy section says it.
inline std::string copy_sampling_note(const emulated_sampler& sampler, std::uint32_t bound) {
    return std::string(sampler.name()) + ": each sampled load followed for " + std::to_string(bound) +
           " value flow events";
}

// The copy section of a profile: the builder's sampled graph and counters, each context named from `tree` with the
// type first allocated there. A live session and a replay of its trace (backends/replay) write it alike.
template <class Tree>
copy_profile copy_section_of(const sampled_copy_graph_builder& builder, const copy_sampling& sampling,
                             const Tree& tree, std::string note, const report_naming& naming) {
    return copy_profile_of(builder.graph(), builder.stats(), std::move(note), [&](context_id context) {
        return name_copy_site(tree, context, sampling.type_of(context), naming);
    });
}

template <class Policies = policies<>>
class copy_profiling_session {
public:
    using profiler_type = profiler<Policies>;
    using host_type = analysis_host<profiler_type, copy_sampling>;
    using machine_type = emulated_machine<host_type>;

    // Static data past the objects: copy programs' carriers copy out of it (synthetic_heap::statics).
    static constexpr std::size_t static_bytes = 4096;

    // Each sampled load followed for `bound` value flow events; each sample weighs the sampler's period.
    explicit copy_profiling_session(const session_config& config, std::uint32_t bound = 8)
        : heap(config.heap_bytes, synthetic_heap::default_base, static_bytes),
          sampler(config.sampler),
          watchpoints(config.watchpoint_slots, config.trigger),
          prof(profiler_config_for(config.profiler, config.trigger), watchpoints, heap),
          builder({.period = std::max<std::uint64_t>(config.sampler.period, 1), .bound = bound}),
          sampling(builder),
          host(prof, sampling),
          machine(heap, sampler, watchpoints, host),
          registers(machine, builder),
          bound_(bound) {}

    run_facts facts() const { return emulation_facts<Policies>(sampler, watchpoints); }

    // How the copy samples were taken, as the copy section says it.
    std::string copy_sampling_note() const { return emulation::copy_sampling_note(sampler, bound_); }

    std::uint32_t bound() const noexcept { return bound_; }

    // The profile of the run so far: the replica report's contexts and the sampled copy graph.
    ojx::profile profile(const report_naming& naming) const {
        ojx::profile p = profile_of(prof.report(), prof.contexts(), naming, facts());
        p.copies = copy_section_of(builder, sampling, prof.contexts(), copy_sampling_note(), naming);
        return p;
    }

    synthetic_heap heap;
    emulated_sampler sampler;
    emulated_watchpoints watchpoints;
    profiler_type prof;
    sampled_copy_graph_builder builder;
    copy_sampling sampling;
    host_type host;
    machine_type machine;
    register_machine<machine_type, sampled_copy_graph_builder> registers;

private:
    std::uint32_t bound_;
};

} // namespace ojx::emulation
