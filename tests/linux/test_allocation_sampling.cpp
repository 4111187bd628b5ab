// The native agent's allocation sampling (agents/native/allocation_sampling.hpp): an object of s bytes is
// tracked with probability 1 − e^(−s/interval), whatever came before it — the probability the profiler's weights
// assume (allocation_metrics.hpp) — and the set of tracked addresses answers a free exactly.
#include "../../agents/native/allocation_sampling.hpp"

#include "ojx/allocation_metrics.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <thread>
#include <vector>

using ojx::preload::allocation_sampler;
using ojx::preload::tracked_addresses;

TEST_CASE("an object of s bytes is sampled with probability 1 - exp(-s/interval), independently of its neighbours") {
    constexpr std::uint64_t interval = 32 * 1024;
    allocation_sampler sampler;
    // Sizes interleaved, as a program's are: a large object must not change the next small one's chance.
    const std::uint64_t sizes[] = {1024, 300000, 4096, 65536, 1024, 16384};
    std::uint64_t tried[std::size(sizes)] = {}, taken[std::size(sizes)] = {};
    for (int round = 0; round < 200000; ++round)
        for (std::size_t i = 0; i < std::size(sizes); ++i) {
            ++tried[i];
            taken[i] += sampler.sampled(sizes[i], interval, 7) ? 1 : 0;
        }
    for (std::size_t i = 0; i < std::size(sizes); ++i) {
        const double p = ojx::sampling_probability(sizes[i], interval);
        const double n = static_cast<double>(tried[i]);
        const double observed = static_cast<double>(taken[i]) / n;
        const double sd = std::sqrt(p * (1 - p) / n);
        INFO("size " << sizes[i] << ": observed " << observed << ", expected " << p << " (sd " << sd << ")");
        CHECK(std::abs(observed - p) <= 5 * sd + 1e-9);
    }
}

// Tolerance: 400 000 objects of 1-16 KiB while the interval moves among 0 (every one), 4 KiB and 1 MiB every 1000
// objects; Σ 1/p at the interval read for each object must be within 4 standard deviations (Σ (1 − p)/p², the
// estimator's own variance) of the true count, and so must the count of each size. Without the rescaling of the
// gap, objects right after a fall from 1 MiB would be tracked at the old rate: the estimate falls ≈ 30 % short.
TEST_CASE("a moving interval: each object is sampled at the interval read for it, and 0 tracks every one") {
    allocation_sampler sampler;
    const std::uint64_t intervals[] = {1 << 20, 4096, 0, 1 << 20, 65536};
    const std::uint64_t sizes[] = {1024, 2048, 4096, 16384};
    double estimate[std::size(sizes)] = {}, variance[std::size(sizes)] = {};
    std::uint64_t truth[std::size(sizes)] = {};
    std::uint64_t x = 12345;
    for (int i = 0; i < 400000; ++i) {
        const std::uint64_t interval = intervals[(i / 1000) % std::size(intervals)];
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        const std::size_t which = (x >> 33) % std::size(sizes);
        ++truth[which];
        const bool taken = sampler.sampled(sizes[which], interval, 11);
        if (interval == 0) CHECK(taken);
        if (!taken) continue;
        const double weight = ojx::sampling_weight(sizes[which], interval);
        estimate[which] += weight;
        variance[which] += weight * (weight - 1);
    }
    for (std::size_t k = 0; k < std::size(sizes); ++k) {
        INFO("size " << sizes[k] << ": estimated " << estimate[k] << " (sd " << std::sqrt(variance[k]) << "), truth "
                     << truth[k]);
        CHECK(std::abs(estimate[k] - static_cast<double>(truth[k])) <= 4 * std::sqrt(variance[k]));
    }
}

TEST_CASE("the tracked addresses answer each free once, across threads") {
    static ojx::preload::address_filter filter; // 1 MiB: not on the stack
    tracked_addresses set(filter);
    std::vector<std::thread> threads;
    std::uint64_t found[4] = {};
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            for (std::uintptr_t i = 0; i < 20000; ++i) set.insert((i * 4 + static_cast<std::uintptr_t>(t)) << 4);
            for (std::uintptr_t i = 0; i < 20000; ++i) {
                found[t] += set.erase((i * 4 + static_cast<std::uintptr_t>(t)) << 4) ? 1 : 0;
                found[t] += set.erase((i * 4 + static_cast<std::uintptr_t>(t)) << 4) ? 1 : 0; // the second: gone
            }
        });
    for (std::thread& thread : threads) thread.join();
    for (const std::uint64_t count : found) CHECK(count == 20000);
    CHECK_FALSE(set.erase(16));
    // Every member erased, each counted once: the filter is back to "certainly not" everywhere it was used.
    std::uint64_t maybe = 0;
    for (std::uintptr_t i = 0; i < 80000; ++i) maybe += set.may_contain(i << 4) ? 1 : 0;
    CHECK(maybe == 0);
}
