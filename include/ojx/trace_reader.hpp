// Reads an ojx trace (docs/trace-format.md) from bytes in memory: yields its events in order and keeps its symbol
// tables. Any input is safe: the reader checks every length against the bytes it has, never reads outside them,
// and stops at the first problem with a one-line message naming the block and the file offset. Unlike the writer
// it allocates (names, symbol tables, messages): it runs in the analysing process, not in the profiled one.
#pragma once

#include "ojx/crc32c.hpp"
#include "ojx/trace_format.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

namespace ojx {

class trace_reader {
public:
    struct context_node {
        context_id parent = no_context;
        trace_frame_id frame = 0;
    };

    // `file` must outlive the reader. `name` prefixes every message ("trace.ojxt: block 12 at byte 40960: ...").
    explicit trace_reader(std::span<const std::byte> file, std::string_view name = "trace") : file_(file), name_(name) {
        check_header();
    }

    // The next event, or nothing at the end of the trace or at the first error (see failed() and error()).
    std::optional<trace_event> next() {
        while (!failed() && !at_end_) {
            if (position_ == block_end_) {
                if (!open_next_block()) {
                    continue;
                }
            }
            if (auto event = read_record()) {
                ++events_read_;
                return event;
            }
        }
        return std::nullopt;
    }

    bool failed() const noexcept { return !error_.empty(); }
    // One line: what is wrong and where. Empty when nothing is.
    const std::string& error() const noexcept { return error_; }
    // The trace ended with its end record: the recording stopped cleanly. A trace that ends at a block boundary
    // without it is not an error (the events read are sound) but was cut short, say by a crash.
    bool complete() const noexcept { return complete_; }
    std::uint64_t blocks_read() const noexcept { return blocks_read_; }
    std::uint64_t events_read() const noexcept { return events_read_; }
    // How the reading ended, in one line: the error, or the number of blocks and events and whether it was complete.
    std::string summary() const {
        if (failed()) {
            return error_;
        }
        std::string text = name_ + ": " + std::to_string(blocks_read_) + " blocks, " + std::to_string(events_read_) +
                           " events";
        if (at_end_) {
            text += complete_ ? ", complete" : ", no end record (the recording stopped early)";
        }
        return text;
    }

    // Symbols seen so far; a later definition of an id replaces an earlier one.
    const std::unordered_map<type_id, std::string>& types() const noexcept { return types_; }
    const std::unordered_map<trace_frame_id, std::string>& frames() const noexcept { return frames_; }
    const std::unordered_map<trace_thread_id, std::string>& threads() const noexcept { return threads_; }
    const std::map<std::pair<type_id, std::uint64_t>, std::string>& fields() const noexcept { return fields_; }
    const std::unordered_map<context_id, context_node>& contexts() const noexcept { return contexts_; }
    const std::unordered_map<std::string, std::string>& run_attributes() const noexcept { return attributes_; }

private:
    void fail(std::string message) { error_ = name_ + ": " + std::move(message); }
    void fail_at(std::uint64_t offset, std::string_view message) {
        fail("block " + std::to_string(blocks_read_ - 1) + " at byte " + std::to_string(offset) + ": " +
             std::string(message));
    }

    void check_header() {
        const std::span<const std::byte> magic(trace_magic);
        if (file_.size() < magic.size() || !std::equal(magic.begin(), magic.end(), file_.begin())) {
            fail("not an ojx trace (bad magic)");
            return;
        }
        if (file_.size() < trace_header_size) {
            fail("truncated: the file header is cut short");
            return;
        }
        const std::uint16_t version = read_u16(8);
        const std::uint16_t flags = read_u16(10);
        if (version > trace_format_version) {
            fail("version " + std::to_string(version) + " is newer than this reader (" +
                 std::to_string(trace_format_version) + ")");
        } else if (version == 0) {
            fail("version 0 is not a trace format version");
        } else if (flags != 0) {
            fail("unknown header flags " + std::to_string(flags) + " (version 1 defines none)");
        }
        position_ = trace_header_size;
        block_end_ = trace_header_size;
    }

