// The ojx trace: what a recording run writes so that a later run can analyse it again and again (docs/trace-format.md
// is the byte-level specification). This header holds what the writer and the reader share: the file's magic,
// version and framing constants, the record tags, the events a trace carries (`trace_event`), the LEB128/zigzag
// primitives, and the per-thread compaction table whose identical evolution on both sides lets a common allocation
// or sample be written in a few bytes. Standard C++ only: no OS or JVM notion.
#pragma once

#include "ojx/allocation_metrics.hpp"
#include "ojx/followed_value.hpp"
#include "ojx/live_heap.hpp"
#include "ojx/sampler.hpp"
#include "ojx/types.hpp"
#include "ojx/value_flow.hpp"
#include "ojx/whole_object_digest.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace ojx {

// ---- File framing ------------------------------------------------------------------------------------------

inline constexpr std::array<std::byte, 8> trace_magic = {std::byte{'O'}, std::byte{'J'}, std::byte{'X'},
    std::byte{'T'}, std::byte{'R'}, std::byte{'A'}, std::byte{'C'}, std::byte{'E'}};
inline constexpr std::uint16_t trace_format_version = 1;
// magic, then version (u16 little-endian), then flags (u16 little-endian; none are defined in version 1).
inline constexpr std::size_t trace_header_size = 12;
// Each block: payload length (u32 LE), CRC-32C of the payload (u32 LE), then the payload.
inline constexpr std::size_t trace_block_header_size = 8;

// The file header, ready to be written before the first block.
constexpr std::array<std::byte, trace_header_size> trace_file_header() noexcept {
    std::array<std::byte, trace_header_size> header{};
    for (std::size_t i = 0; i < trace_magic.size(); ++i) {
        header[i] = trace_magic[i];
    }
    header[8] = static_cast<std::byte>(trace_format_version & 0xFFu);
    header[9] = static_cast<std::byte>(trace_format_version >> 8);
    return header; // flags (bytes 10 and 11) are zero
}

// ---- Events ------------------------------------------------------------------------------------------------

// Frame ids are the values the calling context tree stores for a frame (calling_context_tree.hpp: `frame`).
using trace_frame_id = std::uint64_t;
// Thread ids are those the samplers report (`access_sample::thread`).
using trace_thread_id = std::uint32_t;

