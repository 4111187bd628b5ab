// The trace format: events written by trace_writer come back equal from trace_reader for many random streams;
// every truncation and every flipped bit is reported, never crashed on; the compact encodings are measured on
// realistic streams; and the writer allocates nothing and counts what it drops.
#include "ojx/crc32c.hpp"
#include "ojx/trace_reader.hpp"
#include "ojx/trace_writer.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <new>
#include <random>
#include <string>
#include <vector>

// Every allocation in this test program is counted, so that a test can show the writer makes none.
namespace {
std::atomic<std::uint64_t> allocations_made{0};
} // namespace

void* operator new(std::size_t size) {
    allocations_made.fetch_add(1, std::memory_order_relaxed);
    if (void* memory = std::malloc(size == 0 ? 1 : size)) {
        return memory;
    }
    throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return operator new(size); }
// Catch2 uses the nothrow form; it must come from the same allocator as the deletes below.
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
    allocations_made.fetch_add(1, std::memory_order_relaxed);
    return std::malloc(size == 0 ? 1 : size);
}
void* operator new[](std::size_t size, const std::nothrow_t& tag) noexcept { return operator new(size, tag); }
// GCC sees the library's inlined `new` expression paired with this `free` and warns; the pair here is malloc/free.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* memory) noexcept { std::free(memory); }
void operator delete[](void* memory) noexcept { std::free(memory); }
void operator delete(void* memory, std::size_t) noexcept { std::free(memory); }
void operator delete[](void* memory, std::size_t) noexcept { std::free(memory); }
void operator delete(void* memory, const std::nothrow_t&) noexcept { std::free(memory); }
void operator delete[](void* memory, const std::nothrow_t&) noexcept { std::free(memory); }
#pragma GCC diagnostic pop

namespace {

using ojx::trace_event;

// Collects closed blocks into a trace file in memory and lends the writer one buffer again and again (the sink
// copies each closed block out before returning the buffer). `refuse_buffers` simulates an exhausted pool.
struct memory_trace {
    explicit memory_trace(std::size_t block_size) : buffer(block_size) {
        const auto header = ojx::trace_file_header();
        file.assign(header.begin(), header.end());
    }

    ojx::trace_block_sink sink() { return {.context = this, .exchange = &exchange}; }
    std::span<std::byte> first_buffer() { return buffer; }

    static std::span<std::byte> exchange(void* context, std::span<const std::byte> closed_block) {
        auto& self = *static_cast<memory_trace*>(context);
        if (!closed_block.empty()) {
            self.file.insert(self.file.end(), closed_block.begin(), closed_block.end());
            self.block_ends.push_back(self.file.size());
        }
        if (self.refuse_buffers) {
            return {};
        }
        return self.buffer;
    }

    std::vector<std::byte> buffer;
    std::vector<std::byte> file;
    std::vector<std::size_t> block_ends; // file offsets where each block ends
    bool refuse_buffers = false;
};

struct read_result {
    std::vector<trace_event> events;
    bool failed = false;
    bool complete = false;
    std::string error;
    std::uint64_t blocks = 0;
};

read_result read_all(std::span<const std::byte> file, std::string_view name = "trace.ojxt") {
    ojx::trace_reader reader(file, name);
    read_result result;
    while (auto event = reader.next()) {
        result.events.push_back(std::move(*event));
    }
    result.failed = reader.failed();
    result.complete = reader.complete();
    result.error = reader.error();
    result.blocks = reader.blocks_read();
    return result;
}

// Values that stress the encodings: zero, the largest, values around a previous one (small deltas both ways),
// and anything at all.
class value_source {
public:
    explicit value_source(std::uint64_t seed) : random_(seed) {}