    std::uint16_t read_u16(std::size_t offset) const noexcept {
        return static_cast<std::uint16_t>(static_cast<unsigned>(file_[offset]) |
                                          (static_cast<unsigned>(file_[offset + 1]) << 8));
    }
    std::uint32_t read_u32(std::size_t offset) const noexcept {
        std::uint32_t value = 0;
        for (std::size_t i = 0; i < 4; ++i) {
            value |= static_cast<std::uint32_t>(file_[offset + i]) << (8 * i);
        }
        return value;
    }

    // Moves to the next block's payload. Returns false at the end of the file or on an error.
    bool open_next_block() {
        const std::size_t start = position_;
        if (start == file_.size()) {
            at_end_ = true;
            return false;
        }
        ++blocks_read_;
        const std::string where = "block " + std::to_string(blocks_read_ - 1) + " at byte " + std::to_string(start);
        if (complete_) {
            fail(where + ": data after the end of the trace");
            return false;
        }
        if (file_.size() - start < trace_block_header_size) {
            fail("truncated: " + where + ": the block header is cut short");
            return false;
        }
        const std::uint32_t length = read_u32(start);
        const std::uint32_t checksum = read_u32(start + 4);
        if (length == 0) {
            fail(where + ": empty block");
            return false;
        }
        if (file_.size() - start - trace_block_header_size < length) {
            fail("truncated: " + where + ": the block ends past the end of the file");
            return false;
        }
        position_ = start + trace_block_header_size;
        block_end_ = position_ + length;
        if (crc32c(file_.subspan(position_, length)) != checksum) {
            fail(where + ": checksum mismatch");
            return false;
        }
        slots_.reset();
        previous_record_access_.reset();
        return true;
    }

    // Reads within the current block; the first failure records what went wrong, and later reads return 0.
    std::uint8_t get_byte() {
        if (record_failed_) {
            return 0;
        }
        if (position_ == block_end_) {
            record_failed_ = true;
            record_problem_ = "record cut short by the end of the block";
            return 0;
        }
        return static_cast<std::uint8_t>(file_[position_++]);
    }
    std::uint64_t get_varint() {
        std::uint64_t value = 0;
        for (unsigned shift = 0; shift < 64; shift += 7) {
            const std::uint8_t byte = get_byte();
            if (record_failed_) {
                return 0;
            }
            if (shift == 63 && byte > 1) {
                record_failed_ = true;
                record_problem_ = "varint overflows 64 bits";
                return 0;
            }
            value |= static_cast<std::uint64_t>(byte & 0x7Fu) << shift;
            if ((byte & 0x80u) == 0) {
                return value;
            }
        }
        record_failed_ = true;
        record_problem_ = "varint longer than 10 bytes";
        return 0;
    }
    std::uint32_t get_u32(std::string_view what) {
        const std::uint64_t value = get_varint();
        if (value > std::numeric_limits<std::uint32_t>::max() && !record_failed_) {
            record_failed_ = true;
            record_problem_ = std::string(what) + " " + std::to_string(value) + " does not fit 32 bits";
            return 0;
        }
        return static_cast<std::uint32_t>(value);
    }
    std::size_t get_size(std::string_view what) {
        const std::uint64_t value = get_varint();
        if (value > std::numeric_limits<std::size_t>::max() && !record_failed_) {
            record_failed_ = true;
            record_problem_ = std::string(what) + " " + std::to_string(value) + " does not fit a size_t";
            return 0;
        }
        return static_cast<std::size_t>(value);
    }
    access_kind get_kind() {
        const std::uint8_t kind = get_byte();
        if (kind > 1 && !record_failed_) {
            record_failed_ = true;
            record_problem_ = "access kind " + std::to_string(kind) + " is neither load (0) nor store (1)";
        }
        return kind == 1 ? access_kind::store : access_kind::load;
    }
    std::string get_string() {
        const std::uint64_t length = get_varint();
        if (record_failed_) {
            return {};
        }
        if (length > block_end_ - position_) {
            record_failed_ = true;
            record_problem_ = "name of " + std::to_string(length) + " bytes runs past the end of the block";
            return {};
        }
        std::string text(reinterpret_cast<const char*>(file_.data() + position_), static_cast<std::size_t>(length));
        position_ += static_cast<std::size_t>(length);
        return text;
    }

