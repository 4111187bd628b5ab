// The per-context estimator: counting, gating, merging, and the online α estimate (statistically, over many
// seeded simulations of pairs compared at several places).
#include "ojx/random.hpp"
#include "ojx/replica_estimator.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

using namespace ojx;

TEST_CASE("no estimate below the minimum number of comparisons") {
    replica_evidence evidence;
    const estimator_config config{.min_comparisons = 5};
    for (std::uint64_t i = 1; i <= 4; ++i) evidence.record(i, i + 1, true);
    REQUIRE_FALSE(evidence.estimate(10, config).reported);
    evidence.record(5, 6, true);
    const auto e = evidence.estimate(10, config);
    REQUIRE(e.reported);
    REQUIRE(e.theta == 1.0);
    REQUIRE(e.comparisons() == 5);
    REQUIRE(e.pairs == 5);
}

TEST_CASE("theta interval counts independent evidence, not comparisons") {
    const estimator_config config{.min_comparisons = 1};
    replica_evidence one_probe_per_pair, four_probes_per_pair;
    for (std::uint64_t p = 0; p < 40; ++p) {
        one_probe_per_pair.record(p, 1000 + p, p % 4 != 0);
        for (int k = 0; k < 4; ++k) four_probes_per_pair.record(p, 1000 + p, p % 4 != 0);
    }
    const auto a = one_probe_per_pair.estimate(100, config);
    const auto b = four_probes_per_pair.estimate(100, config);
    REQUIRE(a.theta == Approx(0.75));
    REQUIRE(b.theta == Approx(0.75));
    REQUIRE(b.pairs == 40);
    // Four perfectly correlated probes per pair carry the evidence of one: same interval (each pair here has
    // its own source object, so both have 40 clusters).
    REQUIRE(b.theta_ci.low == Approx(a.theta_ci.low));
    REQUIRE(b.theta_ci.high == Approx(a.theta_ci.high));
}

TEST_CASE("targets that share a few sources give a wide interval") {
    // 200 pairs, but only 4 distinct sources, one of which differs from everything: θ̂ = 0.75 from what is
    // really 4 observations. The interval must be far wider than 200 independent comparisons would give.
    replica_evidence shared, independent;
    for (std::uint64_t t = 0; t < 200; ++t) {
        shared.record(t % 4, 1000 + t, t % 4 != 0);
        independent.record(t, 1000 + t, t % 4 != 0);
    }
    const auto a = shared.estimate(300, {.min_comparisons = 1});
    const auto b = independent.estimate(300, {.min_comparisons = 1});
    REQUIRE(a.theta == Approx(0.75));
    REQUIRE(a.sources == 4);
    REQUIRE(b.sources == 200);
    REQUIRE(a.effective_comparisons < 5);
    REQUIRE(a.theta_ci.high - a.theta_ci.low > 3 * (b.theta_ci.high - b.theta_ci.low));
}

TEST_CASE("alpha counts only comparisons after a pair's first difference") {
    replica_evidence evidence;
    // Pair (1,2): equal, equal, different, equal, different → α evidence: the two after the first difference.
    for (bool eq : {true, true, false, true, false}) evidence.record(1, 2, eq);
    // Pair (3,4): identical objects, never different: no α evidence.
    for (int k = 0; k < 5; ++k) evidence.record(3, 4, true);
    REQUIRE(evidence.summary().alpha_comparisons == 2);
    REQUIRE(evidence.summary().alpha_equal == 1);
    const auto e = evidence.estimate(4, {.min_comparisons = 1});
    REQUIRE(e.alpha == Approx(0.5));
    REQUIRE(e.equal == 8);
    REQUIRE(e.different == 2);
}

