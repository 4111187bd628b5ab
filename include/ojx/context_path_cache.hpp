// A memo of one thread's recent allocation stacks, each with the context-tree node it was inserted as, so that a
// repeated stack skips the tree walk. Inserting a path probes the tree's hash table once per frame, and in a
// program that evicts the profiler's data between allocations each probe is a cache miss (≈ 16 of them for a
// stack 16 frames deep); a hit here reads the memo's own few lines instead.
//
// Entries are matched frame by frame, never on the hash alone, so a hit names exactly the node the tree walk
// would have returned. A tree never renumbers or reuses a node id, so an entry stays right for as long as the tree
// it came from lives; a cache must be used with one tree only (one per thread and tree: it is not thread-safe).
// No allocation, no lock, no system call: the memo is a fixed array (≈ 8 KiB with 64 frames and 16 entries),
// meant for thread-local storage.
#pragma once

#include "ojx/types.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>

namespace ojx {

// Entries in sets of two (a stack may sit in either way of the set its hash picks, and a new one replaces the way
// used less recently), so that two stacks of a loop whose hashes collide do not keep evicting each other.
template <std::size_t MaxFrames, std::size_t Entries = 16>
    requires(MaxFrames > 0 && Entries >= 2 && std::has_single_bit(Entries))
class context_path_cache {
public:
    // The node remembered for the stack `frames` (as given to remember), or no_context.
    context_id find(std::span<const std::uint64_t> frames) noexcept {
        if (frames.size() > MaxFrames) return no_context;
        const std::size_t set = set_of(frames);
        for (std::size_t way = 0; way < 2; ++way) {
            const entry& e = entries_[2 * set + way];
            if (e.context != no_context && e.depth == frames.size() &&
                std::equal(frames.begin(), frames.end(), e.frames.begin())) {
                recent_way_[set] = static_cast<std::uint8_t>(way);
                return e.context;
            }
        }
        return no_context;
    }

    // Remembers that the stack `frames` is node `context`, in place of the less recently used entry of its set. A
    // stack deeper than MaxFrames, or no_context, is not remembered.
    void remember(std::span<const std::uint64_t> frames, context_id context) noexcept {
        if (frames.size() > MaxFrames || context == no_context) return;
        const std::size_t set = set_of(frames);
        const std::size_t way = recent_way_[set] ^ 1U;
        entry& e = entries_[2 * set + way];
        e.context = context;
        e.depth = static_cast<std::uint32_t>(frames.size());
        std::copy(frames.begin(), frames.end(), e.frames.begin());
        recent_way_[set] = static_cast<std::uint8_t>(way);
    }

private:
    struct entry {
        context_id context = no_context;
        std::uint32_t depth = 0;
        std::array<std::uint64_t, MaxFrames> frames{};
    };
    static constexpr std::size_t sets = Entries / 2;

    static std::size_t set_of(std::span<const std::uint64_t> frames) noexcept {
        std::uint64_t h = frames.size();
        for (const std::uint64_t f : frames) h = (h ^ f) * 0x9E3779B97F4A7C15ULL;
        return static_cast<std::size_t>(h >> 32) & (sets - 1);
    }

    std::array<entry, Entries> entries_{};
    std::array<std::uint8_t, sets> recent_way_{};
};

} // namespace ojx