    // One record; nothing when it is not an event (the end record) or on an error.
    std::optional<trace_event> read_record() {
        const std::size_t record_start = position_;
        record_failed_ = false;
        std::optional<trace_event> event = decode(get_byte());
        const access_event* access = event ? std::get_if<access_event>(&*event) : nullptr;
        previous_record_access_ = access != nullptr ? std::optional<access_event>(*access) : std::nullopt;
        if (record_failed_) {
            fail_at(record_start, record_problem_);
            return std::nullopt;
        }
        if (complete_ && position_ != block_end_) {
            fail_at(position_, "data after the end of the trace");
        }
        return event;
    }

    void fail_record(std::string problem) {
        record_failed_ = true;
        record_problem_ = std::move(problem);
    }

    std::optional<trace_event> decode(std::uint8_t tag) {
        if (tag >= trace_tag::compact_allocation_first) {
            return decode_compact_allocation(tag);
        }
        if (tag >= trace_tag::compact_sample_first && tag <= trace_tag::compact_sample_last) {
            return decode_compact_sample(tag);
        }
        switch (tag) {
        case trace_tag::type_symbol: {
            type_symbol symbol;
            symbol.id = get_u32("type id");
            symbol.name = get_string();
            if (!record_failed_) {
                types_[symbol.id] = symbol.name;
            }
            return symbol;
        }
        case trace_tag::frame_symbol: {
            frame_symbol symbol;
            symbol.id = get_varint();
            symbol.name = get_string();
            if (!record_failed_) {
                frames_[symbol.id] = symbol.name;
            }
            return symbol;
        }
        case trace_tag::context_symbol: {
            context_symbol node{.id = get_u32("context id")};
            node.parent = get_u32("parent context id");
            node.frame = get_varint();
            if (!record_failed_) {
                contexts_[node.id] = context_node{.parent = node.parent, .frame = node.frame};
            }
            return node;
        }
        case trace_tag::field_symbol: {
            field_symbol symbol;
            symbol.type = get_u32("type id");
            symbol.offset = get_varint();
            symbol.name = get_string();
            if (!record_failed_) {
                fields_[{symbol.type, symbol.offset}] = symbol.name;
            }
            return symbol;
        }
        case trace_tag::thread_symbol: {
            thread_symbol symbol;
            symbol.id = get_u32("thread id");
            symbol.name = get_string();
            if (!record_failed_) {
                threads_[symbol.id] = symbol.name;
            }
            return symbol;
        }
        case trace_tag::run_attribute: {
            run_attribute attribute;
            attribute.name = get_string();
            attribute.value = get_string();
            if (!record_failed_) {
                attributes_[attribute.name] = attribute.value;
            }
            return attribute;
        }
        case trace_tag::events_lost:
            return events_lost_event{.count = get_varint()};
        case trace_tag::end_of_trace:
            complete_ = true;
            return std::nullopt;
        case trace_tag::allocation: {
            allocation_event allocation{.thread = get_u32("thread id")};
            allocation.where = get_varint();
            allocation.size = get_varint();
            allocation.context = get_u32("context id");
            allocation.type = get_u32("type id");
            get_shape(allocation.shape);
            if (!record_failed_) {
                slots_.remember_allocation(slots_.bind(allocation.thread), allocation);
            }
            return allocation;
        }
        case trace_tag::allocation_shape:
            fail_record("allocation shape (tag 0x16) does not follow an allocation");
            return std::nullopt;
        case trace_tag::free:
            return free_event{.where = get_varint()};
        case trace_tag::move: {
            move_event move{.from = get_varint()};
            move.to = apply_zigzag_delta(move.from, get_varint());
            return move;
        }
        case trace_tag::region_move: {
            region_move_event move{.from = get_varint()};
            move.to = apply_zigzag_delta(move.from, get_varint());
            move.length = get_varint();
            return move;
        }
        case trace_tag::gc_start:
            return gc_start_event{.gc = get_varint()};
        case trace_tag::gc_end:
            return gc_end_event{.gc = get_varint()};
        case trace_tag::relocated_object: {
            relocated_object_event object;
            object.from = get_varint();
            object.to = apply_zigzag_delta(object.from, get_varint());
            object.size = get_varint();
            object.object.allocation_context = get_u32("context id");
            object.object.type = get_u32("type id");
            object.object.serial = get_varint();
            return object;
        }
        case trace_tag::relocation:
            return relocation_event{.count = get_varint()};
        case trace_tag::kept_survivors: {
            kept_survivors_event kept{.skip = get_varint()};
            kept.count = get_varint();
            return kept;
        }
        case trace_tag::moved_survivor: {
            moved_survivor_event moved{.skip = get_varint()};
            moved.distance = apply_zigzag_delta(0, get_varint());
            return moved;
        }
        case trace_tag::heap_census: {
            heap_census_event census;
            census.gc = get_varint();
            const std::uint64_t count = get_varint();
            // Each count takes at least three bytes: a count that the block cannot hold is refused before any
            // storage is reserved for it.
            if (!record_failed_ && count > (block_end_ - position_) / 3) {
                fail_record("census of " + std::to_string(count) + " types runs past the end of the block");
                return std::nullopt;
            }
            census.types.reserve(static_cast<std::size_t>(count));
            for (std::uint64_t i = 0; i < count && !record_failed_; ++i) {
                census_count entry{.type = get_u32("type id")};
                entry.objects = get_varint();
                entry.bytes = get_varint();
                census.types.push_back(entry);
            }
            return census;
        }
        case trace_tag::access_sample: {
            access_sample sample{.thread = get_u32("thread id")};
            sample.ip = get_varint();
            sample.effective_address = get_varint();
            sample.value = get_varint();
            sample.width = get_byte();
            sample.kind = get_kind();
            sample.access_context = get_u32("context id");
            if (!record_failed_) {
                slots_.remember_sample(slots_.bind(sample.thread), sample);
            }
            return sample;
        }
        case trace_tag::followed_value:
            return get_followed_value();
        case trace_tag::memory_contents: {
            memory_contents_event memory;
            memory.where = get_varint();
            memory.bytes = get_memory_bytes("memory contents");
            return memory;
        }
        case trace_tag::memory_fill: {
            memory_fill_event fill;
            fill.where = get_varint();
            fill.bytes = get_memory_bytes("memory fill");
            return fill;
        }
        case trace_tag::access: {
            const trace_thread_id thread = get_u32("thread id");
            if (record_failed_) return std::nullopt;
            const std::size_t found = slots_.find(thread);
            static constexpr trace_thread_slots::slot fresh{};
            access_event access = get_access_entry(found != trace_thread_slots::slot_count ? slots_[found] : fresh);
            access.thread = thread;
            if (!record_failed_) slots_.remember_access(found != trace_thread_slots::slot_count ? found : slots_.bind(thread), access);
            return access;
        }
        case trace_tag::next_access: {
            const std::size_t slot = slots_.last_access_slot();
            if (slot == trace_thread_slots::slot_count) {
                fail_record("next access (tag 0x23) follows no access of a thread this block still remembers");
                return std::nullopt;
            }
            access_event access = get_access_entry(slots_[slot]);
            access.thread = slots_[slot].thread;
            if (!record_failed_) slots_.remember_access(slot, access);
            return access;
        }
        case trace_tag::watchpoint_arm: {
            watchpoint_arm_event arm{.slot = get_size("watchpoint slot")};
            arm.where = get_varint();
            arm.width = get_byte();
            return arm;
        }
        case trace_tag::watchpoint_disarm:
            return watchpoint_disarm_event{.slot = get_size("watchpoint slot")};
        case trace_tag::watchpoint_arm_refused: {
            watchpoint_arm_refused_event refused{.slot = get_size("watchpoint slot")};
            refused.where = get_varint();
            refused.width = get_byte();
            return refused;
        }
        case trace_tag::watchpoint_trap: {
            watchpoint_trap trap{.slot = get_size("watchpoint slot")};
            trap.watched_address = get_varint();
            trap.value = get_varint();
            trap.width = get_byte();
            trap.kind = get_kind();
            trap.ip = get_varint();
            trap.thread = get_u32("thread id");
            trap.access_context = get_u32("context id");
            return trap;
        }
        case trace_tag::whole_object_digest:
            return get_whole_object_digest();
        case trace_tag::live_heap:
            return get_live_heap();
        case trace_tag::register_move: {
            const value_register destination = get_byte();
            return value_flow_event::register_move(destination, get_byte());
        }
        case trace_tag::compute:
            return get_compute();
        case trace_tag::constant:
            return value_flow_event::constant(get_byte());
        case trace_tag::new_reference: {
            const value_register r = get_byte();
            return value_flow_event::new_reference(r, get_u32("context id"));
        }
        case trace_tag::string_move: {
            const address destination = get_varint();
            const address source = apply_zigzag_delta(destination, get_varint());
            const std::uint64_t bytes = get_varint();
            return value_flow_event::string_move(destination, source, bytes, get_byte());
        }
        case trace_tag::register_access: {
            const value_register r = get_byte();
            const access_kind kind = get_kind();
            const address where = get_varint();
            return register_flow(kind, r, where, get_byte());
        }
        case trace_tag::access_register: {
            if (!previous_record_access_) {
                fail_record("access register (tag 0x66) does not follow an access");
                return std::nullopt;
            }
            const access_event& access = *previous_record_access_;
            return register_flow(access.kind, get_byte(), access.where, access.width);
        }
        default:
            if (!record_failed_) {
                fail_record("unknown record tag " + hex_byte(tag));
            }
            return std::nullopt;
        }
    }