struct type_symbol {
    type_id id = 0;
    std::string name;
    friend bool operator==(const type_symbol&, const type_symbol&) = default;
};
struct frame_symbol {
    trace_frame_id id = 0;
    std::string name;
    friend bool operator==(const frame_symbol&, const frame_symbol&) = default;
};
// One node of a calling context tree: the tree is serialized node by node, each after its parent.
struct context_symbol {
    context_id id = 0;
    context_id parent = no_context;
    trace_frame_id frame = 0;
    friend bool operator==(const context_symbol&, const context_symbol&) = default;
};
// A field of a type's objects: `name` lies at `offset` of their contents (from where a recorded object begins,
// after any header), as the runtime knows it (the JVM agent; copy_profile.hpp's copy_field_name).
struct field_symbol {
    type_id type = 0;
    std::uint64_t offset = 0;
    std::string name;
    friend bool operator==(const field_symbol&, const field_symbol&) = default;
};
struct thread_symbol {
    trace_thread_id id = 0;
    std::string name;
    friend bool operator==(const thread_symbol&, const thread_symbol&) = default;
};
// A fact about the recorded run that an analysis needs to reproduce it: the profiler's settings, the backend's
// description (see trace_run.hpp for the names the recorders write). A later value of a name replaces an earlier one.
struct run_attribute {
    std::string name;
    std::string value;
    friend bool operator==(const run_attribute&, const run_attribute&) = default;
};
struct allocation_event {
    trace_thread_id thread = 0;
    address where = 0;
    std::uint64_t size = 0;
    context_id context = no_context;
    type_id type = no_type;
    allocation_shape shape{}; // written as an allocation shape record (0x16) after the allocation, when not empty
    friend bool operator==(const allocation_event&, const allocation_event&) = default;
};
struct free_event {
    address where = 0;
    friend bool operator==(const free_event&, const free_event&) = default;
};
struct move_event {
    address from = 0;
    address to = 0;
    friend bool operator==(const move_event&, const move_event&) = default;
};
// A collector slid the whole range [from, from + length) to [to, to + length): every object in it moved by the
// same distance.
struct region_move_event {
    address from = 0;
    address to = 0;
    std::uint64_t length = 0;
    friend bool operator==(const region_move_event&, const region_move_event&) = default;
};
struct gc_start_event {
    std::uint64_t gc = 0;
    friend bool operator==(const gc_start_event&, const gc_start_event&) = default;
};
struct gc_end_event {
    std::uint64_t gc = 0;
    friend bool operator==(const gc_end_event&, const gc_end_event&) = default;
};
// One object a moving collection kept, where it was and where it is now, with what the profiler knew of it (its
// allocation context, type and serial number): part of the relocation that follows.
struct relocated_object_event {
    address from = 0;
    address to = 0;
    std::uint64_t size = 0;
    object_info object; // its allocation context (a context node id), type and serial
    friend bool operator==(const relocated_object_event&, const relocated_object_event&) = default;
};
// A collection whose every survivor the recorder knew (a JVM agent): the tracked objects are now exactly the
// `count` relocated objects recorded since the previous relocation, at their new addresses; every other tracked
// object died (the profiler's on_collection).
struct relocation_event {
    std::uint64_t count = 0;
    friend bool operator==(const relocation_event&, const relocation_event&) = default;
};
// Survivors of the previous relocation that this one keeps where they are: pass over `skip` of the previous
// relocation's survivors (from where the last such record left off), then the next `count` stay, each with its size
// and what the profiler knew of it (relocation_survivors.hpp).
struct kept_survivors_event {
    std::uint64_t skip = 0;
    std::uint64_t count = 0;
    friend bool operator==(const kept_survivors_event&, const kept_survivors_event&) = default;
};
// One survivor of the previous relocation that moved: pass over `skip`, then the next one is now `distance` bytes
// (modulo 2^64) from where it was.
struct moved_survivor_event {
    std::uint64_t skip = 0;
    std::uint64_t distance = 0;
    friend bool operator==(const moved_survivor_event&, const moved_survivor_event&) = default;
};
// Live objects of one type, as an independent census counts them.
struct census_count {
    type_id type = no_type;
    std::uint64_t objects = 0;
    std::uint64_t bytes = 0; // of their contents, as the objects are tracked (headers excluded)
    friend bool operator==(const census_count&, const census_count&) = default;
};
// The tracked objects alive at this point as the runtime itself counted them, by type (the JVM agent's census=: a
// JVMTI heap walk over the objects it tagged, taken just after collection `gc`'s survivors were relocated). Not an
// event for the profiler: `ojx heap --check-census` compares it with the heap the trace rebuilds here.
struct heap_census_event {
    std::uint64_t gc = 0;
    std::vector<census_count> types;
    friend bool operator==(const heap_census_event&, const heap_census_event&) = default;
};
// The profiled program's memory as the profiler read it while handling the event that follows (the content digest
// of the window around a compared word): a replay answers the profiler's reads from these bytes. `bytes` points
// into the caller's storage (the writer copies it; the reader points into the file).
struct memory_contents_event {
    address where = 0;
    std::span<const std::byte> bytes;
    friend bool operator==(const memory_contents_event& a, const memory_contents_event& b) {
        return a.where == b.where && std::ranges::equal(a.bytes, b.bytes);
    }
};
struct watchpoint_arm_event {
    std::size_t slot = 0;
    address where = 0;
    std::uint8_t width = 0;
    friend bool operator==(const watchpoint_arm_event&, const watchpoint_arm_event&) = default;
};
struct watchpoint_disarm_event {
    std::size_t slot = 0;
    friend bool operator==(const watchpoint_disarm_event&, const watchpoint_disarm_event&) = default;
};
// The backend refused to arm `slot` on `width` bytes at `where` (no debug register can cover the range, the kernel
// refused a thread's breakpoint) while the profiler handled the event that follows: a replay must refuse that arm
// too, or its profiler would watch what the recording's could not and take other decisions from then on.
struct watchpoint_arm_refused_event {
    std::size_t slot = 0;
    address where = 0;
    std::uint8_t width = 0;
    friend bool operator==(const watchpoint_arm_refused_event&, const watchpoint_arm_refused_event&) = default;
};
// One load or store of the program, in a trace of every access (not only the sampled ones). `value` is what the
// access read or wrote (zero-extended, little-endian, as in access_sample); none when it is what memory held
// already (a load of what the trace's stores and fills put there, a store of the value already there), which is
// what lets a trace of every access leave out nearly every load's value.
struct access_event {
    trace_thread_id thread = 0;
    address ip = 0;
    address where = 0;
    std::optional<std::uint64_t> value;
    std::uint8_t width = 0;
    access_kind kind = access_kind::load;
    context_id context = no_context;
    friend bool operator==(const access_event&, const access_event&) = default;
};
// Memory [where, where + bytes.size()) holds these bytes from here on, put there by something a trace of every
// access does not otherwise show (an allocator that does not zero-fill, the program's environment). `bytes`
// points into the caller's storage, as in memory_contents_event.
struct memory_fill_event {
    address where = 0;
    std::span<const std::byte> bytes;
    friend bool operator==(const memory_fill_event& a, const memory_fill_event& b) {
        return a.where == b.where && std::ranges::equal(a.bytes, b.bytes);
    }
};
// The writer could not record `count` events just before this point (no free buffer, or a record larger than a
// block). Written by the writer itself, so that a gap in the trace is visible to whoever replays it.
struct events_lost_event {
    std::uint64_t count = 0;
    friend bool operator==(const events_lost_event&, const events_lost_event&) = default;
};

