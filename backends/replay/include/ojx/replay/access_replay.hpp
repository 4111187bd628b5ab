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
//
// A trace that also holds the run's value flow (a program with registers, recorded by copy_recording_session.hpp)
// replays it into the exact copy graph builder and, through the replayed sampler, the sampled one: the profile then
// has the copy section a live copy profiling session writes, byte for byte with the recorded settings.
#pragma once

#include "ojx/analysis_host.hpp"
#include "ojx/copy_graph.hpp"
#include "ojx/emulation/copy_profiling_session.hpp"
#include "ojx/emulation/emulated_machine.hpp"
#include "ojx/emulation/emulated_sampler.hpp"
#include "ojx/emulation/emulated_watchpoints.hpp"
#include "ojx/emulation/session.hpp"
#include "ojx/exact_copy_graph_builder.hpp"
#include "ojx/pairing_policy.hpp"
#include "ojx/profile.hpp"
#include "ojx/profiler.hpp"
#include "ojx/replay/object_extents.hpp"
#include "ojx/replay/rebuilt_memory.hpp"
#include "ojx/replay/trace_contexts.hpp"
#include "ojx/replay/trace_replay.hpp"
#include "ojx/sampled_copy_graph_builder.hpp"
#include "ojx/trace_format.hpp"
#include "ojx/trace_run.hpp"
#include "ojx/value_flow.hpp"
#include "ojx/value_flow_tee.hpp"
#include "ojx/watchpoint_pool.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
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
    // Set: the trace's value flow is replayed into the exact and the sampled copy graph builders, each sampled load
    // followed for this many value flow events (a trace with value flow: its recorded bound).
    std::optional<std::uint32_t> copy_bound;
};

// Ignores value flow: what a replay that follows none replays a trace's value flow records into.
struct no_value_flow {
    void on_allocation(address, std::uint64_t, context_id, const allocation_shape&) {}
    void on_free(address) {}
    void on_move(address, address) {}
    void on_new_reference(value_register, context_id) {}
    void on_constant(value_register) {}
    void on_load(value_register, address, std::uint8_t) {}
    void on_register_move(value_register, value_register) {}
    void on_store(value_register, address, std::uint8_t) {}
    void on_compute(std::span<const value_register>, std::optional<value_register>) {}
    void on_string_move(address, address, std::uint64_t, std::uint8_t) {}
};

// Feeds a trace of every access to `Host` (the profiler, or an analysis host with the profiler first) through an
// emulated machine over rebuilt memory, and its value flow, with the objects' allocations, frees and moves, to
// `Flow`, in the recorded order.
template <class Profiler, class Host, value_flow_sink Flow>
class access_replayer {
public:
    using machine_type = emulation::emulated_machine<Host, rebuilt_memory>;

    access_replayer(Profiler& profiler, Host& host, machine_type& machine, rebuilt_memory& memory, Flow& flow)
        : profiler_(profiler), host_(host), machine_(machine), memory_(memory), flow_(flow),
          contexts_(profiler.contexts()) {}

