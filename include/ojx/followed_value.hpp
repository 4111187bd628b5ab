// One sampled load whose value a backend followed forward instruction by instruction (the Linux backend, inside
// its signal handler: docs/copy-profiling.md, "Copies on Linux"): the load, each use made of the value before the
// following ended, and why it ended. The addresses are as the thread saw them; the host finds the objects.
#pragma once

#include "ojx/sampler.hpp"
#include "ojx/types.hpp"
#include "ojx/value_follower.hpp"

#include <array>
#include <cstddef>
#include <cstdint>

namespace ojx {

enum class follow_end : std::uint8_t {
    released,  // no register holds the value any more
    bound,     // the bound of instructions was reached with the value still in a register
    // Following had to stop early:
    load_missed, // the load was not reached, or its instruction did not load the sampled address (code that
                 // changed, a path other than the one decoded ahead)
    undecodable, // an instruction could not be read or decoded
    not_stepped, // an instruction not to be stepped over: a system call, or SIGTRAP blocked
    uses_full, // more uses than a record keeps: the rest are lost to the sample
};

struct followed_value {
    static constexpr std::size_t max_uses = 8;
    struct use {
        value_use kind = value_use::copied;
        std::uint8_t width = 0;
        address to = 0; // copied: the address stored to
        friend bool operator==(const use&, const use&) = default;
    };

    access_sample load{};         // the sampled load (a string move's: its element, copied at once)
    std::array<use, max_uses> uses{};
    std::uint8_t use_count = 0;
    std::uint32_t steps = 0;      // instructions followed after the load
    follow_end end = follow_end::released;
    bool string_move = false;     // the load was a string move's element: its one use is that element's copy

    // Keeps `u`; false (and the following ends as uses_full) when the record is full.
    bool add(const use& u) noexcept {
        if (use_count == max_uses) {
            end = follow_end::uses_full;
            return false;
        }
        uses[use_count++] = u;
        return true;
    }
    friend bool operator==(const followed_value&, const followed_value&) = default;
};

} // namespace ojx
