// The paper's bound formulas and the confidence intervals, checked against known values and, for the bounds,
// exhaustively over every way to split small X into groups.
#include "ojx/replica_bounds.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <vector>

using namespace ojx;

TEST_CASE("normal quantiles match the tables") {
    CHECK(normal_quantile_two_sided(0.95) == Approx(1.959964).epsilon(1e-6));
    CHECK(normal_quantile_two_sided(0.99) == Approx(2.575829).epsilon(1e-6));
    CHECK(normal_quantile_two_sided(0.90) == Approx(1.644854).epsilon(1e-6));
    CHECK(normal_quantile_two_sided(0.5) == Approx(0.674490).epsilon(1e-6));
}

TEST_CASE("Wilson interval matches known values and edge cases") {
    const double z = normal_quantile_two_sided(0.95);
    // 8 successes of 10: Wilson 95% interval [0.4902, 0.9433].
    const interval i = wilson_interval(8, 10, z);
    CHECK(i.low == Approx(0.4902).margin(1e-4));
    CHECK(i.high == Approx(0.9433).margin(1e-4));
    // All successes: the upper end is 1, the lower end below 1 and shrinking with n.
    CHECK(wilson_interval(20, 20, z).high == 1.0); // exactly: a true θ of 1 must be inside
    CHECK(wilson_interval(20, 20, z).low < wilson_interval(200, 200, z).low);
    CHECK(wilson_interval(0, 50, z).low == 0.0);
    CHECK(wilson_interval(0, 0, z) == interval{0, 1});
}

TEST_CASE("omega and gamma follow the paper's formulas") {
    // θ = 0.9, α = 0.2, X = 101: ω = 0.7; γ = 1/200 + sqrt(1/40000 + 0.7/0.8).
    CHECK(lower_bound_factor(0.9, 0.2) == Approx(0.7));
    CHECK(upper_bound_factor(0.9, 0.2, 101) == Approx(0.005 + std::sqrt(0.000025 + 0.875)));
    CHECK(identical_pair_fraction(0.9, 0.2) == Approx(0.875));
    // Clamps: θ < α gives ω = 0 and A = 0; α = 1 tells nothing apart; one object is trivially its own group.
    CHECK(lower_bound_factor(0.1, 0.3) == 0.0);
    CHECK(identical_pair_fraction(0.1, 0.3) == 0.0);
    CHECK(identical_pair_fraction(0.9, 1.0) == 0.0);
    CHECK(upper_bound_factor(0.5, 0.0, 1) == 1.0);
    CHECK(upper_bound_factor(1.0, 0.0, 2) <= 1.0);
}

TEST_CASE("the bounds contain the largest-group ratio for every partition of X up to 14") {
    // For each partition of X into groups, A = Σ C(Xn,2)/C(X,2) exactly, and θ = A + α(1 − A) for any α.
    // Then ω ≤ X_N/X ≤ γ must hold (the paper's inequalities), for every α on a grid.
    std::size_t checked = 0;
    for (int x = 2; x <= 14; ++x) {
        std::function<void(int, int, std::vector<int>&)> partitions = [&](int left, int max_part, std::vector<int>& parts) {
            if (left == 0) {
                double same = 0;
                for (int n : parts) same += n * (n - 1) / 2.0;
                const double a = same / (x * (x - 1) / 2.0);
                const double ratio = static_cast<double>(parts.front()) / x;
                for (double alpha = 0; alpha < 0.96; alpha += 0.05) {
                    const double theta = a + alpha * (1 - a);
                    INFO("X " << x << " largest " << parts.front() << " alpha " << alpha);
                    REQUIRE(lower_bound_factor(theta, alpha) <= ratio + 1e-12);
                    REQUIRE(identical_pair_fraction(theta, alpha) <= ratio + 1e-12);
                    REQUIRE(upper_bound_factor(theta, alpha, static_cast<std::uint64_t>(x)) >= ratio - 1e-12);
                    ++checked;
                }
                return;
            }
            for (int part = std::min(left, max_part); part >= 1; --part) {
                parts.push_back(part);
                partitions(left - part, part, parts);
                parts.pop_back();
            }
        };
        std::vector<int> parts;
        partitions(x, x, parts);
    }
    CHECK(checked > 10000);
}
