// One loaded value followed forward through the value flow events after its load (docs/copy-profiling.md, "The
// sampled copy graph"): which registers hold it, and each use made of it — a store of a register that holds it is
// a copy to the stored-to address, of the store's width; a computation that reads such a register consumes it, of
// the load's width (a register named twice is used once). A register move copies the holding; anything that
// overwrites a register (a load, a constant, a fresh reference, a computation's result, a move of another value)
// drops it. A string move is none of its business: a sampled string move is an edge at once.
//
// Shared by the sampled copy graph builder (many values followed at once, in the emulation and a replay) and the
// Linux backend, which follows one sampled load per thread inside its signal handler: fixed size, no allocation,
// signal-safe.
#pragma once

#include "ojx/types.hpp"
#include "ojx/value_flow.hpp"

#include <bitset>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>

namespace ojx {

enum class value_use : std::uint8_t {
    copied,   // stored to an address
    consumed, // read by a computation
};

class value_follower {
public:
    static constexpr std::size_t register_count = std::size_t{std::numeric_limits<value_register>::max()} + 1;

    // Follows nothing (holding() is false).
    constexpr value_follower() noexcept = default;
    // `width` bytes loaded into register `r`.
    value_follower(value_register r, std::uint8_t width) noexcept : width_(width) { holds_.set(r); }

    // Applies one event of the thread that loaded the value; `use(value_use, address stored to or 0, width)` for
    // each use it makes of the value.
    template <class Use>
    void apply(const value_flow_event& event, Use&& use) {
        switch (event.kind) {
        case value_flow_kind::load:
        case value_flow_kind::constant:
        case value_flow_kind::new_reference: overwrite(event.reg); break;
        case value_flow_kind::register_move: move(event.reg, event.sources[0]); break;
        case value_flow_kind::store: store(event.reg, event.at, event.width, use); break;
        case value_flow_kind::compute:
            compute(std::span<const value_register>(event.sources.data(), event.source_count),
                    event.has_result ? std::optional<value_register>(event.reg) : std::nullopt, use);
            break;
        case value_flow_kind::string_move: break;
        }
    }

    // The events one by one (value_flow_sink's members, for a caller that has them apart).
    void overwrite(value_register r) noexcept { holds_.reset(r); }
    void move(value_register destination, value_register source) noexcept { holds_[destination] = holds_[source]; }
    template <class Use>
    void store(value_register r, address where, std::uint8_t width, Use&& use) {
        if (holds_[r]) use(value_use::copied, where, width);
    }
    template <class Use>
    void compute(std::span<const value_register> sources, std::optional<value_register> result, Use&& use) {
        std::bitset<register_count> used;
        for (const value_register r : sources) {
            if (!holds_[r] || used[r]) continue;
            used.set(r);
            use(value_use::consumed, address{0}, width_);
        }
        if (result) holds_.reset(*result);
    }

    // Some register still holds the value: following it may see more uses.
    bool holding() const noexcept { return holds_.any(); }
    bool holds(value_register r) const noexcept { return holds_[r]; }
    // Forgets `r` (a register that holds nothing past the instruction, such as a decoder's scratch register).
    void drop(value_register r) noexcept { holds_.reset(r); }
    std::uint8_t width() const noexcept { return width_; }

private:
    std::bitset<register_count> holds_;
    std::uint8_t width_ = 0;
};

} // namespace ojx
