// adaptive_heap_sampling (the JVM agent's moving JVMTI interval) against a simulated JVM: each 50 ms tick of a fake
// clock, the program allocates eligible 4 KiB objects and small 48-byte ones, and a JVMTI-like sampler samples each
// with probability 1 − e^(−s/I) at the interval the agent last set. Claims are checked over many seeds.
#include "adaptive_heap_sampling.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>

using ojx::jvm::adaptive_heap_sampling;

namespace {

constexpr std::uint64_t tick_ns = 50'000'000;
constexpr double tick_seconds = 0.05;
constexpr std::uint64_t eligible_bytes = 4096;
constexpr std::uint64_t small_bytes = 48;

struct program {
    double eligible_per_second;
    double small_bytes_per_second;
};

struct totals {
    double tracked = 0, callbacks = 0, seconds = 0;
    std::uint64_t smallest_interval = ~std::uint64_t{0};
};

// Runs `seconds` of `p`, counting from `measure_from` seconds on.
totals simulate(adaptive_heap_sampling& sampling, const program& p, double seconds, double measure_from,
                std::mt19937_64& random, std::uint64_t& now) {
    totals out;
    double elapsed = 0;
    while (elapsed < seconds) {
        const std::uint64_t interval = sampling.interval();
        const auto draw = [&](double expected_objects, std::uint64_t bytes) {
            const double p_sample = ojx::sampling_probability(bytes, interval);
            std::poisson_distribution<std::uint64_t> objects(expected_objects);
            std::binomial_distribution<std::uint64_t> sampled(objects(random), p_sample);
            return sampled(random);
        };
        const std::uint64_t eligible = draw(p.eligible_per_second * tick_seconds, eligible_bytes);
        const std::uint64_t small = draw(p.small_bytes_per_second * tick_seconds / small_bytes, small_bytes);
        for (std::uint64_t i = 0; i < eligible; ++i) sampling.on_sample(eligible_bytes, interval, true);
        for (std::uint64_t i = 0; i < small; ++i) sampling.on_sample(small_bytes, interval, false);
        now += tick_ns;
        sampling.tick(now);
        elapsed += tick_seconds;
        if (elapsed > measure_from) {
            out.tracked += static_cast<double>(eligible);
            out.callbacks += static_cast<double>(eligible + small);
            out.seconds += tick_seconds;
            out.smallest_interval = std::min(out.smallest_interval, sampling.interval());
        }
    }
    return out;
}

} // namespace

TEST_CASE("an allocation-heavy program is tracked at the target (20 seeds)") {
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
        std::mt19937_64 random(seed);
        adaptive_heap_sampling sampling(1000);
        std::uint64_t now = 1;
        sampling.tick(now);
        const totals t = simulate(sampling, {50'000, 0}, 10, 2, random, now);
        const double rate = t.tracked / t.seconds;
        INFO("seed " << seed << ": " << rate << " tracked a second");
        CHECK(std::abs(rate - 1000) < 100); // Poisson noise over 8 s ≈ 1 %; the rule settles within 3 %
    }
}

TEST_CASE("a quiet program is sampled at the floor") {
    std::mt19937_64 random(7);
    adaptive_heap_sampling sampling(1000);
    std::uint64_t now = 1;
    sampling.tick(now);
    const totals t = simulate(sampling, {100, 1e6}, 5, 1, random, now);
    CHECK(sampling.interval() == adaptive_heap_sampling::floor_interval);
    CHECK(sampling.largest_interval() == adaptive_heap_sampling::floor_interval);
    // 100 a second, each sampled with p = 1 − e^(−1) ≈ 0.63.
    CHECK(std::abs(t.tracked / t.seconds - 63.2) < 4 * std::sqrt(63.2 / t.seconds));
}

TEST_CASE("small objects hold the interval up: callbacks stay within their budget (20 seeds)") {
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
        std::mt19937_64 random(seed);
        adaptive_heap_sampling sampling(1000);
        std::uint64_t now = 1;
        sampling.tick(now);
        // 1 GB/s of 48-byte objects: 250 000 callbacks a second at the floor.
        const totals t = simulate(sampling, {200, 1e9}, 6, 1, random, now);
        const double callbacks = t.callbacks / t.seconds;
        INFO("seed " << seed << ": " << callbacks << " callbacks a second, budget " << sampling.callback_budget());
        CHECK(callbacks <= 1.1 * sampling.callback_budget());
        CHECK(callbacks >= 0.8 * sampling.callback_budget()); // held no higher than the budget needs
        CHECK(t.smallest_interval > adaptive_heap_sampling::floor_interval);
    }
}

TEST_CASE("a window that has tracked twice its share says so once, and closes at the next tick") {
    adaptive_heap_sampling sampling(1000);
    sampling.tick(1);
    const std::uint64_t share = 2 * 1000 * adaptive_heap_sampling::window_ns / 1'000'000'000;
    std::uint64_t said = 0;
    for (std::uint64_t i = 0; i < 3 * share; ++i) said += sampling.on_sample(eligible_bytes, sampling.interval(), true);
    CHECK(said == 1);
    // 10 ms into the window: closed all the same, the interval moved off the floor.
    const auto next = sampling.tick(1 + 10'000'000);
    REQUIRE(next.has_value());
    CHECK(*next > adaptive_heap_sampling::floor_interval);
    CHECK(sampling.windows() == 1);
    CHECK(sampling.tracked_in_windows() == 3 * share);
}