    std::uint64_t u64(std::uint64_t near = 0) {
        switch (pick(6)) {
        case 0: return 0;
        case 1: return std::numeric_limits<std::uint64_t>::max() - pick(2);
        case 2: return near + pick(64);
        case 3: return near - pick(64); // backwards, and through zero
        case 4: return pick(1u << 20);
        default: return random_();
        }
    }
    std::uint32_t u32(std::uint32_t near = 0) {
        switch (pick(5)) {
        case 0: return 0;
        case 1: return std::numeric_limits<std::uint32_t>::max();
        case 2: return near + static_cast<std::uint32_t>(pick(8));
        case 3: return near - static_cast<std::uint32_t>(pick(8));
        default: return static_cast<std::uint32_t>(random_());
        }
    }
    std::uint8_t u8() { return static_cast<std::uint8_t>(random_()); }
    std::string name() {
        std::string text(pick(4) == 0 ? 0 : pick(40), '\0');
        for (char& c : text) {
            c = static_cast<char>(random_()); // any byte, NUL included
        }
        return text;
    }
    std::uint64_t pick(std::uint64_t bound) { return random_() % bound; }

private:
    std::mt19937_64 random_;
};

// Bytes that memory-contents events of the random streams point into (the events do not own their bytes).
const std::array<std::byte, 256>& memory_pattern() {
    static const std::array<std::byte, 256> pattern = [] {
        std::array<std::byte, 256> bytes{};
        for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::byte>(i * 37 + 11);
        return bytes;
    }();
    return pattern;
}

// Counts that heap-census events of the random streams point into: types 0-7 with up to 2^40 objects and bytes.
const std::array<ojx::census_count, 8>& census_pattern() {
    static const std::array<ojx::census_count, 8> pattern = [] {
        std::array<ojx::census_count, 8> counts{};
        for (std::uint32_t i = 0; i < counts.size(); ++i)
            counts[i] = {.type = i == 7 ? ojx::no_type : i, .objects = std::uint64_t{1} << (5 * i), .bytes = std::uint64_t{3} << (5 * i + 3)};
        return counts;
    }();
    return pattern;
}

// A stream with every kind of event, on 40 threads (more than the 16 compaction slots), half of its allocations
// continuing their thread's previous one so that the compact forms are exercised too.
// The load or store of `access`'s value into or from register `r`.
ojx::value_flow_event register_of(const ojx::access_event& access, ojx::value_register r) {
    return access.kind == ojx::access_kind::load ? ojx::value_flow_event::load(r, access.where, access.width)
                                                 : ojx::value_flow_event::store(r, access.where, access.width);
}

// A value flow event of any kind, registers anywhere in 0..255.
ojx::value_flow_event random_value_flow(value_source& values) {
    const ojx::value_register r = values.u8();
    switch (values.pick(7)) {
    case 0: return ojx::value_flow_event::load(r, values.u64(), values.u8());
    case 1: return ojx::value_flow_event::store(r, values.u64(), values.u8());
    case 2: return ojx::value_flow_event::register_move(r, values.u8());
    case 3: {
        std::array<ojx::value_register, ojx::value_flow_event::max_sources> sources{};
        for (auto& source : sources) source = values.u8();
        const auto count = static_cast<std::size_t>(values.pick(sources.size() + 1));
        return ojx::value_flow_event::compute(std::span(sources).first(count),
                                              values.pick(2) == 0 ? std::optional<ojx::value_register>() : r);
    }
    case 4: return ojx::value_flow_event::constant(r);
    case 5: return ojx::value_flow_event::new_reference(r, values.u32());
    default: {
        const ojx::address destination = values.u64();
        return ojx::value_flow_event::string_move(destination, values.u64(destination), values.u64(), values.u8());
    }
    }
}

std::vector<trace_event> random_stream(std::uint64_t seed, std::size_t count) {
    value_source values(seed);
    std::vector<std::uint32_t> threads;
    for (std::uint32_t i = 0; i < 40; ++i) {
        threads.push_back(i == 0 ? 0 : i == 1 ? std::numeric_limits<std::uint32_t>::max() : values.u32());
    }
    std::vector<ojx::allocation_event> last_allocation(threads.size());
    std::vector<ojx::access_sample> last_sample(threads.size());
    std::vector<ojx::access_event> last_access(threads.size());
    std::vector<trace_event> events;
    for (std::size_t i = 0; i < count; ++i) {
        const std::size_t t = values.pick(threads.size());
        switch (values.pick(30)) {
        case 0: events.push_back(ojx::type_symbol{.id = values.u32(), .name = values.name()}); break;
        case 29:
            events.push_back(ojx::field_symbol{.type = values.u32(), .offset = values.u64(), .name = values.name()});
            break;
        case 1: events.push_back(ojx::frame_symbol{.id = values.u64(), .name = values.name()}); break;
        case 2:
            events.push_back(ojx::context_symbol{.id = values.u32(), .parent = values.u32(), .frame = values.u64()});
            break;
        case 3: events.push_back(ojx::thread_symbol{.id = threads[t], .name = values.name()}); break;
        case 4:
        case 5: {
            auto& previous = last_allocation[t];
            ojx::allocation_event allocation{.thread = threads[t],
                .where = values.pick(2) == 0 ? previous.where + previous.size : values.u64(previous.where),
                .size = values.pick(2) == 0 ? previous.size : values.u64(previous.size),
                .context = values.pick(2) == 0 ? previous.context : values.u32(previous.context),
                .type = values.pick(2) == 0 ? previous.type : values.u32(previous.type)};
            // Each shape field present or not (an allocation shape record follows when any is).
            if (values.pick(3) == 0) allocation.shape.header_bytes = values.u64();
            if (values.pick(3) == 0) allocation.shape.array_length = values.u64();
            if (values.pick(3) == 0) allocation.shape.sampling_interval = values.pick(4) == 0 ? 0 : values.u64();
            allocation.shape.typed_layout = values.pick(3) == 0;
            previous = allocation;
            events.push_back(allocation);
            break;
        }
        case 6: events.push_back(ojx::free_event{.where = values.u64()}); break;
        case 7: {
            const auto from = values.u64();
            events.push_back(ojx::move_event{.from = from, .to = values.u64(from)});
            break;
        }
        case 8: {
            const auto from = values.u64();
            events.push_back(ojx::region_move_event{.from = from, .to = values.u64(from), .length = values.u64()});
            break;
        }
        case 9: events.push_back(ojx::gc_start_event{.gc = values.u64()}); break;
        case 10: events.push_back(ojx::gc_end_event{.gc = values.u64()}); break;
        case 11: {
            auto& previous = last_sample[t];
            ojx::access_sample sample{.ip = values.u64(previous.ip),
                .effective_address = values.u64(previous.effective_address), .value = values.u64(),
                .width = values.u8(), .kind = values.pick(2) == 0 ? ojx::access_kind::load : ojx::access_kind::store,
                .thread = threads[t], .access_context = values.u32(previous.access_context)};
            previous = sample;
            events.push_back(sample);
            break;
        }
        case 12:
            events.push_back(ojx::watchpoint_arm_event{.slot = values.u64(), .where = values.u64(), .width = values.u8()});
            break;
        case 13: events.push_back(ojx::watchpoint_disarm_event{.slot = values.u64()}); break;
        case 14: events.push_back(ojx::run_attribute{.name = values.name(), .value = values.name()}); break;
        case 15: {
            // At most 64 bytes (one compare window), so that the record fits the tests' smallest blocks.
            const std::size_t start = values.pick(memory_pattern().size() - 64);
            events.push_back(ojx::memory_contents_event{.where = values.u64(),
                .bytes = std::span(memory_pattern()).subspan(start, values.pick(65))});
            break;
        }
        case 16:
        case 17: {
            // Runs of one thread's accesses (next-access records), stepping word by word or jumping, with values
            // given, zero, small, raw-sized or implied, at widths in and out of 1..8.
            auto& previous = last_access[t];
            const std::uint8_t width = values.pick(3) == 0 ? values.u8() : previous.width;
            ojx::access_event access{.thread = threads[t],
                .ip = values.pick(2) == 0 ? previous.ip : values.u64(previous.ip),
                .where = values.pick(2) == 0 ? previous.where + previous.width : values.u64(previous.where),
                .width = width, .kind = values.pick(2) == 0 ? ojx::access_kind::load : ojx::access_kind::store,
                .context = values.pick(2) == 0 ? previous.context : values.u32(previous.context)};
            if (values.pick(3) != 0) access.value = values.u64();
            previous = access;
            events.push_back(access);
            // The register of a program with registers, most often right after its access (0x66).
            const auto with_register = [&] {
                if (values.pick(2) == 0) events.push_back(register_of(access, values.u8()));
            };
            with_register();
            for (std::uint64_t more = values.pick(4); more > 0; --more) {
                access.where += access.width;
                access.value = values.pick(2) == 0 ? std::optional<std::uint64_t>() : values.u64();
                previous = access;
                events.push_back(access);
                with_register();
            }
            break;
        }
        case 26: events.push_back(random_value_flow(values)); break;
        case 18: {
            const std::size_t start = values.pick(memory_pattern().size() - 64);
            events.push_back(ojx::memory_fill_event{.where = values.u64(),
                .bytes = std::span(memory_pattern()).subspan(start, values.pick(65))});
            break;
        }
        case 19: {
            const auto from = values.u64();
            events.push_back(ojx::relocated_object_event{.from = from, .to = values.u64(from), .size = values.u64(),
                .object = {values.u32(), values.u32(), values.u64()}});
            break;
        }
        case 20: events.push_back(ojx::relocation_event{.count = values.u64()}); break;
        case 21: events.push_back(ojx::kept_survivors_event{.skip = values.u64(), .count = values.u64()}); break;
        case 22: events.push_back(ojx::moved_survivor_event{.skip = values.u64(), .distance = values.u64()}); break;
        case 23: {
            const std::size_t start = values.pick(census_pattern().size());
            const std::size_t end = start + values.pick(census_pattern().size() - start + 1);
            events.push_back(ojx::heap_census_event{.gc = values.u64(),
                .types = {census_pattern().begin() + start, census_pattern().begin() + end}});
            break;
        }
        case 24:
            events.push_back(ojx::watchpoint_arm_refused_event{.slot = values.u64(), .where = values.u64(),
                .width = values.u8()});
            break;
        case 25: {
            // Digested by address or by context (blocks drawn from few values, so that some repeat their
            // predecessor), skipped, unreadable.
            using kind = ojx::whole_object_digest::kind;
            const auto outcome = static_cast<kind>(values.pick(4));
            ojx::whole_object_digest decided{.outcome = outcome, .count = values.u64()};
            if (outcome == kind::digested || outcome == kind::digested_gone) {
                decided = {.outcome = outcome, .weight = 1 + static_cast<double>(values.u32()) / 7};
                if (outcome == kind::digested)
                    decided.where = values.u64();
                else
                    decided.context = values.u32();
                decided.fingerprint.digest = values.u64();
                decided.fingerprint.size = values.u64();
                decided.fingerprint.all_zero = values.pick(2) == 0;
                for (auto& block : decided.fingerprint.blocks) block = values.pick(3) == 0 ? values.u32() : 5;
            }
            events.push_back(decided);
            break;
        }
        case 27: {
            // A followed load: any end, a string move or not, up to max_uses uses of either kind.
            ojx::followed_value followed;
            followed.load = {.ip = values.u64(), .effective_address = values.u64(), .value = values.u64(),
                .width = values.u8(), .kind = ojx::access_kind::load, .thread = threads[t],
                .access_context = values.u32()};
            followed.end = static_cast<ojx::follow_end>(values.pick(6));
            followed.string_move = values.pick(2) == 0;
            followed.steps = values.u32();
            for (std::uint64_t n = values.pick(ojx::followed_value::max_uses + 1); n > 0; --n) {
                const bool copied = values.pick(2) == 0;
                followed.add({.kind = copied ? ojx::value_use::copied : ojx::value_use::consumed,
                              .width = values.u8(), .to = copied ? values.u64(followed.load.effective_address) : 0});
            }
            events.push_back(followed);
            break;
        }
        default:
            events.push_back(ojx::watchpoint_trap{.slot = values.u64(), .watched_address = values.u64(),
                .value = values.u64(), .width = values.u8(),
                .kind = values.pick(2) == 0 ? ojx::access_kind::load : ojx::access_kind::store, .ip = values.u64(),
                .thread = threads[t], .access_context = values.u32()});
            break;
        }
    }
    return events;
}

memory_trace write_trace(const std::vector<trace_event>& events, std::size_t block_size) {
    memory_trace trace(block_size);
    ojx::trace_writer writer(trace.first_buffer(), trace.sink());
    for (const auto& event : events) {
        REQUIRE(writer.append(event));
    }
    REQUIRE(writer.finish());
    REQUIRE(writer.events_dropped() == 0);
    return trace;
}

std::size_t payload_bytes(const memory_trace& trace) {
    return trace.file.size() - ojx::trace_header_size - trace.block_ends.size() * ojx::trace_block_header_size;
}

} // namespace

