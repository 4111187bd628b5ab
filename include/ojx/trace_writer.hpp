// Writes trace events into fixed-size block buffers, for a recorder that runs inside signal handlers or under
// the profiler's spin lock. Appending an event allocates nothing and takes no lock: it encodes into the current
// buffer (supplied by the caller), and a full block is closed (length and CRC-32C) and handed to a block sink,
// which returns the next empty buffer — a later piece connects the sink to a buffer pool and an asynchronous
// writer thread. An event that cannot be written (no free buffer, or larger than a block) is counted, and the next
// record written is preceded by an `events_lost` record saying how many were lost there.
//
// One writer has one owner at a time (one thread, or whoever holds the lock that serializes events); events of
// many program threads go through it, each thread's compaction state in a small fixed table.
#pragma once

#include "ojx/crc32c.hpp"
#include "ojx/trace_format.hpp"

#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string_view>
#include <variant>

namespace ojx {

// Receives each closed block: `closed_block` is the block as it goes into the file (header and payload), valid
// only during the call. Returns the buffer to fill next (the writer owns it until it hands it back), or an empty
// span when none is free. The writer also calls it with an empty `closed_block` to ask again for a buffer after
// one was refused. `exchange` must be set; it must be signal-safe if the writer is used in a signal handler.
struct trace_block_sink {
    void* context = nullptr;
    std::span<std::byte> (*exchange)(void* context, std::span<const std::byte> closed_block) = nullptr;
};

class trace_writer {
public:
    // Buffers smaller than this are treated as no buffer: they would hold too few records to be worth a block.
    static constexpr std::size_t minimum_buffer_size = 256;

    // Allocates nothing: `first_buffer` (may be empty) is the first block's storage.
    trace_writer(std::span<std::byte> first_buffer, trace_block_sink sink) noexcept : sink_(sink) {
        take_buffer(first_buffer);
    }

    trace_writer(const trace_writer&) = delete;
    trace_writer& operator=(const trace_writer&) = delete;

    // Each `append` writes one event and returns false if it was dropped (and counted).
    // Signal-safe: allocates nothing, takes no lock (beyond what the sink does when a block fills).
    bool append(const allocation_event& allocation) noexcept {
        return write_record([&](trace_byte_writer& out, trace_thread_slots& slots) {
            const std::size_t found = slots.find(allocation.thread);
            if (found != trace_thread_slots::slot_count && slots[found].has_allocation &&
                slots[found].allocation_end == allocation.where) {
                const auto& previous = slots[found];
                std::uint8_t tag = static_cast<std::uint8_t>(trace_tag::compact_allocation_first | (found << 3));
                const bool same_size = previous.allocation_size == allocation.size;
                const bool same_context = previous.allocation_context == allocation.context;
                const bool same_type = previous.allocation_type == allocation.type;
                tag |= (same_size ? trace_tag::compact_same_size : 0) |
                       (same_context ? trace_tag::compact_same_context : 0) |
                       (same_type ? trace_tag::compact_same_type : 0);
                out.put_byte(tag);
                if (!same_size) {
                    out.put_varint(zigzag_delta(previous.allocation_size, allocation.size));
                }
                if (!same_context) {
                    out.put_varint(zigzag_delta32(previous.allocation_context, allocation.context));
                }
                if (!same_type) {
                    out.put_varint(zigzag_delta32(previous.allocation_type, allocation.type));
                }
                put_shape(out, allocation.shape);
                if (!out.overflowed()) {
                    slots.remember_allocation(found, allocation);
                }
                return;
            }
            out.put_byte(trace_tag::allocation);
            out.put_varint(allocation.thread);
            out.put_varint(allocation.where);
            out.put_varint(allocation.size);
            out.put_varint(allocation.context);
            out.put_varint(allocation.type);
            put_shape(out, allocation.shape);
            if (!out.overflowed()) {
                slots.remember_allocation(slots.bind(allocation.thread), allocation);
            }
        });
    }

