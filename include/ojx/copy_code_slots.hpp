// One copy edge's code as a signal handler can keep it (copy_code.hpp): the first `kept` distinct access contexts
// its samples came from, each with its samples, in fixed storage; a sample of any other context, or of none, is
// counted in `other`. Kept counts are exact (a context, once kept, is never replaced), so the kept samples plus
// `other` are every sample added: a context that first appears after the slots filled is lost to `other`, not
// guessed at. No allocation, no lock (the caller holds the host's).
#pragma once

#include "ojx/copy_code.hpp"
#include "ojx/types.hpp"

#include <array>
#include <cstddef>
#include <cstdint>

namespace ojx {

class copy_code_slots {
public:
    static constexpr std::size_t kept = 4;

    // Signal-safe: one sample taken in `context` (no_context: a sample whose context is unknown).
    void add(context_id context) noexcept {
        if (context != no_context) {
            for (std::size_t i = 0; i < kept; ++i) {
                if (samples_[i] == 0) { // the first free slot: every later one is free too
                    contexts_[i] = context;
                    samples_[i] = 1;
                    return;
                }
                if (contexts_[i] == context) {
                    ++samples_[i];
                    return;
                }
            }
        }
        ++other_;
    }

    std::uint64_t other() const noexcept { return other_; }

    // Outside handlers.
    edge_code code() const {
        edge_code code;
        for (std::size_t i = 0; i < kept && samples_[i] != 0; ++i) code.contexts[contexts_[i]] = samples_[i];
        code.other = other_;
        return code;
    }

private:
    std::array<context_id, kept> contexts_{};
    std::array<std::uint64_t, kept> samples_{}; // 0: the slot is free
    std::uint64_t other_ = 0;
};

} // namespace ojx
