// A watch source: how a pair's word is watched once the profiler arms a slot. Two, each in its own file:
//   debug_register_watches.cpp    — the CPU's debug registers through perf_event breakpoints, one per attached
//                                   thread and slot, trapping when the program next touches the word (OJXPerf);
//   compare_at_sample_watches.cpp — no register: the slots only hold the pairs, which the profiler compares at
//                                   the sample that armed them (profiler_config::compare_at_sample).
// `arm`/`disarm` are serialized by the caller; the per-thread calls run on the thread, inside or outside our
// signal handlers as each says.
#pragma once

#include "backend_internals.hpp"

#include <sys/types.h>
#include <ucontext.h>

#include <optional>
#include <string>

namespace ojx::hardware {

class watch_source {
public:
    virtual ~watch_source() = default;
    virtual std::size_t slot_count() const noexcept = 0;
    // Signal-safe.
    virtual bool arm(std::size_t slot, address where, std::uint8_t width) noexcept = 0;
    virtual void disarm(std::size_t slot) noexcept = 0;
    // The backend stops: every slot is free (registers go with the threads' descriptors).
    virtual void stop() noexcept {}

    // Outside handlers: sets up and tears down thread `tid`'s part.
    virtual std::optional<std::string> open(thread_state&, pid_t) { return std::nullopt; }
    virtual void close(thread_state&, backend_counters&) noexcept {}
    // Signal-safe, on the thread: at each of its sampling interrupts.
    virtual void on_sampling_interrupt(thread_state&, pid_t) noexcept {}
    // Signal-safe, on the thread: its watch in `slot` fired, interrupting `context`.
    virtual void on_trap(thread_state&, std::size_t, pid_t, const ucontext_t&) noexcept {}
    // Signal-safe: the thread's watch in `slot` goes off (until the slot is pointed again).
    virtual void turn_off(thread_state&, std::size_t) noexcept {}
    // Signal-safe: every watch of the thread goes off (the watchdog, or the program took our signals).
    virtual void silence(thread_state&) noexcept {}
    // From another thread, not signal-safe: every watch of the thread goes quiet (the program took our signals).
    virtual void silence_from_outside(thread_state&) noexcept {}
};

// Configured for the backend that starts (one per process).
// `lazy`: a sampler runs, so other threads' registers are brought up to date at their sampling interrupts.
watch_source& debug_register_watches(hardware_backend& backend, std::size_t slots, bool lazy);
watch_source& compare_at_sample_watches(const hardware_backend& backend, std::size_t slots);

} // namespace ojx::hardware
