// Which earlier object a newly sampled object is compared with. The profiler remembers, per allocation
// context, a few earlier objects it sampled (their ⟨offset, value⟩ probes); a pairing policy decides which
// sampled objects are remembered and which remembered object a new one is paired with.
//
// Why it matters: the bounds ω ≤ X_N/X ≤ γ hold for the identical-pair fraction over *all* pairs of objects.
// OJXPerf pairs each object with the most recently sampled one. Where replicas come in runs (a value reused
// for a while, then a new one), adjacent objects are identical far more often than random pairs, θ measures
// "equal to the last one", and ω overshoots the largest group. Pairing with a uniform draw from a reservoir
// over the context's whole history, with each comparison weighted by how many earlier objects its target could
// have paired with, counts every pair alike, which is what the bounds assume.
#pragma once

#include "ojx/random.hpp"

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace ojx {

template <class P>
concept pairing_policy = requires(std::uint64_t seen, std::size_t capacity, std::size_t eligible, fast_random& rng) {
    { P::name } -> std::convertible_to<std::string_view>;
    // Where the record of the `seen`-th sampled object of a context goes (0-based), or none (not remembered).
    { P::keep_slot(seen, capacity, rng) } -> std::same_as<std::optional<std::size_t>>;
    // Which of `eligible` (> 0) remembered earlier objects, ordered oldest to newest, a new object pairs with.
    { P::pick(eligible, rng) } -> std::same_as<std::size_t>;
    // The weight of a comparison whose target had `earlier` sampled objects before it, such that weighted
    // comparisons count every pair of objects alike (importance weighting); 1 where pairs are not random.
    { P::pair_weight(seen) } -> std::same_as<double>;
    // True when `pick` is uniform, so the order of the candidates does not matter and need not be established.
    { P::picks_uniformly } -> std::convertible_to<bool>;
};

// OJXPerf's pairing: remember the most recent objects, pair with the newest earlier one.
struct recent_pairing {
    static constexpr std::string_view name = "recent";
    static constexpr bool picks_uniformly = false;
    static std::optional<std::size_t> keep_slot(std::uint64_t seen, std::size_t capacity, fast_random&) noexcept {
        return static_cast<std::size_t>(seen % capacity);
    }
    static std::size_t pick(std::size_t eligible, fast_random&) noexcept { return eligible - 1; }
    static double pair_weight(std::uint64_t) noexcept { return 1; }
};

// Reservoir pairing: every sampled object of the context is remembered with equal probability (Algorithm R),
// and a new object pairs with a uniformly chosen remembered earlier one.
struct reservoir_pairing {
    static constexpr std::string_view name = "reservoir";
    static constexpr bool picks_uniformly = true;
    static std::optional<std::size_t> keep_slot(std::uint64_t seen, std::size_t capacity, fast_random& rng) noexcept {
        if (seen < capacity) return static_cast<std::size_t>(seen);
        const auto j = rng.below(seen + 1);
        if (j < capacity) return static_cast<std::size_t>(j);
        return std::nullopt;
    }
    static std::size_t pick(std::size_t eligible, fast_random& rng) noexcept {
        return static_cast<std::size_t>(rng.below(eligible));
    }
    // The remembered objects are a uniform sample of the `earlier` ones, so a target pairs with each earlier
    // object with probability 1/earlier; weighting by `earlier` makes every pair (i, j) count alike.
    static double pair_weight(std::uint64_t earlier) noexcept { return earlier > 0 ? static_cast<double>(earlier) : 1; }
};

} // namespace ojx
