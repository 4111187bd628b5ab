// The kernel warm-up (kernel_warm_up.hpp): on its own thread it grows the descriptor table past the agents'
// descriptor floor and holds one per-task perf event, which end_kernel_warm_up closes; it leaves no other
// descriptor behind.
#include "ojx/hardware/agent_output_file.hpp"
#include "ojx/hardware/kernel_warm_up.hpp"
#include "ojx/hardware/perf_events.hpp"
#include "skip.hpp"

#include <catch2/catch.hpp>

#include <dirent.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

using namespace ojx::hardware;

namespace {

// The descriptor table's size ("FDSize" in /proc/self/status): slots allocated, not descriptors open.
long descriptor_table_size() {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
        if (line.rfind("FDSize:", 0) == 0) return std::stol(line.substr(7));
    return -1;
}

int open_perf_descriptors() {
    int count = 0;
    DIR* directory = opendir("/proc/self/fd");
    REQUIRE(directory != nullptr);
    while (const dirent* entry = readdir(directory)) {
        if (entry->d_name[0] == '.') continue;
        char target[64] = {};
        const std::string link = std::string("/proc/self/fd/") + entry->d_name;
        if (readlink(link.c_str(), target, sizeof target - 1) > 0 && std::string(target) == "anon_inode:[perf_event]")
            ++count;
    }
    closedir(directory);
    return count;
}

template <class Done>
bool wait_until(Done done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
}

} // namespace

TEST_CASE("the warm-up grows the descriptor table past the floor and its perf event lives until the end") {
    const int floor = high_descriptor_floor();
    REQUIRE(floor > 2);
    REQUIRE(descriptor_table_size() <= floor); // a fresh test process: the table is still small
    REQUIRE(open_perf_descriptors() == 0);

    start_kernel_warm_up();
    CHECK(wait_until([&] { return descriptor_table_size() > floor; }));
    // Probed after the growth was seen: the probe's own events are moved above the floor too. It closes them.
    const bool perf_works = probe_capabilities().perf_events;
    // The warm-up thread may have opened its event and not yet stored it when end_kernel_warm_up runs: the
    // thread then closes it itself, a moment later. Hence the waits after each end.
    if (!perf_works) {
        end_kernel_warm_up();
        CHECK(wait_until([] { return open_perf_descriptors() == 0; }));
        OJX_SKIP("perf_event_open does not work here: the warm-up's perf event is not checked");
    }
    CHECK(wait_until([] { return open_perf_descriptors() == 1; }));
    end_kernel_warm_up();
    CHECK(wait_until([] { return open_perf_descriptors() == 0; }));
    end_kernel_warm_up(); // a second end is harmless
    CHECK(open_perf_descriptors() == 0);
}
