// The backend's signal handlers: which event of which thread a signal is, and what is done about it. A trigger
// goes to the thread's sample source (and, for a sample to be found by decoding, to the stepper); a breakpoint to
// the watch source; a single-step trap to the stepper. Around every event: that our handlers are still the
// process's (else every thread goes quiet), that the interrupted stack has room, and the watchdog.
#include "backend_internals.hpp"
#include "sample_source.hpp"
#include "watch_source.hpp"

#include "ojx/hardware/arch_x86_64.hpp"
#include "ojx/hardware/handler_scope.hpp"

#include <time.h>

#include <cerrno>

#ifndef TRAP_PERF
#define TRAP_PERF 6
#endif

namespace ojx::hardware {

namespace {

// Our handlers need this much stack below the interrupted code's: they run on the interrupted stack (never on an
// alternate signal stack, which a program may size for its own handlers only: 8 KiB was classic SIGSTKSZ). Where
// less is left, or the interrupted code runs on a stack other than the thread's own, the handler does only what
// takes no stack (turning a watchpoint off) and counts the event.
constexpr std::uint64_t handler_stack_bytes = 32 * 1024;

// The watchdog: a thread whose handlers take more than half of its time over a window of at least this many
// time-stamp-counter cycles (≈ 0.1 s at 2-4 GHz) is in a storm (a trap that repeats without progress, a trigger
// that fires too often); its sampling and watchpoints are turned off for good and counted.
constexpr std::uint64_t watchdog_window_cycles = std::uint64_t{1} << 28;

// Restores errno on every exit from a handler.
struct errno_guard {
    int saved = errno;
    ~errno_guard() { errno = saved; }
};

// Signal-safe: whether a handler interrupting `context` on this thread has the stack it needs (see
// handler_stack_bytes). Threads whose bounds are unknown (attached from another thread) are trusted.
bool stack_room(const thread_state& state, const ucontext_t& context) noexcept {
    if (state.stack_low == 0) return true;
    const std::uint64_t sp = arch::stack_pointer_of(context);
    return sp > state.stack_low + handler_stack_bytes && sp <= state.stack_high;
}

// Signal-safe: accounts one handler invocation that began at `began` (time-stamp counter) and, when this
// thread's handlers took more than half of the window, stops its sampling and watchpoints (see
// watchdog_window_cycles).
void watchdog(hardware_backend& backend, thread_state& state, std::uint64_t began) noexcept {
    const std::uint64_t now = arch::cycles_now();
    state.handler_cycles += now - began;
    const std::uint64_t window = now - state.window_start;
    if (window < watchdog_window_cycles) return;
    if (state.handler_cycles * 2 > window && !state.quarantined) {
        state.quarantined = true;
        hardware_backend::internals::watches(backend).silence(state);
        quiet_trigger(state.trigger);
        hardware_backend::internals::counters(backend).watchdog_quarantines.fetch_add(1, std::memory_order_relaxed);
    }
    state.window_start = now;
    state.handler_cycles = 0;
}

// Signal-safe: a sampling trigger on this thread (perf overflow or the thread's timer).
void on_trigger(hardware_backend& backend, thread_state& state, pid_t tid, ucontext_t& context) noexcept {
    hardware_backend::internals::counters(backend).triggers.fetch_add(1, std::memory_order_relaxed);
    ++state.triggers;
    if (state.quarantined) return; // one already on its way when the watchdog stopped the trigger
    hardware_backend::internals::watches(backend).on_sampling_interrupt(state, tid);
    const sample_source* source = state.trigger.source;
    if (source != nullptr && source->on_trigger(state, tid, context))
        hardware_backend::internals::start_stepping(backend, state, tid, context);
}

// Signal-safe: after the program displaced our handlers, this thread's events go quiet.
void silence(hardware_backend& backend, thread_state& state, ucontext_t& context) noexcept {
    quiet_trigger(state.trigger);
    hardware_backend::internals::watches(backend).silence(state);
    if (state.stepping) arch::clear_trap_flag(context);
    state.stepping = false;
    hardware_backend::internals::abandon_following(state);
}

// Signal-safe: dispatches one of our events on this thread: the trigger (`slot` < 0) or a watch.
void on_event(hardware_backend& backend, thread_state& state, pid_t tid, ucontext_t& context, int slot) noexcept {
    hardware_backend::internals::check_ownership(backend);
    if (hardware_backend::internals::handlers_displaced(backend)) {
        silence(backend, state, context);
        return;
    }
    watch_source& watches = hardware_backend::internals::watches(backend);
    if (!stack_room(state, context)) {
        hardware_backend::internals::counters(backend).no_stack_room.fetch_add(1, std::memory_order_relaxed);
        if (slot >= 0) watches.turn_off(state, static_cast<std::size_t>(slot));
        return;
    }
    const std::uint64_t began = arch::cycles_now();
    if (slot < 0)
        on_trigger(backend, state, tid, context);
    else if (state.quarantined)
        watches.turn_off(state, static_cast<std::size_t>(slot));
    else
        watches.on_trap(state, static_cast<std::size_t>(slot), tid, context);
    watchdog(backend, state, began);
}

// A single-step trap: TRAP_TRACE after an ordinary instruction; after stepping over a `syscall` the kernel reports
// the step as TRAP_BRKPT instead (x86's user_single_step_report). int3 and raise() give other codes.
bool is_step(const siginfo_t& info) noexcept { return info.si_code == TRAP_TRACE || info.si_code == TRAP_BRKPT; }

// Signal-safe: the part of on_step_signal that is ours; false for a SIGTRAP that is the program's.
bool handle_step_signal(const siginfo_t& info, ucontext_t& context) noexcept {
    const handler_scope ours;
    const errno_guard keep_errno;
    if (info.si_code == TRAP_PERF) {
        const std::uint64_t tag = arch::perf_tag_of(info);
        if ((tag & ~std::uint64_t{0xffff}) == tag_marker) {
            // Ours, possibly pending from before a stop: handled only while running.
            hardware_backend* backend = active.load(std::memory_order_acquire);
            const pid_t tid = backend ? current_tid() : 0;
            thread_state* state = backend ? threads.find(tid) : nullptr;
            if (state == nullptr) return true;
            if (tag == trigger_tag) {
                on_event(*backend, *state, tid, context, -1);
            } else if ((tag & ~std::uint64_t{0xff}) == breakpoint_tag && (tag & 0xff) < max_slots) {
                on_event(*backend, *state, tid, context, static_cast<int>(tag & 0xff));
            }
            return true;
        }
    }
    hardware_backend* backend = active.load(std::memory_order_acquire);
    const pid_t tid = backend ? current_tid() : 0;
    thread_state* state = backend ? threads.find(tid) : nullptr;
    if (state != nullptr && state->stepping && is_step(info)) {
        const std::uint64_t began = arch::cycles_now();
        hardware_backend::internals::step(*backend, *state, tid, context);
        watchdog(*backend, *state, began);
        return true;
    }
    // A step trap nobody else handles: a thread we stopped stepping mid-way (it detached or we stopped). By
    // default it would kill the program; clear the flag instead.
    if (is_step(info) && arch::trap_flag_set(context) && step_signal.displaced_default()) {
        arch::clear_trap_flag(context);
        return true;
    }
    return false;
}

} // namespace

hardware_backend::internals::delivered
hardware_backend::internals::deliver_sample(hardware_backend& backend, const decoded_instruction& decoded,
                                            std::uint64_t pc, pid_t tid, const ucontext_t& context,
                                            const handler_reads& reads) noexcept {
    std::uint64_t value = 0;
    const std::uint8_t width = decoded.width > 8 ? 8 : static_cast<std::uint8_t>(decoded.width);
    if (width == 0 || !read_memory(decoded.effective_address, &value, width, reads)) {
        backend.counters_.unreadable.fetch_add(1, std::memory_order_relaxed);
        return delivered::unreadable;
    }
    access_sample sample;
    sample.ip = pc;
    sample.effective_address = decoded.effective_address;
    sample.value = value;
    sample.width = width;
    sample.kind = decoded.kind;
    sample.thread = static_cast<std::uint32_t>(tid);
    backend.counters_.samples.fetch_add(1, std::memory_order_relaxed);
    const bool follow = backend.delivery_.on_sample(backend.delivery_.target, sample, context, reads);
    return follow && backend.options_.follow_bound > 0 && sample.kind == access_kind::load &&
                   backend.delivery_.on_followed != nullptr
               ? delivered::follow
               : delivered::sample;
}

void hardware_backend::internals::deliver_followed(hardware_backend& backend, const followed_value& value,
                                                   const ucontext_t& context, const handler_reads& reads) noexcept {
    backend.counters_.values_followed.fetch_add(1, std::memory_order_relaxed);
    backend.delivery_.on_followed(backend.delivery_.target, value, context, reads);
}

void hardware_backend::internals::deliver_trap(hardware_backend& backend, const watchpoint_trap& trap,
                                               const ucontext_t& context, const handler_reads& reads) noexcept {
    backend.counters_.traps.fetch_add(1, std::memory_order_relaxed);
    backend.delivery_.on_trap(backend.delivery_.target, trap, context, reads);
}

// At each trigger, that our handlers are still the process's. A program that installs its own SIGTRAP or
// real-time-signal handler later would otherwise receive our traps and timer signals (and never clear a trap flag
// we set). Sampling and watching then stop on every thread, each at its next trigger, and the exit summary says
// why.
void hardware_backend::internals::check_ownership(hardware_backend& backend) noexcept {
    if (backend.handlers_displaced_.load(std::memory_order_relaxed)) return;
    if (!step_signal.in_place() || !sampling_handler.in_place())
        backend.handlers_displaced_.store(true, std::memory_order_relaxed);
}

// Not signal-safe (it may sleep): once the program has displaced our handlers, every thread's timer and perf
// events are switched off from outside, once, whoever noticed first (check_ownership in a handler only quiets its
// own thread, and a thread whose timer signal now reaches the program's handler never runs ours again). Timers
// and perf events are process objects any thread may switch off; a descriptor the program closed is left alone.
// A thread in the middle of stepping ends at its next step trap, which still reaches our handler; this waits at
// most 0.1 s for that.
void hardware_backend::internals::quiet_every_thread(hardware_backend& backend) noexcept {
    if (backend.quieted_.exchange(true)) return;
    watch_source& watches = *backend.watches_;
    threads.for_each([&](pid_t, thread_state& state) {
        quiet_trigger(state.trigger);
        watches.silence_from_outside(state);
    });
    for (int wait = 0; wait < 100; ++wait) {
        bool stepping = false;
        threads.for_each([&](pid_t, thread_state& state) { stepping |= state.stepping; });
        if (!stepping) break;
        timespec millisecond{0, 1000000};
        ::nanosleep(&millisecond, nullptr);
    }
}

// Our real-time signal: the thread's CPU-time timer, and perf events where SIGTRAP cannot carry them.
void hardware_backend::internals::on_sampling_signal(int signal, siginfo_t* info, void* raw_context) noexcept {
    const handler_scope ours;
    const errno_guard keep_errno;
    hardware_backend* backend = active.load(std::memory_order_acquire);
    const pid_t tid = current_tid();
    thread_state* state = backend ? threads.find(tid) : nullptr;
    if (state == nullptr) return; // stopped, or a thread being torn down: nothing to do
    auto& context = *static_cast<ucontext_t*>(raw_context);
    if (info->si_code == SI_TIMER) {
        on_event(*backend, *state, tid, context, -1);
        return;
    }
    const int fd = info->si_fd;
    if (fd >= 0 && fd == state->trigger.fd) {
        on_event(*backend, *state, tid, context, -1);
        return;
    }
    for (std::size_t slot = 0; slot < max_slots; ++slot) {
        if (fd >= 0 && state->breakpoint_fds[slot] == fd) {
            on_event(*backend, *state, tid, context, static_cast<int>(slot));
            return;
        }
    }
    (void)signal;
}

// SIGIO where the program left it at its default action (see `start`): a signal of ours that found the user's
// queue full, counted; after the program installs its own handler, SIGIO is its.
void hardware_backend::internals::on_overflow_signal(int signal, siginfo_t* info, void* raw_context) noexcept {
    const handler_scope ours;
    if (hardware_backend* backend = active.load(std::memory_order_acquire))
        backend->counters_.queue_overflows.fetch_add(1, std::memory_order_relaxed);
    (void)signal;
    (void)info;
    (void)raw_context;
}

// SIGTRAP: our perf events' synchronous traps (TRAP_PERF with our tag), single steps of a thread that is
// stepping; anything else is the program's (or a debugger's), passed on outside our handler's scope.
void hardware_backend::internals::on_step_signal(int signal, siginfo_t* info, void* raw_context) noexcept {
    if (!handle_step_signal(*info, *static_cast<ucontext_t*>(raw_context)))
        step_signal.chain(signal, info, raw_context);
}

} // namespace ojx::hardware
