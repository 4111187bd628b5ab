// Adaptive allocation tracking (ojx/allocation_rate_target.hpp), simulated with a fake clock: the tracked rate
// converges to the target after a step change in the program's allocation rate, a quiet program has every
// eligible allocation tracked, and per-object weights at the interval in force keep the allocation counts
// unbiased while the interval moves.
#include "ojx/allocation_metrics.hpp"
#include "ojx/allocation_rate_target.hpp"
#include "ojx/random.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <thread>
#include <vector>

using namespace ojx;

namespace {

// A program's eligible allocations: sizes from 1 KiB to 16 KiB, small ones most common.
std::uint64_t draw_size(fast_random& rng) {
    const std::uint64_t sizes[] = {1024, 1024, 1024, 2048, 2048, 4096, 4096, 16384};
    return sizes[rng.below(std::size(sizes))];
}

// Poisson sampling over bytes with a gap rescaled when the interval changes, as the native agent's sampler does:
// an object of s bytes is tracked with probability 1 − e^(−s/interval) at the interval in force for it.
class rescaling_sampler {
public:
    explicit rescaling_sampler(std::uint64_t seed) : rng_(seed) {}
    bool sampled(std::uint64_t size, std::uint64_t interval) {
        if (interval == 0) {
            drawn_at_ = 0;
            return true;
        }
        if (drawn_at_ == 0)
            remaining_ = gap(interval);
        else if (drawn_at_ != interval)
            remaining_ *= static_cast<double>(interval) / static_cast<double>(drawn_at_);
        drawn_at_ = interval;
        remaining_ -= static_cast<double>(size);
        if (remaining_ > 0) return false;
        remaining_ = gap(interval);
        return true;
    }

private:
    double gap(std::uint64_t interval) { return -std::log(1 - rng_.unit()) * static_cast<double>(interval); }
    fast_random rng_;
    std::uint64_t drawn_at_ = 0;
    double remaining_ = 0;
};

constexpr std::uint64_t window_ns = 200'000'000;

// One simulated run: `rates[w]` eligible allocations per second in window w, spread evenly over it; the
// controller is ticked every 64 allocations (the agent's periodic check) and at each window's end. Returns the
// tracked count of each window, and adds each tracked object's weight to `estimated` (its true count to `truth`).
struct run_result {
    std::vector<double> tracked;
    std::vector<std::uint64_t> intervals; // in force at each window's start
    double estimated = 0;
    double variance = 0;
    double truth = 0;
};

run_result simulate(const std::vector<double>& rates, double target, std::uint64_t seed) {
    allocation_rate_target_config config;
    config.tracked_per_second = target;
    config.window_ns = window_ns;
    allocation_rate_target controller(config);
    fast_random rng(seed);
    rescaling_sampler sampler(seed ^ 0xabcdef);
    run_result result;
    std::uint64_t now = 1'000'000'000;
    controller.tick(now);
    std::uint64_t unreported_count = 0, unreported_bytes = 0, unreported_tracked = 0;
    for (const double rate : rates) {
        const auto count = static_cast<std::uint64_t>(rate * 0.2);
        const std::uint64_t step = count == 0 ? window_ns : window_ns / count;
        result.intervals.push_back(controller.interval());
        double tracked = 0;
        const std::uint64_t end = now + window_ns;
        for (std::uint64_t i = 0; i < count; ++i) {
            now += step;
            const std::uint64_t size = draw_size(rng);
            const std::uint64_t interval = controller.interval();
            ++unreported_count;
            unreported_bytes += size;
            result.truth += 1;
            if (sampler.sampled(size, interval)) {
                tracked += 1;
                ++unreported_tracked;
                const double weight = sampling_weight(size, interval);
                result.estimated += weight;
                result.variance += weight * (weight - 1);
            }
            if (unreported_count == 64) {
                controller.add(unreported_count, unreported_bytes, unreported_tracked);
                unreported_count = unreported_bytes = unreported_tracked = 0;
                controller.tick(now);
            }
        }
        now = end;
        controller.add(unreported_count, unreported_bytes, unreported_tracked);
        unreported_count = unreported_bytes = unreported_tracked = 0;
        controller.tick(now);
        result.tracked.push_back(tracked / 0.2);
    }
    return result;
}

// What the rule's model predicts for `count` objects of `size` bytes at `interval`: a window that tracked exactly
// that leaves its correction at 1.
double predicted(double count, double size, std::uint64_t interval) {
    return count * -std::expm1(-size / static_cast<double>(interval));
}

std::vector<double> phases(std::initializer_list<std::pair<double, int>> parts) {
    std::vector<double> rates;
    for (const auto& [rate, windows] : parts) rates.insert(rates.end(), static_cast<std::size_t>(windows), rate);
    return rates;
}

double mean(const std::vector<double>& values, std::size_t from, std::size_t to) {
    double sum = 0;
    for (std::size_t i = from; i < to; ++i) sum += values[i];
    return sum / static_cast<double>(to - from);
}

} // namespace

