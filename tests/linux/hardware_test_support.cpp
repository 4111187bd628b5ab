#include "hardware_test_support.hpp"

#include "ojx/hardware/perf_events.hpp"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>

namespace ojx::hardware::testing {

const std::string& watchpoints_unavailable() {
    static const std::string reason = [] {
        const capabilities caps = probe_capabilities();
        return caps.breakpoint_slots > 0 ? std::string() : caps.breakpoint_reason;
    }();
    return reason;
}

std::string standard_error_of(const std::function<void()>& run) {
    std::fflush(stderr);
    const std::string path = "/tmp/ojx-test-" + std::to_string(getpid()) + "-stderr";
    const int saved = dup(2);
    const int file = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(file, 2);
    ::close(file);
    run();
    std::fflush(stderr);
    dup2(saved, 2);
    ::close(saved);
    std::ifstream in(path);
    std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    std::remove(path.c_str());
    return text;
}

double thread_cpu_seconds() {
    timespec now{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

OJX_TEST_UNINSTRUMENTED std::uint64_t read_loop(const volatile std::uint64_t* words, std::size_t count, double cpu_seconds) {
    const double until = thread_cpu_seconds() + cpu_seconds;
    std::uint64_t sum = 0;
    // The CPU clock is a system call, and a sampling interrupt that strikes during one is delivered as the call
    // returns: the next access is then a stack read after it. Look at the clock rarely (every ~2 ms) so such
    // samples stay far below the tests' 1 % tolerance.
    while (thread_cpu_seconds() < until) {
        for (int pass = 0; pass < 512; ++pass)
            for (std::size_t i = 0; i < count; ++i) sum += words[i];
    }
    return sum;
}

} // namespace ojx::hardware::testing