    std::optional<trace_event> get_followed_value() {
        followed_value followed;
        access_sample& load = followed.load;
        load.thread = get_u32("thread id");
        load.ip = get_varint();
        load.effective_address = get_varint();
        load.value = get_varint();
        load.width = get_byte();
        load.kind = access_kind::load;
        load.access_context = get_u32("context id");
        const std::uint8_t flags = get_byte();
        const std::uint8_t end = flags & trace_tag::followed_end;
        if (record_failed_) return std::nullopt;
        if ((flags & ~(trace_tag::followed_end | trace_tag::followed_string_move)) != 0 ||
            end > static_cast<std::uint8_t>(follow_end::uses_full)) {
            fail_record("followed value with unknown flags " + hex_byte(flags));
            return std::nullopt;
        }
        followed.end = static_cast<follow_end>(end);
        followed.string_move = (flags & trace_tag::followed_string_move) != 0;
        followed.steps = get_u32("steps");
        const std::uint8_t uses = get_byte();
        if (record_failed_) return std::nullopt;
        if (uses > followed_value::max_uses) {
            fail_record("followed value with " + std::to_string(uses) + " uses (at most " +
                        std::to_string(followed_value::max_uses) + ")");
            return std::nullopt;
        }
        for (std::uint8_t i = 0; i < uses; ++i) {
            followed_value::use use;
            const std::uint8_t kind = get_byte();
            if (record_failed_) return std::nullopt;
            if (kind > static_cast<std::uint8_t>(value_use::consumed)) {
                fail_record("followed value use of unknown kind " + std::to_string(kind));
                return std::nullopt;
            }
            use.kind = static_cast<value_use>(kind);
            use.width = get_byte();
            if (use.kind == value_use::copied) use.to = apply_zigzag_delta(load.effective_address, get_varint());
            followed.add(use);
        }
        if (record_failed_) return std::nullopt;
        return followed;
    }

