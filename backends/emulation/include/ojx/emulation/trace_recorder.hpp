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
// is written at the end. Not signal-safe (the notes are vectors); recording inside the agents is a later piece.
#pragma once

#include "ojx/emulation/emulated_machine.hpp"
#include "ojx/emulation/emulated_sampler.hpp"
#include "ojx/emulation/emulated_watchpoints.hpp"
#include "ojx/emulation/session.hpp"
#include "ojx/emulation/synthetic_heap.hpp"
#include "ojx/profiler.hpp"
#include "ojx/report.hpp"
#include "ojx/trace_format.hpp"
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

// What the profiler did through its policies while handling one event, noted for the recorder.
struct profiler_effects {
    struct memory_read {
        address where;
        std::size_t offset; // into `memory_bytes`
        std::size_t size;
    };
    std::vector<std::byte> memory_bytes;
    std::vector<memory_read> memory_reads;
    std::vector<std::variant<watchpoint_arm_event, watchpoint_disarm_event>> watchpoint_calls;

    void clear() {
        memory_bytes.clear();
        memory_reads.clear();
        watchpoint_calls.clear();
    }
};

// The emulated debug registers, with each arm and disarm noted.
class recording_watchpoints {
public:
    recording_watchpoints(emulated_watchpoints& inner, profiler_effects& effects) : inner_(inner), effects_(effects) {}

    std::size_t slot_count() const noexcept { return inner_.slot_count(); }
    bool arm(std::size_t slot, address where, std::uint8_t width) {
        const bool armed = inner_.arm(slot, where, width);
        if (armed) effects_.watchpoint_calls.emplace_back(watchpoint_arm_event{slot, where, width});
        return armed;
    }
    void disarm(std::size_t slot) {
        inner_.disarm(slot);
        effects_.watchpoint_calls.emplace_back(watchpoint_disarm_event{slot});
    }

private:
    emulated_watchpoints& inner_;
    profiler_effects& effects_;
};

// The synthetic heap, with the bytes of each successful read noted. A failed read is not noted: the replay, which
// answers only reads it has bytes for, then fails it as well.
class recording_memory {
public:
    recording_memory(const synthetic_heap& inner, profiler_effects& effects) : inner_(inner), effects_(effects) {}

    bool read(address where, void* out, std::size_t size) {
        if (!inner_.read(where, out, size)) return false;
        const auto* bytes = static_cast<const std::byte*>(out);
        effects_.memory_reads.push_back({where, effects_.memory_bytes.size(), size});
        effects_.memory_bytes.insert(effects_.memory_bytes.end(), bytes, bytes + size);
        return true;
    }

private:
    const synthetic_heap& inner_;
    profiler_effects& effects_;
};

template <replacement_policy Replacement = reservoir_replacement, pairing_policy Pairing = reservoir_pairing>
struct recording_policies {
    using watchpoints = recording_watchpoints;
    using memory = recording_memory;
    using replacement = Replacement;
    using pairing = Pairing;
};

// The machine's sink: forwards to the profiler and records. `naming` names the frames and types the trace's
// symbols carry (the frames of every tree node the events use, the types of every allocation).
template <class Profiler>
class trace_recorder {
public:
    trace_recorder(Profiler& profiler, profiler_effects& effects, trace_writer& writer, report_naming naming)
        : profiler_(profiler), effects_(effects), writer_(writer), naming_(std::move(naming)) {}

    void on_allocation(address where, std::uint64_t size, context_id context, type_id type,
                       const allocation_shape& shape = {}) {
        write_symbols();
        if (type != no_type && named_types_.insert(type).second)
            writer_.append_type(type, naming_.type ? naming_.type(type) : std::to_string(type));
        record([&] { profiler_.on_allocation(where, size, context, type, shape); },
               allocation_event{emulated_thread, where, size, context, type, shape});
    }
    void on_free(address where) {
        write_symbols();
        record([&] { profiler_.on_free(where); }, free_event{where});
    }
    void on_move(address from, address to) {
        write_symbols();
        record([&] { profiler_.on_move(from, to); }, move_event{from, to});
    }
    void on_gc_start() {
        write_symbols();
        record([&] { profiler_.on_gc_start(); }, gc_start_event{++collections_});
    }
    void on_sample(const access_sample& sample) {
        write_symbols();
        record([&] { profiler_.on_sample(sample); }, sample);
    }
    void on_trap(const watchpoint_trap& trap) {
        write_symbols();
        record([&] { profiler_.on_trap(trap); }, trap);
    }

    // Events the profiler consumed (allocations, frees, moves, collections, samples, traps).
    std::uint64_t events() const noexcept { return events_; }

    // The thread every emulated event comes from (the emulated program has one).
    static constexpr trace_thread_id emulated_thread = 0;

private:
    // Tree nodes inserted since the last event (the workload captures contexts between events), each after its
    // parent, with its frame's name the first time the frame appears.
    void write_symbols() {
        const auto& tree = profiler_.contexts();
        for (; written_nodes_ < tree.size(); ++written_nodes_) {
            const auto id = static_cast<context_id>(written_nodes_);
            const trace_frame_id frame = tree.frame_of(id);
            if (id != tree.root && named_frames_.insert(frame).second)
                writer_.append_frame(frame, naming_.frame ? naming_.frame(frame) : std::to_string(frame));
            writer_.append(context_symbol{id, tree.parent(id), frame});
        }
    }

    // The memory the profiler read for the event goes before it (a replay has the bytes when it delivers the
    // event), the watchpoint calls after it (a replay compares them with its own once it has delivered it).
    template <class Deliver, class Event>
    void record(Deliver deliver, const Event& event) {
        effects_.clear();
        deliver();
        ++events_;
        for (const auto& read : effects_.memory_reads)
            writer_.append(memory_contents_event{read.where,
                                                 std::span(effects_.memory_bytes).subspan(read.offset, read.size)});
        writer_.append(event);
        for (const auto& call : effects_.watchpoint_calls)
            std::visit([this](const auto& c) { writer_.append(c); }, call);
    }

    Profiler& profiler_;
    profiler_effects& effects_;
    trace_writer& writer_;
    report_naming naming_;
    std::size_t written_nodes_ = 0;
    std::unordered_set<trace_frame_id> named_frames_;
    std::unordered_set<type_id> named_types_;
    std::uint64_t collections_ = 0;
    std::uint64_t events_ = 0;
};

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
          recorded_watchpoints(watchpoints, effects_),
          recorded_memory(heap, effects_),
          prof(config.profiler, recorded_watchpoints, recorded_memory),
          recorder(prof, effects_, trace.writer(), std::move(naming)),
          machine(heap, sampler, watchpoints, recorder) {
        const trace_run_description run{prof.config(), watchpoints.slot_count(), facts()};
        for (const run_attribute& attribute : run_attributes(run)) trace.writer().append(attribute);
        trace.writer().append_thread(trace_recorder<profiler_type>::emulated_thread, "emulated program");
    }

    run_facts facts() const { return emulation_facts<Policies>(sampler, watchpoints); }

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