    bool append(const access_sample& sample) noexcept {
        return write_record([&](trace_byte_writer& out, trace_thread_slots& slots) {
            const std::size_t found = slots.find(sample.thread);
            if (found != trace_thread_slots::slot_count && slots[found].has_sample) {
                const auto& previous = slots[found];
                out.put_byte(static_cast<std::uint8_t>(trace_tag::compact_sample_first |
                                                       (sample.kind == access_kind::store ? 0x10u : 0u) | found));
                out.put_varint(zigzag_delta(previous.sample_ip, sample.ip));
                out.put_varint(zigzag_delta(previous.sample_address, sample.effective_address));
                out.put_varint(sample.value);
                out.put_byte(sample.width);
                out.put_varint(zigzag_delta32(previous.sample_context, sample.access_context));
                if (!out.overflowed()) {
                    slots.remember_sample(found, sample);
                }
                return;
            }
            out.put_byte(trace_tag::access_sample);
            out.put_varint(sample.thread);
            out.put_varint(sample.ip);
            out.put_varint(sample.effective_address);
            out.put_varint(sample.value);
            out.put_byte(sample.width);
            out.put_byte(static_cast<std::uint8_t>(sample.kind));
            out.put_varint(sample.access_context);
            if (!out.overflowed()) {
                slots.remember_sample(slots.bind(sample.thread), sample);
            }
        });
    }

    // One access of a trace of every access: a next-access record when the previous access record in the block was
    // of the same thread, else a full one naming the thread; the entry's fields are deltas from the thread's
    // previous access in the block (zeros when it has none).
    bool append(const access_event& access) noexcept {
        const bool written = write_record([&](trace_byte_writer& out, trace_thread_slots& slots) {
            const std::size_t last = slots.last_access_slot();
            const bool next = last != trace_thread_slots::slot_count && slots[last].thread == access.thread;
            std::size_t slot = next ? last : slots.find(access.thread);
            if (next) {
                out.put_byte(trace_tag::next_access);
            } else {
                out.put_byte(trace_tag::access);
                out.put_varint(access.thread);
            }
            // A thread without a slot is encoded against the fresh slot bind() gives it: all zeros.
            static constexpr trace_thread_slots::slot fresh{};
            put_access_entry(out, slot != trace_thread_slots::slot_count ? slots[slot] : fresh, access);
            if (!out.overflowed()) {
                if (slot == trace_thread_slots::slot_count) slot = slots.bind(access.thread);
                slots.remember_access(slot, access);
            }
        });
        if (written) previous_record_access_ = {true, access.kind, access.where, access.width};
        return written;
    }

    // One value flow event. A load or store of the access just written (its kind, address and width) is that
    // access record's register, one byte after the tag; any other, in full.
    bool append(const value_flow_event& flow) noexcept {
        return write_record([&](trace_byte_writer& out, trace_thread_slots&) {
            const bool memory = flow.kind == value_flow_kind::load || flow.kind == value_flow_kind::store;
            const access_kind kind = flow.kind == value_flow_kind::store ? access_kind::store : access_kind::load;
            const previous_access& p = previous_record_access_;
            // An events-lost record written first would come between the access and its register.
            const bool of_previous_access = memory && lost_since_last_record_ == 0 && p.written && p.kind == kind &&
                                            p.where == flow.at && p.width == flow.width;
            out.put_byte(of_previous_access ? trace_tag::access_register : value_flow_tag(flow.kind));
            switch (flow.kind) {
            case value_flow_kind::load:
            case value_flow_kind::store:
                out.put_byte(flow.reg);
                if (of_previous_access) return;
                out.put_byte(static_cast<std::uint8_t>(kind));
                out.put_varint(flow.at);
                out.put_byte(flow.width);
                return;
            case value_flow_kind::compute:
                out.put_byte(static_cast<std::uint8_t>(flow.source_count |
                                                       (flow.has_result ? trace_tag::compute_has_result : 0)));
                if (flow.has_result) out.put_byte(flow.reg);
                for (std::uint8_t i = 0; i < flow.source_count; ++i) out.put_byte(flow.sources[i]);
                return;
            case value_flow_kind::string_move:
                out.put_varint(flow.at);
                out.put_varint(zigzag_delta(flow.at, flow.from));
                out.put_varint(flow.bytes);
                out.put_byte(flow.width);
                return;
            case value_flow_kind::register_move:
            case value_flow_kind::constant:
            case value_flow_kind::new_reference:
                out.put_byte(flow.reg);
                if (flow.kind == value_flow_kind::register_move) out.put_byte(flow.sources[0]);
                if (flow.kind == value_flow_kind::new_reference) out.put_varint(flow.context);
                return;
            }
        });
    }

