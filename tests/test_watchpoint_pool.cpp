// The watchpoint pool and its replacement policies. The reservoir policy is checked statistically against an
// exact model: many seeded trials, each probability compared with its exact value within 4.5 standard errors.
#include "ojx/watchpoint_pool.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <vector>

using namespace ojx;

namespace {

struct tag {
    int id = -1;
};

template <class Policy>
std::vector<int> survivors_after(std::size_t slots, int candidates, std::uint64_t seed) {
    watchpoint_pool<tag, Policy> pool(slots, seed);
    for (int c = 0; c < candidates; ++c) pool.offer(0x1000 + 8 * static_cast<address>(c), 8, tag{c});
    std::vector<int> kept;
    for (std::size_t s = 0; s < slots; ++s)
        if (pool.armed(s)) kept.push_back(pool.at(s).payload.id);
    return kept;
}

// Exact probability that each candidate is held at the end, for Witch's policy as documented: free slots are
// taken lowest index first; when all are armed, the slots are visited in a uniformly random order, and at a
// slot with n competitors the candidate takes it with probability 1/(n+1); n grows by one at every visit.
std::vector<double> exact_retention(std::size_t slots, int candidates) {
    std::vector<double> result(static_cast<std::size_t>(candidates), 0.0);
    std::function<void(int, std::vector<int>, std::vector<std::uint64_t>, double)> step =
        [&](int next, std::vector<int> holder, std::vector<std::uint64_t> n, double p) {
            if (next == candidates) {
                for (int h : holder) result[static_cast<std::size_t>(h)] += p;
                return;
            }
            std::vector<std::size_t> order(slots);
            std::iota(order.begin(), order.end(), 0);
            double orders = 0;
            std::vector<std::vector<std::size_t>> permutations;
            do {
                permutations.push_back(order);
                orders += 1;
            } while (std::next_permutation(order.begin(), order.end()));
            for (const auto& perm : permutations) {
                // Walk the order: at each slot, either take it (and stop) or move on.
                double reach = p / orders;
                std::vector<std::uint64_t> counts = n;
                for (std::size_t v = 0; v < perm.size(); ++v) {
                    const std::size_t s = perm[v];
                    const double take = 1.0 / static_cast<double>(counts[s] + 1);
                    counts[s] += 1;
                    std::vector<int> taken = holder;
                    taken[s] = next;
                    step(next + 1, taken, counts, reach * take);
                    reach *= 1 - take;
                }
                step(next + 1, holder, counts, reach); // no slot taken
            }
        };
    std::vector<int> holder;
    std::vector<std::uint64_t> n;
    for (std::size_t s = 0; s < slots && static_cast<int>(s) < candidates; ++s) {
        holder.push_back(static_cast<int>(s));
        n.push_back(1);
    }
    step(static_cast<int>(holder.size()), holder, n, 1.0);
    return result;
}

} // namespace

TEST_CASE("free slots are used before any replacement, lowest first") {
    watchpoint_pool<tag, reservoir_replacement> pool(4, 1);
    for (int c = 0; c < 4; ++c) {
        const auto placed = pool.offer(0x100 + 8 * static_cast<address>(c), 8, tag{c});
        REQUIRE(placed.slot == static_cast<std::size_t>(c));
        REQUIRE_FALSE(placed.evicted);
    }
    REQUIRE(pool.armed_count() == 4);
    REQUIRE(pool.find(0x108) == std::optional<std::size_t>{1});
    REQUIRE_FALSE(pool.find(0x200));
    const auto released = pool.release(1);
    REQUIRE(released);
    REQUIRE(released->payload.id == 1);
    REQUIRE_FALSE(pool.release(1)); // already free
    REQUIRE(pool.offer(0x300, 4, tag{9}).slot == std::optional<std::size_t>{1});
    REQUIRE(pool.at(1).width == 4);
}

TEST_CASE("slot count is capped at the pool's maximum") {
    watchpoint_pool<tag, reservoir_replacement> pool(100, 1);
    REQUIRE(pool.slot_count() == max_watchpoint_slots);
    REQUIRE_FALSE(pool.armed(max_watchpoint_slots));
}