    static value_flow_event register_flow(access_kind kind, value_register r, address where, std::uint8_t width) {
        return kind == access_kind::load ? value_flow_event::load(r, where, width)
                                         : value_flow_event::store(r, where, width);
    }

    std::optional<trace_event> get_compute() {
        const std::uint8_t header = get_byte();
        const std::uint8_t count = header & trace_tag::compute_source_count;
        if (!record_failed_ &&
            ((header & ~(trace_tag::compute_source_count | trace_tag::compute_has_result)) != 0 ||
             count > value_flow_event::max_sources)) {
            fail_record("computation header " + hex_byte(header) + " names more than " +
                        std::to_string(value_flow_event::max_sources) + " sources or an unknown field");
            return std::nullopt;
        }
        std::optional<value_register> result;
        if ((header & trace_tag::compute_has_result) != 0) result = get_byte();
        std::array<value_register, value_flow_event::max_sources> sources{};
        for (std::uint8_t i = 0; i < count; ++i) sources[i] = get_byte();
        return value_flow_event::compute(std::span<const value_register>(sources.data(), count), result);
    }

    // `bytes` bytes, low byte first.
    std::uint64_t get_fixed(unsigned bytes) {
        std::uint64_t value = 0;
        for (unsigned i = 0; i < bytes; ++i) value |= static_cast<std::uint64_t>(get_byte()) << (8 * i);
        return value;
    }

