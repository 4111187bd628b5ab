// The replay backend's watchpoints: it arms nothing and never traps by itself — the recorded traps are delivered
// as they come in the trace. It accepts every arm and disarm the profiler makes (as many slots as the recording
// had) and keeps them, so that the replay can check them against the arms and disarms the trace recorded: the same
// events, configuration and seed make the profiler take the same decisions, and a difference means the replay no
// longer follows the recording (another seed, say), whose recorded traps then match nothing the profiler watches.
#pragma once

#include "ojx/trace_format.hpp"
#include "ojx/types.hpp"

#include <cstddef>
#include <cstdint>
#include <variant>
#include <vector>

namespace ojx::replay {

class replay_watchpoints {
public:
    explicit replay_watchpoints(std::size_t slots) : slots_(slots) {}

    std::size_t slot_count() const noexcept { return slots_; }
    bool arm(std::size_t slot, address where, std::uint8_t width) {
        if (slot >= slots_ || width == 0 || width > 8) return false;
        calls_.emplace_back(watchpoint_arm_event{slot, where, width});
        return true;
    }
    void disarm(std::size_t slot) { calls_.emplace_back(watchpoint_disarm_event{slot}); }

    // A new event is delivered: calls made for the previous one that the trace did not record are differences.
    void start_event() {
        differences_ += calls_.size() - matched_;
        calls_.clear();
        matched_ = 0;
    }
    // The trace recorded this call after the event: it should be the profiler's next one.
    template <class Call>
    void recorded(const Call& call) {
        if (matched_ < calls_.size() && std::holds_alternative<Call>(calls_[matched_]) &&
            std::get<Call>(calls_[matched_]) == call) {
            ++matched_;
        } else {
            ++differences_;
        }
    }
    // Arms and disarms that differ from the recording (made and not recorded, or recorded and not made).
    std::uint64_t differences() const noexcept { return differences_ + (calls_.size() - matched_); }

private:
    std::size_t slots_;
    std::vector<std::variant<watchpoint_arm_event, watchpoint_disarm_event>> calls_;
    std::size_t matched_ = 0;
    std::uint64_t differences_ = 0;
};

} // namespace ojx::replay
