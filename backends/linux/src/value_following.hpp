// Following a sampled load's value (copy profiling on Linux; docs/copy-profiling.md, "Copies on Linux"): a thread's
// state while it is single-stepped from a sampled load for a bounded number of instructions, each described by
// x86_value_flow and applied to a value_follower. Touched only by the thread's own signal handlers.
#pragma once

#include "ojx/followed_value.hpp"
#include "ojx/hardware/x86_value_flow.hpp"
#include "ojx/value_follower.hpp"

#include <cstdint>

namespace ojx::hardware {

struct value_following {
    bool active = false;         // the thread is stepped for it (its `stepping` is set too)
    bool loaded = false;         // the load ran: `value` holds where its value went
    std::uint32_t reach_steps = 0; // steps taken towards the load (found by decoding ahead of the pc)
    followed_value record{};
    value_follower value{};
    stack_slot_table slots{};
};

} // namespace ojx::hardware