TEST_CASE("merge sums evidence and the estimate is recomputed from the sums") {
    replica_evidence a, b, whole;
    fast_random rng(3);
    for (std::uint64_t p = 0; p < 200; ++p) {
        const bool eq = rng.chance(7, 10);
        (p % 2 ? a : b).record(p, p + 500, eq);
        whole.record(p, p + 500, eq);
    }
    a.merge(b);
    const estimator_config config{};
    const auto merged = a.estimate(300, config);
    const auto direct = whole.estimate(300, config);
    REQUIRE(merged.equal == direct.equal);
    REQUIRE(merged.different == direct.different);
    REQUIRE(merged.pairs == direct.pairs);
    REQUIRE(merged.theta == direct.theta);
    REQUIRE(merged.omega == direct.omega);
    REQUIRE(merged.gamma == direct.gamma);
}

TEST_CASE("online alpha is unbiased for non-identical pairs probed several times") {
    // 200 seeded runs. Each run: 300 pairs, of which 40 % are identical (always equal) and the rest are
    // non-identical with per-place equality probability α_true; each pair is compared at 3 places. The α
    // estimate's 95 % Wilson interval must contain α_true in ≥ 90 % of runs, and the mean estimate must be
    // within 0.02 of it. (The naive estimator — the equal fraction over every comparison of a pair that ever
    // differed — has expectation 0.49 for α = 0.6 and 0.61 for α = 0.85 here, and would fail.)
    for (double alpha_true : {0.3, 0.6, 0.85}) {
        int covered = 0;
        double sum = 0;
        constexpr int runs = 200;
        for (int run = 0; run < runs; ++run) {
            fast_random rng(static_cast<std::uint64_t>(run) * 104729 + static_cast<std::uint64_t>(alpha_true * 1000));
            replica_evidence evidence;
            for (std::uint64_t p = 0; p < 300; ++p) {
                const bool identical = rng.unit() < 0.4;
                for (int k = 0; k < 3; ++k) evidence.record(p, p + 10000, identical || rng.unit() < alpha_true);
            }
            const auto e = evidence.estimate(600, {.min_comparisons = 1});
            covered += e.alpha_ci.contains(alpha_true) ? 1 : 0;
            sum += e.alpha;
        }
        INFO("alpha " << alpha_true << " covered " << covered << "/" << runs << " mean " << sum / runs);
        CHECK(covered >= runs * 90 / 100);
        CHECK(std::abs(sum / runs - alpha_true) < 0.02);
    }
}

TEST_CASE("omega and gamma carry the intervals") {
    replica_evidence evidence;
    // 90 pairs equal at one place; 10 pairs different at a first place and then compared again (α evidence: 10
    // comparisons, 5 equal).
    for (std::uint64_t p = 0; p < 100; ++p) {
        evidence.record(p, p + 1000, p % 10 != 0);
        if (p % 10 == 0) evidence.record(p, p + 1000, p % 20 == 0);
    }
    const auto e = evidence.estimate(1000, {.min_comparisons = 1, .confidence = 0.95});
    REQUIRE(e.theta == Approx(95.0 / 110));
    REQUIRE(e.alpha_comparisons == 10);
    REQUIRE(e.alpha == Approx(0.5));
    REQUIRE(e.omega == Approx(std::max(0.0, e.theta_ci.low - e.alpha_ci.high)));
    REQUIRE(e.gamma == Approx(upper_bound_factor(e.theta_ci.high, e.alpha_ci.low, 1000)));
    REQUIRE(e.omega < lower_bound_factor(e.theta, e.alpha));
    REQUIRE(e.gamma > upper_bound_factor(e.theta, e.alpha, 1000));
    // A higher confidence widens everything.
    const auto wide = evidence.estimate(1000, {.min_comparisons = 1, .confidence = 0.99});
    REQUIRE(wide.theta_ci.low < e.theta_ci.low);
    REQUIRE(wide.omega <= e.omega);
}