    // The load as a full sample record's fields (its kind is always load), then the flags (the end, a string
    // move), the steps, and each use with its store address as a difference from the load's.
    bool append(const followed_value& followed) noexcept {
        return write_record([&](trace_byte_writer& out, trace_thread_slots&) {
            const access_sample& load = followed.load;
            out.put_byte(trace_tag::followed_value);
            out.put_varint(load.thread);
            out.put_varint(load.ip);
            out.put_varint(load.effective_address);
            out.put_varint(load.value);
            out.put_byte(load.width);
            out.put_varint(load.access_context);
            out.put_byte(static_cast<std::uint8_t>(static_cast<std::uint8_t>(followed.end) |
                                                   (followed.string_move ? trace_tag::followed_string_move : 0)));
            out.put_varint(followed.steps);
            out.put_byte(followed.use_count);
            for (std::size_t i = 0; i < followed.use_count; ++i) {
                const followed_value::use& use = followed.uses[i];
                out.put_byte(static_cast<std::uint8_t>(use.kind));
                out.put_byte(use.width);
                if (use.kind == value_use::copied) out.put_varint(zigzag_delta(load.effective_address, use.to));
            }
        });
    }

    bool append(const watchpoint_trap& trap) noexcept {
        return write_record([&](trace_byte_writer& out, trace_thread_slots&) {
            out.put_byte(trace_tag::watchpoint_trap);
            out.put_varint(trap.slot);
            out.put_varint(trap.watched_address);
            out.put_varint(trap.value);
            out.put_byte(trap.width);
            out.put_byte(static_cast<std::uint8_t>(trap.kind));
            out.put_varint(trap.ip);
            out.put_varint(trap.thread);
            out.put_varint(trap.access_context);
        });
    }

    bool append(const free_event& freed) noexcept {
        return write_simple(trace_tag::free, [&](trace_byte_writer& out) { out.put_varint(freed.where); });
    }
    bool append(const move_event& move) noexcept {
        return write_simple(trace_tag::move, [&](trace_byte_writer& out) {
            out.put_varint(move.from);
            out.put_varint(zigzag_delta(move.from, move.to));
        });
    }
    bool append(const region_move_event& move) noexcept {
        return write_simple(trace_tag::region_move, [&](trace_byte_writer& out) {
            out.put_varint(move.from);
            out.put_varint(zigzag_delta(move.from, move.to));
            out.put_varint(move.length);
        });
    }
    bool append(const gc_start_event& gc) noexcept {
        return write_simple(trace_tag::gc_start, [&](trace_byte_writer& out) { out.put_varint(gc.gc); });
    }
    bool append(const gc_end_event& gc) noexcept {
        return write_simple(trace_tag::gc_end, [&](trace_byte_writer& out) { out.put_varint(gc.gc); });
    }
    bool append(const relocated_object_event& object) noexcept {
        return write_simple(trace_tag::relocated_object, [&](trace_byte_writer& out) {
            out.put_varint(object.from);
            out.put_varint(zigzag_delta(object.from, object.to));
            out.put_varint(object.size);
            out.put_varint(object.object.allocation_context);
            out.put_varint(object.object.type);
            out.put_varint(object.object.serial);
        });
    }
    bool append(const relocation_event& relocation) noexcept {
        return write_simple(trace_tag::relocation, [&](trace_byte_writer& out) { out.put_varint(relocation.count); });
    }
    bool append(const kept_survivors_event& kept) noexcept {
        return write_simple(trace_tag::kept_survivors, [&](trace_byte_writer& out) {
            out.put_varint(kept.skip);
            out.put_varint(kept.count);
        });
    }
    bool append(const moved_survivor_event& moved) noexcept {
        return write_simple(trace_tag::moved_survivor, [&](trace_byte_writer& out) {
            out.put_varint(moved.skip);
            out.put_varint(zigzag_delta(0, moved.distance));
        });
    }
    bool append(const heap_census_event& census) noexcept {
        return write_simple(trace_tag::heap_census, [&](trace_byte_writer& out) {
            out.put_varint(census.gc);
            out.put_varint(census.types.size());
            for (const census_count& count : census.types) {
                out.put_varint(count.type);
                out.put_varint(count.objects);
                out.put_varint(count.bytes);
            }
        });
    }
    bool append(const memory_contents_event& memory) noexcept {
        return write_simple(trace_tag::memory_contents,
                            [&](trace_byte_writer& out) { put_memory(out, memory.where, memory.bytes); });
    }
    bool append(const memory_fill_event& fill) noexcept {
        return write_simple(trace_tag::memory_fill, [&](trace_byte_writer& out) { put_memory(out, fill.where, fill.bytes); });
    }
    bool append(const watchpoint_arm_event& arm) noexcept {
        return write_simple(trace_tag::watchpoint_arm, [&](trace_byte_writer& out) {
            out.put_varint(arm.slot);
            out.put_varint(arm.where);
            out.put_byte(arm.width);
        });
    }
    bool append(const watchpoint_disarm_event& disarm) noexcept {
        return write_simple(trace_tag::watchpoint_disarm, [&](trace_byte_writer& out) { out.put_varint(disarm.slot); });
    }
    bool append(const watchpoint_arm_refused_event& refused) noexcept {
        return write_simple(trace_tag::watchpoint_arm_refused, [&](trace_byte_writer& out) {
            out.put_varint(refused.slot);
            out.put_varint(refused.where);
            out.put_byte(refused.width);
        });
    }