TEST_CASE("crc32c matches the published check value", "[trace]") {
    const std::string_view check = "123456789";
    REQUIRE(ojx::crc32c(std::as_bytes(std::span(check.data(), check.size()))) == 0xE3069283u);
}

TEST_CASE("random event streams round-trip exactly", "[trace]") {
    for (std::uint64_t seed = 1; seed <= 300; ++seed) {
        const auto events = random_stream(seed, 50 + seed * 7);
        // Small blocks split the stream often (and restart the compaction state); large ones rarely.
        const std::size_t block_size = seed % 3 == 0 ? 256 : seed % 3 == 1 ? 1500 : 64 * 1024;
        const auto trace = write_trace(events, block_size);
        const auto result = read_all(trace.file);
        INFO("seed " << seed << ": " << result.error);
        REQUIRE_FALSE(result.failed);
        REQUIRE(result.complete);
        REQUIRE(result.blocks == trace.block_ends.size());
        REQUIRE(result.events.size() == events.size());
        for (std::size_t i = 0; i < events.size(); ++i) {
            INFO("event " << i << " of kind " << events[i].index());
            REQUIRE(result.events[i] == events[i]);
        }
    }
}

TEST_CASE("the reader keeps the symbol tables", "[trace]") {
    const std::vector<trace_event> events = {ojx::type_symbol{.id = 3, .name = "byte[]"},
        ojx::frame_symbol{.id = 0x401000, .name = "main (main.cpp:12)"},
        ojx::context_symbol{.id = 1, .parent = 0, .frame = 0x401000}, ojx::thread_symbol{.id = 77, .name = "worker"},
        ojx::type_symbol{.id = 3, .name = "char[]"}, ojx::run_attribute{.name = "seed", .value = "7"},
        ojx::run_attribute{.name = "seed", .value = "8"}, ojx::field_symbol{.type = 5, .offset = 4, .name = "count"},
        ojx::field_symbol{.type = 5, .offset = 4, .name = "size"}, ojx::field_symbol{.type = 5, .offset = 8, .name = "next"}};
    const auto trace = write_trace(events, 4096);
    ojx::trace_reader reader(trace.file);
    while (reader.next()) {
    }
    REQUIRE_FALSE(reader.failed());
    REQUIRE(reader.types().at(3) == "char[]");
    REQUIRE(reader.frames().at(0x401000) == "main (main.cpp:12)");
    REQUIRE(reader.contexts().at(1).parent == 0);
    REQUIRE(reader.contexts().at(1).frame == 0x401000);
    REQUIRE(reader.threads().at(77) == "worker");
    REQUIRE(reader.run_attributes().at("seed") == "8");
    REQUIRE(reader.fields().size() == 2);
    REQUIRE(reader.fields().at({5, 4}) == "size");
    REQUIRE(reader.fields().at({5, 8}) == "next");
    REQUIRE(reader.summary() == "trace: 1 blocks, 10 events, complete");
}