    std::optional<trace_event> get_live_heap() {
        live_heap_event e;
        const std::uint8_t what = get_byte();
        const auto real = [&] { return std::bit_cast<double>(get_fixed(8)); };
        // A sum of weights or bytes: finite and not negative (never NaN, which no record could equal).
        const auto sum = [&](double value, const char* what_it_is) {
            if (!(value >= 0 && value <= std::numeric_limits<double>::max()) && !record_failed_)
                fail_record(std::string("heap view ") + what_it_is + " is not a finite number of at least 0");
            return value;
        };
        switch (what) {
        case static_cast<std::uint8_t>(live_heap_event::kind::moment): {
            e.what = live_heap_event::kind::moment;
            const std::uint8_t at = get_byte();
            if (at > static_cast<std::uint8_t>(live_heap_moment::kind::exit)) {
                if (!record_failed_) fail_record("heap view moment kind " + std::to_string(at) + " is not 0 to 3");
                return std::nullopt;
            }
            e.moment.at = static_cast<live_heap_moment::kind>(at);
            e.moment.collection = get_varint();
            e.moment.collections = get_varint();
            e.moment.bytes = sum(real(), "bytes");
            e.seconds = sum(real(), "seconds");
            break;
        }
        case static_cast<std::uint8_t>(live_heap_event::kind::site):
            e.what = live_heap_event::kind::site;
            e.context = get_u32("context id");
            e.site.objects = get_varint();
            e.site.weight = sum(real(), "weight");
            e.site.bytes = sum(real(), "bytes");
            e.site.digested.unkept_objects = get_varint();
            e.site.digested.unkept_weight = sum(real(), "weight");
            e.site.digested.unkept_weight_squared = sum(real(), "weight");
            e.site.digested.unkept_largest_weight = sum(real(), "weight");
            break;
        case static_cast<std::uint8_t>(live_heap_event::kind::group): {
            e.what = live_heap_event::kind::group;
            e.group.digest = get_fixed(8);
            e.group.objects = get_varint();
            e.group.weight = sum(real(), "weight");
            e.group.weight_squared = sum(real(), "weight");
            e.group.heaviest = sum(real(), "weight");
            const std::uint8_t flags = get_byte();
            if ((flags & ~trace_tag::digest_all_zero) != 0 && !record_failed_) {
                fail_record("heap view group flags " + hex_byte(flags) + " have unknown bits");
                return std::nullopt;
            }
            e.group.all_zero = (flags & trace_tag::digest_all_zero) != 0;
            break;
        }
        default:
            if (!record_failed_) fail_record("heap view record kind " + std::to_string(what) + " is not 0, 1 or 2");
            return std::nullopt;
        }
        if (record_failed_) return std::nullopt;
        return e;
    }