TEST_CASE("oldest-first replaces the slot armed longest ago and reports the eviction") {
    watchpoint_pool<tag, oldest_first_replacement> pool(2, 1);
    pool.offer(0x10, 8, tag{0});
    pool.offer(0x18, 8, tag{1});
    auto placed = pool.offer(0x20, 8, tag{2}); // slot 0 held tag 0
    REQUIRE(placed.slot == std::optional<std::size_t>{0});
    REQUIRE(placed.evicted);
    REQUIRE(pool.at(0).payload.id == 2);
    placed = pool.offer(0x28, 8, tag{3}); // slot 1 held tag 1
    REQUIRE(placed.slot == std::optional<std::size_t>{1});
    REQUIRE(placed.evicted);
    REQUIRE(pool.at(1).payload.id == 3);
}

TEST_CASE("keep-armed never replaces") {
    const auto kept = survivors_after<keep_armed_replacement>(3, 50, 5);
    REQUIRE(kept == std::vector<int>{0, 1, 2});
}

TEST_CASE("reservoir with one slot keeps each of k candidates with probability 1/k") {
    // 40,000 trials of 10 candidates: each count ~ Binomial(40000, 0.1), sd = 60. Allow 4.5 sd per cell and a
    // chi-square below the 0.999 quantile for 9 degrees of freedom (27.9).
    constexpr int k = 10;
    constexpr int trials = 40000;
    std::vector<int> counts(k, 0);
    for (int t = 0; t < trials; ++t) counts[static_cast<std::size_t>(survivors_after<reservoir_replacement>(1, k, 1000 + static_cast<std::uint64_t>(t)).at(0))]++;
    const double expected = static_cast<double>(trials) / k;
    double chi2 = 0;
    for (int c : counts) {
        CHECK(std::abs(c - expected) < 4.5 * std::sqrt(expected * (1 - 1.0 / k)));
        chi2 += (c - expected) * (c - expected) / expected;
    }
    CHECK(chi2 < 27.9);
}

TEST_CASE("reservoir with several slots keeps each candidate with the exact model's probability") {
    for (const auto& [slots, candidates] : {std::pair<std::size_t, int>{2, 6}, {3, 6}}) {
        const auto exact = exact_retention(slots, candidates);
        REQUIRE(std::abs(std::accumulate(exact.begin(), exact.end(), 0.0) - static_cast<double>(slots)) < 1e-9);
        constexpr int trials = 60000;
        std::vector<int> counts(static_cast<std::size_t>(candidates), 0);
        for (int t = 0; t < trials; ++t)
            for (int id : survivors_after<reservoir_replacement>(slots, candidates, 77 + static_cast<std::uint64_t>(t) * 7919))
                counts[static_cast<std::size_t>(id)]++;
        for (int c = 0; c < candidates; ++c) {
            const double p = exact[static_cast<std::size_t>(c)];
            const double observed = static_cast<double>(counts[static_cast<std::size_t>(c)]) / trials;
            INFO("slots " << slots << " candidate " << c << " exact " << p << " observed " << observed);
            CHECK(std::abs(observed - p) < 4.5 * std::sqrt(p * (1 - p) / trials));
        }
    }
}

TEST_CASE("reservoir keeps old candidates in play where oldest-first forgets them") {
    // After 100 candidates into 4 slots, oldest-first holds only the last 4; the reservoir still holds an
    // early candidate (one of the first 50) in a sizeable fraction of runs.
    int early_kept = 0;
    constexpr int trials = 2000;
    for (int t = 0; t < trials; ++t) {
        const auto kept = survivors_after<reservoir_replacement>(4, 100, 5000 + static_cast<std::uint64_t>(t));
        early_kept += std::any_of(kept.begin(), kept.end(), [](int id) { return id < 50; }) ? 1 : 0;
        if (t < 10) {
            const auto fifo = survivors_after<oldest_first_replacement>(4, 100, static_cast<std::uint64_t>(t));
            REQUIRE(*std::min_element(fifo.begin(), fifo.end()) == 96);
        }
    }
    CHECK(early_kept > trials / 10);
}
