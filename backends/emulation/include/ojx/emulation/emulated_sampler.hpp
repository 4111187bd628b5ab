// The emulated address sampler: every access of the emulated program is visible, and this decides which ones
// become samples — every `period`-th access, or after a geometrically distributed gap with that mean (a
// memoryless period cannot lock onto a loop's stride). Seeded, so runs repeat exactly.
#pragma once

#include "ojx/random.hpp"

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

namespace ojx::emulation {

struct sampler_config {
    std::uint64_t period = 64; // mean accesses between samples
    bool randomized = true;
    std::uint64_t seed = 1;
};

class emulated_sampler {
public:
    explicit emulated_sampler(const sampler_config& config)
        : config_(config), rng_(config.seed),
          name_(std::string("emulated (") + (config.randomized ? "randomized" : "fixed") + " period " +
                std::to_string(config.period) + ")") {
        if (config_.period == 0) config_.period = 1;
        countdown_ = next_gap();
    }

    std::string_view name() const noexcept { return name_; }
    bool start() noexcept {
        running_ = true;
        return true;
    }
    void stop() noexcept { running_ = false; }
    std::uint64_t samples_delivered() const noexcept { return delivered_; }

    // Called for every emulated access; true when this access is sampled.
    bool should_sample() noexcept {
        if (!running_) return false;
        if (--countdown_ > 0) return false;
        countdown_ = next_gap();
        ++delivered_;
        return true;
    }

private:
    std::uint64_t next_gap() noexcept {
        if (!config_.randomized || config_.period == 1) return config_.period;
        const double p = 1.0 / static_cast<double>(config_.period);
        const double u = 1.0 - rng_.unit(); // (0, 1]
        return 1 + static_cast<std::uint64_t>(std::floor(std::log(u) / std::log1p(-p)));
    }

    sampler_config config_;
    fast_random rng_;
    std::string name_;
    std::uint64_t countdown_ = 1;
    std::uint64_t delivered_ = 0;
    bool running_ = true;
};

} // namespace ojx::emulation
