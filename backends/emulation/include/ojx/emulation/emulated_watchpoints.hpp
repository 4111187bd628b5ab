// Emulated debug registers: the same small number of slots as hardware (4 on x86), each watching `width` bytes,
// triggering like x86 data breakpoints on loads and stores (x86 has no load-only watchpoint) or, for
// experiments, on loads only — or never (`at_sample`: what the Linux backend does on machines whose debug
// registers never trap; the profiler then compares each pair at the sample that armed it, see
// profiler_config::compare_at_sample).
#pragma once

#include "ojx/types.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace ojx::emulation {

enum class watch_trigger { loads_and_stores, loads_only, at_sample };

// The names traces and `ojx replay` use for the triggers.
inline constexpr std::string_view watch_trigger_name(watch_trigger trigger) noexcept {
    switch (trigger) {
    case watch_trigger::loads_and_stores: return "loads-and-stores";
    case watch_trigger::loads_only: return "loads-only";
    case watch_trigger::at_sample: return "at-sample";
    }
    return "?";
}
inline std::optional<watch_trigger> parse_watch_trigger(std::string_view name) noexcept {
    for (const watch_trigger t : {watch_trigger::loads_and_stores, watch_trigger::loads_only, watch_trigger::at_sample})
        if (watch_trigger_name(t) == name) return t;
    return std::nullopt;
}

class emulated_watchpoints {
public:
    static constexpr std::size_t max_slots = 16;

    explicit emulated_watchpoints(std::size_t slots = 4, watch_trigger trigger = watch_trigger::loads_and_stores)
        : slots_(slots < max_slots ? slots : max_slots), trigger_(trigger) {}

    std::size_t slot_count() const noexcept { return slots_; }
    watch_trigger trigger() const noexcept { return trigger_; }

    bool arm(std::size_t slot, address where, std::uint8_t width) noexcept {
        if (slot >= slots_ || width == 0 || width > 8) return false;
        if (refuse_every_ != 0 && ++requests_ % refuse_every_ == 0) {
            ++refused_;
            return false;
        }
        watches_[slot] = {true, where, width};
        ++arms_;
        return true;
    }

    // Refuse every `n`th valid arm from now on (0: none), as a machine whose kernel refuses some breakpoints does
    // (the Linux backend's arm fails when a thread's breakpoint cannot be set): the slot stays as it was.
    void refuse_every(std::uint64_t n) noexcept {
        refuse_every_ = n;
        requests_ = 0;
    }
    std::uint64_t refused() const noexcept { return refused_; }

    void disarm(std::size_t slot) noexcept {
        if (slot < slots_) watches_[slot].armed = false;
    }

    std::size_t armed_count() const noexcept {
        std::size_t n = 0;
        for (std::size_t i = 0; i < slots_; ++i) n += watches_[i].armed ? 1 : 0;
        return n;
    }
    std::uint64_t arms() const noexcept { return arms_; }

    struct hit {
        std::size_t slot;
        address watched;
        std::uint8_t width;
    };

    // What `slot` watches, if it is armed.
    std::optional<hit> watched(std::size_t slot) const noexcept {
        if (slot >= slots_ || !watches_[slot].armed) return std::nullopt;
        return hit{slot, watches_[slot].where, watches_[slot].width};
    }

    // The first armed slot whose bytes overlap the access [where, where + width), if it triggers on it.
    std::optional<hit> check(address where, std::uint8_t width, bool is_store) const noexcept {
        if (trigger_ == watch_trigger::at_sample) return std::nullopt;
        if (is_store && trigger_ == watch_trigger::loads_only) return std::nullopt;
        for (std::size_t i = 0; i < slots_; ++i) {
            const auto& w = watches_[i];
            if (w.armed && where < w.where + w.width && w.where < where + width) return hit{i, w.where, w.width};
        }
        return std::nullopt;
    }

private:
    struct watch {
        bool armed = false;
        address where = 0;
        std::uint8_t width = 0;
    };
    std::size_t slots_;
    watch_trigger trigger_;
    std::array<watch, max_slots> watches_{};
    std::uint64_t arms_ = 0;
    std::uint64_t refuse_every_ = 0;
    std::uint64_t requests_ = 0; // valid arms asked for since refuse_every
    std::uint64_t refused_ = 0;
};

} // namespace ojx::emulation