TEST_CASE("the rule: the floor while the program allocates less than the target, the solved interval above it") {
    allocation_rate_target_config config;
    config.tracked_per_second = 1000;
    allocation_rate_rule rule(config);
    CHECK(rule.observe(100, 100 * 4096, 100, 0.2) == 0); // 500/s < 1000/s
    CHECK(rule.observe(0, 0, 0, 0.0) == 0);            // a window of no length changes nothing
    // Far above the target: 1000 tracked of 1e6 equal objects of 4 KiB needs 1 − e^(−4096/I) = 1e-3.
    allocation_rate_rule heavy(config);
    const std::uint64_t solved = heavy.observe(200000, 200000.0 * 4096, 200000, 0.2);
    CHECK(static_cast<double>(solved) == Approx(4096 / -std::log1p(-1e-3)).epsilon(1e-6));
}

TEST_CASE("the rule moves the interval by at most a step per window, and reaches the floor in steps") {
    allocation_rate_target_config config;
    config.tracked_per_second = 1000;
    allocation_rate_rule rule(config);
    const std::uint64_t heavy = rule.observe(200000, 200000.0 * 4096, 200000, 0.2);
    CHECK(heavy > 1'000'000);
    // Ten times heavier: the wanted interval is ≈ 10× larger, a window moves it by 4× at most.
    const std::uint64_t next = rule.observe(2000000 * 8, 2000000.0 * 8 * 4096, predicted(2000000 * 8, 4096, heavy), 0.2);
    CHECK(static_cast<double>(next) == Approx(4.0 * static_cast<double>(heavy)).epsilon(1e-9));
    // Quiet: the smoothed rate halves a window, and the interval follows it (first up to what the smoothed rate
    // still wants, then down), never by more than 4× a window, to the floor once below smallest_interval.
    std::uint64_t previous = next;
    int windows = 0;
    while (previous != 0 && windows < 40) {
        const std::uint64_t now = rule.observe(10, 10 * 4096, 10, 0.2);
        CHECK(static_cast<double>(now) <= 4.0 * static_cast<double>(previous));
        if (now != 0) CHECK(static_cast<double>(now) >= static_cast<double>(previous) / 4 - 1);
        if (now == 0) CHECK(static_cast<double>(previous) / 4 < 256);
        previous = now;
        ++windows;
    }
    CHECK(previous == 0);
    CHECK(windows <= 30);
}

TEST_CASE("a positive floor: a quiet program is sampled at it, never tracked whole") {
    allocation_rate_target_config config;
    config.tracked_per_second = 1000;
    config.floor_interval = 16384;
    allocation_rate_rule rule(config);
    CHECK(rule.observe(10, 10 * 4096, 10, 0.2) == 16384);
    CHECK(rule.observe(2000000, 2000000.0 * 4096, predicted(2000000, 4096, 16384), 0.2) > 16384);
    for (int i = 0; i < 20; ++i) rule.observe(10, 10 * 4096, 10, 0.2);
    CHECK(rule.interval() == 16384);
}

TEST_CASE("raise_to holds the interval up, and the next window predicts at the interval held") {
    allocation_rate_target_config config;
    config.tracked_per_second = 1000;
    config.floor_interval = 4096;
    config.smallest_interval = 4096;
    allocation_rate_rule rule(config);
    CHECK(rule.observe(100, 100 * 4096, predicted(100, 4096, 4096), 0.2) == 4096); // quiet: the floor
    CHECK(rule.raise_to(65536) == 65536);
    CHECK(rule.raise_to(1024) == 65536); // never lowers
    // Quiet again: the interval steps down from where it was held (÷4 a window), not from the floor.
    CHECK(rule.observe(100, 100 * 4096, predicted(100, 4096, 65536), 0.2) == 16384);
    // Heavy, tracked as the held interval predicts: what was learnt of c is that the model was right.
    rule.raise_to(65536);
    rule.observe(200000, 200000.0 * 4096, predicted(200000, 4096, 65536), 0.2);
    CHECK(rule.correction() == Approx(1).epsilon(1e-9));
    CHECK(rule.raise_to(std::uint64_t{1} << 50) == config.largest_interval);
}

TEST_CASE("the concurrent front: the first tick starts the clock, a window closes only when it has lasted") {
    allocation_rate_target_config config;
    config.tracked_per_second = 1000;
    allocation_rate_target target(config);
    CHECK(target.interval() == 0);
    target.add(5, 5 * 4096, 5); // before the clock started: not a rate
    CHECK_FALSE(target.tick(1000));
    target.add(1000000, 1000000ull * 4096, 399); // 2 × 1000/s × 0.2 s tracked would close it early
    CHECK_FALSE(target.tick(1000 + window_ns - 1));
    CHECK(target.tick(1000 + window_ns));
    CHECK(target.interval() > 1'000'000);
    CHECK(target.windows() == 1);
    CHECK(target.smallest_interval() == 0);
    CHECK(target.largest_interval() == target.interval());
}

TEST_CASE("a window that has tracked twice its share of the target closes at once") {
    allocation_rate_target_config config;
    config.tracked_per_second = 1000;
    allocation_rate_target target(config);
    CHECK_FALSE(target.tick(1000));
    target.add(399, 399 * 4096, 399);
    CHECK_FALSE(target.tick(2000));
    target.add(1, 4096, 1); // 400 tracked within 1 µs: a program allocating 4e8 a second
    CHECK(target.tick(2000));
    CHECK(target.interval() > 1'000'000);
}