TEST_CASE("every truncation is an error, or a clean end at a block boundary", "[trace]") {
    const auto events = random_stream(42, 400);
    const auto trace = write_trace(events, 512);
    REQUIRE(trace.block_ends.size() > 5);
    for (std::size_t length = 0; length < trace.file.size(); ++length) {
        const auto result = read_all(std::span(trace.file).first(length));
        INFO("length " << length << ": " << result.error);
        REQUIRE_FALSE(result.complete);
        // Whatever was read is the start of the stream.
        REQUIRE(result.events.size() <= events.size());
        for (std::size_t i = 0; i < result.events.size(); ++i) {
            REQUIRE(result.events[i] == events[i]);
        }
        const auto boundary = std::find(trace.block_ends.begin(), trace.block_ends.end(), length);
        if (length == ojx::trace_header_size || boundary != trace.block_ends.end()) {
            REQUIRE_FALSE(result.failed);
            const auto whole_blocks = std::count_if(trace.block_ends.begin(), trace.block_ends.end(),
                [&](std::size_t end) { return end <= length; });
            REQUIRE(result.blocks == static_cast<std::uint64_t>(whole_blocks));
        } else {
            REQUIRE(result.failed);
        }
    }
    const auto whole = read_all(trace.file);
    REQUIRE(whole.complete);
}

