// Recording a profiled run as a trace (docs/trace-format.md) that `ojx replay` turns back into the same profile:
// what every recorder shares (the emulation backend's, and the Linux profiling session's inside the agents).
//
// A recorder sits between the backend and the profiler. It hands each event to the profiler and appends it to the
// trace together with what the profiler did while handling it —
//   before the event: the calling-context-tree nodes inserted since the previous event (each after its parent),
//                     the memory the profiler read for it (the window it digests around a compared word), and
//                     the arms the backend refused it (a replay refuses them as well: it must know before the
//                     event, since what the profiler does next depends on each arm's outcome);
//   after the event:  the watchpoints the profiler armed and disarmed for it (a replay checks its own against them).
// The profiler reads and arms through `recording_memory` and `recording_watchpoints`, which pass each call on and
// note it in `profiler_effects`.
//
// Signal-safe throughout (the agents record inside signal handlers, under the profiler's lock): the notes have a
// fixed capacity. An event whose notes overflow is still recorded, without what did not fit, and counted; the
// recorder writes the count as the run attribute `events_incompletely_recorded`, which makes a replay refuse the
// trace (it would differ from the recording, silently) rather than mislead.
#pragma once

#include "ojx/calling_context_tree.hpp"
#include "ojx/profiler.hpp"
#include "ojx/relocation_survivors.hpp"
#include "ojx/trace_format.hpp"
#include "ojx/trace_run.hpp"
#include "ojx/trace_writer.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <variant>

namespace ojx {

// What the profiler did through its policies while handling one event. Fixed capacity; signal-safe.
class profiler_effects {
public:
    // Enough for every read and call of one event with compare windows up to several KiB and eight slots: a
    // sample that compares at once (profiler_config::compare_at_sample) reads its window, its companion's and,
    // for each pair it arms, the pair's word and window.
    static constexpr std::size_t max_bytes = 32768;
    static constexpr std::size_t max_reads = 64;
    static constexpr std::size_t max_watchpoint_calls = 128;
    using watchpoint_call = std::variant<watchpoint_arm_event, watchpoint_disarm_event>;

    void clear() noexcept {
        byte_count_ = 0;
        read_count_ = 0;
        call_count_ = 0;
        refusal_count_ = 0;
        overflowed_ = false;
    }

    // A read that continues the previous one (the profiler reads a window in chunks) extends it.
    void note_read(address where, const void* bytes, std::size_t size) noexcept {
        if (size > max_bytes - byte_count_) {
            overflowed_ = true;
            return;
        }
        const bool continues = read_count_ != 0 && reads_[read_count_ - 1].where + reads_[read_count_ - 1].size == where &&
                               reads_[read_count_ - 1].offset + reads_[read_count_ - 1].size == byte_count_;
        if (!continues && read_count_ == max_reads) {
            overflowed_ = true;
            return;
        }
        if (size != 0) std::memcpy(bytes_.data() + byte_count_, bytes, size);
        if (continues) {
            reads_[read_count_ - 1].size += size;
        } else {
            reads_[read_count_++] = read{where, byte_count_, size};
        }
        byte_count_ += size;
    }
    void note_call(const watchpoint_call& call) noexcept {
        if (call_count_ == max_watchpoint_calls) {
            overflowed_ = true;
            return;
        }
        calls_[call_count_++] = call;
    }
    void note_refusal(const watchpoint_arm_refused_event& refused) noexcept {
        if (refusal_count_ == max_watchpoint_calls) {
            overflowed_ = true;
            return;
        }
        refusals_[refusal_count_++] = refused;
    }

    // Whether something of this event could not be noted.
    bool overflowed() const noexcept { return overflowed_; }

    template <class Visit>
    void for_each_read(Visit&& visit) const noexcept {
        for (std::size_t i = 0; i < read_count_; ++i)
            visit(memory_contents_event{reads_[i].where, std::span(bytes_).subspan(reads_[i].offset, reads_[i].size)});
    }
    template <class Visit>
    void for_each_refusal(Visit&& visit) const noexcept {
        for (std::size_t i = 0; i < refusal_count_; ++i) visit(refusals_[i]);
    }
    template <class Visit>
    void for_each_call(Visit&& visit) const noexcept {
        for (std::size_t i = 0; i < call_count_; ++i) std::visit(visit, calls_[i]);
    }

private:
    struct read {
        address where = 0;
        std::size_t offset = 0; // into bytes_
        std::size_t size = 0;
    };
    std::array<std::byte, max_bytes> bytes_{};
    std::array<read, max_reads> reads_{};
    std::array<watchpoint_call, max_watchpoint_calls> calls_{};
    std::array<watchpoint_arm_refused_event, max_watchpoint_calls> refusals_{};
    std::size_t byte_count_ = 0;
    std::size_t read_count_ = 0;
    std::size_t call_count_ = 0;
    std::size_t refusal_count_ = 0;
    bool overflowed_ = false;
};

// Where a recording policy notes what passes through it: `effects`, or nowhere while it is unset.
class noting_policy {
public:
    void record_into(profiler_effects* effects) noexcept { effects_ = effects; }

protected:
    explicit noting_policy(profiler_effects* effects) noexcept : effects_(effects) {}
    profiler_effects* effects_;
};

// A backend's watchpoints, with each arm and disarm noted, and each arm the backend refused. Signal-safe if the
// backend's are.
template <watchpoint_arming Inner>
class recording_watchpoints : public noting_policy {
public:
    explicit recording_watchpoints(Inner& inner, profiler_effects* effects = nullptr) noexcept
        : noting_policy(effects), inner_(inner) {}

