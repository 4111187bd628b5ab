// The Linux backend's parts as they see each other: the per-thread record its signal handlers find by thread id,
// the process-wide state those handlers reach (one backend per process: signal handlers are process-wide), and
// `hardware_backend::internals`, the backend's private face for its sample sources, watch sources, stepper and
// signal dispatch (each in its own file). Private to backends/linux/src.
#pragma once

#include "ojx/hardware/access_lookahead.hpp"
#include "ojx/hardware/fault_safe_read.hpp"
#include "ojx/hardware/hardware_backend.hpp"
#include "ojx/hardware/instruction_decoder.hpp"
#include "ojx/hardware/signals.hpp"
#include "ojx/hardware/thread_table.hpp"
#include "ojx/random.hpp"
#include "value_following.hpp"

#include <signal.h>
#include <time.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace ojx::hardware {

class sample_source;
class watch_source;

constexpr std::size_t max_slots = 8;

// What a thread's sampling trigger holds open: a perf event (a counter, or a precise event with its ring), or a
// CPU-time timer. Set up and torn down by the thread itself (or its attacher), outside signal handlers.
struct trigger_state {
    const sample_source* source = nullptr; // the source that opened it (a timer may fall back to the task clock)
    int fd = -1;                           // the perf event: a counter, or the precise event (with `ring`)
    std::uint64_t period = 0;              // the counter's mean period, randomized at each overflow; 0: by frequency
    timer_t timer{};
    bool has_timer = false;
    clockid_t timer_clock{};
    std::uint64_t timer_expiry_ns = 0; // the thread CPU time the timer is set for (absolute)
    void* ring = nullptr;
    std::size_t ring_bytes = 0;
};

struct thread_state {
    trigger_state trigger;
    std::array<int, max_slots> breakpoint_fds{-1, -1, -1, -1, -1, -1, -1, -1};
    std::uint64_t stack_low = 0; // the thread's stack, for frame-pointer walks (0: unknown)
    std::uint64_t stack_high = 0;
    // What this thread's debug registers watch now: no handler of this thread loads from there.
    watched_ranges watching;
    // Touched only by this thread's signal handlers.
    bool stepping = false;
    // The watchdog (signal_dispatch.cpp): time-stamp counter readings.
    std::uint64_t window_start = 0;   // when the current window began
    std::uint64_t handler_cycles = 0; // spent in our handlers during it
    bool quarantined = false;         // the watchdog turned this thread's sampling and watchpoints off for good
    std::uint64_t triggers = 0;       // sampling interrupts this thread took (note_coverage)
    std::uint32_t steps_to_skip = 0;
    std::uint32_t steps_taken = 0;
    value_following following; // a sampled load's value being followed (value_following.cpp)
    fast_random rng{};
    // With a sampler running: the generation each of this thread's debug registers reflects
    // (debug_register_watches.cpp). Touched only by this thread.
    std::array<std::uint64_t, max_slots> synced_generation{};
};

// Tags in si_perf_data of the SIGTRAPs our perf events send (deliver_as_sigtrap): which event of the thread fired.
constexpr std::uint64_t tag_marker = std::uint64_t{0x6f6a78} << 40; // "ojx"
constexpr std::uint64_t trigger_tag = tag_marker | (1 << 8);
constexpr std::uint64_t breakpoint_tag = tag_marker | (2 << 8); // | slot

// Process-wide: signal handlers reach the running backend through these (defined in hardware_backend.cpp).
extern std::atomic<hardware_backend*> active;
extern thread_table<thread_state> threads;
extern chained_handler sampling_handler; // our real-time signal: timers, and perf events SIGTRAP cannot carry
extern chained_handler step_signal;      // SIGTRAP: single steps, and perf events (synchronous_traps)
extern chained_handler overflow_signal;  // SIGIO, which a full signal queue sends instead of our real-time signal
extern int sampling_signal_number;

// Signal-safe: how this handler invocation, on the thread of `state`, may read memory.
inline handler_reads reads_for(const ucontext_t& context, const thread_state& state) noexcept {
    return {read_method_for(context), &state.watching};
}