    // A digested object: its address (or, gone from the map, its context), weight and digest (both as their 64
    // bits), size, flags, then the blocks, each either the same as the block before it (a bit of the mask) or its
    // 32 bits. Objects often repeat a block (zeros, a fill), and a digest record per object is what a trace pays
    // for whole-object evidence.
    bool append(const whole_object_digest& decided) noexcept {
        return write_simple(trace_tag::whole_object_digest, [&](trace_byte_writer& out) {
            out.put_byte(static_cast<std::uint8_t>(decided.outcome));
            using kind = whole_object_digest::kind;
            if (decided.outcome != kind::digested && decided.outcome != kind::digested_gone) {
                out.put_varint(decided.count);
                return;
            }
            const object_fingerprint& f = decided.fingerprint;
            out.put_varint(decided.outcome == kind::digested ? decided.where : decided.context);
            put_fixed(out, std::bit_cast<std::uint64_t>(decided.weight), 8);
            put_fixed(out, f.digest, 8);
            out.put_varint(f.size);
            out.put_byte(f.all_zero ? trace_tag::digest_all_zero : 0);
            std::uint64_t repeats = 0;
            for (std::size_t i = 1; i < f.blocks.size(); ++i)
                repeats |= std::uint64_t{f.blocks[i] == f.blocks[i - 1]} << i;
            out.put_varint(repeats);
            for (std::size_t i = 0; i < f.blocks.size(); ++i)
                if ((repeats >> i & 1) == 0) put_fixed(out, f.blocks[i], 4);
        });
    }

    // The heap view: doubles as their 64 bits, so that a replay's sums are the live run's exactly.
    bool append(const live_heap_event& e) noexcept {
        return write_simple(trace_tag::live_heap, [&](trace_byte_writer& out) {
            out.put_byte(static_cast<std::uint8_t>(e.what));
            const auto real = [&](double value) { put_fixed(out, std::bit_cast<std::uint64_t>(value), 8); };
            switch (e.what) {
            case live_heap_event::kind::moment:
                out.put_byte(static_cast<std::uint8_t>(e.moment.at));
                out.put_varint(e.moment.collection);
                out.put_varint(e.moment.collections);
                real(e.moment.bytes);
                real(e.seconds);
                return;
            case live_heap_event::kind::site:
                out.put_varint(e.context);
                out.put_varint(e.site.objects);
                real(e.site.weight);
                real(e.site.bytes);
                out.put_varint(e.site.digested.unkept_objects);
                real(e.site.digested.unkept_weight);
                real(e.site.digested.unkept_weight_squared);
                real(e.site.digested.unkept_largest_weight);
                return;
            case live_heap_event::kind::group:
                put_fixed(out, e.group.digest, 8);
                out.put_varint(e.group.objects);
                real(e.group.weight);
                real(e.group.weight_squared);
                real(e.group.heaviest);
                out.put_byte(e.group.all_zero ? trace_tag::digest_all_zero : 0);
                return;
            }
        });
    }

