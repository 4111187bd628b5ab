// Recording an emulated run as a trace (docs/trace-format.md) while it is profiled, so that `ojx replay` can
// analyse it again. The recorder sits between the emulated machine and the profiler: it forwards every event to
// the profiler and appends it to the trace, with what the profiler did while handling it —
//
//   before the event: symbols the event needs (new calling-context-tree nodes and their frames' names, types),
//                     and the memory the profiler read for it (the window it digests around a compared word);
//   after the event:  the watchpoints the profiler armed and disarmed for it (a replay checks its own against them).
//
// The profiler reads memory and arms watchpoints through `recording_memory` and `recording_watchpoints`, which
// pass each call on and note it for the recorder. An emulation run is small: blocks are kept in memory and the file
// is written at the end. The parts every recorder shares are in ojx/trace_recording.hpp.
#pragma once

#include "ojx/emulation/emulated_machine.hpp"
#include "ojx/emulation/emulated_sampler.hpp"
#include "ojx/emulation/emulated_watchpoints.hpp"
#include "ojx/emulation/session.hpp"
#include "ojx/emulation/synthetic_heap.hpp"
#include "ojx/profiler.hpp"
#include "ojx/report.hpp"
#include "ojx/trace_format.hpp"
#include "ojx/trace_recording.hpp"
#include "ojx/trace_run.hpp"
#include "ojx/trace_writer.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <optional>
#include <span>
#include <string>
#include <unordered_set>
#include <variant>
#include <vector>

namespace ojx::emulation {

// The thread every recorded emulated event comes from (the emulated program has one).
inline constexpr trace_thread_id emulated_thread = 0;

// A whole trace in memory: the file header, then each block as the writer closes it.
class in_memory_trace {
public:
    static constexpr std::size_t block_size = std::size_t{64} << 10;

    in_memory_trace() : buffer_(block_size), writer_(buffer_, trace_block_sink{this, &exchange}) {
        const auto header = trace_file_header();
        file_.assign(header.begin(), header.end());
    }
    in_memory_trace(const in_memory_trace&) = delete;
    in_memory_trace& operator=(const in_memory_trace&) = delete;

    trace_writer& writer() noexcept { return writer_; }

    // Ends the trace (its end record) and returns the file's bytes.
    std::span<const std::byte> finish() {
        if (!finished_) {
            writer_.finish();
            finished_ = true;
        }
        return file_;
    }

    // Writes the finished trace to `path`, whole or not at all. Returns the error, if any.
    std::optional<std::string> write_file(const std::string& path) {
        const auto bytes = finish();
        const std::string temporary = path + ".tmp";
        std::ofstream out(temporary, std::ios::binary);
        out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
        out.close();
        if (!out || std::rename(temporary.c_str(), path.c_str()) != 0) {
            std::remove(temporary.c_str());
            return "cannot write the trace to '" + path + "'";
        }
        return std::nullopt;
    }

private:
    // Appends the closed block to the file and hands the same buffer back for the next one.
    static std::span<std::byte> exchange(void* context, std::span<const std::byte> closed_block) {
        auto& self = *static_cast<in_memory_trace*>(context);
        self.file_.insert(self.file_.end(), closed_block.begin(), closed_block.end());
        return self.buffer_;
    }

    std::vector<std::byte> buffer_;
    trace_writer writer_;
    std::vector<std::byte> file_;
    bool finished_ = false;
};

using recording_watchpoints = ojx::recording_watchpoints<emulated_watchpoints>;
using recording_memory = ojx::recording_memory<const synthetic_heap>;

template <replacement_policy Replacement = reservoir_replacement, pairing_policy Pairing = reservoir_pairing>
using recording_policies = policy_bundle<recording_watchpoints, recording_memory, Replacement, Pairing>;

// The symbols a trace's events need, each written once before the first event that uses it: the calling context
// tree's nodes (each after its parent, its frame's name the first time the frame appears) and the allocations'
// types. `naming` names them.
class trace_symbols {
public:
    explicit trace_symbols(report_naming naming) : naming_(std::move(naming)) {}