    std::size_t slot_count() const noexcept { return inner_.slot_count(); }
    bool arm(std::size_t slot, address where, std::uint8_t width) noexcept(noexcept(inner_.arm(slot, where, width))) {
        const bool armed = inner_.arm(slot, where, width);
        if (effects_ != nullptr) {
            if (armed) {
                effects_->note_call(watchpoint_arm_event{slot, where, width});
            } else {
                effects_->note_refusal(watchpoint_arm_refused_event{slot, where, width});
            }
        }
        return armed;
    }
    void disarm(std::size_t slot) noexcept(noexcept(inner_.disarm(slot))) {
        inner_.disarm(slot);
        if (effects_ != nullptr) effects_->note_call(watchpoint_disarm_event{slot});
    }

private:
    Inner& inner_;
};

// A backend's memory, with the bytes of each successful read noted. A failed read is not noted: the replay, which
// answers only reads it has bytes for, then fails it as well.
template <memory_reader Inner>
class recording_memory : public noting_policy {
public:
    explicit recording_memory(Inner& inner, profiler_effects* effects = nullptr) noexcept
        : noting_policy(effects), inner_(inner) {}

    bool read(address where, void* out, std::size_t size) noexcept(noexcept(inner_.read(where, out, size))) {
        if (!inner_.read(where, out, size)) return false;
        if (effects_ != nullptr) effects_->note_read(where, out, size);
        return true;
    }

private:
    Inner& inner_;
};

// Appends a context symbol for every node of `tree` from id `written` on, each after its parent, and advances
// `written`; `on_node(id)` runs before each is appended (a recorder that names frames as they appear writes the
// name there). Signal-safe if `on_node` is.
template <class OnNode>
void append_new_contexts(trace_writer& writer, const context_tree& tree, std::size_t& written, OnNode&& on_node) {
    for (; written < tree.size(); ++written) {
        const auto id = static_cast<context_id>(written);
        on_node(id);
        writer.append(context_symbol{id, tree.parent(id), tree.frame_of(id)});
    }
}

// Appends the events a profiler handles to a trace, with what the profiler did for each (see the top).
class profiler_event_recorder {
public:
    profiler_event_recorder(trace_writer& writer, profiler_effects& effects) noexcept
        : writer_(writer), effects_(effects) {}

    // The tree's nodes inserted since the last call, each after its parent. Signal-safe.
    void write_new_contexts(const context_tree& tree) noexcept {
        append_new_contexts(writer_, tree, written_nodes_, [](context_id) noexcept {});
    }

    // Hands `event` to the profiler (`deliver`) and records it: the memory read for it and the arms refused it
    // before, the watchpoint calls after. Signal-safe if `deliver` is.
    template <class Deliver, class Event>
    void record(Deliver&& deliver, const Event& event) noexcept(noexcept(deliver())) {
        effects_.clear();
        deliver();
        ++events_;
        effects_.for_each_read([this](const memory_contents_event& contents) { writer_.append(contents); });
        effects_.for_each_refusal([this](const watchpoint_arm_refused_event& refused) { writer_.append(refused); });
        writer_.append(event);
        effects_.for_each_call([this](const auto& call) { writer_.append(call); });
        if (effects_.overflowed()) note_incomplete_event();
    }

    // A collection whose survivors are all known (profiler::on_collection): the survivors, written against the
    // previous relocation's (relocation_survivors.hpp), then the relocation record the profiler's handling of it is
    // recorded with. Allocates (the survivors are kept for the next relocation): not signal-safe.
    template <class Deliver, class Relocated>
    void record_relocation(Deliver&& deliver, std::span<const Relocated> survivors) {
        // The previous relocation may be referred to only if the reader has it whole: no record lost since it began.
        const std::uint64_t dropped = writer_.events_dropped();
        const bool can_refer = dropped == dropped_before_relocation_;
        dropped_before_relocation_ = dropped;
        survivors_.encode(survivors, can_refer, [this](const auto& record) { writer_.append(record); });
        record(deliver, relocation_event{survivors.size()});
    }

    // Events handed to the profiler.
    std::uint64_t events() const noexcept { return events_; }
    // Events whose memory reads or watchpoint calls did not all fit the notes (a replay of the trace would differ).
    std::uint64_t incomplete_events() const noexcept { return incomplete_events_; }

private:
    // The running count, as the attribute a replay refuses (a later value replaces an earlier one).
    void note_incomplete_event() noexcept {
        ++incomplete_events_;
        char digits[24];
        std::size_t length = 0;
        for (std::uint64_t n = incomplete_events_; n != 0; n /= 10) digits[length++] = static_cast<char>('0' + n % 10);
        char text[24];
        for (std::size_t i = 0; i < length; ++i) text[i] = digits[length - 1 - i];
        writer_.append_run_attribute(incompletely_recorded_attribute, std::string_view(text, length));
    }

    trace_writer& writer_;
    profiler_effects& effects_;
    std::size_t written_nodes_ = 0;
    std::uint64_t events_ = 0;
    std::uint64_t incomplete_events_ = 0;
    survivor_encoder survivors_;
    std::uint64_t dropped_before_relocation_ = 0; // the writer's dropped count when the previous relocation began
};

} // namespace ojx