TEST_CASE("every single flipped bit is detected", "[trace]") {
    const auto trace = write_trace(random_stream(7, 300), 700);
    auto file = trace.file;
    for (std::size_t byte = 0; byte < file.size(); ++byte) {
        for (int bit = 0; bit < 8; ++bit) {
            file[byte] ^= static_cast<std::byte>(1u << bit);
            const auto result = read_all(file);
            file[byte] ^= static_cast<std::byte>(1u << bit);
            INFO("byte " << byte << " bit " << bit);
            REQUIRE(result.failed);
        }
    }
    // In a block's payload, the checksum is what catches it, and the message names the block and its offset.
    const std::size_t second_block = trace.block_ends[0];
    file[second_block + ojx::trace_block_header_size + 3] ^= std::byte{0x10};
    REQUIRE(read_all(file).error ==
            "trace.ojxt: block 1 at byte " + std::to_string(second_block) + ": checksum mismatch");
}

TEST_CASE("foreign files, newer versions and damage are refused with a message", "[trace]") {
    const auto trace = write_trace(random_stream(3, 200), 512);

    std::vector<std::byte> other = trace.file;
    other[0] = std::byte{'X'};
    REQUIRE(read_all(other).error == "trace.ojxt: not an ojx trace (bad magic)");
    REQUIRE(read_all(std::span(trace.file).first(5)).error == "trace.ojxt: not an ojx trace (bad magic)");
    REQUIRE(read_all(std::span(trace.file).first(10)).error == "trace.ojxt: truncated: the file header is cut short");

    other = trace.file;
    other[8] = std::byte{2};
    REQUIRE(read_all(other).error == "trace.ojxt: version 2 is newer than this reader (1)");

    const std::size_t cut = trace.block_ends[2] + 100;
    REQUIRE(read_all(std::span(trace.file).first(cut)).error ==
            "trace.ojxt: truncated: block 3 at byte " + std::to_string(trace.block_ends[2]) +
                ": the block ends past the end of the file");

    // An unknown tag in a block whose checksum is right: the reader names it rather than skipping it.
    std::vector<std::byte> unknown(trace.file.begin(), trace.file.begin() + ojx::trace_header_size);
    const std::array<std::byte, 3> payload = {std::byte{ojx::trace_tag::gc_start}, std::byte{5}, std::byte{0x07}};
    const std::uint32_t checksum = ojx::crc32c(payload);
    for (const std::uint32_t field : {static_cast<std::uint32_t>(payload.size()), checksum}) {
        for (int i = 0; i < 4; ++i) {
            unknown.push_back(static_cast<std::byte>((field >> (8 * i)) & 0xFFu));
        }
    }
    unknown.insert(unknown.end(), payload.begin(), payload.end());
    const auto result = read_all(unknown);
    REQUIRE(result.events.size() == 1);
    REQUIRE(result.error == "trace.ojxt: block 0 at byte 22: unknown record tag 0x07");
}

// A file of one block with `payload`, its checksum right.
std::vector<std::byte> one_block(std::span<const std::byte> payload) {
    const auto header = ojx::trace_file_header();
    std::vector<std::byte> file(header.begin(), header.end());
    for (const std::uint32_t field : {static_cast<std::uint32_t>(payload.size()), ojx::crc32c(payload)}) {
        for (int i = 0; i < 4; ++i) {
            file.push_back(static_cast<std::byte>((field >> (8 * i)) & 0xFFu));
        }
    }
    file.insert(file.end(), payload.begin(), payload.end());
    return file;
}

TEST_CASE("an allocation's shape rides with it, full or compact, and nowhere else", "[trace]") {
    const ojx::allocation_shape array{.header_bytes = 16, .array_length = 1020};
    const std::vector<trace_event> events{
        ojx::allocation_event{.thread = 3, .where = 0x1000, .size = 4080, .context = 1, .type = 2, .shape = array},
        ojx::allocation_event{.thread = 3, .where = 0x1000 + 4080, .size = 4080, .context = 1, .type = 2, .shape = array},
        ojx::allocation_event{.thread = 3, .where = 0x1000 + 8160, .size = 64, .context = 1, .type = 2},
        ojx::allocation_event{.thread = 4, .where = 0x9000, .size = 100, .context = 2, .type = 5,
                              .shape = {.header_bytes = 12, .typed_layout = true}},
        // Adaptive tracking: the interval each object was sampled at, 0 (tracked for certain) included.
        ojx::allocation_event{.thread = 4, .where = 0x9064, .size = 2048, .context = 2, .type = 5,
                              .shape = {.sampling_interval = 0}},
        ojx::allocation_event{.thread = 4, .where = 0x9864, .size = 2048, .context = 2, .type = 5,
                              .shape = {.sampling_interval = 737280}},
    };
    const auto trace = write_trace(events, 4096);
    const auto read = read_all(trace.file);
    REQUIRE(read.error.empty());
    REQUIRE(read.events == events);
    // Full record + shape (6 fields + 4 bytes of shape), then the compact forms: 1 byte + 5 of shape, and 1 byte;
    // the last two: 1 byte + 3 of shape, 1 byte + 5 of shape.
    const std::size_t payload = trace.file.size() - ojx::trace_header_size - ojx::trace_block_header_size;
    CHECK(payload < 55);

    const std::array<std::byte, 4> stray = {std::byte{ojx::trace_tag::allocation_shape}, std::byte{2}, std::byte{8},
                                            std::byte{ojx::trace_tag::end_of_trace}};
    REQUIRE(read_all(one_block(stray)).error ==
            "trace.ojxt: block 0 at byte 20: allocation shape (tag 0x16) does not follow an allocation");
    const std::array<std::byte, 9> bad_flags = {std::byte{ojx::trace_tag::allocation}, std::byte{1}, std::byte{2},
        std::byte{3}, std::byte{4}, std::byte{5}, std::byte{ojx::trace_tag::allocation_shape}, std::byte{0x10},
        std::byte{ojx::trace_tag::end_of_trace}};
    REQUIRE(read_all(one_block(bad_flags)).error ==
            "trace.ojxt: block 0 at byte 20: allocation shape flags 0x10 name an unknown field");
}

