// Following sampled loads' values on this machine (value_following.cpp): a loop copies words of a source buffer
// into a destination one (a load, then a store of the loaded register), another adds words of a third buffer to a
// sum. Every followed load from the source must record the store of its word into the destination at the same
// offset, and no load from the summed buffer a copy at all: each of those ends in a computation.
#include "child_process.hpp"
#include "hardware_test_support.hpp"

#include <catch2/catch.hpp>

#include <cstdio>
#include <memory>

using namespace ojx;
using namespace ojx::hardware;
using namespace ojx::hardware::testing;

namespace {

constexpr std::size_t words = 4096;
alignas(64) std::uint64_t source[words];
alignas(64) std::uint64_t destination[words];
alignas(64) std::uint64_t summed[words];

bool inside(address where, const std::uint64_t* buffer) {
    const auto begin = reinterpret_cast<address>(buffer);
    return where >= begin && where < begin + sizeof source;
}

// Asks for every load from the source or the summed buffer to be followed, and keeps what comes back.
struct following_target {
    static constexpr std::size_t capacity = 1 << 14;
    std::array<followed_value, capacity> followed{};
    std::atomic<std::size_t> count{0};
    std::atomic<std::size_t> samples{0};

    static bool on_sample(void* self, const access_sample& sample, const ucontext_t&, const handler_reads&) noexcept {
        auto& t = *static_cast<following_target*>(self);
        t.samples.fetch_add(1, std::memory_order_relaxed);
        return inside(sample.effective_address, source) || inside(sample.effective_address, summed);
    }
    static void on_trap(void*, const watchpoint_trap&, const ucontext_t&, const handler_reads&) noexcept {}
    static void on_followed(void* self, const followed_value& value, const ucontext_t&, const handler_reads&) noexcept {
        auto& t = *static_cast<following_target*>(self);
        const std::size_t at = t.count.fetch_add(1, std::memory_order_relaxed);
        if (at < capacity) t.followed[at] = value;
    }
    backend_delivery delivery() noexcept { return {this, on_sample, on_trap, on_followed}; }
};

// The copy and the sum, each `rounds` times over its buffer: plain moves, so that what is followed is known, each
// load and its use in one asm statement, so that what the compiler makes of the loop (spills at -Og) lies outside.
OJX_TEST_UNINSTRUMENTED void copy_and_sum(std::size_t rounds, std::uint64_t& sum) {
    std::uint64_t total = sum; // a register: the sum loop's only memory access is its load
    for (std::size_t round = 0; round < rounds; ++round) {
        for (std::size_t i = 0; i < words; ++i) {
            std::uint64_t value; // one asm statement: no spill of `value` can come between load and store
            asm volatile("movq (%1), %0\n\tmovq %0, (%2)"
                         : "=&r"(value)
                         : "r"(source + i), "r"(destination + i)
                         : "memory");
        }
        for (std::size_t i = 0; i < words; ++i) {
            std::uint64_t value;
            asm volatile("movq (%2), %1\n\taddq %1, %0" : "+r"(total), "=&r"(value) : "r"(summed + i) : "memory");
        }
    }
    sum = total;
}

} // namespace

TEST_CASE("following values: a copy loop's loads are followed to their stores, a sum's to the computation") {
    in_child_process([] {
        auto target = std::make_unique<following_target>();
        hardware_backend backend;
        backend_options options;
        options.sampler = sampler_kind::automatic;
        options.samples_per_second = 1000;
        options.watchpoint_slots = 0;
        options.follow_bound = 8;
        if (auto error = backend.start(options, target->delivery())) {
            std::printf("start failed: %s\n", error->c_str());
            return 1;
        }
        std::printf("%s\n", backend.sampler_description().c_str());
        if (backend.chosen_sampler() == sampler_kind::precise) {
            std::printf("SKIPPED: precise samples arrive after their load ran: none is followed\n");
            return child_skipped;
        }
        if (backend.attach_current_thread()) return 1;
        for (std::size_t i = 0; i < words; ++i) source[i] = summed[i] = i * 2654435761u;
        std::uint64_t sum = 0;
        const double until = thread_cpu_seconds() + 4.0;
        while (target->count.load() < 200 && thread_cpu_seconds() < until) copy_and_sum(50, sum);
        backend.detach_current_thread();
        backend.stop();
        int failures = 0;
        std::size_t copies = 0, sums = 0, stopped = 0;
        const std::size_t n = std::min(target->count.load(), following_target::capacity);
        for (std::size_t k = 0; k < n; ++k) {
            const followed_value& f = target->followed[k];
            const address at = f.load.effective_address;
            std::size_t copied = 0, consumed = 0, copied_right = 0;
            for (std::size_t u = 0; u < f.use_count; ++u) {
                const followed_value::use& use = f.uses[u];
                if (use.kind == value_use::consumed) {
                    ++consumed;
                    continue;
                }
                ++copied;
                const address expected = reinterpret_cast<address>(destination) +
                                         (at - reinterpret_cast<address>(source));
                copied_right += use.to == expected && use.width == 8;
            }
            const bool ended_early = f.end == follow_end::load_missed || f.end == follow_end::undecodable ||
                                     f.end == follow_end::not_stepped;
            if (ended_early) ++stopped;
            if (inside(at, source)) {
                ++copies;
                // The loaded register is stored once, into the same word of the destination, and nothing else
                // (unless following had to stop before the store).
                EXPECT(ended_early ? copied <= copied_right
                                                    : copied == 1 && copied_right == 1 && consumed == 0);
            } else {
                EXPECT(inside(at, summed));
                ++sums;
                EXPECT(copied == 0);
                EXPECT(consumed == 1 || ended_early);
            }
            EXPECT(f.steps <= options.follow_bound);
            EXPECT(f.load.kind == access_kind::load && f.load.width == 8);
        }
        std::printf("%zu samples, %zu values followed: %zu from the copy, %zu from the sum, %zu stopped early; "
                    "%llu follow steps (sum %llu)\n",
                    target->samples.load(), n, copies, sums, stopped,
                    static_cast<unsigned long long>(backend.counters().follow_steps.load()),
                    static_cast<unsigned long long>(sum));
        if (n < 20) {
            std::printf("SKIPPED: %zu values followed in 4 CPU seconds: too few to judge\n", n);
            return failures > 0 ? failures : child_skipped;
        }
        EXPECT(copies > 0 && sums > 0);
        EXPECT(backend.counters().values_followed.load() == target->count.load());
        return failures;
    });
}