TEST_CASE("the concurrent front loses no count when many threads add and tick at once") {
    allocation_rate_target_config config;
    config.tracked_per_second = 1e12; // never above: the interval stays 0 and the rule only sums
    config.window_ns = 1;
    allocation_rate_target target(config);
    std::atomic<std::uint64_t> clock{1};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&] {
            for (int i = 0; i < 20000; ++i) {
                target.add(1, 1024, 1);
                target.tick(clock.fetch_add(1, std::memory_order_relaxed));
            }
        });
    for (std::thread& thread : threads) thread.join();
    CHECK(target.interval() == 0);
    CHECK(target.windows() > 0);
}

// Tolerance: the tracked rate, averaged over windows 10-39 after a step change, within 10 % of the target in
// every one of 100 seeds, and within 3 % on average over the seeds. Each window's count is Poisson (≈ 7 % spread
// at 1000/s in 0.2 s windows, ≈ 1.3 % over 30 windows); for this mix of 1-16 KiB sizes the learnt correction
// brings the mean to within 1.5 % of the target (measured: 999, 987, 998 and 1000 per second for the four steps;
// without it the step to 5× the target tracked 864).
TEST_CASE("after a step up or down in allocation rate the tracked rate converges to the target (100 seeds)") {
    const double target = 1000;
    const std::vector<std::pair<double, double>> steps{{100, 2e5}, {2e5, 5e3}, {5e3, 6e4}, {6e4, 2e5}};
    for (const auto& [before, after] : steps) {
        double sum_of_means = 0;
        int seeds = 0;
        for (std::uint64_t seed = 1; seed <= 100; ++seed, ++seeds) {
            const run_result run = simulate(phases({{before, 10}, {after, 40}}), target, seed);
            const double settled = mean(run.tracked, 20, 50);
            INFO("from " << before << "/s to " << after << "/s, seed " << seed << ": " << settled << " tracked/s");
            CHECK(std::abs(settled / target - 1) < 0.10);
            sum_of_means += settled;
        }
        INFO("from " << before << "/s to " << after << "/s: mean tracked rate " << sum_of_means / seeds);
        CHECK(std::abs(sum_of_means / seeds / target - 1) < 0.03);
    }
}

// A rise by 2000× is bounded within one window: the window after the step already tracks within 1.3× the target
// (a rise is believed at once, and from the floor the rule goes straight to the solved interval); after a fall the
// smoothed rate halves a window, so 2e5/s to 100/s reaches the floor within 12 windows (2.4 s), and from then on
// every allocation is tracked.
TEST_CASE("quiet programs have every eligible allocation tracked; a burst is bounded within a window (100 seeds)") {
    for (std::uint64_t seed = 1; seed <= 100; ++seed) {
        const run_result up = simulate(phases({{100, 10}, {2e5, 5}}), 1000, seed);
        INFO("seed " << seed);
        CHECK(up.intervals[9] == 0);
        CHECK(up.tracked[9] == Approx(100).epsilon(1e-9)); // quiet: all of them
        CHECK(up.tracked[11] < 1.3 * 1000);
        const run_result down = simulate(phases({{2e5, 10}, {100, 20}}), 1000, seed);
        CHECK(down.intervals[9] > 0);
        CHECK(down.intervals[10 + 12] == 0);
        CHECK(down.tracked[29] == Approx(100).epsilon(1e-9));
    }
}

// Tolerance: over 200 seeds of a run whose rate changes five times (so the interval moves in most windows), the
// mean of Σ weight / true count is within 1 % of 1 (the standard error of that mean is ≈ 0.2 %: a bias of 1 %
// fails), and the per-run interval ± 1.96·sqrt(Σ (1 − p)/p²) covers the truth in 91-99 % of the runs.
TEST_CASE("weights at the interval in force keep the counts unbiased while the interval moves (200 seeds)") {
    const std::vector<double> rates = phases({{6e4, 3}, {4e3, 3}, {2e5, 3}, {100, 5}, {1.6e4, 3}, {8e4, 3}});
    const int seeds = 200;
    double mean_ratio = 0;
    int covered = 0;
    bool moved = false;
    for (std::uint64_t seed = 1; seed <= static_cast<std::uint64_t>(seeds); ++seed) {
        const run_result run = simulate(rates, 1000, seed);
        for (std::size_t w = 1; w < run.intervals.size(); ++w) moved |= run.intervals[w] != run.intervals[w - 1];
        mean_ratio += run.estimated / run.truth / seeds;
        covered += std::abs(run.estimated - run.truth) <= 1.96 * std::sqrt(run.variance) ? 1 : 0;
    }
    INFO("mean estimate / truth " << mean_ratio << ", interval covered " << covered << " of " << seeds);
    CHECK(moved);
    CHECK(std::abs(mean_ratio - 1) < 0.01);
    CHECK(covered >= seeds * 91 / 100);
    CHECK(covered <= seeds * 99 / 100);
}
