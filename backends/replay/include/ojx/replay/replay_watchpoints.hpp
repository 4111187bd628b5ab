// The replay backend's watchpoints: it arms nothing and never traps by itself — the recorded traps are delivered
// as they come in the trace. It accepts every arm and disarm the profiler makes (as many slots as the recording
// had) except the arms the recording's backend refused, and keeps them, so that the replay can check them against
// the arms and disarms the trace recorded: the same events, configuration and seed make the profiler take the same
// decisions, and a difference means the replay no longer follows the recording (another seed, say), whose recorded
// traps then match nothing the profiler watches.
//
// Refused arms are recorded before the event they were refused during (the profiler's next steps depend on the
// outcome); an arm is refused when it is the next refused arm recorded for the event, field for field. A recorded
// refusal the profiler never asks for, like a recorded call it does not make, is a difference.
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
        if (refused_used_ < refused_.size() && refused_[refused_used_] == watchpoint_arm_refused_event{slot, where, width}) {
            ++refused_used_;
            return false;
        }
        calls_.emplace_back(watchpoint_arm_event{slot, where, width});
        return true;
    }
    void disarm(std::size_t slot) { calls_.emplace_back(watchpoint_disarm_event{slot}); }

    // The trace recorded this refusal before the event about to be delivered.
    void recorded(const watchpoint_arm_refused_event& refused) { upcoming_refused_.push_back(refused); }

    // A new event is delivered: calls made for the previous one that the trace did not record, and refusals it
    // recorded that were not asked for, are differences. The refusals recorded since then are this event's.
    void start_event() {
        differences_ += calls_.size() - matched_ + (refused_.size() - refused_used_);
        calls_.clear();
        matched_ = 0;
        refused_.swap(upcoming_refused_);
        upcoming_refused_.clear();
        refused_used_ = 0;
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
    std::uint64_t differences() const noexcept {
        return differences_ + (calls_.size() - matched_) + (refused_.size() - refused_used_) + upcoming_refused_.size();
    }

private:
    std::size_t slots_;
    std::vector<std::variant<watchpoint_arm_event, watchpoint_disarm_event>> calls_;
    std::size_t matched_ = 0;
    std::vector<watchpoint_arm_refused_event> refused_;          // recorded for the event being delivered
    std::size_t refused_used_ = 0;                               // of those, the arms already refused
    std::vector<watchpoint_arm_refused_event> upcoming_refused_; // recorded for the next event
    std::uint64_t differences_ = 0;
};

} // namespace ojx::replay