TEST_CASE("differences without alpha evidence: omega claims nothing and gamma is unchanged") {
    // Every pair compared at one place: no pair is ever known non-identical before another comparison.
    replica_evidence evidence;
    for (std::uint64_t p = 0; p < 100; ++p) evidence.record(p, p + 1000, p % 10 != 0);
    const auto e = evidence.estimate(1000, {.min_comparisons = 1});
    REQUIRE(e.different == 10);
    REQUIRE(e.alpha_comparisons == 0);
    REQUIRE(e.alpha == 0);
    REQUIRE(e.alpha_ci == interval{0, 1});
    REQUIRE(e.omega == 0);
    REQUIRE(e.theta_ci.low > 0.8); // θ alone would have put ω there
    REQUIRE(e.gamma == Approx(upper_bound_factor(e.theta_ci.high, 0, 1000)));
}

TEST_CASE("partial replicas with few alpha comparisons: the largest group stays inside [omega, gamma]") {
    // A synthetic heap like JavaReplicas' routing tables: 300 objects of 64 comparison windows, 70 % exact copies
    // of a template, 30 % copies with 14 windows changed (each copy unique). Largest-group ratio 0.7, but two
    // objects compare equal at ~87 % of places (α ≈ 0.75 for non-identical pairs), so ω would be ≈ θ ≈ 0.87 if α
    // were taken as 0. As in a JVM run without debug-register traps, each context gets 25-80 comparisons from 12
    // remembered source objects, and only 1 pair in 10 is compared at a second place: most runs have no α
    // comparison at all, the rest a handful. Over 500 seeds, X_N/X must lie in [ω, γ] in ≥ 95 % of the runs
    // (the estimate's confidence is 95 %); taking α as 0 without evidence covered it in 63 %, this rule in 99.6 %.
    constexpr std::size_t objects = 300, windows = 64, changed_windows = 14, sources = 12;
    constexpr int runs = 500;
    int covered = 0, without_alpha = 0;
    for (int run = 0; run < runs; ++run) {
        fast_random rng(static_cast<std::uint64_t>(run) * 7919 + 17);
        std::vector<std::vector<bool>> changed(objects, std::vector<bool>(windows, false));
        std::size_t exact = 0;
        for (auto& windows_changed : changed) {
            if (rng.unit() < 0.7) {
                ++exact;
                continue;
            }
            for (std::size_t k = 0; k < changed_windows;) {
                auto&& window = windows_changed[static_cast<std::size_t>(rng.below(windows))];
                if (!window) {
                    window = true;
                    ++k;
                }
            }
        }
        const auto equal_at = [&](std::size_t a, std::size_t b, std::size_t window) {
            return !changed[a][window] && !changed[b][window]; // changes are unique: changed windows differ
        };
        replica_evidence evidence;
        const std::uint64_t comparisons = 25 + rng.below(56);
        for (std::uint64_t c = 0; c < comparisons; ++c) {
            const auto source = static_cast<std::size_t>(rng.below(sources));
            const auto target = sources + static_cast<std::size_t>(rng.below(objects - sources));
            const int places = rng.unit() < 0.1 ? 2 : 1;
            for (int k = 0; k < places; ++k)
                evidence.record(source, target,
                                equal_at(source, target, static_cast<std::size_t>(rng.below(windows))));
        }
        const auto e = evidence.estimate(objects, {.min_comparisons = 20});
        REQUIRE(e.reported);
        const double ratio = static_cast<double>(std::max(exact, std::size_t{1})) / objects;
        covered += e.omega <= ratio && ratio <= e.gamma ? 1 : 0;
        without_alpha += e.alpha_comparisons == 0 ? 1 : 0;
    }
    INFO("covered " << covered << "/" << runs << ", runs without alpha evidence " << without_alpha);
    CHECK(without_alpha > runs / 2); // the situation this test is about
    CHECK(covered >= runs * 95 / 100);
}

TEST_CASE("no comparison differed: alpha is taken as 0 and omega is theta's low end") {
    replica_evidence evidence;
    for (std::uint64_t p = 0; p < 60; ++p) evidence.record(p, p + 1000, true);
    const auto e = evidence.estimate(1000, {.min_comparisons = 1});
    REQUIRE(e.alpha_ci == interval{0, 0});
    REQUIRE(e.omega == Approx(e.theta_ci.low));
    REQUIRE(e.omega > 0.9);
}
