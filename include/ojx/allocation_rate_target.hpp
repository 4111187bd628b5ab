// Adaptive allocation tracking: a target number of tracked allocations per second, met by choosing at run time
// the mean byte interval of Poisson allocation sampling (an object of s bytes is tracked with probability
// 1 − e^(−s/interval); allocation_metrics.hpp weighs it by the inverse). This is how JFR bounds its allocation
// samples (jdk.ObjectAllocationSample is throttled to a rate, from an EWMA of the population per window): a quiet
// program gets every eligible allocation tracked, an allocation-heavy one a bounded number per second.
//
// The rule (allocation_rate_rule) sees, per window, how many eligible allocations (at or above the size
// threshold) were made and their bytes — counted exactly, or estimated from the sampled objects themselves where
// the hook sees only samples (JVMTI: a sampled object of s bytes at interval I stands for 1/p objects and s/p
// bytes, p = 1 − e^(−s/I), an unbiased estimate however I moved; there every sample costs a callback, so the
// floor is above 0 and the caller may hold the interval higher with raise_to) — and how many were tracked. A
// rise in the rates is believed at once (overhead first); a fall is smoothed with an EWMA, so that one quiet
// window does not open the gates. If the smoothed rate n is at most the target T, the interval falls to its
// floor (0: every eligible allocation is tracked). Otherwise it solves c·n·(1 − e^(−s̄/I)) = T for I, s̄ being
// the mean eligible size: I = s̄ / −ln(1 − T/(c·n)). With equal sizes c = 1 makes that exact; for a mix of sizes the model over-predicts
// (1 − e^(−x) is concave: 1-16 KiB objects at 5× the target are tracked 14 % short), so c is learnt: the smoothed
// ratio of what was tracked to what the model predicted for the interval in force. A window moves the interval by
// at most a factor `step` either way, so one odd window cannot swing it; from the floor it goes straight to the
// computed interval. A window that has tracked twice its share of the target (2·T·window) closes at once, however
// short: a program that turns allocation-heavy, or starts so, pays for at most that many tracked allocations
// before the interval follows it.
//
// allocation_rate_target is the concurrent front an allocation hook uses: the interval is one relaxed atomic
// load; the population is added from per-thread counts now and then (relaxed atomic adds); whichever thread finds
// the window over closes it, with a clock reading the caller supplies (tests use a fake one), while the others go
// on. Standard C++ only; nothing here allocates or blocks.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>

namespace ojx {

struct allocation_rate_target_config {
    double tracked_per_second = 2000;               // the target T; > 0
    std::uint64_t window_ns = 200'000'000;          // how often the interval is reconsidered
    std::uint64_t floor_interval = 0;               // where a quiet program's interval goes; 0: track every one
    // A computed interval below this becomes the floor: sampling that would track nearly every eligible object
    // anyway (p ≥ 98 % for 1 KiB at 256) may as well track all of them.
    std::uint64_t smallest_interval = 256;
    std::uint64_t largest_interval = std::uint64_t{1} << 40;
    double step = 4;                                // at most ×step or ÷step per window
    double smoothing = 0.5;                         // EWMA weight of a newest window that is lower, in (0, 1]
};

// The rule alone, for one caller at a time.
class allocation_rate_rule {
public:
    explicit allocation_rate_rule(const allocation_rate_target_config& config) noexcept
        : config_(config), interval_(config.floor_interval) {}

    const allocation_rate_target_config& config() const noexcept { return config_; }
    std::uint64_t interval() const noexcept { return interval_; }
    // The smoothed rates (per second) the last window left; 0 before the first.
    double smoothed_count_rate() const noexcept { return count_rate_; }
    double smoothed_byte_rate() const noexcept { return byte_rate_; }

    // The learnt ratio of tracked to predicted (1 until a window at a positive interval has told).
    double correction() const noexcept { return correction_; }