    // Symbols. Signal-safe as well (names are copied into the block, not kept).
    bool append_type(type_id id, std::string_view name) noexcept {
        return write_simple(trace_tag::type_symbol, [&](trace_byte_writer& out) {
            out.put_varint(id);
            out.put_string(name);
        });
    }
    bool append_frame(trace_frame_id id, std::string_view name) noexcept {
        return write_simple(trace_tag::frame_symbol, [&](trace_byte_writer& out) {
            out.put_varint(id);
            out.put_string(name);
        });
    }
    bool append_field(type_id type, std::uint64_t offset, std::string_view name) noexcept {
        return write_simple(trace_tag::field_symbol, [&](trace_byte_writer& out) {
            out.put_varint(type);
            out.put_varint(offset);
            out.put_string(name);
        });
    }
    bool append_thread(trace_thread_id id, std::string_view name) noexcept {
        return write_simple(trace_tag::thread_symbol, [&](trace_byte_writer& out) {
            out.put_varint(id);
            out.put_string(name);
        });
    }
    bool append(const context_symbol& node) noexcept {
        return write_simple(trace_tag::context_symbol, [&](trace_byte_writer& out) {
            out.put_varint(node.id);
            out.put_varint(node.parent);
            out.put_varint(node.frame);
        });
    }
    bool append_run_attribute(std::string_view name, std::string_view value) noexcept {
        return write_simple(trace_tag::run_attribute, [&](trace_byte_writer& out) {
            out.put_string(name);
            out.put_string(value);
        });
    }
    bool append(const run_attribute& attribute) noexcept { return append_run_attribute(attribute.name, attribute.value); }
    bool append(const type_symbol& symbol) noexcept { return append_type(symbol.id, symbol.name); }
    bool append(const frame_symbol& symbol) noexcept { return append_frame(symbol.id, symbol.name); }
    bool append(const thread_symbol& symbol) noexcept { return append_thread(symbol.id, symbol.name); }
    bool append(const field_symbol& symbol) noexcept { return append_field(symbol.type, symbol.offset, symbol.name); }
    // `events_lost` records are the writer's own; one given here is passed through (a trace being rewritten).
    bool append(const events_lost_event& lost) noexcept {
        return write_simple(trace_tag::events_lost, [&](trace_byte_writer& out) { out.put_varint(lost.count); });
    }

    // Any event. Signal-safe: allocates nothing, takes no lock.
    bool append(const trace_event& event) noexcept {
        return std::visit([this](const auto& e) { return append(e); }, event);
    }

    // Closes the current block, if it holds anything, and hands it to the sink. Call before the file is closed,
    // and wherever the reader should see events in order across writers (at a GC start, for example).
    // Signal-safe: allocates nothing, takes no lock (beyond the sink's).
    void flush() noexcept {
        if (buffer_.empty() || used_ == 0) {
            return;
        }
        const auto payload = buffer_.subspan(trace_block_header_size, used_);
        put_u32(buffer_.subspan(0, 4), static_cast<std::uint32_t>(used_));
        put_u32(buffer_.subspan(4, 4), crc32c(payload));
        const auto closed = buffer_.first(trace_block_header_size + used_);
        buffer_ = {};
        used_ = 0;
        slots_.reset();
        previous_record_access_ = {};
        ++blocks_closed_;
        take_buffer(sink_.exchange(sink_.context, closed));
    }

