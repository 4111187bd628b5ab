// A small, fast, seedable random generator that is safe to use inside a signal handler (no allocation, no
// locks, no global state). Policies that must draw random numbers on the sample path (reservoir replacement,
// pairing) use it; the emulation backend uses it so that every run is reproducible from one seed.
#pragma once

#include <cstdint>
#include <limits>

namespace ojx {

// xoshiro256** (Blackman & Vigna), seeded through splitmix64. Satisfies std::uniform_random_bit_generator.
class fast_random {
public:
    using result_type = std::uint64_t;

    explicit constexpr fast_random(std::uint64_t seed = 0x6a09e667f3bcc909ULL) noexcept { reseed(seed); }

    constexpr void reseed(std::uint64_t seed) noexcept {
        for (auto& word : state_) {
            seed += 0x9e3779b97f4a7c15ULL;
            std::uint64_t z = seed;
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
            z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
            word = z ^ (z >> 31);
        }
    }

    static constexpr result_type min() noexcept { return 0; }
    static constexpr result_type max() noexcept { return std::numeric_limits<result_type>::max(); }

    // Signal-safe.
    constexpr result_type operator()() noexcept {
        const std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
        const std::uint64_t t = state_[1] << 17;
        state_[2] ^= state_[0];
        state_[3] ^= state_[1];
        state_[1] ^= state_[2];
        state_[0] ^= state_[3];
        state_[2] ^= t;
        state_[3] = rotl(state_[3], 45);
        return result;
    }

    // Uniform integer in [0, bound); bound must be > 0. Lemire's multiply-shift with rejection: unbiased.
    // Signal-safe.
    constexpr std::uint64_t below(std::uint64_t bound) noexcept {
        __extension__ using u128 = unsigned __int128;
        u128 product = static_cast<u128>((*this)()) * bound;
        auto low = static_cast<std::uint64_t>(product);
        if (low < bound) {
            const std::uint64_t threshold = (0 - bound) % bound;
            while (low < threshold) {
                product = static_cast<u128>((*this)()) * bound;
                low = static_cast<std::uint64_t>(product);
            }
        }
        return static_cast<std::uint64_t>(product >> 64);
    }

    // True with probability numerator / denominator (denominator > 0). Signal-safe.
    constexpr bool chance(std::uint64_t numerator, std::uint64_t denominator) noexcept {
        return below(denominator) < numerator;
    }

    // Uniform double in [0, 1). Signal-safe.
    constexpr double unit() noexcept { return static_cast<double>((*this)() >> 11) * 0x1.0p-53; }

private:
    static constexpr std::uint64_t rotl(std::uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }
    std::uint64_t state_[4]{};
};

} // namespace ojx