    // A window of `seconds` in which `count` eligible allocations of `bytes` in all were made (or are estimated
    // to have been), `tracked` of them tracked at the interval in force. Returns the interval for the next
    // window. A window of no length changes nothing.
    std::uint64_t observe(double count, double bytes, double tracked, double seconds) noexcept {
        if (!(seconds > 0)) return interval_;
        const double n = std::max(count, 0.0) / seconds;
        const double b = std::max(bytes, 0.0) / seconds;
        // What the model predicted for this window; only a prediction of some size says anything of c (a few
        // objects are mostly Poisson noise).
        if (interval_ != 0 && count > 0 && bytes > 0) {
            const double predicted = count * -std::expm1(-bytes / count / static_cast<double>(interval_));
            if (predicted >= minimum_prediction) {
                const double ratio = std::clamp(std::max(tracked, 0.0) / predicted, 0.25, 1.5);
                correction_ += config_.smoothing * (ratio - correction_);
            }
        }
        if (!smoothed_) {
            count_rate_ = n;
            byte_rate_ = b;
            smoothed_ = true;
        } else {
            count_rate_ = n >= count_rate_ ? n : count_rate_ + config_.smoothing * (n - count_rate_);
            byte_rate_ = b >= byte_rate_ ? b : byte_rate_ + config_.smoothing * (b - byte_rate_);
        }
        interval_ = bounded(wanted());
        return interval_;
    }

    // Where the caller must keep the interval at or above `lowest` for a reason of its own (a JVMTI agent bounds
    // the callbacks that samples of every size cost): the interval becomes max(interval(), lowest), capped at
    // largest_interval, so that the next window's prediction, and the learnt c, use the interval in force.
    std::uint64_t raise_to(std::uint64_t lowest) noexcept {
        interval_ = std::max(interval_, std::min(lowest, config_.largest_interval));
        return interval_;
    }

    // The interval the smoothed rates call for, before the bound on change: the floor, or one in
    // [max(smallest_interval, floor), largest_interval].
    std::uint64_t wanted() const noexcept {
        const double target = config_.tracked_per_second;
        const double trackable = correction_ * count_rate_;
        if (trackable <= target || byte_rate_ <= 0) return config_.floor_interval;
        const double mean_size = byte_rate_ / count_rate_;
        const double solved = mean_size / -std::log1p(-target / trackable);
        if (!(solved >= static_cast<double>(std::max(config_.smallest_interval, config_.floor_interval))))
            return config_.floor_interval;
        if (solved >= static_cast<double>(config_.largest_interval)) return config_.largest_interval;
        return static_cast<std::uint64_t>(solved);
    }

private:
    static constexpr double minimum_prediction = 20;

    std::uint64_t bounded(std::uint64_t wanted) const noexcept {
        const std::uint64_t now = interval_;
        if (now == config_.floor_interval || now == 0) return wanted;
        const double current = static_cast<double>(now);
        const double low = current / config_.step;
        const double high = current * config_.step;
        if (wanted == config_.floor_interval) {
            // Down by a step, and to the floor once that is below what sampling is worth.
            if (low < static_cast<double>(std::max(config_.smallest_interval, config_.floor_interval)))
                return config_.floor_interval;
            return static_cast<std::uint64_t>(low);
        }
        const double w = static_cast<double>(wanted);
        if (w < low) return static_cast<std::uint64_t>(low);
        if (w > high) return std::min(static_cast<std::uint64_t>(high), config_.largest_interval);
        return wanted;
    }

    allocation_rate_target_config config_;
    std::uint64_t interval_;
    bool smoothed_ = false;
    double count_rate_ = 0;
    double byte_rate_ = 0;
    double correction_ = 1;
};

// The rule behind atomics, for allocation hooks on many threads.
class allocation_rate_target {
public:
    explicit allocation_rate_target(const allocation_rate_target_config& config) noexcept
        : rule_(config),
          early_close_(std::max<std::uint64_t>(
              1, static_cast<std::uint64_t>(2 * config.tracked_per_second * static_cast<double>(config.window_ns) * 1e-9))),
          interval_(rule_.interval()),
          smallest_(rule_.interval()),
          largest_(rule_.interval()) {}