    // Replays the whole trace. `file` must outlive the call.
    replay_result run(std::span<const std::byte> file, std::string_view name) {
        deliver_trace(file, name, [this](const auto& e) { this->deliver(e); }, contexts_, result_);
        return std::move(result_);
    }

private:
    void deliver(const context_symbol& node) { contexts_.define(node); }
    void deliver(const allocation_event& a) {
        const context_id context = contexts_.mapped(a.context);
        extents_.allocate(a.where, a.size, a.context);
        memory_.zero(a.where, a.size);
        host_.on_allocation(a.where, a.size, context, a.type, a.shape);
        flow_.on_allocation(a.where, a.size, context, a.shape);
        ++result_.events;
    }
    void deliver(const free_event& f) {
        extents_.free(f.where);
        host_.on_free(f.where);
        flow_.on_free(f.where);
        ++result_.events;
    }
    void deliver(const move_event& m) {
        if (const auto size = extents_.move_object(m.from, m.to)) memory_.move(m.from, m.to, *size);
        host_.on_move(m.from, m.to);
        flow_.on_move(m.from, m.to);
        ++result_.events;
    }
    void deliver(const region_move_event& r) {
        for (const auto& m : extents_.move_region(r)) {
            memory_.move(m.from, m.to, m.size);
            host_.on_move(m.from, m.to);
            flow_.on_move(m.from, m.to);
        }
        ++result_.events;
    }
    void deliver(const gc_start_event&) {
        host_.on_gc_start();
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
    // After the access it belongs to, as the program with registers reported it.
    void deliver(const value_flow_event& flow) {
        value_flow_event mapped = flow;
        if (mapped.kind == value_flow_kind::new_reference) mapped.context = contexts_.mapped(flow.context);
        ojx::deliver(mapped, flow_);
        ++result_.events;
    }
    void deliver(const memory_fill_event& fill) { memory_.write(fill.where, fill.bytes); }
    // The recording's whole-object digests, as it decided them: the replayed machine has no moments of its own
    // (a free, an exit) to digest at.
    void deliver(const whole_object_digest& decided) { profiler_.apply_recorded_digest(decided); }
    // And its heap view, as the recording ended it.
    void deliver(const live_heap_event& recorded) {
        live_heap_event mapped = recorded;
        if (recorded.what == live_heap_event::kind::site) mapped.context = contexts_.mapped(recorded.context);
        if (recorded.what == live_heap_event::kind::moment) result_.seconds = recorded.seconds;
        if (!profiler_.apply_recorded_live_heap(mapped)) ++result_.unmatched_heap_records;
    }
    void deliver(const events_lost_event& lost) { result_.events_lost += lost.count; }
    // Everything else: the recording's own samples, traps, watchpoint calls and reads (the replay makes its own),
    // symbols the reader keeps, the run's description (read before the replay), and GC ends.
    template <class Other>
    void deliver(const Other&) {}

    Profiler& profiler_;
    Host& host_;
    machine_type& machine_;
    rebuilt_memory& memory_;
    Flow& flow_;
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
    if (run.every_value_flow) config.copy_bound = run.copy_bound;
    return config;
}

// The copy graphs a replay of a trace with value flow rebuilt: the exact one, and the sampled one the replayed
// sampler's samples gave (the profile's copy section, its contexts named).
struct replayed_copies {
    copy_graph exact;
    exact_copy_stats exact_stats;
    sampled_copy_graph sampled;
    sampled_copy_stats sampled_stats;
};

// Outcome of one replay of every access.
struct access_replay_outcome {
    replay_result replay;
    replica_report report;
    run_facts facts;
    std::uint64_t accesses = 0;
    std::uint64_t traps = 0;
    std::optional<replayed_copies> copies; // config.copy_bound set
};

// Replays `file` with `config` and the policies `Policies`; `write_profile(profile)` is called while the profiler's
// tree is alive, with the profile the replay made: the replica report and, when value flow is followed, the copy
// section, as a live copy profiling session writes them. The facts are those of the replayed machine, with the
// recorded runtime.
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
    // Replays into `host` and `flow`; the profile, less the copy section, when the replay succeeded.
    const auto replay = [&]<class Host, class Flow>(Host& host, Flow& flow) -> std::optional<ojx::profile> {
        typename access_replayer<profiler<Policies>, Host, Flow>::machine_type machine(memory, sampler, watchpoints,
                                                                                      host);
        outcome.replay = access_replayer<profiler<Policies>, Host, Flow>(prof, host, machine, memory, flow).run(file, name);
        if (!outcome.replay.error.empty()) return std::nullopt;
        outcome.accesses = machine.accesses();
        outcome.traps = prof.stats().traps; // compared at the sample too
        outcome.report = prof.report();
        outcome.facts = emulation::emulation_facts<Policies>(sampler, watchpoints);
        outcome.facts.runtime = recorded.runtime;
        outcome.facts.seconds = outcome.replay.seconds;
        return profile_of(outcome.report, prof.contexts(), outcome.replay.naming(), outcome.facts);
    };
    if (!config.copy_bound) {
        no_value_flow flow;
        if (const auto made = replay(prof, flow)) write_profile(*made);
        return outcome;
    }
    sampled_copy_graph_builder sampled({.period = std::max<std::uint64_t>(config.sampler.period, 1),
                                        .bound = *config.copy_bound});
    exact_copy_graph_builder exact;
    emulation::copy_sampling sampling(sampled);
    analysis_host<profiler<Policies>, emulation::copy_sampling> host(prof, sampling);
    value_flow_tee<exact_copy_graph_builder, sampled_copy_graph_builder> flow(exact, sampled);
    auto made = replay(host, flow);
    if (!made) return outcome;
    made->copies = emulation::copy_section_of(sampled, sampling, prof.contexts(),
                                              emulation::copy_sampling_note(sampler, *config.copy_bound),
                                              outcome.replay.naming());
    outcome.copies = replayed_copies{exact.graph(), exact.stats(), sampled.graph(), sampled.stats()};
    write_profile(*made);
    return outcome;
}

} // namespace ojx::replay
