// Adaptive heap sampling for the JVM agent: JVMTI's sampling interval, moved at run time so that about
// track_rate allocations at or above the threshold are tracked a second (ojx/allocation_rate_target.hpp's rule;
// JFR throttles jdk.ObjectAllocationSample the same way). A quiet program gets evidence fast, an
// allocation-heavy one pays for a bounded number of tracked objects a second.
//
// JVMTI reports only samples, so a window's population is estimated from them: a sample of a whole object of s
// bytes, drawn at interval I, stands for 1/p allocations and s/p bytes, p = 1 − e^(−s/I) (Horvitz–Thompson; each
// sample weighed at its own I, so the estimate stays unbiased while I moves). Eligible samples (at or above the
// threshold) feed the rule. Every sample, eligible or not, costs a JVMTI callback, and small objects are most
// of what a Java program allocates, so two bounds keep those callbacks in check whatever the eligible rate:
//   - floor_interval: where a quiet program's interval goes. Above 0, because at 0 JVMTI calls back for every
//     object of every size.
//   - callback_budget: the interval is held at or above (smoothed estimated bytes allocated a second) ÷ budget,
//     with raise_to, since a sample point falls on average once every I bytes of all allocations.
// Callbacks, on any thread, add to relaxed atomics; the agent's thread closes the windows (tick, every 50 ms,
// and at once when a callback says the window has tracked or called back twice its share) and sets the interval.
// Standard C++ only, so that it is tested without a JVM.
#pragma once

#include "ojx/allocation_metrics.hpp"
#include "ojx/allocation_rate_target.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <optional>

namespace ojx::jvm {

class adaptive_heap_sampling {
public:
    // A quiet program's interval: a 1 KiB object is sampled with p ≈ 22 %, a 4 KiB one with p ≈ 63 %.
    static constexpr std::uint64_t floor_interval = 4096;
    // SetHeapSamplingInterval takes a jint.
    static constexpr std::uint64_t jvmti_largest_interval = 0x7fffffff;
    // Callbacks a second allowed per tracked allocation a second the target asks for. In a program of mostly
    // small objects this bound, not the target, sets the interval, and so how many of its 1–4 KiB objects are
    // tracked; it trades javac's overhead against Saxon's recall (bench/RESULTS.md, "The callback bound",
    // 2026-11-26): a callback for an object below the threshold costs ≈ 0.2 µs in a tight loop but about ten
    // times that in javac (its slow-path allocation, the event's handles and transitions), so at 40 javac spent
    // ≈ 3 % of its CPU on 23 000 callbacks a second; at 5 Saxon's sites of eleven 1–4 KiB arrays got fewer than
    // three digests in a quarter of the runs (recall 20/27, against 26/27 at 40); 15 keeps both in bounds, at
    // the default target of 1000 then and of 500 now (Saxon 27/27 over 3 runs, 2026-11-26).
    static constexpr double callbacks_per_tracked = 15;
    static constexpr std::uint64_t window_ns = 200'000'000;

    // `tracked_per_second` > 0.
    explicit adaptive_heap_sampling(double tracked_per_second) noexcept
        : rule_(rule_config(tracked_per_second)),
          callback_budget_(callbacks_per_tracked * tracked_per_second),
          early_tracked_(share(2 * tracked_per_second)),
          early_callbacks_(share(2 * callback_budget_)),
          interval_(rule_.interval()),
          smallest_(rule_.interval()),
          largest_(rule_.interval()) {}

    adaptive_heap_sampling(const adaptive_heap_sampling&) = delete;
    adaptive_heap_sampling& operator=(const adaptive_heap_sampling&) = delete;

    double target() const noexcept { return rule_.config().tracked_per_second; }
    // The interval the agent last set (relaxed: a callback reads it for the thread's next sample point).
    std::uint64_t interval() const noexcept { return interval_.load(std::memory_order_relaxed); }

    // In a SampledObjectAlloc callback: a sample of `object_bytes` (the whole object, as JVMTI gives it) drawn at
    // `interval` (0: a certain sample), `eligible` when it is at or above the threshold and tracked. True when
    // this sample makes the window due to close at once (said once per window): the caller wakes the agent's
    // thread.
    bool on_sample(std::uint64_t object_bytes, std::uint64_t interval, bool eligible) noexcept {
        const double weight = sampling_weight(object_bytes, interval);
        const double bytes = weight * static_cast<double>(object_bytes);
        all_bytes_.fetch_add(bytes, std::memory_order_relaxed);
        bool due = callbacks_.fetch_add(1, std::memory_order_relaxed) + 1 == early_callbacks_;
        if (eligible) {
            count_.fetch_add(weight, std::memory_order_relaxed);
            bytes_.fetch_add(bytes, std::memory_order_relaxed);
            due |= tracked_.fetch_add(1, std::memory_order_relaxed) + 1 == early_tracked_;
        }
        return due;
    }

