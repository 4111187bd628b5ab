// Recording every access of an emulated run (docs/trace-format.md, "A trace of every access"): not only what the
// profiler sampled and trapped, but every allocation, free, collection, load and store the program made, with the
// stored values — so that a replay can rebuild memory at any point and run its own sampler, debug registers and
// profiler (any slots, replacement, pairing, trigger, seed) against the same accesses.
//
// `access_recorder` stands where the workload expects a machine: it passes each operation on to the live emulated
// machine (whose profiler profiles the run as usual) and appends it to the trace. Memory is zero-filled at
// allocation, as the synthetic heap does and the format assumes, so no memory fill is needed. Loads carry no value
// (the replay reads it from the memory it rebuilds), nor do stores of the value already there.
#pragma once

#include "ojx/emulation/emulated_machine.hpp"
#include "ojx/emulation/session.hpp"
#include "ojx/emulation/synthetic_heap.hpp"
#include "ojx/emulation/trace_recorder.hpp"
#include "ojx/report.hpp"
#include "ojx/trace_format.hpp"
#include "ojx/trace_run.hpp"
#include "ojx/trace_writer.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ojx::emulation {

template <class Machine>
class access_recorder {
public:
    access_recorder(Machine& machine, const synthetic_heap& heap, const context_tree& tree, trace_writer& writer,
                    report_naming naming)
        : machine_(machine), heap_(heap), tree_(tree), writer_(writer), symbols_(std::move(naming)) {}

    std::optional<address> allocate(std::uint64_t size, context_id context, type_id type,
                                    const allocation_shape& shape = {}) {
        symbols_.write_new_nodes(tree_, writer_);
        symbols_.write_type(type, writer_);
        const auto where = machine_.allocate(size, context, type, shape);
        if (where) writer_.append(allocation_event{emulated_thread, *where, size, context, type, shape});
        return where;
    }

    bool free(address where) {
        if (!machine_.free(where)) return false;
        writer_.append(free_event{where});
        return true;
    }

    std::vector<synthetic_heap::move> collect() {
        writer_.append(gc_start_event{++collections_});
        auto moves = machine_.collect();
        for (const auto& m : moves) writer_.append(move_event{m.from, m.to});
        return moves;
    }

    std::uint64_t load(address where, std::uint8_t width, context_id access_context, address ip = 0) {
        symbols_.write_new_nodes(tree_, writer_);
        const std::uint64_t value = machine_.load(where, width, access_context, ip);
        writer_.append(access_event{emulated_thread, ip, where, std::nullopt, width, access_kind::load, access_context});
        return value;
    }

    void store(address where, std::uint8_t width, std::uint64_t value, context_id access_context, address ip = 0) {
        symbols_.write_new_nodes(tree_, writer_);
        const bool already_there = heap_.load(where, width) == value;
        machine_.store(where, width, value, access_context, ip);
        writer_.append(access_event{emulated_thread, ip, where,
                                    already_there ? std::nullopt : std::optional<std::uint64_t>(value), width,
                                    access_kind::store, access_context});
    }

    std::uint64_t accesses() const noexcept { return machine_.accesses(); }

private:
    Machine& machine_;
    const synthetic_heap& heap_;
    const context_tree& tree_;
    trace_writer& writer_;
    trace_symbols symbols_;
    std::uint64_t collections_ = 0;
};

// What a trace of every access of an emulated session says of its run: the live profiler's settings and run facts,
// and how the machine sampled the accesses.
inline trace_run_description every_access_run(const profiler_config& profiler, std::size_t watchpoint_slots,
                                              run_facts facts, const session_config& config) {
    trace_run_description run;
    run.profiler = profiler;
    run.watchpoint_slots = watchpoint_slots;
    run.facts = std::move(facts);
    run.every_access = true;
    run.machine = {config.sampler.period, config.sampler.randomized, config.sampler.seed,
                   std::string(watch_trigger_name(config.trigger))};
    return run;
}

// An emulated session (session.hpp) whose every access is recorded: the live profiler works as in a plain
// session (its profile is the same), and the trace starts with the run's attributes, saying it holds every access
// and how the machine sampled them.
template <class Policies = policies<>>
class access_recording_session {
public:
    using profiler_type = profiler<Policies>;

    access_recording_session(const session_config& config, report_naming naming)
        : live_(config), prof(live_.prof), machine(live_.machine, live_.heap, prof.contexts(), trace.writer(), naming) {
        write_run_header(trace.writer(), every_access_run(prof.config(), live_.watchpoints.slot_count(), facts(), config));
    }

    run_facts facts() const { return live_.facts(); }

    // When the profile is taken: the heap view for a replay (recording_session::record_heap_view).
    void record_heap_view() {
        prof.record_live_heap(0, [&](const live_heap_event& record) { trace.writer().append(record); });
    }

private:
    session<Policies> live_;

public:
    in_memory_trace trace;
    profiler_type& prof;
    access_recorder<emulated_machine<profiler_type>> machine;
};

} // namespace ojx::emulation
