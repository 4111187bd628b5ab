// The trace's descriptor taken by the program: a program that closes the descriptors it inherited (as daemons
// do) and is given the trace's number for a file of its own. Not among the concurrent tests run under
// ThreadSanitizer: the program closing a descriptor that another thread may be writing is the race this defends
// against, and ThreadSanitizer reports it as one.
#include "ojx/hardware/trace_file_writer.hpp"
#include "trace_file_test_support.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

using namespace ojx::hardware::testing;

// A program that closes the descriptors it inherited (as daemons do) and is given the trace's number for a file
// of its own: that file gets none of the trace's bytes and is not closed by ojx; the trace says where it ends.
TEST_CASE("a trace descriptor the program closed and reused is never written or closed again") {
    const std::string path = temporary_path("taken.ojxt");
    const std::string own = temporary_path("program-output.txt");
    ojx::hardware::trace_file_writer file;
    REQUIRE_FALSE(file.open(path, 4, 4096).has_value());
    const std::vector<int> fds = descriptors_of(path);
    REQUIRE(fds.size() == 1);
    const int number = fds[0];

    std::uint64_t blocks_before = 0;
    std::string program_wrote;
    {
        ojx::trace_writer writer(file.first_buffer(), file.sink());
        std::uint64_t index = 0;
        // Enough for several blocks to reach the file before the program takes the number.
        for (; index < 2000; ++index) {
            REQUIRE(writer.append(allocation(index)));
            if (index % 64 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (file.blocks_written() < 2 && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        blocks_before = file.blocks_written();
        REQUIRE(blocks_before >= 2);

        // The program: closes the number, opens its own file, and has it at that number.
        REQUIRE(::close(number) == 0);
        const int mine = ::open(own.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        REQUIRE(mine >= 0);
        REQUIRE(dup2(mine, number) == number);
        ::close(mine);
        program_wrote = "the program's own line\n";
        REQUIRE(::write(number, program_wrote.data(), program_wrote.size()) ==
                static_cast<ssize_t>(program_wrote.size()));

        for (; index < 6000; ++index) {
            (void)writer.append(allocation(index)); // no free buffer: counted, not waited for
            if (index % 64 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        file.wait_for_buffers();
        REQUIRE(writer.finish());
    }
    const auto closed = file.close();
    REQUIRE(closed.has_value());
    const std::uint64_t blocks = file.blocks_written();
    CHECK(blocks == blocks_before); // nothing after the number was taken
    CHECK(*closed == "the program closed the descriptor of the trace " + path + "; it ends after " +
                         std::to_string(blocks) + " blocks (" + std::to_string(file.bytes_written()) + " bytes)");
    // Still open: ojx did not close the program's file.
    CHECK(fcntl(number, F_GETFD) >= 0);
    const std::string more = "and its last one\n";
    REQUIRE(::write(number, more.data(), more.size()) == static_cast<ssize_t>(more.size()));
    ::close(number);
    const auto written = read_file(own);
    CHECK(std::string(reinterpret_cast<const char*>(written.data()), written.size()) == program_wrote + more);
    // The trace: what reached it before, readable, without its end.
    const auto bytes = read_file(path);
    CHECK(bytes.size() == file.bytes_written());
    const read_trace read = read_events(bytes);
    CHECK_FALSE(read.complete);
    CHECK_FALSE(read.events.empty());
    std::remove(path.c_str());
    std::remove(own.c_str());
}
