// Shared by the hardware backend's tests: a delivery target that stores samples and traps in preallocated
// arrays from signal handlers, and loops that read memory in ways the tests can predict.
#pragma once

#include "ojx/hardware/hardware_backend.hpp"
#include "skip.hpp"

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ojx::hardware::testing {

// Signal-safe recorder: each handler claims an index with one atomic increment; nothing allocates.
struct recorder {
    static constexpr std::size_t capacity = 1 << 16;
    std::array<access_sample, capacity> samples{};
    std::array<watchpoint_trap, capacity> traps{};
    std::atomic<std::size_t> sample_count{0};
    std::atomic<std::size_t> trap_count{0};

    static bool on_sample(void* self, const access_sample& sample, const ucontext_t&,
                          const ojx::hardware::handler_reads&) noexcept {
        auto& r = *static_cast<recorder*>(self);
        const std::size_t at = r.sample_count.fetch_add(1, std::memory_order_relaxed);
        if (at < capacity) r.samples[at] = sample;
        return false;
    }
    static void on_trap(void* self, const watchpoint_trap& trap, const ucontext_t&,
                        const ojx::hardware::handler_reads&) noexcept {
        auto& r = *static_cast<recorder*>(self);
        const std::size_t at = r.trap_count.fetch_add(1, std::memory_order_relaxed);
        if (at < capacity) r.traps[at] = trap;
    }
    backend_delivery delivery() noexcept { return backend_delivery{this, on_sample, on_trap}; }

    std::vector<access_sample> recorded_samples() const {
        const std::size_t n = std::min(sample_count.load(), capacity);
        return {samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(n)};
    }
    std::vector<watchpoint_trap> recorded_traps() const {
        const std::size_t n = std::min(trap_count.load(), capacity);
        return {traps.begin(), traps.begin() + static_cast<std::ptrdiff_t>(n)};
    }
};

// Loops whose loads the tests predict must not get AddressSanitizer's shadow checks: under ASan four of five
// memory accesses would otherwise be shadow reads, and the sampler would rightly sample those.
#define OJX_TEST_UNINSTRUMENTED __attribute__((no_sanitize("address"), noinline))

// Why this machine's debug registers cannot be tested: they do not open, or they open and never trap (as on
// Firecracker VMs). Empty where they work. Probed once.
const std::string& watchpoints_unavailable();

// Ends a test case that needs working debug registers where there are none, as skipped, saying why (skip.hpp).
#define OJX_SKIP_WITHOUT_WATCHPOINTS()                                                                              \
    do {                                                                                                           \
        if (const std::string& why = ::ojx::hardware::testing::watchpoints_unavailable(); !why.empty())            \
            OJX_SKIP(why);                                                                                         \
    } while (false)

// CPU seconds this thread has used (the samplers count CPU time, not wall time).
double thread_cpu_seconds();

// Sums the words of `words` in a loop until the thread has used `cpu_seconds` of CPU time. The loads are
// volatile so every iteration really reads memory.
std::uint64_t read_loop(const volatile std::uint64_t* words, std::size_t count, double cpu_seconds);

// What `run` writes to standard error (descriptor 2, through a file), which is restored after it.
std::string standard_error_of(const std::function<void()>& run);

} // namespace ojx::hardware::testing
