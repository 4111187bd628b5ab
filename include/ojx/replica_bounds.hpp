// The statistics of replica detection, as formulas: the replication factor θ with a confidence interval, and
// OJXPerf's lower and upper bounds on the largest identical group (section "Theoretical Analysis" of the
// paper). Pure functions of counts; no state, no allocation.
//
// Vocabulary. A context has X objects in N groups of identical objects; X_N is the largest group. A comparison
// looks at one place in two objects of the context and finds it equal or different.
//   θ  = P(comparison equal)                                  (the replication factor)
//   α  = P(comparison equal | the two objects are not identical)
//   A  = P(the two objects are identical) = (θ − α)/(1 − α)   (for the pairs the comparisons were made on)
// Bounds on the largest-group ratio s = X_N / X, valid when A is the identical fraction among all C(X,2) pairs:
//   ω = θ − α  ≤  A  <  s  <  γ = 1/(2(X−1)) + sqrt(1/(4(X−1)²) + (θ − α)/(1 − α))
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace ojx {

struct interval {
    double low = 0;
    double high = 1;

    bool contains(double x) const noexcept { return low <= x && x <= high; }
    friend bool operator==(const interval&, const interval&) = default;
};

// Two-sided standard normal quantile for a confidence level in (0, 1): the z with P(|Z| ≤ z) = level.
// Acklam's rational approximation of the inverse normal CDF (relative error < 1.2e-9).
inline double normal_quantile_two_sided(double level) noexcept {
    const double p = 0.5 + level / 2; // upper quantile
    constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                            1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
    constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                            6.680131188771972e+01,  -1.328068155288572e+01};
    constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                            -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
    constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                            3.754408661907416e+00};
    constexpr double tail = 0.02425;
    if (p <= 0 || p >= 1) return p >= 1 ? INFINITY : -INFINITY;
    if (p > 1 - tail) {
        const double q = std::sqrt(-2 * std::log(1 - p));
        return -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
               ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
    }
    if (p < tail) {
        const double q = std::sqrt(-2 * std::log(p));
        return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
               ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
    }
    const double q = p - 0.5;
    const double r = q * q;
    return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
           (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

// Wilson's interval for a proportion p observed over an effective sample of n (possibly fractional) units, as
// when n comes from a design effect rather than a count.
inline interval wilson_interval_fractional(double p, double n, double z) noexcept {
    if (!(n > 0)) return {0, 1};
    const double z2 = z * z;
    const double centre = (p + z2 / (2 * n)) / (1 + z2 / n);
    const double half = z * std::sqrt(std::max(0.0, p * (1 - p) / n + z2 / (4 * n * n))) / (1 + z2 / n);
    // At p = 0 or 1 the end on that side is exactly 0 or 1; computed, it can round to 1 − 1e-16.
    return {p <= 0 ? 0.0 : std::max(0.0, centre - half), p >= 1 ? 1.0 : std::min(1.0, centre + half)};
}

// Wilson's interval with a continuity correction (Newcombe 1998, method 4), for p observed over an effective
// sample of n (possibly fractional, possibly infinite) units: at a handful of units the plain Wilson interval
// covers less than its level near p = 0 and 1, this one at least about its level; as n grows the two agree.
inline interval wilson_interval_corrected(double p, double n, double z) noexcept {
    if (!(n > 0)) return {0, 1};
    const double z2 = z * z, scale = 1 + z2 / n;
    const double low = (p + (z2 - 1) / (2 * n) -
                        z * std::sqrt(std::max(0.0, (z2 - 2 - 1 / n) / (4 * n * n) + (p * (1 - p) + p / n) / n))) /
                       scale;
    const double high = (p + (z2 + 1) / (2 * n) +
                         z * std::sqrt(std::max(0.0, (z2 + 2 - 1 / n) / (4 * n * n) + (p * (1 - p) - p / n) / n))) /
                        scale;
    return {p <= 0 ? 0.0 : std::clamp(low, 0.0, p), p >= 1 ? 1.0 : std::clamp(high, p, 1.0)};
}

// Wilson score interval for a binomial proportion: well behaved at 0 and 1 and for few trials, which is the
// normal case here (tens of comparisons per context). With no trials it is [0, 1].
inline interval wilson_interval(std::uint64_t successes, std::uint64_t trials, double z) noexcept {
    if (trials == 0) return {0, 1};
    return wilson_interval_fractional(static_cast<double>(successes) / static_cast<double>(trials),
                                      static_cast<double>(trials), z);
}

// A = (θ − α)/(1 − α): the fraction of compared pairs that are identical objects. Clamped to [0, 1]; with
// α = 1 nothing can be told apart and the answer is 0 (no evidence of identity).
inline double identical_pair_fraction(double theta, double alpha) noexcept {
    if (alpha >= 1) return 0;
    return std::clamp((theta - alpha) / (1 - alpha), 0.0, 1.0);
}

// ω = θ − α, the paper's lower bound factor, clamped at 0 (a negative lower bound on a ratio says nothing).
inline double lower_bound_factor(double theta, double alpha) noexcept { return std::max(0.0, theta - alpha); }

// γ = 1/(2(X−1)) + sqrt(1/(4(X−1)²) + (θ−α)/(1−α)), the paper's upper bound factor, clamped to ≤ 1.
// A context with one object has the trivial ratio 1.
inline double upper_bound_factor(double theta, double alpha, std::uint64_t objects) noexcept {
    if (objects <= 1) return 1;
    const double t = 1.0 / static_cast<double>(objects - 1);
    return std::min(1.0, t / 2 + std::sqrt(t * t / 4 + identical_pair_fraction(theta, alpha)));
}

} // namespace ojx