using trace_event = std::variant<type_symbol, frame_symbol, context_symbol, thread_symbol, allocation_event,
    free_event, move_event, region_move_event, gc_start_event, gc_end_event, access_sample, watchpoint_arm_event,
    watchpoint_disarm_event, watchpoint_trap, events_lost_event, run_attribute, memory_contents_event,
    relocated_object_event, relocation_event, access_event, memory_fill_event, heap_census_event,
    kept_survivors_event, moved_survivor_event, watchpoint_arm_refused_event, whole_object_digest, value_flow_event,
    followed_value, field_symbol, live_heap_event>;

// ---- Record tags -------------------------------------------------------------------------------------------

namespace trace_tag {
inline constexpr std::uint8_t type_symbol = 0x01;
inline constexpr std::uint8_t frame_symbol = 0x02;
inline constexpr std::uint8_t context_symbol = 0x03;
inline constexpr std::uint8_t thread_symbol = 0x04;
inline constexpr std::uint8_t run_attribute = 0x05;
inline constexpr std::uint8_t field_symbol = 0x06;
inline constexpr std::uint8_t events_lost = 0x08;
inline constexpr std::uint8_t end_of_trace = 0x09;
inline constexpr std::uint8_t allocation = 0x10;
inline constexpr std::uint8_t free = 0x11;
inline constexpr std::uint8_t move = 0x12;
inline constexpr std::uint8_t region_move = 0x13;
inline constexpr std::uint8_t gc_start = 0x14;
inline constexpr std::uint8_t gc_end = 0x15;
// Follows an allocation record (full or compact) in the same block: its allocation_shape. Bits of the flags byte:
inline constexpr std::uint8_t allocation_shape = 0x16;
inline constexpr std::uint8_t shape_has_header = 0x01; // header bytes varint follows
inline constexpr std::uint8_t shape_is_array = 0x02;   // array length varint follows
inline constexpr std::uint8_t shape_has_sampling_interval = 0x04; // sampling interval varint follows
inline constexpr std::uint8_t shape_typed_layout = 0x08;          // allocation_shape::typed_layout; nothing follows
inline constexpr std::uint8_t relocated_object = 0x17;
inline constexpr std::uint8_t relocation = 0x18;
inline constexpr std::uint8_t heap_census = 0x19;
inline constexpr std::uint8_t kept_survivors = 0x1A;
inline constexpr std::uint8_t moved_survivor = 0x1B;
inline constexpr std::uint8_t access_sample = 0x20;
inline constexpr std::uint8_t memory_contents = 0x21;
// A trace of every access: an access of a named thread, the next access of the previous access record's thread,
// and memory filled by something other than a recorded store.
inline constexpr std::uint8_t access = 0x22;
inline constexpr std::uint8_t next_access = 0x23;
inline constexpr std::uint8_t memory_fill = 0x24;
// A sampled load whose value the recording's backend followed (followed_value.hpp). Bits of its flags byte:
inline constexpr std::uint8_t followed_value = 0x25;
inline constexpr std::uint8_t followed_end = 0x07;         // the follow_end
inline constexpr std::uint8_t followed_string_move = 0x08; // the load was a string move's element
inline constexpr std::uint8_t watchpoint_arm = 0x30;
inline constexpr std::uint8_t watchpoint_disarm = 0x31;
inline constexpr std::uint8_t watchpoint_trap = 0x32;
inline constexpr std::uint8_t watchpoint_arm_refused = 0x33;
// What a whole-object digest decided (whole_object_digest.hpp): a digested object's fingerprint and weight, or a
// count of objects skipped or unreadable. Bits of the digested record's flags byte:
inline constexpr std::uint8_t whole_object_digest = 0x7F;
// The heap view when the profile was taken (live_heap.hpp): a moment, site or group record.
inline constexpr std::uint8_t live_heap = 0x7E;
// Value flow (value_flow.hpp): what only registers see, one record per value_flow_event. A load or store is the
// register of the access record just before it in the block when it can be (one byte), else written whole.
inline constexpr std::uint8_t register_move = 0x60;
inline constexpr std::uint8_t compute = 0x61;
inline constexpr std::uint8_t constant = 0x62;
inline constexpr std::uint8_t new_reference = 0x63;
inline constexpr std::uint8_t string_move = 0x64;
inline constexpr std::uint8_t register_access = 0x65;
inline constexpr std::uint8_t access_register = 0x66;
// Bits of a computation's header byte: the number of sources (0 to value_flow_event::max_sources), and whether a
// result register follows.
inline constexpr std::uint8_t compute_source_count = 0x07;
inline constexpr std::uint8_t compute_has_result = 0x08;
inline constexpr std::uint8_t digest_all_zero = 0x01;
// 0x40-0x5F: a sample against the previous sample of the thread in a compaction slot.
// Bits: 010k ssss (k: 0 load, 1 store; s: slot).
inline constexpr std::uint8_t compact_sample_first = 0x40;
inline constexpr std::uint8_t compact_sample_last = 0x5F;
// 0x80-0xFF: an allocation that starts where the previous allocation of the slot's thread ended.
// Bits: 1sss sfff (s: slot; f: same size, same context, same type as that previous allocation).
inline constexpr std::uint8_t compact_allocation_first = 0x80;
inline constexpr std::uint8_t compact_same_type = 0x01;
inline constexpr std::uint8_t compact_same_context = 0x02;
inline constexpr std::uint8_t compact_same_size = 0x04;
} // namespace trace_tag

