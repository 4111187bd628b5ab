// The trace buffer pool: blocks filled on one thread and written out on another arrive whole and in order, every
// event the writer could not place (no free buffer) is counted and reported by an events_lost record where it was
// lost, and the buffers cycle. Run under ThreadSanitizer (label `concurrent`).
#include "ojx/trace_buffer_pool.hpp"
#include "ojx/trace_reader.hpp"
#include "ojx/trace_writer.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <random>
#include <thread>
#include <variant>
#include <vector>

namespace {

using ojx::trace_event;

std::vector<std::byte> file_header() {
    const auto header = ojx::trace_file_header();
    return {header.begin(), header.end()};
}

// Appends every filled block to `file` and gives its buffer back; returns how many it took.
std::size_t drain(ojx::trace_buffer_pool& pool, std::vector<std::byte>& file) {
    std::size_t taken = 0;
    while (const auto block = pool.next_filled()) {
        file.insert(file.end(), block->bytes.begin(), block->bytes.end());
        pool.give_back(block->buffer);
        ++taken;
    }
    return taken;
}

std::vector<trace_event> read_events(const std::vector<std::byte>& file, bool& complete) {
    ojx::trace_reader reader(file, "pool.ojxt");
    std::vector<trace_event> events;
    while (auto event = reader.next()) events.push_back(std::move(*event));
    INFO(reader.error());
    REQUIRE_FALSE(reader.failed());
    complete = reader.complete();
    return events;
}

// What the reader must yield for a sequence of appends, given which of them the writer accepted: the accepted
// events in order, each after an events_lost record counting the refused ones just before it.
struct expected_trace {
    std::vector<trace_event> events;
    std::uint64_t lost_since_last = 0;
    std::uint64_t lost = 0;

    void appended(const trace_event& event, bool accepted) {
        if (!accepted) {
            ++lost_since_last;
            ++lost;
            return;
        }
        if (lost_since_last != 0) events.emplace_back(ojx::events_lost_event{lost_since_last});
        lost_since_last = 0;
        events.push_back(event);
    }
    void finished() {
        if (lost_since_last != 0) events.emplace_back(ojx::events_lost_event{lost_since_last});
    }
};

trace_event some_event(std::mt19937_64& random, std::uint64_t index) {
    const auto thread = static_cast<std::uint32_t>(random() % 6);
    switch (random() % 4) {
    case 0: return ojx::allocation_event{thread, 0x10000 + index * 64, 64 + random() % 4096, 3, 1};
    case 1: return ojx::free_event{0x10000 + (random() % (index + 1)) * 64};
    case 2: return ojx::access_sample{0x400000 + random() % 256, 0x10000 + random() % 100000, random(), 8,
                                      ojx::access_kind::load, thread, 5};
    default: return ojx::move_event{random(), random()};
    }
}

} // namespace

TEST_CASE("blocks filled on one thread and written on another arrive whole, in order, with every loss counted where it happened") {
    for (std::uint64_t seed = 1; seed <= 6; ++seed) {
        CAPTURE(seed);
        // Few, small buffers and a writer thread that stops now and then: the filler runs out of buffers often.
        ojx::trace_buffer_pool pool(3, 512);
        ojx::trace_writer writer(pool.take(), pool.sink());
        std::vector<std::byte> file = file_header();
        std::atomic<bool> filling{true};
        std::thread writer_thread([&] {
            std::mt19937_64 pauses(seed);
            while (filling.load(std::memory_order_acquire)) {
                drain(pool, file);
                if (pauses() % 3 == 0) std::this_thread::sleep_for(std::chrono::microseconds(pauses() % 200));
            }
            drain(pool, file);
        });

        std::mt19937_64 random(seed);
        expected_trace expected;
        constexpr std::uint64_t events = 20000;
        for (std::uint64_t i = 0; i < events; ++i) {
            const trace_event event = some_event(random, i);
            expected.appended(event, writer.append(event));
            // Now and then the filler pauses too, so that runs of written and of lost events alternate.
            if (i % 128 == 0) std::this_thread::sleep_for(std::chrono::microseconds(random() % 100));
        }
        pool.wait_for_buffers(); // the end record must not be lost
        writer.finish();
        expected.finished();
        filling.store(false, std::memory_order_release);
        writer_thread.join();

        bool complete = false;
        const auto read = read_events(file, complete);
        CHECK(complete);
        INFO("written " << writer.events_written() << ", lost " << expected.lost);
        CHECK(writer.events_dropped() == expected.lost);
        CHECK(writer.events_dropped_no_buffer() == expected.lost);
        CHECK(pool.refusals() >= expected.lost);
        REQUIRE(read.size() == expected.events.size());
        CHECK(read == expected.events);
    }
}

TEST_CASE("a blocked writer thread: the filler never waits, the events it cannot place are counted and reported once a buffer comes back") {
    ojx::trace_buffer_pool pool(2, ojx::trace_writer::minimum_buffer_size);
    ojx::trace_writer writer(pool.take(), pool.sink());
    std::vector<std::byte> file = file_header();
    expected_trace expected;

    // Nobody writes blocks out: the two buffers fill, then every event is refused at once.
    std::uint64_t index = 0;
    std::mt19937_64 random(7);
    while (writer.events_dropped() == 0) {
        const trace_event event = some_event(random, index++);
        expected.appended(event, writer.append(event));
    }
    for (int i = 0; i < 500; ++i) {
        const trace_event event = some_event(random, index++);
        const bool accepted = writer.append(event);
        CHECK_FALSE(accepted);
        expected.appended(event, accepted);
    }
    CHECK(writer.events_dropped() == 501);
    CHECK(pool.refusals() >= 501);

    // The writer thread wakes up: both blocks were waiting for it, whole. Their buffers come back, recording
    // resumes, and the gap is reported where it was.
    CHECK(drain(pool, file) == 2);
    for (int i = 0; i < 5; ++i) {
        const trace_event event = some_event(random, index++);
        const bool accepted = writer.append(event);
        CHECK(accepted);
        expected.appended(event, accepted);
    }
    writer.finish();
    expected.finished();
    drain(pool, file);

    bool complete = false;
    const auto read = read_events(file, complete);
    CHECK(complete);
    CHECK(read == expected.events);
    const auto lost_record = std::find_if(read.begin(), read.end(), [](const trace_event& event) {
        return std::holds_alternative<ojx::events_lost_event>(event);
    });
    REQUIRE(lost_record != read.end());
    CHECK(std::get<ojx::events_lost_event>(*lost_record).count == 501);
}