    // Writes the end-of-trace record and closes the last block: a reader then knows the recording was complete.
    // Events appended afterwards are dropped. Returns false if the end record could not be written.
    bool finish() noexcept {
        const bool written = write_simple(trace_tag::end_of_trace, [](trace_byte_writer&) {});
        flush();
        finished_ = true;
        return written;
    }

    std::uint64_t events_written() const noexcept { return events_written_; }
    // Events not written: no buffer was free, the record was larger than a block, or the trace was finished.
    std::uint64_t events_dropped() const noexcept { return dropped_no_buffer_ + dropped_too_large_ + dropped_finished_; }
    std::uint64_t events_dropped_no_buffer() const noexcept { return dropped_no_buffer_; }
    std::uint64_t events_dropped_too_large() const noexcept { return dropped_too_large_; }
    std::uint64_t blocks_closed() const noexcept { return blocks_closed_; }
    // Bytes of records in the block being filled.
    std::size_t pending_bytes() const noexcept { return used_; }

private:
    static void put_memory(trace_byte_writer& out, address where, std::span<const std::byte> bytes) noexcept {
        out.put_varint(where);
        out.put_varint(bytes.size());
        for (const std::byte b : bytes) out.put_byte(static_cast<std::uint8_t>(b));
    }

    static std::size_t varint_size(std::uint64_t value) noexcept {
        std::size_t size = 1;
        for (; value >= 0x80u; value >>= 7) ++size;
        return size;
    }

    // The header byte, then the fields it does not leave out (docs/trace-format.md, "Accesses").
    static void put_access_entry(trace_byte_writer& out, const trace_thread_slots::slot& previous,
                                 const access_event& access) noexcept {
        namespace h = access_header;
        std::uint8_t header = access.kind == access_kind::store ? h::store : 0;
        header |= previous.access_ip == access.ip ? h::same_ip : 0;
        header |= previous.access_context == access.context ? h::same_context : 0;
        header |= previous.access_width == access.width ? h::same_width : 0;
        const std::uint8_t address_mode = access.where == previous.access_address + previous.access_width ? h::address_next
                                          : access.where == previous.access_address                         ? h::address_same
                                                                                                           : h::address_delta;
        std::uint8_t value_mode = h::value_implied;
        if (access.value) {
            const std::uint64_t value = *access.value;
            const bool fits_raw = access.width >= 1 && access.width <= 8 &&
                                  (access.width == 8 || value >> (8 * access.width) == 0);
            value_mode = value == 0                                      ? h::value_zero
                         : fits_raw && access.width < varint_size(value) ? h::value_raw
                                                                         : h::value_varint;
        }
        out.put_byte(static_cast<std::uint8_t>(header | address_mode << h::address_shift | value_mode << h::value_shift));
        if (previous.access_ip != access.ip) out.put_varint(zigzag_delta(previous.access_ip, access.ip));
        if (previous.access_context != access.context)
            out.put_varint(zigzag_delta32(previous.access_context, access.context));
        if (previous.access_width != access.width) out.put_byte(access.width);
        if (address_mode == h::address_delta) out.put_varint(zigzag_delta(previous.access_address, access.where));
        if (value_mode == h::value_raw) {
            for (std::uint8_t i = 0; i < access.width; ++i) out.put_byte(static_cast<std::uint8_t>(*access.value >> (8 * i)));
        } else if (value_mode == h::value_varint) {
            out.put_varint(*access.value);
        }
    }

    static void put_u32(std::span<std::byte> out, std::uint32_t value) noexcept {
        for (std::size_t i = 0; i < 4; ++i) {
            out[i] = static_cast<std::byte>((value >> (8 * i)) & 0xFFu);
        }
    }

    void take_buffer(std::span<std::byte> buffer) noexcept {
        if (buffer.size() < minimum_buffer_size) {
            buffer_ = {};
            return;
        }
        // The length field is 32 bits.
        constexpr std::size_t largest = trace_block_header_size + std::numeric_limits<std::uint32_t>::max();
        buffer_ = buffer.first(buffer.size() < largest ? buffer.size() : largest);
    }

