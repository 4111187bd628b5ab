// The asynchronous trace file writer: what the filler appends reaches the file whole and in order; when the file
// blocks (a pipe nobody reads), the filler keeps going without waiting and the events it loses are counted and
// reported in the trace; an unwritable path is one line naming it.
#include "ojx/hardware/trace_file_writer.hpp"
#include "ojx/trace_reader.hpp"
#include "ojx/trace_writer.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <variant>
#include <vector>

namespace {

using ojx::trace_event;

std::string temporary_path(const char* name) {
    return "/tmp/ojx-test-" + std::to_string(getpid()) + "-" + name;
}

std::vector<std::byte> read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::vector<char> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    std::vector<std::byte> result(bytes.size());
    std::memcpy(result.data(), bytes.data(), bytes.size());
    return result;
}

struct read_trace {
    std::vector<trace_event> events;
    bool complete = false;
};

read_trace read_events(const std::vector<std::byte>& file) {
    ojx::trace_reader reader(file, "written.ojxt");
    read_trace result;
    while (auto event = reader.next()) result.events.push_back(std::move(*event));
    INFO(reader.error());
    REQUIRE_FALSE(reader.failed());
    result.complete = reader.complete();
    return result;
}

trace_event allocation(std::uint64_t index) {
    return ojx::allocation_event{static_cast<std::uint32_t>(index % 3), 0x100000 + index * 4096,
                                 1024 + index % 2048, static_cast<ojx::context_id>(index % 7), 2};
}

} // namespace

TEST_CASE("events appended through the file writer reach the file whole and in order") {
    const std::string path = temporary_path("whole.ojxt");
    ojx::hardware::trace_file_writer file;
    REQUIRE_FALSE(file.open(path, 4, 4096).has_value());
    std::vector<trace_event> expected;
    {
        ojx::trace_writer writer(file.first_buffer(), file.sink());
        // Slowly enough that the writer thread keeps up: nothing may be lost here.
        for (std::uint64_t i = 0; i < 3000; ++i) {
            const trace_event event = allocation(i);
            expected.push_back(event);
            REQUIRE(writer.append(event));
            if (i % 64 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        file.wait_for_buffers();
        REQUIRE(writer.finish());
        CHECK(writer.events_dropped() == 0);
    }
    CHECK_FALSE(file.close().has_value());
    const auto bytes = read_file(path);
    CHECK(file.bytes_written() == bytes.size());
    const read_trace read = read_events(bytes);
    CHECK(read.complete);
    CHECK(read.events == expected);
    std::remove(path.c_str());
}

TEST_CASE("a file that blocks: the filler does not wait, and the events it loses are counted and in the trace") {
    const std::string path = temporary_path("fifo.ojxt");
    REQUIRE(mkfifo(path.c_str(), 0600) == 0);
    // The read end first (non-blocking, so that opening it does not wait for a writer), then the writer's end.
    const int reading = ::open(path.c_str(), O_RDONLY | O_NONBLOCK);
    REQUIRE(reading >= 0);
    ojx::hardware::trace_file_writer file;
    REQUIRE_FALSE(file.open(path, 4, 4096).has_value());
    fcntl(reading, F_SETFL, 0); // blocking reads from now on

    ojx::trace_writer writer(file.first_buffer(), file.sink());
    std::vector<trace_event> expected;
    std::uint64_t lost_since_last = 0;
    const auto append = [&](std::uint64_t index) {
        const trace_event event = allocation(index);
        if (!writer.append(event)) {
            ++lost_since_last;
            return;
        }
        if (lost_since_last != 0) expected.emplace_back(ojx::events_lost_event{lost_since_last});
        lost_since_last = 0;
        expected.push_back(event);
    };
    // Nobody reads the pipe: once it and the four buffers are full, the writer thread is stuck in write(2) and
    // every further event is lost — counted, not waited for.
    std::uint64_t index = 0;
    while (writer.events_dropped() < 1000 && index < 10'000'000) append(index++);
    REQUIRE(writer.events_dropped() == 1000);

    // Now the pipe is read: the blocks come out, buffers come back, recording resumes.
    std::vector<std::byte> bytes;
    std::thread reader([&] {
        std::byte chunk[8192];
        for (ssize_t got; (got = ::read(reading, chunk, sizeof chunk)) != 0;) {
            if (got > 0) bytes.insert(bytes.end(), chunk, chunk + got);
        }
    });
    file.wait_for_buffers();
    for (int i = 0; i < 100; ++i) append(index++);
    REQUIRE(writer.finish());
    if (lost_since_last != 0) expected.emplace_back(ojx::events_lost_event{lost_since_last});
    CHECK_FALSE(file.close().has_value());
    reader.join();
    ::close(reading);
    std::remove(path.c_str());

    const read_trace read = read_events(bytes);
    CHECK(read.complete);
    CHECK(read.events == expected);
    std::uint64_t reported = 0;
    for (const trace_event& event : read.events)
        if (const auto* lost = std::get_if<ojx::events_lost_event>(&event)) reported += lost->count;
    CHECK(reported == 1000);
}

TEST_CASE("an unwritable trace file is one line naming it and why") {
    ojx::hardware::trace_file_writer file;
    const auto error = file.open("/nonexistent-directory/run.ojxt");
    REQUIRE(error.has_value());
    CHECK(*error == "cannot write the trace to /nonexistent-directory/run.ojxt: No such file or directory");
    CHECK_FALSE(file.is_open());
    CHECK_FALSE(file.close().has_value());
}