TEST_CASE("value flow records round-trip, a load's register in two bytes after its access", "[trace]") {
    const ojx::access_event load{.thread = 2, .ip = 0x400100, .where = 0x10008, .width = 8, .context = 3};
    ojx::access_event store = load;
    store.kind = ojx::access_kind::store;
    store.where = 0x20010;
    store.value = 7;
    const std::array<ojx::value_register, 2> sources = {1, 4};
    const std::vector<trace_event> events{
        load,
        ojx::value_flow_event::load(5, load.where, load.width), // 0x66 after its access
        ojx::value_flow_event::register_move(255, 5),
        ojx::value_flow_event::compute(sources, ojx::value_register{6}),
        ojx::value_flow_event::compute(std::span(sources).first(1), std::nullopt),
        ojx::value_flow_event::constant(0),
        ojx::value_flow_event::new_reference(7, 12),
        store,
        ojx::value_flow_event::store(255, store.where, store.width),
        ojx::value_flow_event::load(3, 0x30000, 4), // no access before it: written whole (0x65)
        ojx::value_flow_event::string_move(0x50000, 0x40000, 256, 8),
        load,
        ojx::value_flow_event::load(2, load.where, 4), // another width than its access's: whole
    };
    const auto trace = write_trace(events, 4096);
    const auto read = read_all(trace.file);
    REQUIRE(read.error.empty());
    REQUIRE(read.events == events);
    // Whole records of the first load and its register, and a next-access load with its register: 2 bytes each.
    const auto size_of = [](const std::vector<trace_event>& some) { return payload_bytes(write_trace(some, 4096)); };
    const std::vector<trace_event> first{load, ojx::value_flow_event::load(5, load.where, load.width)};
    std::vector<trace_event> second = first;
    second.push_back(load);
    second.push_back(ojx::value_flow_event::load(5, load.where, load.width));
    CHECK(size_of(first) == size_of({load}) + 2);
    CHECK(size_of(second) == size_of(first) + 2 + 2);

    // An access's register that follows no access, in a block of its own or after another record.
    const std::array<std::byte, 3> stray = {std::byte{ojx::trace_tag::access_register}, std::byte{5},
                                            std::byte{ojx::trace_tag::end_of_trace}};
    REQUIRE(read_all(one_block(stray)).error ==
            "trace.ojxt: block 0 at byte 20: access register (tag 0x66) does not follow an access");
    const std::array<std::byte, 5> after_gc = {std::byte{ojx::trace_tag::gc_start}, std::byte{1},
        std::byte{ojx::trace_tag::access_register}, std::byte{5}, std::byte{ojx::trace_tag::end_of_trace}};
    REQUIRE(read_all(one_block(after_gc)).error ==
            "trace.ojxt: block 0 at byte 22: access register (tag 0x66) does not follow an access");
    // A computation with seven sources, or an unknown header bit; a whole register access of neither kind.
    for (const std::uint8_t header : {std::uint8_t{0x07}, std::uint8_t{0x12}}) {
        const std::array<std::byte, 10> compute = {std::byte{ojx::trace_tag::compute}, std::byte{header}, std::byte{1},
            std::byte{1}, std::byte{1}, std::byte{1}, std::byte{1}, std::byte{1}, std::byte{1},
            std::byte{ojx::trace_tag::end_of_trace}};
        REQUIRE(read_all(one_block(compute)).error ==
                std::string("trace.ojxt: block 0 at byte 20: computation header ") + (header == 7 ? "0x07" : "0x12") +
                    " names more than 6 sources or an unknown field");
    }
    const std::array<std::byte, 6> neither = {std::byte{ojx::trace_tag::register_access}, std::byte{5}, std::byte{2},
        std::byte{8}, std::byte{8}, std::byte{ojx::trace_tag::end_of_trace}};
    REQUIRE(read_all(one_block(neither)).error ==
            "trace.ojxt: block 0 at byte 20: access kind 2 is neither load (0) nor store (1)");
    // Cut short: a register move without its source.
    const std::array<std::byte, 2> cut = {std::byte{ojx::trace_tag::register_move}, std::byte{5}};
    REQUIRE(read_all(one_block(cut)).error == "trace.ojxt: block 0 at byte 20: record cut short by the end of the block");
}

