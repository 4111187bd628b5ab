// Replaying a trace of every access through any profiler configuration. The trace holds every allocation, free,
// move, collection, load and store of the recorded run and every value memory got, so the replay rebuilds memory
// (rebuilt_memory) and runs a whole emulated machine against the recorded accesses: its own sampler (period,
// randomisation, seed), its own debug registers (slots, trigger) and its own profiler (replacement and pairing
// policies, compare window, seed, estimator). Samples, traps and watchpoint calls a trace of every access may also
// hold are ignored: the replay makes its own.
//
// With the recorded configuration the machine takes the same samples, arms the same watchpoints and traps on the
// same accesses as the live run, so the profile is the live run's byte for byte; the same trace, configuration
// and seeds give the same profile every time.
#pragma once

#include "ojx/emulation/emulated_machine.hpp"
#include "ojx/emulation/emulated_sampler.hpp"
#include "ojx/emulation/emulated_watchpoints.hpp"
#include "ojx/emulation/session.hpp"
#include "ojx/pairing_policy.hpp"
#include "ojx/profiler.hpp"
#include "ojx/replay/object_extents.hpp"
#include "ojx/replay/rebuilt_memory.hpp"
#include "ojx/replay/trace_contexts.hpp"
#include "ojx/replay/trace_replay.hpp"
#include "ojx/trace_format.hpp"
#include "ojx/trace_run.hpp"
#include "ojx/watchpoint_pool.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>

namespace ojx::replay {

template <replacement_policy Replacement = reservoir_replacement, pairing_policy Pairing = reservoir_pairing>
using access_replay_policies = policy_bundle<emulation::emulated_watchpoints, rebuilt_memory, Replacement, Pairing>;

// Everything a replay of every access is configured with.
struct access_replay_config {
    profiler_config profiler{};
    emulation::sampler_config sampler{};
    std::size_t watchpoint_slots = 4;
    emulation::watch_trigger trigger = emulation::watch_trigger::loads_and_stores;
};

template <class Policies>
class access_replayer {
public:
    using profiler_type = profiler<Policies>;
    using machine_type = emulation::emulated_machine<profiler_type, rebuilt_memory>;

    access_replayer(profiler_type& profiler, machine_type& machine, rebuilt_memory& memory)
        : profiler_(profiler), machine_(machine), memory_(memory), contexts_(profiler.contexts()) {}

    // Replays the whole trace. `file` must outlive the call.
    replay_result run(std::span<const std::byte> file, std::string_view name) {
        deliver_trace(file, name, [this](const auto& e) { deliver(e); }, contexts_, result_);
        return std::move(result_);
    }

private:
    void deliver(const context_symbol& node) { contexts_.define(node); }
    void deliver(const allocation_event& a) {
        extents_.allocate(a.where, a.size, a.context);
        memory_.zero(a.where, a.size);
        profiler_.on_allocation(a.where, a.size, contexts_.mapped(a.context), a.type, a.shape);
        ++result_.events;
    }
    void deliver(const free_event& f) {
        extents_.free(f.where);
        profiler_.on_free(f.where);
        ++result_.events;
    }
    void deliver(const move_event& m) {
        if (const auto size = extents_.move_object(m.from, m.to)) memory_.move(m.from, m.to, *size);
        profiler_.on_move(m.from, m.to);
        ++result_.events;
    }
    void deliver(const region_move_event& r) {
        for (const auto& m : extents_.move_region(r)) {
            memory_.move(m.from, m.to, m.size);
            profiler_.on_move(m.from, m.to);
        }
        ++result_.events;
    }
    void deliver(const gc_start_event&) {
        profiler_.on_gc_start();
        ++result_.events;
    }
    // A load with a value says memory held it (changed by something the trace does not show); a store without one
    // stored what was there.
    void deliver(const access_event& a) {
        const context_id context = contexts_.mapped(a.context);
        if (a.kind == access_kind::load) {
            if (a.value) memory_.store(a.where, a.width, *a.value);
            machine_.load(a.where, a.width, context, a.ip);
        } else {
            machine_.store(a.where, a.width, a.value ? *a.value : memory_.load(a.where, a.width), context, a.ip);
        }
        ++result_.events;
    }
    void deliver(const memory_fill_event& fill) { memory_.write(fill.where, fill.bytes); }
    // The recording's whole-object digests, as it decided them: the replayed machine has no moments of its own
    // (a free, an exit) to digest at.
    void deliver(const whole_object_digest& decided) { profiler_.apply_recorded_digest(decided); }
    void deliver(const events_lost_event& lost) { result_.events_lost += lost.count; }
    // Everything else: the recording's own samples, traps, watchpoint calls and reads (the replay makes its own),
    // symbols the reader keeps, the run's description (read before the replay), and GC ends.
    template <class Other>
    void deliver(const Other&) {}

    profiler_type& profiler_;
    machine_type& machine_;
    rebuilt_memory& memory_;
    trace_contexts contexts_;
    object_extents extents_;
    replay_result result_;
};

// The configuration a trace of every access recorded.
inline access_replay_config recorded_access_config(const trace_run_description& run) {
    access_replay_config config;
    config.profiler = run.profiler;
    config.sampler = {run.machine.sampler_period, run.machine.sampler_randomized, run.machine.sampler_seed};
    config.watchpoint_slots = run.watchpoint_slots;
    config.trigger = emulation::parse_watch_trigger(run.machine.watch_trigger).value_or(config.trigger);
    return config;
}

// Outcome of one replay of every access.
struct access_replay_outcome {
    replay_result replay;
    replica_report report;
    run_facts facts;
    std::uint64_t accesses = 0;
    std::uint64_t traps = 0;
};

// Replays `file` with `config` and the policies `Policies`; `write_profile(report, tree, naming, facts)` is called
// while the profiler's tree is alive. The facts are those of the replayed machine, with the recorded runtime.
template <class Policies, class WriteProfile>
access_replay_outcome replay_every_access(std::span<const std::byte> file, std::string_view name,
                                         const access_replay_config& config, const run_facts& recorded,
                                         WriteProfile&& write_profile) {
    access_replay_outcome outcome;
    rebuilt_memory memory;
    emulation::emulated_sampler sampler(config.sampler);
    emulation::emulated_watchpoints watchpoints(config.watchpoint_slots, config.trigger);
    // Recorded traces say whether objects got a companion probe; an unset one (an older trace, or another trigger
    // asked for) follows the replayed machine's trigger.
    profiler<Policies> prof(emulation::profiler_config_for(config.profiler, config.trigger), watchpoints, memory);
    typename access_replayer<Policies>::machine_type machine(memory, sampler, watchpoints, prof);
    outcome.replay = access_replayer<Policies>(prof, machine, memory).run(file, name);
    if (!outcome.replay.error.empty()) return outcome;
    outcome.accesses = machine.accesses();
    outcome.traps = prof.stats().traps; // compared at the sample too
    outcome.report = prof.report();
    outcome.facts = emulation::emulation_facts<Policies>(sampler, watchpoints);
    outcome.facts.runtime = recorded.runtime;
    write_profile(outcome.report, prof.contexts(), outcome.replay.naming(), outcome.facts);
    return outcome;
}

} // namespace ojx::replay