    std::optional<trace_event> get_whole_object_digest() {
        using kind = whole_object_digest::kind;
        const std::uint8_t outcome = get_byte();
        if (outcome > static_cast<std::uint8_t>(kind::digested_gone)) {
            if (!record_failed_)
                fail_record("whole-object digest outcome " + std::to_string(outcome) + " is not 0, 1, 2 or 3");
            return std::nullopt;
        }
        whole_object_digest decided;
        decided.outcome = static_cast<kind>(outcome);
        if (decided.outcome == kind::skipped || decided.outcome == kind::unreadable) {
            decided.count = get_varint();
            return decided;
        }
        object_fingerprint& f = decided.fingerprint;
        if (decided.outcome == kind::digested)
            decided.where = get_varint();
        else
            decided.context = get_u32("context id");
        decided.weight = std::bit_cast<double>(get_fixed(8));
        // A weight is the inverse of a probability: at least 1 (and never NaN, which no record could equal).
        if (!(decided.weight >= 1 && decided.weight <= std::numeric_limits<double>::max()) && !record_failed_) {
            fail_record("whole-object digest weight is not a finite number of at least 1");
            return std::nullopt;
        }
        f.digest = get_fixed(8);
        f.size = get_varint();
        const std::uint8_t flags = get_byte();
        if ((flags & ~trace_tag::digest_all_zero) != 0 && !record_failed_) {
            fail_record("whole-object digest flags " + hex_byte(flags) + " have unknown bits");
            return std::nullopt;
        }
        f.all_zero = (flags & trace_tag::digest_all_zero) != 0;
        const std::uint64_t repeats = get_varint();
        if ((repeats & 1) != 0 || repeats >> f.blocks.size() != 0) {
            if (!record_failed_) fail_record("whole-object digest block mask names blocks that cannot repeat");
            return std::nullopt;
        }
        for (std::size_t i = 0; i < f.blocks.size(); ++i)
            f.blocks[i] = (repeats >> i & 1) != 0 ? f.blocks[i - 1] : static_cast<std::uint32_t>(get_fixed(4));
        return decided;
    }

    // `what` bytes: a length, then that many bytes of the block.
    std::span<const std::byte> get_memory_bytes(std::string_view what) {
        const std::uint64_t length = get_varint();
        if (record_failed_) return {};
        if (length > block_end_ - position_) {
            fail_record(std::string(what) + " of " + std::to_string(length) + " bytes run past the end of the block");
            return {};
        }
        const auto bytes = file_.subspan(position_, static_cast<std::size_t>(length));
        position_ += static_cast<std::size_t>(length);
        return bytes;
    }

    // An access record's entry: the header byte and the fields it does not leave out, against the thread's
    // previous access in the block.
    access_event get_access_entry(const trace_thread_slots::slot& previous) {
        namespace h = access_header;
        const std::uint8_t header = get_byte();
        access_event access;
        access.ip = previous.access_ip;
        access.width = previous.access_width;
        access.kind = (header & h::store) != 0 ? access_kind::store : access_kind::load;
        access.context = previous.access_context;
        if ((header & h::same_ip) == 0) access.ip = apply_zigzag_delta(previous.access_ip, get_varint());
        if ((header & h::same_context) == 0)
            access.context = apply_zigzag_delta32(previous.access_context, get_u32("context delta"));
        if ((header & h::same_width) == 0) access.width = get_byte();
        switch ((header >> h::address_shift) & 3u) {
        case h::address_next: access.where = previous.access_address + previous.access_width; break;
        case h::address_same: access.where = previous.access_address; break;
        case h::address_delta: access.where = apply_zigzag_delta(previous.access_address, get_varint()); break;
        default:
            if (!record_failed_) fail_record("access header " + hex_byte(header) + " uses the reserved address mode 3");
            return access;
        }
        switch ((header >> h::value_shift) & 3u) {
        case h::value_zero: access.value = 0; break;
        case h::value_raw: {
            if (access.width == 0 || access.width > 8) {
                if (!record_failed_)
                    fail_record("access of width " + std::to_string(access.width) +
                                " gives its value as raw bytes (1 to 8)");
                return access;
            }
            std::uint64_t value = 0;
            for (unsigned i = 0; i < access.width; ++i) value |= std::uint64_t{get_byte()} << (8 * i);
            access.value = value;
            break;
        }
        case h::value_varint: access.value = get_varint(); break;
        default: break; // implied: what memory holds
        }
        return access;
    }

