// Estimated copies from sampled ones (docs/copy-profiling.md, "The sampled copy graph"): what a sampled copy edge
// says about the run's copies, with a confidence interval.
//
// Model (Poisson thinning of a known rate): each access is sampled independently with probability 1/period (the
// emulated sampler's geometric gaps of mean `period` are such a Bernoulli process; gaps drawn otherwise, as the
// Linux backend's uniform 0.5–1.5 × period, fit it only approximately), and every copy or use is made by exactly
// one load, so an edge that moved values N times is seen k ~ Binomial(N, 1/period) ≈
// Poisson(N/period) times; each sample weighs its period, and Σ period over the edge's samples estimates N
// without bias. Samples taken at different periods (parts of a run, threads, processes) make the count a weighted
// sum of Poisson variables, whose interval is Fay and Feuer's gamma interval (Stat. Med. 16, 1997) from the sum y
// of the weights, the sum v of their squares and the largest weight w: [v/2y · χ²(α/2; 2y²/v),
// (v + w²)/2(y + w) · χ²(1 − α/2; 2(y + w)²/(v + w²))]. At one period it is exactly the Garwood interval of k
// scaled by the period; the binomial's variance is the smaller, so the Poisson interval is slightly conservative.
// χ² quantiles are Wilson and Hilferty's (accurate to a few tenths of a percent from 2 degrees of freedom up).
//
// Invariant: sampled_volume holds sums (and a maximum) of integers, so volumes of parts of a run merge exactly
// (Σ period² stays below 2^64 up to a million samples of one edge at period 2^22).
#pragma once

#include "ojx/replica_bounds.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace ojx {

struct sampled_volume {
    std::uint64_t samples = 0;
    std::uint64_t weight = 0;         // Σ period over the samples: the estimated number of copies
    std::uint64_t weight_squares = 0; // Σ period²
    std::uint64_t max_weight = 0;     // the largest period; for an edge never seen, the period it was sampled at

    void add(std::uint64_t period) noexcept {
        ++samples;
        weight += period;
        weight_squares += period * period;
        max_weight = std::max(max_weight, period);
    }
    sampled_volume& operator+=(const sampled_volume& other) noexcept {
        samples += other.samples;
        weight += other.weight;
        weight_squares += other.weight_squares;
        max_weight = std::max(max_weight, other.max_weight);
        return *this;
    }
    friend bool operator==(const sampled_volume&, const sampled_volume&) = default;
};

// The χ² quantile of `degrees` degrees of freedom at the standard normal quantile z (Wilson–Hilferty).
inline double chi_square_quantile(double degrees, double z) noexcept {
    const double c = 2 / (9 * degrees);
    const double root = 1 - c + z * std::sqrt(c);
    return root <= 0 ? 0 : degrees * root * root * root;
}

// Fay–Feuer interval at `level` for the mean of Σ w·X over independent Poisson X, from y = Σ w·x, v = Σ w²·x and
// the largest weight.
inline interval weighted_poisson_interval(double y, double v, double max_weight, double level) noexcept {
    const double z = normal_quantile_two_sided(level);
    const double low = y > 0 && v > 0 ? v / (2 * y) * chi_square_quantile(2 * y * y / v, -z) : 0;
    const double y_up = y + max_weight, v_up = v + max_weight * max_weight;
    const double high = v_up > 0 ? v_up / (2 * y_up) * chi_square_quantile(2 * y_up * y_up / v_up, z) : 0;
    return {low, high};
}

struct copy_estimate {
    double copies = 0;
    double bytes = 0;
    interval bytes_interval{0, 0};
};

// The copies of `width` bytes each that `volume`'s samples stand for, and their bytes with an interval.
inline copy_estimate estimate_copies(const sampled_volume& volume, std::uint8_t width, double level) noexcept {
    const double w = width;
    const double y = static_cast<double>(volume.weight), v = static_cast<double>(volume.weight_squares);
    return {y, w * y, weighted_poisson_interval(w * y, w * w * v, w * static_cast<double>(volume.max_weight), level)};
}

} // namespace ojx