TEST_CASE("a followed value's record: its uses' addresses from the load's, and what the reader refuses", "[trace]") {
    ojx::followed_value followed;
    followed.load = {.ip = 0x401000, .effective_address = 0x7f0000001000, .value = 42, .width = 8,
                     .kind = ojx::access_kind::load, .thread = 3, .access_context = 9};
    followed.steps = 5;
    followed.end = ojx::follow_end::released;
    followed.add({.kind = ojx::value_use::copied, .width = 8, .to = 0x7f0000001040});
    followed.add({.kind = ojx::value_use::consumed, .width = 8});
    const auto trace = write_trace({followed}, 4096);
    const auto read = read_all(trace.file);
    REQUIRE(read.error.empty());
    REQUIRE(read.events == std::vector<trace_event>{followed});
    // tag, thread, ip (4), address (7), value, width, context, flags, steps, count, copied use (kind, width,
    // delta 0x40 as zigzag: 2 bytes), consumed use (kind, width); and the end record.
    CHECK(payload_bytes(trace) == 1 + 1 + 4 + 7 + 1 + 1 + 1 + 1 + 1 + 1 + 4 + 2 + 1);

    // The record's bytes up to its flags, then what follows them.
    const auto record = [](std::initializer_list<std::uint8_t> rest) {
        std::vector<std::byte> bytes{std::byte{ojx::trace_tag::followed_value}, std::byte{3}, std::byte{1},
                                     std::byte{2}, std::byte{0}, std::byte{8}, std::byte{0}};
        for (const std::uint8_t b : rest) bytes.push_back(std::byte{b});
        bytes.push_back(std::byte{ojx::trace_tag::end_of_trace});
        return bytes;
    };
    CHECK(read_all(one_block(record({0x06, 0, 0}))).error ==
          "trace.ojxt: block 0 at byte 20: followed value with unknown flags 0x06");
    CHECK(read_all(one_block(record({0x10, 0, 0}))).error ==
          "trace.ojxt: block 0 at byte 20: followed value with unknown flags 0x10");
    CHECK(read_all(one_block(record({0x00, 0, 9}))).error ==
          "trace.ojxt: block 0 at byte 20: followed value with 9 uses (at most 8)");
    CHECK(read_all(one_block(record({0x00, 0, 1, 2, 8}))).error ==
          "trace.ojxt: block 0 at byte 20: followed value use of unknown kind 2");
    const auto fine = read_all(one_block(record({0x09, 0, 1, 1, 8})));
    REQUIRE(fine.error.empty());
    REQUIRE(fine.events.size() == 1);
    const auto& string_move = std::get<ojx::followed_value>(fine.events.front());
    CHECK(string_move.string_move);
    CHECK(string_move.end == ojx::follow_end::bound);
    CHECK(string_move.use_count == 1);
}