    // The allocation shape record that may follow an allocation in its block; the writer writes the two as one.
    void get_shape(allocation_shape& shape) {
        if (record_failed_ || position_ >= block_end_ ||
            file_[position_] != static_cast<std::byte>(trace_tag::allocation_shape)) {
            return;
        }
        ++position_;
        const std::uint8_t flags = get_byte();
        constexpr std::uint8_t known = trace_tag::shape_has_header | trace_tag::shape_is_array |
                                       trace_tag::shape_has_sampling_interval | trace_tag::shape_typed_layout;
        if ((flags & ~known) != 0 && !record_failed_) {
            fail_record("allocation shape flags " + hex_byte(flags) + " name an unknown field");
            return;
        }
        if ((flags & trace_tag::shape_has_header) != 0) {
            shape.header_bytes = get_varint();
        }
        if ((flags & trace_tag::shape_is_array) != 0) {
            shape.array_length = get_varint();
        }
        if ((flags & trace_tag::shape_has_sampling_interval) != 0) {
            shape.sampling_interval = get_varint();
        }
        shape.typed_layout = (flags & trace_tag::shape_typed_layout) != 0;
    }

    std::optional<trace_event> decode_compact_allocation(std::uint8_t tag) {
        const std::size_t slot = (tag >> 3) & 0x0Fu;
        if (!slots_[slot].has_allocation) {
            fail_record("compact allocation (tag " + hex_byte(tag) + ") names thread slot " + std::to_string(slot) +
                        ", which holds no allocation in this block");
            return std::nullopt;
        }
        const auto& previous = slots_[slot];
        allocation_event allocation{.thread = previous.thread, .where = previous.allocation_end,
            .size = previous.allocation_size, .context = previous.allocation_context, .type = previous.allocation_type};
        if ((tag & trace_tag::compact_same_size) == 0) {
            allocation.size = apply_zigzag_delta(previous.allocation_size, get_varint());
        }
        if ((tag & trace_tag::compact_same_context) == 0) {
            allocation.context = apply_zigzag_delta32(previous.allocation_context, get_u32("context delta"));
        }
        if ((tag & trace_tag::compact_same_type) == 0) {
            allocation.type = apply_zigzag_delta32(previous.allocation_type, get_u32("type delta"));
        }
        get_shape(allocation.shape);
        if (!record_failed_) {
            slots_.remember_allocation(slot, allocation);
        }
        return allocation;
    }

    std::optional<trace_event> decode_compact_sample(std::uint8_t tag) {
        const std::size_t slot = tag & 0x0Fu;
        if (!slots_[slot].has_sample) {
            fail_record("compact sample (tag " + hex_byte(tag) + ") names thread slot " + std::to_string(slot) +
                        ", which holds no sample in this block");
            return std::nullopt;
        }
        const auto& previous = slots_[slot];
        access_sample sample{.kind = (tag & 0x10u) != 0 ? access_kind::store : access_kind::load,
            .thread = previous.thread};
        sample.ip = apply_zigzag_delta(previous.sample_ip, get_varint());
        sample.effective_address = apply_zigzag_delta(previous.sample_address, get_varint());
        sample.value = get_varint();
        sample.width = get_byte();
        sample.access_context = apply_zigzag_delta32(previous.sample_context, get_u32("context delta"));
        if (!record_failed_) {
            slots_.remember_sample(slot, sample);
        }
        return sample;
    }

    static std::string hex_byte(std::uint8_t value) {
        constexpr std::string_view digits = "0123456789abcdef";
        return std::string("0x") + digits[value >> 4] + digits[value & 0x0Fu];
    }

    std::span<const std::byte> file_;
    std::string name_;
    std::string error_;
    std::size_t position_ = 0;
    std::size_t block_end_ = 0;
    bool at_end_ = false;
    bool complete_ = false;
    std::uint64_t blocks_read_ = 0;
    std::uint64_t events_read_ = 0;
    trace_thread_slots slots_;
    // The record just read, when it was an access: what an access-register record (0x66) names.
    std::optional<access_event> previous_record_access_;
    bool record_failed_ = false;
    std::string record_problem_;
    std::unordered_map<type_id, std::string> types_;
    std::unordered_map<trace_frame_id, std::string> frames_;
    std::unordered_map<trace_thread_id, std::string> threads_;
    std::map<std::pair<type_id, std::uint64_t>, std::string> fields_; // (type, offset) -> name
    std::unordered_map<context_id, context_node> contexts_;
    std::unordered_map<std::string, std::string> attributes_;
};

} // namespace ojx