// The first byte of an access record's entry (docs/trace-format.md, "Accesses"): which fields follow, and how.
namespace access_header {
inline constexpr std::uint8_t store = 0x01;
inline constexpr std::uint8_t same_ip = 0x02;
inline constexpr std::uint8_t same_context = 0x04;
inline constexpr std::uint8_t same_width = 0x08;
inline constexpr unsigned address_shift = 4; // 2 bits
inline constexpr std::uint8_t address_next = 0;  // the previous access's address + its width
inline constexpr std::uint8_t address_same = 1;
inline constexpr std::uint8_t address_delta = 2; // zz(previous address -> address) follows
inline constexpr unsigned value_shift = 6;       // 2 bits
inline constexpr std::uint8_t value_implied = 0; // what memory held: no value follows
inline constexpr std::uint8_t value_zero = 1;
inline constexpr std::uint8_t value_raw = 2;     // `width` bytes (1 to 8), little-endian
inline constexpr std::uint8_t value_varint = 3;
} // namespace access_header

// ---- Integer encodings -------------------------------------------------------------------------------------

// Zigzag maps small signed deltas (of a modular difference) to small unsigned numbers: 0, -1, 1, -2 ... -> 0, 1,
// 2, 3 ... Any two 64-bit values are one delta apart, so decoding `previous + delta` wraps back exactly.
constexpr std::uint64_t zigzag_delta(std::uint64_t previous, std::uint64_t next) noexcept {
    const std::uint64_t delta = next - previous;
    return (delta << 1) ^ (0 - (delta >> 63));
}
constexpr std::uint64_t apply_zigzag_delta(std::uint64_t previous, std::uint64_t encoded) noexcept {
    return previous + ((encoded >> 1) ^ (0 - (encoded & 1u)));
}
// The same on 32-bit identifiers: the encoded value is below 2^32.
constexpr std::uint64_t zigzag_delta32(std::uint32_t previous, std::uint32_t next) noexcept {
    const std::uint32_t delta = next - previous;
    return static_cast<std::uint32_t>((delta << 1) ^ (0u - (delta >> 31)));
}
constexpr std::uint32_t apply_zigzag_delta32(std::uint32_t previous, std::uint32_t encoded) noexcept {
    return previous + ((encoded >> 1) ^ (0u - (encoded & 1u)));
}

// Appends to a fixed span and notes, rather than performs, a write past its end, so that a record is either
// written whole or found not to fit. Signal-safe: allocates nothing, takes no lock.
class trace_byte_writer {
public:
    explicit trace_byte_writer(std::span<std::byte> out) noexcept : out_(out) {}

