// Which of a program's allocations the native agent tracks when it samples them (adaptive tracking, its default,
// or a fixed `interval`), and which frees concern it.
//
// Sampling: a Poisson process over the bytes of the allocations at or above the threshold, as the JVM samples its
// heap (JDK 17's ThreadHeapSampler): each thread draws exponential gaps of mean `interval` bytes and an
// allocation is tracked when a sampling point falls inside it, so an object of s bytes is tracked with probability
// 1 − e^(−s/interval), independently of every other (the gap after a sampled object is drawn afresh from its end:
// by memorylessness the process is still Poisson). The profiler weighs each tracked object by 1/that probability
// (allocation_shape::sampling_interval), so the allocation counts stay unbiased estimates. Untracked allocations
// cost a thread-local subtraction; only tracked ones unwind their stacks.
//
// Under adaptive tracking (ojx/allocation_rate_target.hpp) the interval moves: a thread that finds it changed
// rescales the rest of its gap by new/old. The rest of an exponential gap of mean old is exponential of mean old
// whatever came before (memorylessness), so the rescaled one is exponential of mean new: the next object is
// tracked with probability 1 − e^(−s/new) exactly, the interval read for it. Interval 0 tracks every object. The
// thread also counts its eligible allocations and hands them to the rate target every report_every of them.
//
// Frees: with sampling, nearly every free is of an object the profiler never saw. tracked_addresses holds the
// addresses it did see (inserted after the profiler took the object, erased before the C library may reuse the
// address), and keeps an address_filter counting them, so such a free nearly always costs one hash and one relaxed
// load (address_filter.hpp), and otherwise a shard lock rather than the profiler's lock and lookup.
#pragma once

#include "address_filter.hpp"

#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <unordered_set>

namespace ojx::preload {

// Per thread; constinit so that it lives in the static TLS block of a preloaded library, reached without a call.
class allocation_sampler {
public:
    static constexpr std::uint32_t report_every = 64;

    // Whether the allocation of `bytes` (at or above the threshold) is tracked at `interval` (0: every one);
    // `seed` and the thread's id (asked once per thread) give each thread its own sequence.
    bool sampled(std::uint64_t bytes, std::uint64_t interval, std::uint64_t seed) noexcept {
        if (interval == 0) {
            interval_ = 0;
            return true;
        }
        if (state_ == 0) state_ = mix(seed * 0x9e3779b97f4a7c15ULL + static_cast<std::uint64_t>(::gettid())) | 1;
        if (interval_ == 0)
            remaining_ = gap(interval);
        else if (interval_ != interval)
            remaining_ = rescaled(remaining_, interval_, interval);
        interval_ = interval;
        remaining_ -= static_cast<std::int64_t>(bytes);
        if (remaining_ > 0) return false;
        remaining_ = gap(interval);
        return true;
    }

    // Adaptive tracking: counts one eligible allocation of `bytes`, tracked or not. True when the counts are due
    // to be handed over (every report_every allocations, and at a sampled one, which is rare and slow anyway).
    bool count(std::uint64_t bytes, bool tracked) noexcept {
        ++unreported_count_;
        unreported_bytes_ += bytes;
        unreported_tracked_ += tracked ? 1 : 0;
        return unreported_count_ >= report_every || (tracked && interval_ != 0);
    }
    // Hands the counts to `add(count, bytes, tracked)` and starts afresh.
    template <class Add>
    void report(Add&& add) noexcept {
        add(unreported_count_, unreported_bytes_, unreported_tracked_);
        unreported_count_ = 0;
        unreported_bytes_ = unreported_tracked_ = 0;
    }

private:
    static std::uint64_t mix(std::uint64_t x) noexcept {
        x ^= x >> 30;
        x *= 0xbf58476d1ce4e5b9ULL;
        x ^= x >> 27;
        x *= 0x94d049bb133111ebULL;
        return x ^ (x >> 31);
    }
    // An exponential gap of mean `interval` bytes, at least 1.
    std::int64_t gap(std::uint64_t interval) noexcept {
        state_ += 0x9e3779b97f4a7c15ULL;
        const double uniform = static_cast<double>((mix(state_) >> 11) + 1) * 0x1p-53; // (0, 1]
        const double bytes = -static_cast<double>(interval) * std::log(uniform);
        return bytes < 1 ? 1 : static_cast<std::int64_t>(bytes);
    }

    static std::int64_t rescaled(std::int64_t remaining, std::uint64_t from, std::uint64_t to) noexcept {
        const double bytes = static_cast<double>(remaining) * (static_cast<double>(to) / static_cast<double>(from));
        return bytes < 1 ? 1 : bytes > 0x1p62 ? std::int64_t{1} << 62 : static_cast<std::int64_t>(bytes);
    }

    std::uint64_t state_ = 0; // 0: not seeded yet
    std::uint64_t interval_ = 0; // the mean of the gap being drawn down; 0: none drawn
    std::int64_t remaining_ = 0;
    std::uint32_t unreported_count_ = 0;
    std::uint64_t unreported_bytes_ = 0;
    std::uint64_t unreported_tracked_ = 0;
};

// A set of addresses shared by all threads, in shards with a spin lock each, and the filter that counts them
// (each member is counted exactly once, under its shard's lock: the filter's counter of a slot is the number of
// members hashing to it, or saturated). The filter is the caller's, so that it can be a zero-initialized static.
// insert and erase allocate and free through the agent's own (re-entrant) allocation path: callers run with the
// agent's reentrancy flag set. may_contain allocates nothing and takes no lock.
class tracked_addresses {
public:
    explicit tracked_addresses(address_filter& filter) noexcept : filter_(filter) {}

    void insert(std::uintptr_t address) {
        shard& s = shard_of(address);
        const locked hold(s);
        // Counted before the insert returns, so before the caller hands the address to the program.
        if (s.addresses.insert(address).second) filter_.add(address);
    }
    // Whether `address` was in the set (and is no longer).
    bool erase(std::uintptr_t address) {
        shard& s = shard_of(address);
        const locked hold(s);
        if (s.addresses.erase(address) == 0) return false;
        filter_.remove(address);
        return true;
    }
    // False when `address` is certainly not in the set: no insert of it happened before, or its erase did.
    bool may_contain(std::uintptr_t address) const noexcept { return filter_.may_contain(address); }

private:
    static constexpr std::size_t shard_count = 64;
    struct alignas(64) shard {
        std::atomic<bool> held{false};
        std::unordered_set<std::uintptr_t> addresses;
    };
    struct locked {
        shard& s;
        // The holder may be a descheduled thread: after a while, give way to it.
        explicit locked(shard& into) noexcept : s(into) {
            unsigned spins = 0;
            while (s.held.exchange(true, std::memory_order_acquire))
                while (s.held.load(std::memory_order_relaxed)) {
                    if (++spins < 64)
                        __builtin_ia32_pause();
                    else
                        sched_yield();
                }
        }
        ~locked() { s.held.store(false, std::memory_order_release); }
    };
    shard& shard_of(std::uintptr_t address) noexcept {
        // Blocks are at least 16-byte aligned: the bits above them spread the shards.
        return shards_[(address >> 4 ^ address >> 12) % shard_count];
    }
    address_filter& filter_;
    shard shards_[shard_count];
};

} // namespace ojx::preload