    allocation_rate_target(const allocation_rate_target&) = delete;
    allocation_rate_target& operator=(const allocation_rate_target&) = delete;

    const allocation_rate_target_config& config() const noexcept { return rule_.config(); }

    // The interval in force: 0 tracks every eligible allocation. The allocation fast path's one shared read.
    std::uint64_t interval() const noexcept { return interval_.load(std::memory_order_relaxed); }

    // Eligible allocations made since the caller's previous report, `tracked` of them tracked (a thread's own
    // counts, added now and then).
    void add(std::uint64_t count, std::uint64_t bytes, std::uint64_t tracked) noexcept {
        count_.fetch_add(count, std::memory_order_relaxed);
        bytes_.fetch_add(bytes, std::memory_order_relaxed);
        tracked_.fetch_add(tracked, std::memory_order_relaxed);
    }

    // At `now_ns` (any monotonic clock, the same for every call): closes the window if it has lasted window_ns or
    // has tracked twice its share of the target, setting the interval for the next. The first call starts the
    // first window. One thread closes a window; a thread that finds another doing it returns at once. True when
    // this call closed one.
    bool tick(std::uint64_t now_ns) noexcept {
        const std::uint64_t start = window_start_.load(std::memory_order_relaxed);
        if (start != 0 && now_ns - start < rule_.config().window_ns &&
            tracked_.load(std::memory_order_relaxed) < early_close_)
            return false;
        if (closing_.exchange(true, std::memory_order_acquire)) return false;
        const std::uint64_t begun = window_start_.load(std::memory_order_relaxed);
        bool closed = false;
        if (begun == 0) {
            window_start_.store(now_ns == 0 ? 1 : now_ns, std::memory_order_relaxed);
            count_.store(0, std::memory_order_relaxed); // what came before the clock started is not a rate
            bytes_.store(0, std::memory_order_relaxed);
            tracked_.store(0, std::memory_order_relaxed);
        } else if (now_ns > begun && (now_ns - begun >= rule_.config().window_ns ||
                                      tracked_.load(std::memory_order_relaxed) >= early_close_)) {
            const auto count = static_cast<double>(count_.exchange(0, std::memory_order_relaxed));
            const auto bytes = static_cast<double>(bytes_.exchange(0, std::memory_order_relaxed));
            const auto tracked = static_cast<double>(tracked_.exchange(0, std::memory_order_relaxed));
            const std::uint64_t next =
                rule_.observe(count, bytes, tracked, static_cast<double>(now_ns - begun) * 1e-9);
            interval_.store(next, std::memory_order_relaxed);
            smallest_.store(std::min(smallest_.load(std::memory_order_relaxed), next), std::memory_order_relaxed);
            largest_.store(std::max(largest_.load(std::memory_order_relaxed), next), std::memory_order_relaxed);
            windows_.fetch_add(1, std::memory_order_relaxed);
            window_start_.store(now_ns, std::memory_order_relaxed);
            closed = true;
        }
        closing_.store(false, std::memory_order_release);
        return closed;
    }

    // For the exit summary: windows closed, and the smallest and largest interval that was in force.
    std::uint64_t windows() const noexcept { return windows_.load(std::memory_order_relaxed); }
    std::uint64_t smallest_interval() const noexcept { return smallest_.load(std::memory_order_relaxed); }
    std::uint64_t largest_interval() const noexcept { return largest_.load(std::memory_order_relaxed); }

private:
    allocation_rate_rule rule_; // only while closing_ is held
    const std::uint64_t early_close_; // tracked in a window that close it before window_ns
    std::atomic<std::uint64_t> interval_;
    std::atomic<std::uint64_t> count_{0};
    std::atomic<std::uint64_t> bytes_{0};
    std::atomic<std::uint64_t> tracked_{0};
    std::atomic<std::uint64_t> window_start_{0}; // 0: no window yet
    std::atomic<bool> closing_{false};
    std::atomic<std::uint64_t> windows_{0};
    std::atomic<std::uint64_t> smallest_;
    std::atomic<std::uint64_t> largest_;
};

} // namespace ojx