    // `bytes` bytes of `value`, low byte first (a digest, a weight's bits, a block's digest). Signal-safe.
    static void put_fixed(trace_byte_writer& out, std::uint64_t value, unsigned bytes) noexcept {
        for (unsigned i = 0; i < bytes; ++i) out.put_byte(static_cast<std::uint8_t>(value >> (8 * i)));
    }

    // The record of a value flow event of `kind` written whole.
    static constexpr std::uint8_t value_flow_tag(value_flow_kind kind) noexcept {
        switch (kind) {
        case value_flow_kind::register_move: return trace_tag::register_move;
        case value_flow_kind::compute: return trace_tag::compute;
        case value_flow_kind::constant: return trace_tag::constant;
        case value_flow_kind::new_reference: return trace_tag::new_reference;
        case value_flow_kind::string_move: return trace_tag::string_move;
        case value_flow_kind::load:
        case value_flow_kind::store: break;
        }
        return trace_tag::register_access;
    }

    // The allocation shape record that follows an allocation, when there is anything to say. Signal-safe.
    static void put_shape(trace_byte_writer& out, const allocation_shape& shape) noexcept {
        const std::uint8_t flags = (shape.header_bytes != 0 ? trace_tag::shape_has_header : 0) |
                                   (shape.array_length ? trace_tag::shape_is_array : 0) |
                                   (shape.sampling_interval ? trace_tag::shape_has_sampling_interval : 0) |
                                   (shape.typed_layout ? trace_tag::shape_typed_layout : 0);
        if (flags == 0) return;
        out.put_byte(trace_tag::allocation_shape);
        out.put_byte(flags);
        if (shape.header_bytes != 0) out.put_varint(shape.header_bytes);
        if (shape.array_length) out.put_varint(*shape.array_length);
        if (shape.sampling_interval) out.put_varint(*shape.sampling_interval);
    }

    template <class Encode>
    bool write_simple(std::uint8_t tag, Encode encode) noexcept {
        return write_record([&](trace_byte_writer& out, trace_thread_slots&) {
            out.put_byte(tag);
            encode(out);
        });
    }

    // `encode` writes the record into `out` and changes the compaction slots only if `out` did not overflow.
    // The record goes into the current block or, if it does not fit there, into the next one (where it is
    // encoded again, against that block's fresh compaction state).
    template <class Encode>
    bool write_record(Encode encode) noexcept {
        if (finished_) {
            ++dropped_finished_;
            return false;
        }
        for (int attempt = 0; attempt < 2; ++attempt) {
            if (buffer_.empty()) {
                take_buffer(sink_.exchange(sink_.context, {}));
                if (buffer_.empty()) {
                    ++dropped_no_buffer_;
                    ++lost_since_last_record_;
                    return false;
                }
            }
            trace_byte_writer out(buffer_.subspan(trace_block_header_size + used_));
            if (lost_since_last_record_ != 0) {
                out.put_byte(trace_tag::events_lost);
                out.put_varint(lost_since_last_record_);
            }
            encode(out, slots_);
            if (!out.overflowed()) {
                previous_record_access_ = {}; // append(access_event) sets it again after its record
                used_ += out.size();
                lost_since_last_record_ = 0;
                ++events_written_;
                return true;
            }
            if (used_ == 0) {
                break; // does not fit even an empty block
            }
            flush();
        }
        ++dropped_too_large_;
        ++lost_since_last_record_;
        return false;
    }

    // The record last written in the current block, when it was an access: what an access-register record
    // (0x66) after it names.
    struct previous_access {
        bool written = false;
        access_kind kind = access_kind::load;
        address where = 0;
        std::uint8_t width = 0;
    };

    trace_block_sink sink_;
    std::span<std::byte> buffer_;
    previous_access previous_record_access_;
    std::size_t used_ = 0; // payload bytes in buffer_, after its block header
    trace_thread_slots slots_;
    std::uint64_t lost_since_last_record_ = 0;
    std::uint64_t events_written_ = 0;
    std::uint64_t dropped_no_buffer_ = 0;
    std::uint64_t dropped_too_large_ = 0;
    std::uint64_t dropped_finished_ = 0;
    std::uint64_t blocks_closed_ = 0;
    bool finished_ = false;
};

} // namespace ojx