// Signal-safe: up to `size` code bytes at `pc`, as code_reader_for reads them.
code_reader code_reader_for(const handler_reads& reads) noexcept;

// decode_stepper.cpp. Signal-safe: whether the trap flag may stay set over the instruction whose first `available`
// bytes are `code`, interrupted in `context`.
bool may_step_over(const ucontext_t& context, const std::uint8_t* code, std::size_t available) noexcept;

// Signal-safe: uniform in [0.5, 1.5] × mean: a fixed period can lock onto a loop and sample one instruction
// forever.
inline std::uint64_t random_period(thread_state& state, double mean) noexcept {
    const double period = mean * (0.5 + state.rng.unit());
    return period < 1 ? 1 : static_cast<std::uint64_t>(period);
}

struct hardware_backend::internals {
    static backend_counters& counters(hardware_backend& backend) noexcept { return backend.counters_; }
    static const backend_options& options(const hardware_backend& backend) noexcept { return backend.options_; }
    static const capabilities& caps(const hardware_backend& backend) noexcept { return backend.caps_; }
    static bool handlers_displaced(const hardware_backend& backend) noexcept {
        return backend.handlers_displaced_.load(std::memory_order_relaxed);
    }
    static watch_source& watches(hardware_backend& backend) noexcept { return *backend.watches_; }

    // signal_dispatch.cpp. Signal-safe: reads the value of a decoded access and hands the sample over.
    enum class delivered : std::uint8_t {
        unreadable, // its value could not be read: no sample
        sample,     // delivered
        follow,     // delivered, and the delivery asks for the load's value to be followed
    };
    static delivered deliver_sample(hardware_backend& backend, const decoded_instruction& decoded, std::uint64_t pc,
                                    pid_t tid, const ucontext_t& context, const handler_reads& reads) noexcept;
    // signal_dispatch.cpp. Signal-safe: hands a followed value over.
    static void deliver_followed(hardware_backend& backend, const followed_value& value, const ucontext_t& context,
                                 const handler_reads& reads) noexcept;
    // signal_dispatch.cpp. Signal-safe: hands a watchpoint trap over.
    static void deliver_trap(hardware_backend& backend, const watchpoint_trap& trap, const ucontext_t& context,
                             const handler_reads& reads) noexcept;
    // signal_dispatch.cpp: the handlers `start` installs, and what they share with the backend's other paths.
    static void on_sampling_signal(int signal, siginfo_t* info, void* raw_context) noexcept;
    static void on_step_signal(int signal, siginfo_t* info, void* raw_context) noexcept;
    static void on_overflow_signal(int signal, siginfo_t* info, void* raw_context) noexcept;
    static void check_ownership(hardware_backend& backend) noexcept;
    static void quiet_every_thread(hardware_backend& backend) noexcept;

    // decode_stepper.cpp. Signal-safe: a trigger asks for a sample found by decoding: deliver it now if decoding
    // ahead finds it, else single-step towards it.
    static void start_stepping(hardware_backend& backend, thread_state& state, pid_t tid,
                               ucontext_t& context) noexcept;
    // decode_stepper.cpp. Signal-safe: one single-step trap on a thread that is stepping towards its sample (or
    // following a value: follow_step).
    static void step(hardware_backend& backend, thread_state& state, pid_t tid, ucontext_t& context) noexcept;
    // value_following.cpp. Signal-safe: the sample `load` was just delivered, asking for its value to be followed
    // (its instruction has not run): starts stepping the thread for it, or ends at once.
    static void begin_following(hardware_backend& backend, thread_state& state, const access_sample& load,
                                ucontext_t& context) noexcept;
    // value_following.cpp. Signal-safe: one single-step trap on a thread following a value.
    static void follow_step(hardware_backend& backend, thread_state& state, ucontext_t& context) noexcept;
    // value_following.cpp. Signal-safe: following ends without a record (the program displaced our handlers).
    static void abandon_following(thread_state& state) noexcept;
};

} // namespace ojx::hardware