TEST_CASE("bytes per event on realistic streams", "[trace]") {
    std::mt19937_64 random(2024);
    auto pick = [&](std::uint64_t bound) { return random() % bound; };

    // Allocations: 4 threads bump-allocating 1-4 KiB objects in their own 1 MiB allocation buffers, in runs of
    // 1-40 allocations at one of 6 contexts (each context allocating one type), interleaved at random.
    constexpr std::size_t thread_count = 4;
    struct thread_state {
        ojx::address top = 0;
        ojx::address buffer_end = 0;
        ojx::context_id context = 0;
        std::uint64_t run_left = 0;
    };
    std::array<thread_state, thread_count> threads{};
    ojx::address next_buffer = 0x7f0000000000;
    std::vector<trace_event> allocations;
    for (int i = 0; i < 200000; ++i) {
        const std::size_t t = pick(thread_count);
        auto& thread = threads[t];
        if (thread.run_left == 0) {
            thread.context = static_cast<ojx::context_id>(1 + pick(6));
            thread.run_left = 1 + pick(40);
        }
        --thread.run_left;
        const std::uint64_t size = 1024 + 16 * pick(193);
        if (thread.top + size > thread.buffer_end) {
            thread.top = next_buffer;
            thread.buffer_end = next_buffer + (1u << 20);
            next_buffer += 1u << 20;
        }
        allocations.push_back(ojx::allocation_event{.thread = 1000 + static_cast<std::uint32_t>(t),
            .where = thread.top, .size = size, .context = thread.context, .type = 100 + thread.context});
        thread.top += size;
    }
    const auto allocation_trace = write_trace(allocations, 64 * 1024);
    const double allocation_bytes = static_cast<double>(payload_bytes(allocation_trace)) /
                                    static_cast<double>(allocations.size());

    // Samples: 4 threads, 64 instructions in a 64 KiB code region, addresses in 4 KiB objects of a 64 MiB heap
    // (a few consecutive samples in the same object), values: half small integers, a quarter heap pointers, a
    // quarter anything; 20 access contexts.
    std::vector<trace_event> samples;
    std::vector<trace_event> traps;
    std::array<ojx::address, 64> instructions{};
    for (auto& ip : instructions) {
        ip = 0x400000 + pick(65536);
    }
    auto value = [&] {
        const auto kind = pick(4);
        return kind < 2 ? pick(1000) : kind == 2 ? 0x7f0000000000 + 8 * pick(1u << 23) : random();
    };
    ojx::address object = 0x7f0000000000;
    for (int i = 0; i < 200000; ++i) {
        if (pick(4) == 0) {
            object = 0x7f0000000000 + 4096 * pick(1u << 14);
        }
        const auto kind = pick(3) == 0 ? ojx::access_kind::store : ojx::access_kind::load;
        const std::uint8_t width = pick(4) == 0 ? 4 : 8;
        const auto thread = 1000 + static_cast<std::uint32_t>(pick(thread_count));
        const auto context = static_cast<ojx::context_id>(50 + pick(20));
        samples.push_back(ojx::access_sample{.ip = instructions[pick(64)],
            .effective_address = object + 8 * pick(512), .value = value(), .width = width, .kind = kind,
            .thread = thread, .access_context = context});
        if (i % 10 == 0) {
            traps.push_back(ojx::watchpoint_trap{.slot = pick(4), .watched_address = object + 8 * pick(512),
                .value = value(), .width = width, .kind = kind, .ip = instructions[pick(64)], .thread = thread,
                .access_context = context});
        }
    }
    const auto sample_trace = write_trace(samples, 64 * 1024);
    const auto trap_trace = write_trace(traps, 64 * 1024);
    const double sample_bytes = static_cast<double>(payload_bytes(sample_trace)) / static_cast<double>(samples.size());
    const double trap_bytes = static_cast<double>(payload_bytes(trap_trace)) / static_cast<double>(traps.size());
    const double framing = static_cast<double>(allocation_trace.file.size()) /
                           static_cast<double>(payload_bytes(allocation_trace));

    std::printf("trace bytes per event (payload; block framing adds %.4f %%): allocation %.2f, sample %.2f, trap %.2f\n",
        (framing - 1) * 100, allocation_bytes, sample_bytes, trap_bytes);
    REQUIRE(allocation_bytes <= 4.0);
    REQUIRE(read_all(allocation_trace.file).events == allocations);
    REQUIRE(read_all(sample_trace.file).events == samples);
    REQUIRE(read_all(trap_trace.file).events == traps);
}

TEST_CASE("appending allocates nothing and only the sink sees blocks", "[trace]") {
    const auto events = random_stream(99, 20000);
    std::vector<std::string> names;
    for (int i = 0; i < 16; ++i) {
        names.push_back("type " + std::to_string(i));
    }
    memory_trace trace(4096);
    trace.file.reserve(4 * 1024 * 1024);
    trace.block_ends.reserve(4096);
    ojx::trace_writer writer(trace.first_buffer(), trace.sink());

    const std::uint64_t before = allocations_made.load();
    for (std::size_t i = 0; i < events.size(); ++i) {
        writer.append(events[i]);
        writer.append_type(static_cast<ojx::type_id>(i), names[i % names.size()]);
    }
    writer.finish();
    const std::uint64_t after = allocations_made.load();

    REQUIRE(after == before);
    REQUIRE(writer.events_dropped() == 0);
    REQUIRE(writer.blocks_closed() == trace.block_ends.size());
    REQUIRE(trace.file.size() < trace.file.capacity()); // the sink's copies allocated nothing either
    REQUIRE(read_all(trace.file).events.size() == 2 * events.size());
}

TEST_CASE("events that find no buffer, or do not fit a block, are counted and marked in the trace", "[trace]") {
    memory_trace trace(256);
    ojx::trace_writer writer(trace.first_buffer(), trace.sink());
    const ojx::gc_start_event gc{.gc = 1};

    // Fill the first block, then find the pool empty.
    while (writer.blocks_closed() == 0) {
        REQUIRE(writer.append(gc));
    }
    const std::uint64_t written_before = writer.events_written();
    trace.refuse_buffers = true;
    writer.flush();
    for (int i = 0; i < 10; ++i) {
        REQUIRE_FALSE(writer.append(gc));
    }
    REQUIRE(writer.events_dropped_no_buffer() == 10);

    // A name that no block can hold.
    trace.refuse_buffers = false;
    REQUIRE_FALSE(writer.append_type(1, std::string(300, 'x')));
    REQUIRE(writer.events_dropped_too_large() == 1);
    REQUIRE(writer.events_dropped() == 11);

    REQUIRE(writer.append(ojx::gc_end_event{.gc = 1}));
    REQUIRE(writer.finish());
    REQUIRE_FALSE(writer.append(gc));
    REQUIRE(writer.events_dropped() == 12);

    const auto result = read_all(trace.file);
    REQUIRE_FALSE(result.failed);
    REQUIRE(result.complete);
    // The appends before the pool ran dry, the writer's mark of the 11 lost events, and the event after them.
    REQUIRE(result.events.size() == written_before + 2);
    REQUIRE(result.events[written_before] == trace_event(ojx::events_lost_event{.count = 11}));
    REQUIRE(result.events.back() == trace_event(ojx::gc_end_event{.gc = 1}));
}