    // On the agent's thread, at `now_ns` (a monotonic clock): the first call starts the first window; a window
    // closes when it has lasted window_ns or is due early. The new interval when it changed, for
    // SetHeapSamplingInterval.
    std::optional<std::uint64_t> tick(std::uint64_t now_ns) noexcept {
        if (window_start_ == 0) {
            window_start_ = now_ns == 0 ? 1 : now_ns;
            take_counts(); // what came before the clock started is not a rate
            return std::nullopt;
        }
        if (now_ns <= window_start_) return std::nullopt;
        const std::uint64_t elapsed = now_ns - window_start_;
        if (elapsed < window_ns && tracked_.load(std::memory_order_relaxed) < early_tracked_ &&
            callbacks_.load(std::memory_order_relaxed) < early_callbacks_)
            return std::nullopt;
        const counts c = take_counts();
        const double seconds = static_cast<double>(elapsed) * 1e-9;
        window_start_ = now_ns;
        tracked_total_.fetch_add(c.tracked, std::memory_order_relaxed);
        callbacks_total_.fetch_add(c.callbacks, std::memory_order_relaxed);
        windowed_ns_.fetch_add(elapsed, std::memory_order_relaxed);
        windows_.fetch_add(1, std::memory_order_relaxed);
        const std::uint64_t before = interval_.load(std::memory_order_relaxed);
        rule_.observe(c.count, c.bytes, static_cast<double>(c.tracked), seconds);
        // The bytes of all allocations a second, smoothed as the rule smooths its rates: a rise believed at once.
        const double all_rate = c.all_bytes / seconds;
        all_byte_rate_ = all_rate >= all_byte_rate_ ? all_rate
                                                    : all_byte_rate_ + rule_.config().smoothing * (all_rate - all_byte_rate_);
        const std::uint64_t next = rule_.raise_to(static_cast<std::uint64_t>(std::ceil(all_byte_rate_ / callback_budget_)));
        interval_.store(next, std::memory_order_relaxed);
        smallest_.store(std::min(smallest_.load(std::memory_order_relaxed), next), std::memory_order_relaxed);
        largest_.store(std::max(largest_.load(std::memory_order_relaxed), next), std::memory_order_relaxed);
        if (next == before) return std::nullopt;
        return next;
    }

    // For the exit summary and the profile, on any thread: windows closed, the extremes of the interval set,
    // and the samples tracked and called back for in the closed windows, which lasted windowed_ns in all.
    std::uint64_t windows() const noexcept { return windows_.load(std::memory_order_relaxed); }
    std::uint64_t smallest_interval() const noexcept { return smallest_.load(std::memory_order_relaxed); }
    std::uint64_t largest_interval() const noexcept { return largest_.load(std::memory_order_relaxed); }
    std::uint64_t tracked_in_windows() const noexcept { return tracked_total_.load(std::memory_order_relaxed); }
    std::uint64_t callbacks_in_windows() const noexcept { return callbacks_total_.load(std::memory_order_relaxed); }
    std::uint64_t windowed_ns() const noexcept { return windowed_ns_.load(std::memory_order_relaxed); }
    double callback_budget() const noexcept { return callback_budget_; }

private:
    struct counts {
        double count, bytes, all_bytes;
        std::uint64_t tracked, callbacks;
    };

    static allocation_rate_target_config rule_config(double tracked_per_second) noexcept {
        allocation_rate_target_config config;
        config.tracked_per_second = tracked_per_second;
        config.window_ns = window_ns;
        config.floor_interval = floor_interval;
        config.smallest_interval = floor_interval;
        config.largest_interval = jvmti_largest_interval;
        return config;
    }
    static std::uint64_t share(double per_second) noexcept {
        return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(per_second * static_cast<double>(window_ns) * 1e-9));
    }
    counts take_counts() noexcept {
        return {count_.exchange(0, std::memory_order_relaxed), bytes_.exchange(0, std::memory_order_relaxed),
                all_bytes_.exchange(0, std::memory_order_relaxed), tracked_.exchange(0, std::memory_order_relaxed),
                callbacks_.exchange(0, std::memory_order_relaxed)};
    }

    allocation_rate_rule rule_; // the agent's thread only
    const double callback_budget_;
    const std::uint64_t early_tracked_, early_callbacks_;
    std::atomic<std::uint64_t> interval_;
    // The current window's samples (any thread).
    std::atomic<double> count_{0}, bytes_{0}, all_bytes_{0};
    std::atomic<std::uint64_t> tracked_{0}, callbacks_{0};
    // Written by the agent's thread only.
    std::uint64_t window_start_ = 0; // 0: no window yet
    double all_byte_rate_ = 0;
    std::atomic<std::uint64_t> smallest_, largest_;
    std::atomic<std::uint64_t> windows_{0}, tracked_total_{0}, callbacks_total_{0}, windowed_ns_{0};
};

} // namespace ojx::jvm