    // Tree nodes inserted since the last call (the workload captures contexts between events).
    void write_new_nodes(const context_tree& tree, trace_writer& writer) {
        append_new_contexts(writer, tree, written_nodes_, [&](context_id id) {
            const trace_frame_id frame = tree.frame_of(id);
            if (id != tree.root && named_frames_.insert(frame).second)
                writer.append_frame(frame, naming_.frame ? naming_.frame(frame) : std::to_string(frame));
        });
    }
    void write_type(type_id type, trace_writer& writer) {
        if (type != no_type && named_types_.insert(type).second)
            writer.append_type(type, naming_.type ? naming_.type(type) : std::to_string(type));
    }

private:
    report_naming naming_;
    std::size_t written_nodes_ = 0;
    std::unordered_set<trace_frame_id> named_frames_;
    std::unordered_set<type_id> named_types_;
};

// The machine's sink: forwards to the profiler and records (profiler_event_recorder), each event after the
// symbols it needs (trace_symbols).
template <class Profiler>
class trace_recorder {
public:
    trace_recorder(Profiler& profiler, profiler_effects& effects, trace_writer& writer, report_naming naming)
        : profiler_(profiler), writer_(writer), recorder_(writer, effects), symbols_(std::move(naming)) {}

    void on_allocation(address where, std::uint64_t size, context_id context, type_id type,
                       const allocation_shape& shape = {}) {
        write_symbols();
        symbols_.write_type(type, writer_);
        recorder_.record([&] { profiler_.on_allocation(where, size, context, type, shape); },
                         allocation_event{emulated_thread, where, size, context, type, shape});
    }
    void on_free(address where) {
        write_symbols();
        recorder_.record([&] { profiler_.on_free(where); }, free_event{where});
    }
    void on_move(address from, address to) {
        write_symbols();
        recorder_.record([&] { profiler_.on_move(from, to); }, move_event{from, to});
    }
    void on_gc_start() {
        write_symbols();
        recorder_.record([&] { profiler_.on_gc_start(); }, gc_start_event{++collections_});
    }
    void on_sample(const access_sample& sample) {
        write_symbols();
        recorder_.record([&] { profiler_.on_sample(sample); }, sample);
    }
    void on_trap(const watchpoint_trap& trap) {
        write_symbols();
        recorder_.record([&] { profiler_.on_trap(trap); }, trap);
    }

    // Events the profiler consumed (allocations, frees, moves, collections, samples, traps).
    std::uint64_t events() const noexcept { return recorder_.events(); }
    // Events whose reads or watchpoint calls did not all fit the notes (the trace says so; a replay refuses it).
    std::uint64_t incomplete_events() const noexcept { return recorder_.incomplete_events(); }

private:
    void write_symbols() { symbols_.write_new_nodes(profiler_.contexts(), writer_); }

    Profiler& profiler_;
    trace_writer& writer_;
    profiler_event_recorder recorder_;
    trace_symbols symbols_;
    std::uint64_t collections_ = 0;
};

// What a recorded trace of the emulated program starts with: the run's attributes (trace_run.hpp) and the emulated
// thread's name.
inline void write_run_header(trace_writer& writer, const trace_run_description& run) {
    for (const run_attribute& attribute : run_attributes(run)) writer.append(attribute);
    writer.append_thread(emulated_thread, "emulated program");
}

// An emulated session (session.hpp) that records: the same heap, sampler, debug registers and profiler settings,
// the profiler reading and arming through the recording policies, the machine feeding the recorder. The trace
// starts with the run's attributes (trace_run.hpp) and the emulated thread's name.
template <class Policies = recording_policies<>>
class recording_session {
public:
    using profiler_type = profiler<Policies>;

    recording_session(const session_config& config, report_naming naming)
        : heap(config.heap_bytes),
          sampler(config.sampler),
          watchpoints(config.watchpoint_slots, config.trigger),
          recorded_watchpoints(watchpoints, &effects_),
          recorded_memory(heap, &effects_),
          prof(profiler_config_for(config.profiler, config.trigger), recorded_watchpoints, recorded_memory),
          recorder(prof, effects_, trace.writer(), std::move(naming)),
          machine(heap, sampler, watchpoints, recorder) {
        trace_run_description run;
        run.profiler = prof.config();
        run.watchpoint_slots = watchpoints.slot_count();
        run.facts = facts();
        write_run_header(trace.writer(), run);
    }

    run_facts facts() const { return emulation_facts<Policies>(sampler, watchpoints); }

    // When the profile is taken, as a live agent does: the heap view for a replay (which has no memory to take a
    // census of), the trace's last events.
    void record_heap_view() {
        prof.record_live_heap(0, [&](const live_heap_event& record) { trace.writer().append(record); });
    }

private:
    profiler_effects effects_; // first: the recording policies below refer to it

public:
    in_memory_trace trace;
    synthetic_heap heap;
    emulated_sampler sampler;
    emulated_watchpoints watchpoints;
    recording_watchpoints recorded_watchpoints;
    recording_memory recorded_memory;
    profiler_type prof;
    trace_recorder<profiler_type> recorder;
    emulated_machine<trace_recorder<profiler_type>> machine;
};

} // namespace ojx::emulation
