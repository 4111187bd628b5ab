// The asynchronous trace file writer: what the filler appends reaches the file whole and in order; when the file
// blocks (a pipe nobody reads), the filler keeps going without waiting and the events it loses are counted and
// reported in the trace; an unwritable path, a full device and a write that fails mid-run are one line naming the
// file, and never block or crash the program. Its descriptor is kept out of the program's way (what happens when
// the program takes it anyway: test_trace_descriptor.cpp); the file is the user's alone (0600) and has one
// recorder at a time.
#include "ojx/hardware/trace_file_writer.hpp"
#include "ojx/hardware/agent_output_file.hpp"
#include "trace_file_test_support.hpp"
#include "ojx/trace_reader.hpp"
#include "ojx/trace_writer.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

using ojx::trace_event;
using namespace ojx::hardware::testing;

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

TEST_CASE("an unwritable trace file, or a full device, is one line naming it and why") {
    const std::pair<const char*, const char*> cases[] = {
        {"/nonexistent-directory/run.ojxt", "No such file or directory"},
        {"/dev/full", "No space left on device"}, // the file opens; its header cannot be written
    };
    for (const auto& [path, reason] : cases) {
        ojx::hardware::trace_file_writer file;
        const auto error = file.open(path);
        REQUIRE(error.has_value());
        CHECK(*error == std::string("cannot write the trace to ") + path + ": " + reason);
        CHECK_FALSE(file.is_open());
        CHECK_FALSE(file.close().has_value());
    }
}

// A file that takes the header and then refuses every write (the file-size limit: EFBIG, as a disk that fills up
// gives ENOSPC): the filler neither waits nor stops, the writer thread keeps giving buffers back, the end waits for
// nothing that cannot come, close() names the problem and what the file holds, and the block cut short is cut
// off, so the file reads as a trace that stopped early.
TEST_CASE("a write that fails mid-run is reported at close, and neither blocks nor crashes the program") {
    const std::string path = temporary_path("too-large.ojxt");
    // The limit applies to the whole process: ignore SIGXFSZ (write then fails with EFBIG) and restore both after.
    rlimit previous_limit{};
    REQUIRE(getrlimit(RLIMIT_FSIZE, &previous_limit) == 0);
    struct sigaction ignore{}, previous_action{};
    ignore.sa_handler = SIG_IGN;
    REQUIRE(sigaction(SIGXFSZ, &ignore, &previous_action) == 0);
    rlimit small = previous_limit;
    small.rlim_cur = 100; // the 12-byte header and 88 bytes of the first block
    REQUIRE(setrlimit(RLIMIT_FSIZE, &small) == 0);

    ojx::hardware::trace_file_writer file;
    const auto opened = file.open(path, 4, 4096);
    std::optional<std::string> closed;
    std::uint64_t appended = 0, dropped = 0;
    bool finished = false;
    if (!opened) {
        ojx::trace_writer writer(file.first_buffer(), file.sink());
        const auto start = std::chrono::steady_clock::now();
        for (std::uint64_t i = 0; i < 20000; ++i) appended += writer.append(allocation(i)) ? 1 : 0;
        file.wait_for_buffers();
        finished = writer.finish();
        dropped = writer.events_dropped();
        closed = file.close();
        // Generous: a blocked writer would hang here forever, not take a few seconds.
        CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
    }
    setrlimit(RLIMIT_FSIZE, &previous_limit);
    sigaction(SIGXFSZ, &previous_action, nullptr);

    REQUIRE_FALSE(opened.has_value());
    CHECK(finished);
    CHECK(appended + dropped == 20000);
    REQUIRE(closed.has_value());
    CHECK(*closed ==
          "could not write the whole trace to " + path + ": File too large; it ends after 0 blocks (12 bytes)");
    const auto bytes = read_file(path);
    CHECK(bytes.size() == ojx::trace_header_size); // the first block did not fit: only the header stays
    CHECK(file.bytes_written() == bytes.size());
    const read_trace read = read_events(bytes);
    CHECK_FALSE(read.complete);
    CHECK(read.events.empty());
    std::remove(path.c_str());
}


TEST_CASE("the trace's descriptor is high, close-on-exec and 0600, whatever the umask or an earlier file's mode") {
    const std::string path = temporary_path("mode.ojxt");
    { std::ofstream earlier(path); earlier << "an earlier file, readable by all"; }
    REQUIRE(chmod(path.c_str(), 0644) == 0);
    const mode_t previous_umask = umask(0);
    ojx::hardware::trace_file_writer file;
    const auto opened = file.open(path, 4, 4096);
    umask(previous_umask);
    REQUIRE_FALSE(opened.has_value());
    const std::vector<int> fds = descriptors_of(path);
    REQUIRE(fds.size() == 1);
    CHECK(fds[0] >= ojx::hardware::high_descriptor_floor());
    CHECK((fcntl(fds[0], F_GETFD) & FD_CLOEXEC) != 0);
    struct stat st {};
    REQUIRE(stat(path.c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0600);
    // A second recorder of the same file is refused while this one writes, not interleaved with it.
    ojx::hardware::trace_file_writer second;
    const auto refused = second.open(path, 4, 4096);
    REQUIRE(refused.has_value());
    CHECK(*refused == "cannot write the trace to " + path + ": another process is writing a trace to it");
    {
        ojx::trace_writer writer(file.first_buffer(), file.sink());
        REQUIRE(writer.append(allocation(1)));
        file.wait_for_buffers();
        REQUIRE(writer.finish());
    }
    CHECK_FALSE(file.close().has_value());
    CHECK(read_events(read_file(path)).complete);
    std::remove(path.c_str());
}
