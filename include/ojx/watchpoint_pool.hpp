// The watchpoint pool: bookkeeping for the few hardware watchpoint slots (4 debug registers on x86) and the
// policy that decides, when every slot is busy, whether a new candidate replaces one of them. The pool only
// decides; the caller arms and disarms the backend's slots accordingly. One pool per thread (hardware
// watchpoints are per thread); every member function is signal-safe: no allocation, no lock.
#pragma once

#include "ojx/random.hpp"
#include "ojx/types.hpp"

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace ojx {

inline constexpr std::size_t max_watchpoint_slots = 16;

// What a replacement policy may look at: per slot, how many candidates have competed for it since it was
// last armed from free (`competitors`, at least 1 while armed) and when it was armed (`armed_at`, a sequence
// number that grows with every arm). Policies update `competitors` themselves.
struct slot_history {
    std::uint64_t competitors = 0;
    std::uint64_t armed_at = 0;
};

// Chooses a slot to give to a new candidate when every slot is armed, or none. May update the histories.
template <class P>
concept replacement_policy = requires(P& policy, std::span<slot_history> slots, fast_random& rng) {
    { P::name } -> std::convertible_to<std::string_view>;
    { policy.choose_victim(slots, rng) } -> std::same_as<std::optional<std::size_t>>;
};

// Witch's reservoir replacement (Wen et al., ASPLOS'18; used by JXPerf and OJXPerf): visit the slots in a
// random order; at a slot that n candidates have competed for, take it with probability 1/(n+1), and count
// the visit either way (n += 1). A candidate takes at most one slot. With one slot this is reservoir sampling
// of size one: each of k competing candidates is the one kept with probability 1/k, so old and new samples
// are watched without bias towards either.
struct reservoir_replacement {
    static constexpr std::string_view name = "reservoir";

    std::optional<std::size_t> choose_victim(std::span<slot_history> slots, fast_random& rng) noexcept {
        // Draws from a local copy of the generator: for all the compiler knows the slots may alias it, so drawing
        // from `rng` itself stores and reloads its state around every count below.
        fast_random draws = rng;
        std::array<std::uint8_t, max_watchpoint_slots> order;
        const std::size_t count = slots.size() < max_watchpoint_slots ? slots.size() : max_watchpoint_slots;
        for (std::size_t i = 0; i < count; ++i) order[i] = static_cast<std::uint8_t>(i);
        for (std::size_t i = count; i > 1; --i) { // Fisher-Yates
            const auto j = static_cast<std::size_t>(draws.below(i));
            std::swap(order[i - 1], order[j]);
        }
        std::optional<std::size_t> victim;
        for (std::size_t i = 0; i < count && !victim; ++i) {
            slot_history& slot = slots[order[i]];
            const bool take = draws.chance(1, slot.competitors + 1);
            ++slot.competitors;
            if (take) victim = order[i];
        }
        rng = draws;
        return victim;
    }
};

// Replace the slot armed longest ago. Simple and fair in time, but a watchpoint whose object is accessed
// rarely is always evicted before it can fire.
struct oldest_first_replacement {
    static constexpr std::string_view name = "oldest-first";

    std::optional<std::size_t> choose_victim(std::span<slot_history> slots, fast_random&) noexcept {
        if (slots.empty()) return std::nullopt;
        std::size_t oldest = 0;
        for (std::size_t i = 1; i < slots.size(); ++i)
            if (slots[i].armed_at < slots[oldest].armed_at) oldest = i;
        return oldest;
    }
};

// Never replace: an armed watchpoint stays until it fires or its object dies. New candidates are dropped
// while the pool is full. The baseline the other policies are measured against.
struct keep_armed_replacement {
    static constexpr std::string_view name = "keep-armed";

    std::optional<std::size_t> choose_victim(std::span<slot_history>, fast_random&) noexcept { return std::nullopt; }
};

template <class Payload, replacement_policy Policy>
class watchpoint_pool {
public:
    struct watch {
        address where = 0;
        std::uint8_t width = 0;
        Payload payload{};
    };

    // The outcome of offering a candidate: the slot it got (`declined`: none) and whether it took an armed slot
    // (so the caller disarms and counts the watch evicted). Plain fields, not optionals: GCC keeps an optional in
    // memory, built with partial stores that the caller reloads whole, a store-forwarding stall that cost the
    // sample path more than the rest of the offer; so is copying out the evicted watch, which no caller needs.
    struct placement {
        static constexpr std::size_t declined = ~std::size_t{0};
        std::size_t slot = declined;
        bool evicted = false;

        bool placed() const noexcept { return slot != declined; }
    };

    explicit watchpoint_pool(std::size_t slot_count, std::uint64_t seed = 1, Policy policy = {}) noexcept
        : slot_count_(slot_count < max_watchpoint_slots ? slot_count : max_watchpoint_slots),
          policy_(policy),
          rng_(seed) {}

    std::size_t slot_count() const noexcept { return slot_count_; }
    std::size_t armed_count() const noexcept {
        std::size_t armed = 0;
        for (std::size_t i = 0; i < slot_count_; ++i) armed += armed_[i] ? 1 : 0;
        return armed;
    }
    bool armed(std::size_t slot) const noexcept { return slot < slot_count_ && armed_[slot]; }
    const watch& at(std::size_t slot) const noexcept { return watches_[slot]; }

    // Offers a new candidate: a free slot if there is one, else whatever the policy decides. Signal-safe.
    placement offer(address where, std::uint8_t width, const Payload& payload) noexcept {
        std::optional<std::size_t> slot;
        for (std::size_t i = 0; i < slot_count_ && !slot; ++i)
            if (!armed_[i]) slot = i;
        const bool evicted = !slot;
        if (slot) {
            history_[*slot].competitors = 0;
        } else {
            slot = policy_.choose_victim(std::span<slot_history>(history_.data(), slot_count_), rng_);
            if (!slot) return {};
        }
        watches_[*slot] = watch{where, width, payload};
        armed_[*slot] = true;
        history_[*slot].armed_at = ++arm_sequence_;
        if (history_[*slot].competitors == 0) history_[*slot].competitors = 1;
        return {*slot, evicted};
    }

    // Frees a slot (the watchpoint fired, or its object died). Returns what it watched. Signal-safe.
    std::optional<watch> release(std::size_t slot) noexcept {
        if (!armed(slot)) return std::nullopt;
        armed_[slot] = false;
        history_[slot] = slot_history{};
        return watches_[slot];
    }

    // The armed slot watching `where`, if any. Signal-safe.
    std::optional<std::size_t> find(address where) const noexcept {
        for (std::size_t i = 0; i < slot_count_; ++i)
            if (armed_[i] && watches_[i].where == where) return i;
        return std::nullopt;
    }

private:
    std::size_t slot_count_;
    [[no_unique_address]] Policy policy_;
    fast_random rng_;
    std::uint64_t arm_sequence_ = 0;
    std::array<bool, max_watchpoint_slots> armed_{};
    std::array<slot_history, max_watchpoint_slots> history_{};
    std::array<watch, max_watchpoint_slots> watches_{};
};

} // namespace ojx