    void put_byte(std::uint8_t value) noexcept {
        if (used_ < out_.size()) {
            out_[used_] = static_cast<std::byte>(value);
        } else {
            overflowed_ = true;
        }
        ++used_;
    }
    // Unsigned LEB128: 7 bits a byte, low bits first, high bit set on every byte but the last.
    void put_varint(std::uint64_t value) noexcept {
        while (value >= 0x80u) {
            put_byte(static_cast<std::uint8_t>(value | 0x80u));
            value >>= 7;
        }
        put_byte(static_cast<std::uint8_t>(value));
    }
    void put_string(std::string_view text) noexcept {
        put_varint(text.size());
        for (const char c : text) {
            put_byte(static_cast<std::uint8_t>(c));
        }
    }

    bool overflowed() const noexcept { return overflowed_; }
    std::size_t size() const noexcept { return used_; }

private:
    std::span<std::byte> out_;
    std::size_t used_ = 0;
    bool overflowed_ = false;
};

// ---- Per-thread compaction state ---------------------------------------------------------------------------

// The state that lets an event be written as a difference from the previous one of its thread. Writer and reader
// each keep one, start each block with it empty, and change it on exactly the same records, so that both sides
// always agree on it: a block decodes on its own, and a lost block corrupts nothing after it.
//
// A thread gets a slot with its first full allocation or sample record in the block; when all slots are taken,
// slots are reused round robin (the evicted thread's next event is written in full). Signal-safe: fixed
// storage, allocates nothing.
class trace_thread_slots {
public:
    static constexpr std::size_t slot_count = 16;

    struct slot {
        bool bound = false;
        trace_thread_id thread = 0;
        // The previous allocation of this thread in the block.
        bool has_allocation = false;
        address allocation_end = 0;
        std::uint64_t allocation_size = 0;
        context_id allocation_context = 0;
        type_id allocation_type = 0;
        // The previous sample of this thread in the block.
        bool has_sample = false;
        address sample_ip = 0;
        address sample_address = 0;
        context_id sample_context = 0;
        // The previous access of this thread in the block (a trace of every access).
        address access_ip = 0;
        address access_address = 0;
        std::uint8_t access_width = 0;
        context_id access_context = 0;
    };

    void reset() noexcept {
        slots_ = {};
        next_victim_ = 0;
        last_access_slot_ = slot_count;
    }

    // The slot holding `thread`, or slot_count.
    std::size_t find(trace_thread_id thread) const noexcept {
        for (std::size_t i = 0; i < slot_count; ++i) {
            if (slots_[i].bound && slots_[i].thread == thread) {
                return i;
            }
        }
        return slot_count;
    }
    // The slot of `thread`, taking the next one round robin (and forgetting its previous thread) if it has none.
    std::size_t bind(trace_thread_id thread) noexcept {
        const std::size_t found = find(thread);
        if (found != slot_count) {
            return found;
        }
        const std::size_t taken = next_victim_;
        next_victim_ = (next_victim_ + 1) % slot_count;
        slots_[taken] = slot{.bound = true, .thread = thread};
        if (last_access_slot_ == taken) last_access_slot_ = slot_count; // its thread is forgotten
        return taken;
    }

    slot& operator[](std::size_t index) noexcept { return slots_[index]; }
    const slot& operator[](std::size_t index) const noexcept { return slots_[index]; }

    void remember_allocation(std::size_t index, const allocation_event& allocation) noexcept {
        slot& s = slots_[index];
        s.has_allocation = true;
        s.allocation_end = allocation.where + allocation.size;
        s.allocation_size = allocation.size;
        s.allocation_context = allocation.context;
        s.allocation_type = allocation.type;
    }
    void remember_sample(std::size_t index, const access_sample& sample) noexcept {
        slot& s = slots_[index];
        s.has_sample = true;
        s.sample_ip = sample.ip;
        s.sample_address = sample.effective_address;
        s.sample_context = sample.access_context;
    }

    // An access record's entry was read or written for the thread in `index`: the next one of that thread, with
    // nothing of another thread's in between, may be a next-access record. Its fields are deltas from this one.
    void remember_access(std::size_t index, const access_event& access) noexcept {
        slot& s = slots_[index];
        s.access_ip = access.ip;
        s.access_address = access.where;
        s.access_width = access.width;
        s.access_context = access.context;
        last_access_slot_ = index;
    }
    // The slot of the previous access record's thread, or slot_count (none in this block, or its thread was
    // forgotten since).
    std::size_t last_access_slot() const noexcept { return last_access_slot_; }

private:
    std::array<slot, slot_count> slots_{};
    std::size_t next_victim_ = 0;
    std::size_t last_access_slot_ = slot_count;
};

} // namespace ojx
