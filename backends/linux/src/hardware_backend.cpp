#include "ojx/hardware/hardware_backend.hpp"

#include "ojx/hardware/fault_safe_read.hpp"
#include "ojx/hardware/access_lookahead.hpp"
#include "ojx/hardware/handler_scope.hpp"
#include "ojx/hardware/instruction_decoder.hpp"
#include "ojx/hardware/signals.hpp"
#include "ojx/hardware/thread_table.hpp"
#include "ojx/random.hpp"

#include <linux/hw_breakpoint.h>
#include <sys/syscall.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>

namespace ojx::hardware {

namespace {

constexpr std::size_t max_slots = 8;
constexpr long trap_flag = 0x100; // EFLAGS.TF: trap after the next instruction
constexpr std::size_t ring_data_pages = 8;

struct thread_state {
    // Set up and torn down by the thread itself, outside signal handlers.
    int trigger_fd = -1; // decode: perf counter; precise: the sampling event (with `ring`)
    std::uint64_t trigger_period = 0; // the trigger's mean period, randomized at each overflow; 0: by frequency
    timer_t timer{};
    bool has_timer = false;
    clockid_t timer_clock{};
    std::uint64_t timer_expiry_ns = 0; // the thread CPU time the timer is set for (absolute)
    void* ring = nullptr;
    std::size_t ring_bytes = 0;
    std::array<int, max_slots> breakpoint_fds{-1, -1, -1, -1, -1, -1, -1, -1};
    std::uint64_t stack_low = 0; // the thread's stack, for frame-pointer walks (0: unknown)
    std::uint64_t stack_high = 0;
    // What this thread's debug registers watch now: no handler of this thread loads from there.
    watched_ranges watching;
    // Touched only by this thread's signal handlers.
    bool stepping = false;
    // The watchdog (see `watchdog`): time-stamp counter readings.
    std::uint64_t window_start = 0; // when the current window began
    std::uint64_t handler_cycles = 0; // spent in our handlers during it
    bool quarantined = false; // the watchdog turned this thread's sampling and watchpoints off for good
    std::uint64_t triggers = 0; // sampling interrupts this thread took (see note_coverage)
    std::uint32_t steps_to_skip = 0;
    std::uint32_t steps_taken = 0;
    fast_random rng{};
    // With a sampler running: the armed_slot::generation each of this thread's debug registers reflects (see
    // hardware_backend::arm). Touched only by this thread.
    std::array<std::uint64_t, max_slots> synced_generation{};
};

// What an armed slot watches, as the profiler asked (`where`, `width`) and as the debug register is to be set
// (`base`, `length`). `generation` is a seqlock over the whole record: odd while arm or disarm rewrites it, and
// each rewrite makes it larger, so a thread can tell whether its copy of the slot is current.
struct armed_slot {
    std::atomic<std::uint64_t> generation{0};
    std::atomic<std::uint64_t> where{0};
    std::atomic<std::uint8_t> width{0};
    std::atomic<bool> armed{false};
    std::atomic<std::uint64_t> base{0};
    std::atomic<std::uint8_t> length{0};
};

// Writer side of the seqlock (arm and disarm; the profiler serialises them). The fields are then stored with
// release and read with acquire, which orders them against the generation without fences (ThreadSanitizer
// does not model fences; on x86 these are plain moves either way).
void begin_slot_update(armed_slot& slot) noexcept { slot.generation.fetch_add(1, std::memory_order_relaxed); }
void end_slot_update(armed_slot& slot) noexcept { slot.generation.fetch_add(1, std::memory_order_release); }

// A consistent copy of a slot's target, for a debug register.
struct slot_target {
    bool armed = false;
    std::uint64_t base = 0;
    std::uint8_t length = 0;
};

// Tags in si_perf_data of the SIGTRAPs our perf events send (deliver_as_sigtrap): which event of the thread fired.
constexpr std::uint64_t tag_marker = std::uint64_t{0x6f6a78} << 40; // "ojx"
constexpr std::uint64_t trigger_tag = tag_marker | (1 << 8);
constexpr std::uint64_t breakpoint_tag = tag_marker | (2 << 8); // | slot

// x86-64 siginfo_t for TRAP_PERF (the kernel's _sigfault._perf, which glibc's siginfo_t does not name): the tag
// follows si_addr.
std::uint64_t perf_tag_of(const siginfo_t& info) noexcept {
    static_assert(sizeof(siginfo_t) >= 32);
    std::uint64_t tag = 0;
    std::memcpy(&tag, reinterpret_cast<const unsigned char*>(&info) + 24, sizeof tag);
    return tag;
}

#ifndef TRAP_PERF
#define TRAP_PERF 6
#endif

// Our handlers need this much stack below the interrupted code's: they run on the interrupted stack (never on
// an alternate signal stack, which a program may size for its own handlers only: 8 KiB was classic SIGSTKSZ).
// Where less is left, or the interrupted code runs on a stack other than the thread's own, the handler does only
// what takes no stack (turning a watchpoint off) and counts the event.
constexpr std::uint64_t handler_stack_bytes = 32 * 1024;

// The watchdog: a thread whose handlers take more than half of its time over a window of at least this many
// time-stamp-counter cycles (≈ 0.1 s at 2-4 GHz) is in a storm (a trap that repeats without progress, a trigger
// that fires too often); its sampling and watchpoints are turned off for good and counted.
constexpr std::uint64_t watchdog_window_cycles = std::uint64_t{1} << 28;

std::uint64_t cycles_now() noexcept { return __builtin_ia32_rdtsc(); }

// Process-wide: signal handlers reach the running backend through these.
std::atomic<hardware_backend*> active{nullptr};
thread_table<thread_state> threads;
std::array<armed_slot, max_slots> slots;
chained_handler sampling_handler; // our real-time signal: timers, and perf events where SIGTRAP cannot carry them
chained_handler step_signal;     // SIGTRAP: single steps, and perf events (synchronous_traps)
chained_handler overflow_signal; // SIGIO, which a full signal queue sends instead of our real-time signal
int sampling_signal_number = 0;

// Restores errno on every exit from a handler.
struct errno_guard {
    int saved = errno;
    ~errno_guard() { errno = saved; }
};

greg_t& flags_of(ucontext_t& context) noexcept { return context.uc_mcontext.gregs[REG_EFL]; }
std::uint64_t pc_of(const ucontext_t& context) noexcept {
    return static_cast<std::uint64_t>(context.uc_mcontext.gregs[REG_RIP]);
}

// The x86 breakpoint length and aligned base covering [where, where + width), if any.
bool breakpoint_cover(std::uint64_t where, std::uint8_t width, std::uint64_t& base, std::uint8_t& length) noexcept {
    for (std::uint8_t candidate : {1, 2, 4, 8}) {
        if (candidate >= width && where % candidate == 0) {
            base = where;
            length = candidate;
            return true;
        }
    }
    base = where & ~std::uint64_t{7};
    length = 8;
    return where + width <= base + 8;
}

// Signal-safe: up to `size` code bytes at `pc`; code may end just before an unmapped page, so a failed full
// read is retried with what is left of the page. Returns the number of bytes read (0: unreadable). A
// code_reader for find_access_ahead.
std::size_t read_code(const void* state, std::uint64_t pc, std::uint8_t* code, std::size_t size) noexcept {
    const handler_reads& reads = *static_cast<const handler_reads*>(state);
    if (read_memory(pc, code, size, reads)) return size;
    const std::size_t rest_of_page = 4096 - (pc & 4095);
    if (rest_of_page < size && read_memory(pc, code, rest_of_page, reads)) return rest_of_page;
    return 0;
}

// Signal-safe. `reads` must outlive the reader's use.
code_reader code_reader_for(const handler_reads& reads) noexcept { return {read_code, &reads}; }

// Signal-safe: how this handler invocation, on the thread of `state`, may read memory.
handler_reads reads_for(const ucontext_t& context, const thread_state& state) noexcept {
    return {read_method_for(context), &state.watching};
}

// How much code the sampler reads at the pc for looking ahead: one read of 64 bytes costs what one of 15 does.
constexpr std::size_t lookahead_bytes = 64;

// "250 Hz" for a 4 ms tick.
std::string tick_rate_text(std::uint64_t tick_ns) {
    return std::to_string(std::lround(1e9 / static_cast<double>(tick_ns))) + " Hz";
}

std::uint64_t random_period(thread_state& state, double mean) noexcept {
    // Uniform in [0.5, 1.5] × mean: a fixed period can lock onto a loop and sample one instruction forever.
    const double period = mean * (0.5 + state.rng.unit());
    return period < 1 ? 1 : static_cast<std::uint64_t>(period);
}

} // namespace

struct hardware_backend::internals {
    // Signal-safe. Reads the value of a decoded access and hands the sample over.
    static bool deliver_sample(hardware_backend& backend, const decoded_instruction& decoded, std::uint64_t pc,
                               pid_t tid, const ucontext_t& context, const handler_reads& reads) noexcept {
        std::uint64_t value = 0;
        const std::uint8_t width = decoded.width > 8 ? 8 : static_cast<std::uint8_t>(decoded.width);
        if (width == 0 || !read_memory(decoded.effective_address, &value, width, reads)) {
            backend.counters_.unreadable.fetch_add(1, std::memory_order_relaxed);
            return false;
        }
        access_sample sample;
        sample.ip = pc;
        sample.effective_address = decoded.effective_address;
        sample.value = value;
        sample.width = width;
        sample.kind = decoded.kind;
        sample.thread = static_cast<std::uint32_t>(tid);
        backend.counters_.samples.fetch_add(1, std::memory_order_relaxed);
        backend.delivery_.on_sample(backend.delivery_.target, sample, context, reads);
        return true;
    }

    // The code bytes at the interrupted pc, read once per signal: both the decoder and the system-call check
    // need them, and each fault-safe read is a system call (≈ 1 µs).
    struct code_at_pc {
        std::uint64_t pc;
        std::uint8_t bytes[lookahead_bytes];
        std::size_t available;
    };

    // Signal-safe. The access that `skip` more steps and then stepping to the next access would reach, when it
    // can be found by decoding ahead (find_access_ahead; with skip 0 that includes the instruction at the pc):
    // delivered at once, and true. Unreadable code ends the attempt (true): it could not be stepped over safely.
    // False: single-step.
    static bool try_sample_ahead(hardware_backend& backend, pid_t tid, const ucontext_t& context,
                                 const code_at_pc& code, std::uint32_t skip, const handler_reads& reads) noexcept {
        if (code.available == 0) {
            backend.counters_.unreadable.fetch_add(1, std::memory_order_relaxed);
            return true;
        }
        const access_ahead ahead =
            find_access_ahead(code.bytes, code.available, from_ucontext(context), skip, code_reader_for(reads));
        if (!ahead.found) return false;
        backend.counters_.found_ahead.fetch_add(1, std::memory_order_relaxed);
        deliver_sample(backend, ahead.access, ahead.pc, tid, context, reads);
        return true;
    }

    // Signal-safe.
    static code_at_pc read_code_at_pc(const ucontext_t& context, const handler_reads& reads) noexcept {
        code_at_pc code{};
        code.pc = pc_of(context);
        code.available = code_reader_for(reads)(code.pc, code.bytes, sizeof code.bytes);
        return code;
    }

    // Signal-safe: whether the trap flag may stay set over the instruction at the context's pc. Never over a
    // system call: one that blocks SIGTRAP (sigprocmask; glibc's pthread_create blocks every signal around
    // clone) or creates a thread (the child inherits the flag, with signals blocked) takes its single-step trap
    // with SIGTRAP blocked, and the kernel then kills the process with it. Nor while the interrupted code has
    // SIGTRAP blocked.
    static bool may_step_over(const ucontext_t& context, const code_at_pc& code) noexcept {
        if (sigismember(&context.uc_sigmask, SIGTRAP) == 1) return false;
        if (code.available < 2) return false;
        const std::uint8_t* bytes = code.bytes;
        const bool system_call = (bytes[0] == 0x0F && (bytes[1] == 0x05 || bytes[1] == 0x34)) || // syscall, sysenter
                                 (bytes[0] == 0xCD && bytes[1] == 0x80);                        // int 0x80
        return !system_call;
    }

    static void start_stepping(hardware_backend& backend, thread_state& state, pid_t tid,
                               ucontext_t& context) noexcept {
        if (state.stepping) {
            backend.counters_.triggers_while_stepping.fetch_add(1, std::memory_order_relaxed);
            return;
        }
        state.steps_to_skip = static_cast<std::uint32_t>(state.rng.below(backend.options_.max_random_steps + 1));
        state.steps_taken = 0;
        const handler_reads reads = reads_for(context, state);
        const code_at_pc code = read_code_at_pc(context, reads);
        if (try_sample_ahead(backend, tid, context, code, state.steps_to_skip, reads)) return;
        if (!may_step_over(context, code)) { // our SIGTRAP handler was checked by on_event (check_ownership)
            backend.counters_.steps_refused.fetch_add(1, std::memory_order_relaxed);
            return;
        }
        state.stepping = true;
        flags_of(context) |= trap_flag;
    }

    // Signal-safe: one single-step trap on a thread that is stepping towards its sample.
    static void step(hardware_backend& backend, thread_state& state, pid_t tid, ucontext_t& context) noexcept {
        if (backend.handlers_displaced_.load(std::memory_order_relaxed)) {
            // The program is taking SIGTRAP over (before_program_handler): end the step here.
            flags_of(context) &= ~trap_flag;
            state.stepping = false;
            return;
        }
        backend.counters_.steps.fetch_add(1, std::memory_order_relaxed);
        ++state.steps_taken;
        const handler_reads reads = reads_for(context, state);
        const code_at_pc code = read_code_at_pc(context, reads);
        if (state.steps_to_skip > 0) --state.steps_to_skip;
        bool done = try_sample_ahead(backend, tid, context, code, state.steps_to_skip, reads);
        if (!done && state.steps_taken >= backend.options_.max_steps) {
            backend.counters_.gave_up.fetch_add(1, std::memory_order_relaxed);
            done = true;
        }
        if (!done && !may_step_over(context, code)) {
            backend.counters_.steps_refused.fetch_add(1, std::memory_order_relaxed);
            done = true;
        }
        if (done) {
            state.stepping = false;
            flags_of(context) &= ~trap_flag;
        } else {
            flags_of(context) |= trap_flag;
        }
    }

    // Signal-safe: drains the precise event's ring buffer of this thread.
    static void drain_ring(hardware_backend& backend, thread_state& state, pid_t tid,
                           const ucontext_t& context) noexcept {
        auto* header = static_cast<perf_event_mmap_page*>(state.ring);
        auto* data = static_cast<unsigned char*>(state.ring) + header->data_offset;
        const std::uint64_t size = header->data_size;
        std::uint64_t tail = header->data_tail;
        const std::uint64_t head = __atomic_load_n(&header->data_head, __ATOMIC_ACQUIRE);
        const handler_reads reads = reads_for(context, state);
        auto copy_out = [&](std::uint64_t at, void* out, std::size_t bytes) {
            auto* to = static_cast<unsigned char*>(out);
            for (std::size_t i = 0; i < bytes; ++i) to[i] = data[(at + i) % size];
        };
        while (tail + sizeof(perf_event_header) <= head) {
            perf_event_header record{};
            copy_out(tail, &record, sizeof(record));
            if (record.size == 0) break;
            if (record.type == PERF_RECORD_SAMPLE) {
                // Layout for PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_ADDR: ip, pid, tid, addr.
                struct {
                    std::uint64_t ip;
                    std::uint32_t pid, tid;
                    std::uint64_t addr;
                } body{};
                copy_out(tail + sizeof(record), &body, sizeof(body));
                std::uint8_t code[max_instruction_length];
                decoded_instruction decoded{};
                if (const std::size_t available = code_reader_for(reads)(body.ip, code, sizeof code); available > 0) {
                    register_file registers = from_ucontext(context);
                    registers.rip = body.ip;
                    decoded = decode_access(code, available, registers);
                }
                // The event gives the address; the instruction gives the width (8 if it cannot be decoded).
                decoded.effective_address = body.addr;
                if (decoded.status != decode_status::memory_access) {
                    decoded.width = 8;
                    decoded.kind = access_kind::load;
                }
                if (body.addr != 0) deliver_sample(backend, decoded, body.ip, tid, context, reads);
            }
            tail += record.size;
        }
        __atomic_store_n(&header->data_tail, tail, __ATOMIC_RELEASE);
    }

    // Signal-safe: a debug register of this thread fired.
    static void trap(hardware_backend& backend, thread_state& state, std::size_t slot, pid_t tid,
                     const ucontext_t& context) noexcept {
        armed_slot& armed = slots[slot];
        if (backend.chosen_ != sampler_kind::none &&
            state.synced_generation[slot] != armed.generation.load(std::memory_order_acquire)) {
            // Armed lazily (see `arm`): this thread's register still watched an earlier target. Bring it up to
            // date; the access was not to the slot's address.
            sync_breakpoints(backend, state, tid);
            backend.counters_.traps_unknown.fetch_add(1, std::memory_order_relaxed);
            return;
        }
        if (!armed.armed.load(std::memory_order_acquire)) {
            // Disarmed lazily (see `disarm`): this thread's copy still watched; turn it off, here, for free.
            turn_off(state, slot);
            backend.counters_.traps_unknown.fetch_add(1, std::memory_order_relaxed);
            return;
        }
        const std::uint64_t where = armed.where.load(std::memory_order_relaxed);
        const std::uint8_t width = armed.width.load(std::memory_order_relaxed);
        register_file registers = from_ucontext(context);
        // A data breakpoint traps after the access: the pc is the next instruction; find the one before it.
        const handler_reads reads = reads_for(context, state);
        process_memory memory{reads};
        const decoded_instruction previous = decode_previous_access(pc_of(context), where, width, registers, memory);
        watchpoint_trap trap;
        trap.slot = slot;
        trap.watched_address = where;
        trap.width = width;
        trap.thread = static_cast<std::uint32_t>(tid);
        if (previous.status == decode_status::memory_access) {
            trap.kind = previous.kind;
            trap.ip = pc_of(context) - previous.length;
        } else {
            backend.counters_.traps_undecoded.fetch_add(1, std::memory_order_relaxed);
            trap.ip = pc_of(context);
        }
        if (!read_memory(where, &trap.value, width, reads)) {
            backend.counters_.unreadable.fetch_add(1, std::memory_order_relaxed);
            return;
        }
        backend.counters_.traps.fetch_add(1, std::memory_order_relaxed);
        backend.delivery_.on_trap(backend.delivery_.target, trap, context, reads);
    }

    // Signal-safe: turns this thread's debug register in `slot` off (no trap until it is pointed again).
    static void turn_off(thread_state& state, std::size_t slot) noexcept {
        state.watching.clear(slot);
        if (is_perf_event_fd(state.breakpoint_fds[slot])) ::ioctl(state.breakpoint_fds[slot], PERF_EVENT_IOC_DISABLE, 0);
    }

    // Signal-safe: whether a handler interrupting `context` on this thread has the stack it needs (see
    // handler_stack_bytes). Threads whose bounds are unknown (attached from another thread) are trusted.
    static bool stack_room(const thread_state& state, const ucontext_t& context) noexcept {
        if (state.stack_low == 0) return true;
        const auto sp = static_cast<std::uint64_t>(context.uc_mcontext.gregs[REG_RSP]);
        return sp > state.stack_low + handler_stack_bytes && sp <= state.stack_high;
    }

    // Signal-safe: accounts one handler invocation that began at `began` (time-stamp counter) and, when this
    // thread's handlers took more than half of the window, stops its sampling and watchpoints (see
    // watchdog_window_cycles).
    static void watchdog(hardware_backend& backend, thread_state& state, std::uint64_t began) noexcept {
        const std::uint64_t now = cycles_now();
        state.handler_cycles += now - began;
        const std::uint64_t window = now - state.window_start;
        if (window < watchdog_window_cycles) return;
        if (state.handler_cycles * 2 > window && !state.quarantined) {
            state.quarantined = true;
            for (std::size_t slot = 0; slot < backend.slots_; ++slot) turn_off(state, slot);
            stop_sampling(state);
            backend.counters_.watchdog_quarantines.fetch_add(1, std::memory_order_relaxed);
        }
        state.window_start = now;
        state.handler_cycles = 0;
    }

    // Signal-safe: a sampling trigger on this thread (perf overflow or the thread's timer).
    static void on_trigger(hardware_backend& backend, thread_state& state, pid_t tid, ucontext_t& context,
                           int fd) noexcept {
        backend.counters_.triggers.fetch_add(1, std::memory_order_relaxed);
        ++state.triggers;
        if (state.quarantined) return; // one already on its way when the watchdog stopped the trigger
        sync_breakpoints(backend, state, tid);
        if (state.has_timer) {
            rearm_timer(backend, state);
        } else if (state.ring != nullptr) {
            drain_ring(backend, state, tid, context);
            return;
        } else if (state.trigger_period != 0 && fd >= 0) {
            std::uint64_t period = random_period(state, static_cast<double>(state.trigger_period));
            ::ioctl(fd, PERF_EVENT_IOC_PERIOD, &period);
        }
        start_stepping(backend, state, tid, context);
    }

    // Signal-safe: at each trigger, that our handlers are still the process's. A program that installs its own
    // SIGTRAP or real-time-signal handler later would otherwise receive our traps and timer signals (and never
    // clear a trap flag we set). Sampling and watching then stop on every thread, each at its next trigger, and
    // the exit summary says why.
    static void check_ownership(hardware_backend& backend) noexcept {
        if (backend.handlers_displaced_.load(std::memory_order_relaxed)) return;
        if (!step_signal.in_place() || !sampling_handler.in_place())
            backend.handlers_displaced_.store(true, std::memory_order_relaxed);
    }

    // Signal-safe: this thread's sampling trigger goes quiet for good.
    static void stop_sampling(thread_state& state) noexcept {
        if (state.has_timer) {
            itimerspec off{};
            ::timer_settime(state.timer, 0, &off, nullptr);
        }
        if (is_perf_event_fd(state.trigger_fd)) ::ioctl(state.trigger_fd, PERF_EVENT_IOC_DISABLE, 0);
    }

    // Signal-safe: after the program displaced our handlers, this thread's events go quiet.
    static void silence(thread_state& state, ucontext_t& context) noexcept {
        stop_sampling(state);
        for (std::size_t slot = 0; slot < max_slots; ++slot)
            if (state.breakpoint_fds[slot] >= 0) turn_off(state, slot);
        if (state.stepping) flags_of(context) &= ~trap_flag;
        state.stepping = false;
    }

    // From another thread (before_program_handler): stops a thread's timer and perf events. Timers and perf
    // events are process objects any thread may switch off; a descriptor the program closed is left alone.
    static void silence_from_outside(thread_state& state) noexcept {
        stop_sampling(state);
        for (const int fd : state.breakpoint_fds)
            if (is_perf_event_fd(fd)) ::ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
    }

    // Not signal-safe (it may sleep): once the program has displaced our handlers, every thread's timer and perf
    // events are switched off from outside, once, whoever noticed first (check_ownership in a handler only quiets
    // its own thread, and a thread whose timer signal now reaches the program's handler never runs ours again).
    // A thread in the middle of stepping ends at its next step trap, which still reaches our handler; this waits
    // at most 0.1 s for that.
    static void quiet_every_thread(hardware_backend& backend) noexcept {
        if (backend.quieted_.exchange(true)) return;
        threads.for_each([](pid_t, thread_state& state) { silence_from_outside(state); });
        for (int wait = 0; wait < 100; ++wait) {
            bool stepping = false;
            threads.for_each([&](pid_t, thread_state& state) { stepping |= state.stepping; });
            if (!stepping) break;
            timespec millisecond{0, 1000000};
            ::nanosleep(&millisecond, nullptr);
        }
    }

    // Signal-safe: dispatches one of our events on this thread: the trigger (`slot` < 0) or a breakpoint.
    static void on_event(hardware_backend& backend, thread_state& state, pid_t tid, ucontext_t& context, int slot,
                         int fd) noexcept {
        check_ownership(backend);
        if (backend.handlers_displaced_.load(std::memory_order_relaxed)) {
            silence(state, context);
            return;
        }
        if (!stack_room(state, context)) {
            backend.counters_.no_stack_room.fetch_add(1, std::memory_order_relaxed);
            if (slot >= 0) turn_off(state, static_cast<std::size_t>(slot));
            return;
        }
        const std::uint64_t began = cycles_now();
        if (slot < 0)
            on_trigger(backend, state, tid, context, fd);
        else if (state.quarantined)
            turn_off(state, static_cast<std::size_t>(slot));
        else
            trap(backend, state, static_cast<std::size_t>(slot), tid, context);
        watchdog(backend, state, began);
    }

    // Our real-time signal: the thread's CPU-time timer, and perf events where SIGTRAP cannot carry them.
    static void on_sampling_signal(int signal, siginfo_t* info, void* raw_context) noexcept {
        const handler_scope ours;
        const errno_guard keep_errno;
        hardware_backend* backend = active.load(std::memory_order_acquire);
        const pid_t tid = current_tid();
        thread_state* state = backend ? threads.find(tid) : nullptr;
        if (state == nullptr) return; // stopped, or a thread being torn down: nothing to do
        auto& context = *static_cast<ucontext_t*>(raw_context);
        if (info->si_code == SI_TIMER) {
            on_event(*backend, *state, tid, context, -1, -1);
            return;
        }
        const int fd = info->si_fd;
        if (fd >= 0 && fd == state->trigger_fd) {
            on_event(*backend, *state, tid, context, -1, fd);
            return;
        }
        for (std::size_t slot = 0; slot < backend->slots_; ++slot) {
            if (fd >= 0 && state->breakpoint_fds[slot] == fd) {
                on_event(*backend, *state, tid, context, static_cast<int>(slot), fd);
                return;
            }
        }
        (void)signal;
    }

    // SIGIO where the program left it at its default action (see `start`): a signal of ours that found the
    // user's queue full, counted; after the program installs its own handler, SIGIO is its.
    static void on_overflow_signal(int signal, siginfo_t* info, void* raw_context) noexcept {
        const handler_scope ours;
        if (hardware_backend* backend = active.load(std::memory_order_acquire))
            backend->counters_.queue_overflows.fetch_add(1, std::memory_order_relaxed);
        (void)signal;
        (void)info;
        (void)raw_context;
    }

    // A single-step trap: TRAP_TRACE after an ordinary instruction; after stepping over a `syscall` the kernel
    // reports the step as TRAP_BRKPT instead (x86's user_single_step_report). int3 and raise() give other codes.
    static bool is_step(const siginfo_t& info) noexcept {
        return info.si_code == TRAP_TRACE || info.si_code == TRAP_BRKPT;
    }

    // SIGTRAP: our perf events' synchronous traps (TRAP_PERF with our tag), single steps of a thread that is
    // stepping; anything else is the program's (or a debugger's), passed on outside our handler's scope.
    static void on_step_signal(int signal, siginfo_t* info, void* raw_context) noexcept {
        if (!handle_step_signal(*info, *static_cast<ucontext_t*>(raw_context)))
            step_signal.chain(signal, info, raw_context);
    }

    // Signal-safe: the part of on_step_signal that is ours; false for a SIGTRAP that is the program's.
    static bool handle_step_signal(const siginfo_t& info, ucontext_t& context) noexcept {
        const handler_scope ours;
        const errno_guard keep_errno;
        if (info.si_code == TRAP_PERF) {
            const std::uint64_t tag = perf_tag_of(info);
            if ((tag & ~std::uint64_t{0xffff}) == tag_marker) {
                // Ours, possibly pending from before a stop: handled only while running.
                hardware_backend* backend = active.load(std::memory_order_acquire);
                const pid_t tid = backend ? current_tid() : 0;
                thread_state* state = backend ? threads.find(tid) : nullptr;
                if (state == nullptr) return true;
                if (tag == trigger_tag) {
                    on_event(*backend, *state, tid, context, -1, state->trigger_fd);
                } else if ((tag & ~std::uint64_t{0xff}) == breakpoint_tag && (tag & 0xff) < backend->slots_) {
                    on_event(*backend, *state, tid, context, static_cast<int>(tag & 0xff), -1);
                }
                return true;
            }
        }
        hardware_backend* backend = active.load(std::memory_order_acquire);
        const pid_t tid = backend ? current_tid() : 0;
        thread_state* state = backend ? threads.find(tid) : nullptr;
        if (state != nullptr && state->stepping && is_step(info)) {
            const std::uint64_t began = cycles_now();
            step(*backend, *state, tid, context);
            watchdog(*backend, *state, began);
            return true;
        }
        // A step trap nobody else handles: a thread we stopped stepping mid-way (it detached or we stopped).
        // By default it would kill the program; clear the flag instead.
        if (is_step(info) && (flags_of(context) & trap_flag) != 0 && step_signal.displaced_default()) {
            flags_of(context) &= ~trap_flag;
            return true;
        }
        return false;
    }

    // Signal-safe: the one-shot CPU-time timer, set for a random interval after its previous expiry. The kernel
    // checks CPU-time timers at the scheduler tick, so a timer fires up to one tick (1-10 ms) after its expiry;
    // setting each expiry from the previous one (absolute time), not from the late firing, keeps the requested
    // rate on average. A thread that fell a whole interval behind (it had stopped the timer while stepping, say)
    // starts afresh from now rather than firing a burst to catch up.
    static void rearm_timer(hardware_backend& backend, thread_state& state) noexcept {
        const double mean_ns = 1e9 / backend.options_.samples_per_second;
        const std::uint64_t period = random_period(state, mean_ns);
        timespec now{};
        ::clock_gettime(state.timer_clock, &now);
        const std::uint64_t now_ns = static_cast<std::uint64_t>(now.tv_sec) * 1000000000ULL +
                                     static_cast<std::uint64_t>(now.tv_nsec);
        state.timer_expiry_ns += period;
        if (state.timer_expiry_ns <= now_ns) state.timer_expiry_ns = now_ns + period;
        itimerspec spec{};
        spec.it_value.tv_sec = static_cast<time_t>(state.timer_expiry_ns / 1000000000ULL);
        spec.it_value.tv_nsec = static_cast<long>(state.timer_expiry_ns % 1000000000ULL);
        ::timer_settime(state.timer, TIMER_ABSTIME, &spec, nullptr);
    }

    static std::optional<std::string> open_trigger(hardware_backend& backend, thread_state& state, pid_t tid) {
        if (backend.chosen_ == sampler_kind::none) return std::nullopt;
        if (backend.chosen_ == sampler_kind::decode_timer) {
            sigevent event{};
            event.sigev_notify = SIGEV_THREAD_ID;
            event.sigev_signo = sampling_signal_number;
            event._sigev_un._tid = tid;
            // Another thread's CPU clock: the kernel's encoding of a per-thread CPU-time clock id (as glibc's
            // pthread_getcpuclockid computes it), CPUCLOCK_SCHED of thread `tid`.
            const clockid_t clock = tid == current_tid() ? CLOCK_THREAD_CPUTIME_ID
                                                         : static_cast<clockid_t>((~tid) * 8 | 6);
            if (::timer_create(clock, &event, &state.timer) == 0) {
                state.has_timer = true;
                state.timer_clock = clock;
                state.timer_expiry_ns = 0; // the first arming starts from now
                rearm_timer(backend, state);
                return std::nullopt;
            }
            // A timer holds a slot of the user's signal queue (RLIMIT_SIGPENDING), which other processes of the
            // user may have filled. The task clock with synchronous traps needs none: sample on it instead.
            const int error = errno;
            if (error != EAGAIN || !backend.caps_.synchronous_traps || !backend.caps_.perf_events)
                return std::string("timer_create: ") + std::strerror(error);
            backend.counters_.timer_fallbacks.fetch_add(1, std::memory_order_relaxed);
            perf_event_attr clock_attr = task_clock_trigger(backend.options_.samples_per_second);
            return open_perf_trigger(backend, state, tid, clock_attr);
        }
        perf_event_attr attr = backend.trigger_attr_;
        return open_perf_trigger(backend, state, tid, attr);
    }

    // The task clock as a decode trigger at `samples_per_second`.
    static perf_event_attr task_clock_trigger(double samples_per_second) noexcept {
        perf_event_attr attr{};
        attr.exclude_kernel = 1;
        attr.disabled = 1;
        attr.wakeup_events = 1;
        attr.type = PERF_TYPE_SOFTWARE;
        attr.config = PERF_COUNT_SW_TASK_CLOCK;
        attr.sample_period = static_cast<std::uint64_t>(1e9 / samples_per_second);
        return attr;
    }

    // Opens `attr` as this thread's sampling trigger, its overflows delivered as a synchronous SIGTRAP where the
    // kernel can, else as our real-time signal.
    static std::optional<std::string> open_perf_trigger(hardware_backend& backend, thread_state& state, pid_t tid,
                                                        perf_event_attr& attr) {
        if (backend.caps_.synchronous_traps) deliver_as_sigtrap(attr, trigger_tag);
        const int fd = open_perf_event(attr, tid);
        if (fd < 0) return std::string("perf_event_open (sampling): ") + std::strerror(-fd);
        state.trigger_fd = fd;
        state.trigger_period = attr.freq != 0 ? 0 : attr.sample_period;
        if (backend.chosen_ == sampler_kind::precise) {
            const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
            state.ring_bytes = (1 + ring_data_pages) * page;
            void* ring = ::mmap(nullptr, state.ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if (ring == MAP_FAILED) return std::string("mmap of the sample buffer: ") + std::strerror(errno);
            state.ring = ring;
        }
        if (!backend.caps_.synchronous_traps) {
            if (const int error = route_to_thread(fd, sampling_signal_number, tid); error != 0)
                return std::string("routing samples to the thread: ") + std::strerror(error);
        }
        ::ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
        return std::nullopt;
    }

    // A breakpoint attribute for `slot` of this backend, delivered as the triggers are.
    static perf_event_attr breakpoint_for(const hardware_backend& backend, std::size_t slot, std::uint64_t base,
                                          std::uint8_t length, bool disabled) noexcept {
        perf_event_attr attr = breakpoint_attr(base, length, disabled);
        if (backend.caps_.synchronous_traps) deliver_as_sigtrap(attr, breakpoint_tag | slot);
        return attr;
    }

    // Opens a breakpoint of thread `tid` (an attribute from breakpoint_for) and routes it; the fd, or -errno.
    static int open_breakpoint(const hardware_backend& backend, pid_t tid, perf_event_attr& attr) noexcept {
        const int fd = open_perf_event(attr, tid);
        if (fd < 0 || backend.caps_.synchronous_traps) return fd;
        if (const int error = route_to_thread(fd, sampling_signal_number, tid); error != 0) {
            ::close(fd);
            return -error;
        }
        return fd;
    }

    static std::optional<std::string> open_breakpoints(hardware_backend& backend, thread_state& state, pid_t tid) {
        static std::uint64_t parked; // disabled breakpoints point here
        for (std::size_t slot = 0; slot < backend.slots_; ++slot) {
            const armed_slot& armed = slots[slot];
            // Opened parked; the first sync_breakpoints (or an eager arm) points it at the slot's target.
            state.synced_generation[slot] = ~std::uint64_t{0};
            const bool on = armed.armed.load(std::memory_order_relaxed);
            const std::uint64_t base = armed.base.load(std::memory_order_relaxed);
            const std::uint8_t length = armed.length.load(std::memory_order_relaxed);
            perf_event_attr attr = on ? breakpoint_for(backend, slot, base, length, false)
                                      : breakpoint_for(backend, slot, reinterpret_cast<std::uint64_t>(&parked), 8, true);
            const int fd = open_breakpoint(backend, tid, attr);
            if (fd < 0) return std::string("perf_event_open (breakpoint): ") + std::strerror(-fd);
            state.breakpoint_fds[slot] = fd;
            if (on) state.watching.watch(slot, base, length);
        }
        return std::nullopt;
    }

    // `unmap_ring`: only the thread itself (signals blocked) may unmap its ring; when stopping from another
    // thread, a handler may be draining it right now, so the mapping stays (it is small, and the process is
    // usually exiting).
    // Before a thread's events go: whether it was sampled as often as its CPU time asked. A thread that blocks
    // our signals (liblzma's workers block all) takes its triggers only when it unblocks: counted, not silent.
    static void note_coverage(hardware_backend& backend, const thread_state& state, pid_t tid) noexcept {
        if (backend.chosen_ == sampler_kind::none || backend.chosen_ == sampler_kind::precise ||
            backend.handlers_displaced_.load(std::memory_order_relaxed))
            return; // the program took our signals over: sampling stopped on purpose, and that is said
        const clockid_t clock = static_cast<clockid_t>((~tid) * 8 | 6); // the thread's CPU clock (see open_trigger)
        timespec used{};
        if (::clock_gettime(clock, &used) != 0) return;
        const double expected = (static_cast<double>(used.tv_sec) + static_cast<double>(used.tv_nsec) * 1e-9) *
                                backend.options_.samples_per_second;
        if (expected >= 50 && static_cast<double>(state.triggers) < expected / 20)
            backend.counters_.threads_rarely_sampled.fetch_add(1, std::memory_order_relaxed);
    }

    // A descriptor the program closed (and may have been given again) is neither used nor closed: counted.
    static void close_thread(hardware_backend& backend, thread_state& state, bool unmap_ring) noexcept {
        if (state.has_timer) ::timer_delete(state.timer);
        state.has_timer = false;
        if (state.trigger_fd >= 0) {
            if (is_perf_event_fd(state.trigger_fd)) ::ioctl(state.trigger_fd, PERF_EVENT_IOC_DISABLE, 0);
            if (!close_perf_event(state.trigger_fd))
                backend.counters_.descriptors_lost.fetch_add(1, std::memory_order_relaxed);
        }
        state.trigger_fd = -1;
        if (state.ring != nullptr && unmap_ring) ::munmap(state.ring, state.ring_bytes);
        state.ring = nullptr;
        for (std::size_t slot = 0; slot < max_slots; ++slot) {
            int& fd = state.breakpoint_fds[slot];
            state.watching.clear(slot);
            if (fd >= 0 && !close_perf_event(fd))
                backend.counters_.descriptors_lost.fetch_add(1, std::memory_order_relaxed);
            fd = -1;
        }
    }

    // Signal-safe: points one thread's breakpoint in `slot` at the slot's target, or disables it. Only where the
    // slot cannot change meanwhile (the writer of the slot, or under its seqlock).
    static bool set_breakpoint(hardware_backend& backend, thread_state& state, std::size_t slot, pid_t tid) noexcept {
        const armed_slot& armed = slots[slot];
        return point_breakpoint(backend, state, slot, tid,
                                {armed.armed.load(std::memory_order_relaxed), armed.base.load(std::memory_order_relaxed),
                                 armed.length.load(std::memory_order_relaxed)});
    }

    // Signal-safe, on the calling thread only: brings each of its debug registers up to date with its slot, for
    // the slots armed or disarmed by other threads since (hardware_backend::arm). A slot being rewritten right
    // now is left for the next call.
    static void sync_breakpoints(hardware_backend& backend, thread_state& state, pid_t tid) noexcept {
        for (std::size_t slot = 0; slot < backend.slots_; ++slot) {
            const armed_slot& armed = slots[slot];
            const std::uint64_t generation = armed.generation.load(std::memory_order_acquire);
            if (generation == state.synced_generation[slot] || (generation & 1) != 0) continue;
            const slot_target target{armed.armed.load(std::memory_order_acquire),
                                     armed.base.load(std::memory_order_acquire),
                                     armed.length.load(std::memory_order_acquire)};
            if (armed.generation.load(std::memory_order_relaxed) != generation) continue;
            if (!point_breakpoint(backend, state, slot, tid, target)) {
                backend.counters_.arm_failures.fetch_add(1, std::memory_order_relaxed);
            }
            state.synced_generation[slot] = generation;
        }
    }

    // Signal-safe.
    // What the thread's register watches is noted before it is pointed there (a trap may come at once) and kept
    // when pointing fails: the register's state is then unknown, and a needless system-call read is harmless.
    static bool point_breakpoint(hardware_backend& backend, thread_state& state, std::size_t slot, pid_t tid,
                                 const slot_target& target) noexcept {
        int& fd = state.breakpoint_fds[slot];
        if (fd < 0) return false;
        if (!is_perf_event_fd(fd)) {
            // The program closed our descriptor; the number may be its own file now.
            backend.counters_.descriptors_lost.fetch_add(1, std::memory_order_relaxed);
            fd = -1;
            state.watching.clear(slot);
            return false;
        }
        if (!target.armed || state.quarantined) {
            // A quarantined thread watches nothing; the slot stays armed for the others.
            const bool off = ::ioctl(fd, PERF_EVENT_IOC_DISABLE, 0) == 0;
            if (off) state.watching.clear(slot);
            return off || state.quarantined;
        }
        state.watching.watch(slot, target.base, target.length);
        perf_event_attr attr = breakpoint_for(backend, slot, target.base, target.length, false);
        if (backend.caps_.breakpoint_modify) return ::ioctl(fd, PERF_EVENT_IOC_MODIFY_ATTRIBUTES, &attr) == 0;
        // Kernels before 4.17: reopen.
        ::close(fd);
        fd = open_breakpoint(backend, tid, attr);
        if (fd < 0) state.watching.clear(slot);
        return fd >= 0;
    }
};

std::size_t hardware_backend::capture_stack(const ucontext_t& context, pid_t tid, std::uint64_t* frames,
                                            std::size_t max) noexcept {
    if (max == 0) return 0;
    std::size_t count = 0;
    frames[count++] = pc_of(context);
    const thread_state* state = threads.find(tid);
    if (state == nullptr) return count;
    const auto* gregs = context.uc_mcontext.gregs;
    std::uint64_t low = static_cast<std::uint64_t>(gregs[REG_RSP]);
    std::uint64_t frame = static_cast<std::uint64_t>(gregs[REG_RBP]);
    if (low < state->stack_low || low >= state->stack_high) return count; // on another stack (sigaltstack)
    // Each frame: [rbp] = caller's rbp, [rbp + 8] = return address. Frames only go up the stack.
    while (count < max && frame >= low && frame % 8 == 0 && frame + 16 <= state->stack_high) {
        const auto* words = reinterpret_cast<const std::uint64_t*>(frame);
        const std::uint64_t return_address = words[1];
        if (return_address < 4096) break;
        frames[count++] = return_address - 1;
        low = frame + 16;
        frame = words[0];
    }
    return count;
}

std::optional<sampler_kind> parse_sampler_kind(std::string_view name) noexcept {
    for (sampler_kind kind : {sampler_kind::automatic, sampler_kind::precise, sampler_kind::decode,
                              sampler_kind::decode_timer, sampler_kind::none})
        if (sampler_kind_name(kind) == name) return kind;
    return std::nullopt;
}

std::optional<comparison_kind> parse_comparison_kind(std::string_view name) noexcept {
    if (name == "auto") return comparison_kind::automatic;
    if (name == "watchpoint") return comparison_kind::watchpoint;
    if (name == "sample") return comparison_kind::at_sample;
    return std::nullopt;
}

std::string_view sampler_kind_name(sampler_kind kind) noexcept {
    switch (kind) {
    case sampler_kind::automatic: return "auto";
    case sampler_kind::precise: return "precise";
    case sampler_kind::decode: return "decode";
    case sampler_kind::decode_timer: return "timer";
    case sampler_kind::none: return "none";
    }
    return "?";
}

std::optional<std::string> hardware_backend::start(const backend_options& options, const backend_delivery& delivery) {
    if (stopped_ || running_) return std::string("the hardware backend can be started once");
    hardware_backend* expected = nullptr;
    if (!active.compare_exchange_strong(expected, this)) return std::string("another hardware backend is running");
    options_ = options;
    delivery_ = delivery;
    if (!(options_.samples_per_second > 0) || !std::isfinite(options_.samples_per_second)) {
        active.store(nullptr);
        return std::string("the sampling rate must be a positive number of samples per second");
    }
    caps_ = probe_capabilities(options_.watchpoint_slots < max_slots ? options_.watchpoint_slots : max_slots);
    if (!initialize_instruction_decoder()) {
        active.store(nullptr);
        return std::string("the x86-64 instruction decoder (Zydis) failed to initialise");
    }

    const sampler_kind wanted = options_.sampler;
    std::string why;
    if ((wanted == sampler_kind::automatic || wanted == sampler_kind::precise) && caps_.precise) {
        chosen_ = sampler_kind::precise;
        trigger_attr_ = caps_.precise->attr;
        trigger_attr_.sample_period = 0;
        trigger_attr_.freq = 1;
        trigger_attr_.sample_freq = static_cast<std::uint64_t>(options_.samples_per_second);
        trigger_attr_.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_ADDR;
        trigger_attr_.wakeup_events = 1;
        trigger_attr_.exclude_kernel = 1;
        trigger_attr_.disabled = 1;
        sampler_description_ = "precise: " + caps_.precise->name + " with the data address";
    } else if (wanted == sampler_kind::precise) {
        active.store(nullptr);
        return "sampler=precise is unavailable: " + caps_.precise_reason;
    } else if (wanted == sampler_kind::automatic && caps_.perf_events && !caps_.hardware_counters &&
               timer_keeps_rate(options_.samples_per_second, caps_.scheduler_tick_ns)) {
        // Without a hardware counter the trigger is a clock either way. The task clock's overflow is an interrupt
        // of its own (≈ 40 µs on a paravirtualized guest); a CPU-time timer fires on the scheduler tick that
        // interrupts the thread anyway, so it costs about half as much per sample (bench/RESULTS.md).
        chosen_ = sampler_kind::decode_timer;
        sampler_description_ = "precise sampling unavailable: " + caps_.precise_reason + "; " +
                               caps_.hardware_counters_reason +
                               "; using decode (single-step to the next memory access) on a CPU-time POSIX timer, "
                               "which rides the " + tick_rate_text(caps_.scheduler_tick_ns) +
                               " scheduler tick and costs less than a task-clock overflow (sampler=decode forces "
                               "that)";
    } else if ((wanted == sampler_kind::automatic || wanted == sampler_kind::decode) && caps_.perf_events) {
        chosen_ = sampler_kind::decode;
        trigger_attr_ = perf_event_attr{};
        trigger_attr_.exclude_kernel = 1;
        trigger_attr_.disabled = 1;
        trigger_attr_.wakeup_events = 1;
        std::string trigger;
        if (caps_.hardware_counters) {
            trigger_attr_.type = PERF_TYPE_HARDWARE;
            trigger_attr_.config = PERF_COUNT_HW_INSTRUCTIONS;
            trigger_attr_.freq = 1;
            trigger_attr_.sample_freq = static_cast<std::uint64_t>(options_.samples_per_second);
            trigger = "instructions-retired overflow";
        } else {
            trigger_attr_.type = PERF_TYPE_SOFTWARE;
            trigger_attr_.config = PERF_COUNT_SW_TASK_CLOCK;
            trigger_attr_.sample_period = static_cast<std::uint64_t>(1e9 / options_.samples_per_second);
            trigger = "task-clock overflow (" + caps_.hardware_counters_reason +
                      (wanted == sampler_kind::automatic && caps_.scheduler_tick_ns > 0
                           ? "; a CPU-time timer, which fires on the " + tick_rate_text(caps_.scheduler_tick_ns) +
                                 " scheduler tick, cannot keep " + std::to_string(std::lround(
                                                                       options_.samples_per_second)) +
                                 " samples/s"
                           : std::string()) +
                      ")";
        }
        sampler_description_ = (wanted == sampler_kind::automatic ? "precise sampling unavailable: " +
                                                                        caps_.precise_reason + "; using "
                                                                  : std::string("using ")) +
                               "decode (single-step to the next memory access) on " + trigger;
    } else if (wanted == sampler_kind::decode) {
        active.store(nullptr);
        return "sampler=decode is unavailable: " + caps_.perf_events_reason + " (sampler=timer works without perf)";
    } else if (wanted == sampler_kind::automatic || wanted == sampler_kind::decode_timer) {
        chosen_ = sampler_kind::decode_timer;
        sampler_description_ = (wanted == sampler_kind::automatic ? caps_.perf_events_reason + "; using "
                                                                  : std::string("using ")) +
                               "decode (single-step to the next memory access) on a CPU-time POSIX timer";
    } else {
        chosen_ = sampler_kind::none;
        sampler_description_ = "no sampling (sampler=none)";
    }

    const bool registers_work = caps_.breakpoint_slots > 0;
    slots_ = options_.watchpoint_slots < caps_.breakpoint_slots ? options_.watchpoint_slots : caps_.breakpoint_slots;
    compares_at_sample_ = options_.watchpoint_slots > 0 && chosen_ != sampler_kind::none &&
                          (options_.compare == comparison_kind::at_sample ||
                           (options_.compare == comparison_kind::automatic && !registers_work));
    if (compares_at_sample_) {
        slots_ = 0;
        sample_slots_ = std::min(options_.watchpoint_slots, sample_watches_.size());
        watchpoint_description_ =
            "compared at the sample (" +
            (options_.compare == comparison_kind::at_sample ? std::string("compare=sample")
                                                            : "no debug registers: " + caps_.breakpoint_reason) +
            "), " + std::to_string(sample_slots_) + " slots";
    } else if (slots_ > 0) {
        watchpoint_description_ = "hardware breakpoints (perf_event), " + std::to_string(slots_) + " slots, " +
                                  (caps_.breakpoint_modify ? "re-armed in place" : "reopened to re-arm");
    } else if (options_.watchpoint_slots == 0) {
        watchpoint_description_ = "none (watchpoint slots set to 0): sampling only, no replica comparisons";
    } else {
        watchpoint_description_ =
            "none: " + caps_.breakpoint_reason + "; sampling only, no replica comparisons";
    }

    const std::optional<int> free_signal = choose_free_signal();
    if (!free_signal) {
        active.store(nullptr);
        return std::string("no free real-time signal for sampling (all have handlers)");
    }
    sampling_signal_number = *free_signal;
    sigset_t both;
    sigemptyset(&both);
    sigaddset(&both, sampling_signal_number);
    sigaddset(&both, SIGTRAP);
    // Not on an alternate signal stack: a program sizes its own for its own handlers (see handler_stack_bytes).
    if (auto error = sampling_handler.install(sampling_signal_number, internals::on_sampling_signal, &both,
                                             chained_handler::stack::interrupted)) {
        active.store(nullptr);
        return error;
    }
    if (auto error = step_signal.install(SIGTRAP, internals::on_step_signal, &both,
                                         chained_handler::stack::interrupted)) {
        sampling_handler.uninstall();
        active.store(nullptr);
        return error;
    }
    // Without synchronous traps each overflow queues a real-time signal, and a full queue makes the kernel send
    // SIGIO instead, whose default action kills. A program that does not handle SIGIO expects none: ours counts
    // and drops it. A program with its own SIGIO handler keeps it (SIGIO says only "look": a handler must already
    // bear one with nothing to find).
    if (!caps_.synchronous_traps) {
        struct sigaction current {};
        if (::sigaction(SIGIO, nullptr, &current) == 0 && (current.sa_flags & SA_SIGINFO) == 0 &&
            current.sa_handler == SIG_DFL) {
            if (auto error = overflow_signal.install(SIGIO, internals::on_overflow_signal, &both,
                                                     chained_handler::stack::interrupted)) {
                step_signal.uninstall();
                sampling_handler.uninstall();
                active.store(nullptr);
                return error;
            }
        }
    }
    // Like the signal handlers, the fault guard stays for the life of the process: a handler still running
    // elsewhere may be in the middle of a guarded load.
    memory_read_description_ = "process_vm_readv (reads=syscall)";
    if (options.guarded_reads) {
        if (auto error = install_fault_guard())
            memory_read_description_ = "process_vm_readv (no fault guard: " + *error + ")";
        else
            memory_read_description_ = "guarded loads (a SIGSEGV/SIGBUS handler chained to the program's; "
                                       "process_vm_readv while it is not the process's)";
    }
    signal_description_ =
        caps_.synchronous_traps
            ? "perf events report by synchronous SIGTRAP (at most one pending per thread); timers by signal " +
                  std::to_string(sampling_signal_number)
            : "perf events report by queued real-time signal " + std::to_string(sampling_signal_number) + " (" +
                  caps_.synchronous_traps_reason + ")";
    running_ = true;
    return std::nullopt;
}

void hardware_backend::stop() noexcept {
    if (!running_) return;
    running_ = false;
    stopped_ = true;
    for (std::size_t slot = 0; slot < slots_; ++slot) slots[slot].armed.store(false, std::memory_order_release);
    active.store(nullptr, std::memory_order_release);
    threads.for_each([this](pid_t tid, thread_state& state) {
        threads.remove(tid);
        internals::note_coverage(*this, state, tid);
        internals::close_thread(*this, state, false);
    });
    attached_.store(0, std::memory_order_relaxed);
}

int hardware_backend::sampling_signal() const noexcept { return sampling_signal_number; }

void hardware_backend::before_program_handler(int signal, const struct ::sigaction& action) noexcept {
    hardware_backend* backend = active.load(std::memory_order_acquire);
    if (backend == nullptr || (signal != SIGTRAP && signal != sampling_signal_number)) return;
    const bool own = (action.sa_flags & SA_SIGINFO) != 0 && (action.sa_sigaction == internals::on_step_signal ||
                                                              action.sa_sigaction == internals::on_sampling_signal);
    if (own) return;
    backend->handlers_displaced_.store(true, std::memory_order_relaxed);
    internals::quiet_every_thread(*backend);
}

bool hardware_backend::poll_handlers() noexcept {
    hardware_backend* backend = active.load(std::memory_order_acquire);
    if (backend == nullptr) return false;
    internals::check_ownership(*backend);
    if (!backend->handlers_displaced_.load(std::memory_order_relaxed)) return false;
    internals::quiet_every_thread(*backend);
    return true;
}

std::optional<std::string> hardware_backend::attach_current_thread() { return attach_thread(current_tid()); }

std::optional<std::string> hardware_backend::attach_thread(pid_t tid) {
    if (!running_) return std::string("the hardware backend is not running");
    // A thread of another process would get our signals, whose default action kills it. Signal 0 only checks.
    if (tid != current_tid() && ::syscall(SYS_tgkill, ::getpid(), tid, 0) != 0)
        return "thread " + std::to_string(tid) + " is not a thread of this process: " + std::strerror(errno);
    if (threads.find(tid) != nullptr) return std::nullopt;
    thread_state* state = threads.add(tid);
    if (state == nullptr) return std::string("too many threads for the thread table");
    state->rng.reseed(options_.seed ^ (static_cast<std::uint64_t>(tid) * 0x9E3779B97F4A7C15ULL));
    pthread_attr_t attributes;
    if (tid == current_tid() && pthread_getattr_np(pthread_self(), &attributes) == 0) {
        void* low = nullptr;
        std::size_t size = 0;
        if (pthread_attr_getstack(&attributes, &low, &size) == 0) {
            state->stack_low = reinterpret_cast<std::uint64_t>(low);
            state->stack_high = state->stack_low + size;
        }
        pthread_attr_destroy(&attributes);
    }
    std::optional<std::string> error = internals::open_breakpoints(*this, *state, tid);
    if (!error) error = internals::open_trigger(*this, *state, tid);
    if (error) {
        threads.remove(tid);
        internals::close_thread(*this, *state, true);
        return error;
    }
    attached_.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
}

handler_reads hardware_backend::reads_here() const noexcept {
    const thread_state* state = threads.find(current_tid());
    return {read_method_here(), state != nullptr ? &state->watching : nullptr};
}

void hardware_backend::detach_current_thread() noexcept {
    const pid_t tid = current_tid();
    thread_state* state = threads.find(tid);
    if (state == nullptr) return;
    // Block our signals while the thread's events go away, so no handler sees a half-closed record.
    sigset_t both, previous;
    sigemptyset(&both);
    sigaddset(&both, sampling_signal_number);
    sigaddset(&both, SIGTRAP);
    pthread_sigmask(SIG_BLOCK, &both, &previous);
    threads.remove(tid);
    internals::note_coverage(*this, *state, tid);
    internals::close_thread(*this, *state, true);
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    attached_.fetch_sub(1, std::memory_order_relaxed);
}

bool hardware_backend::arm(std::size_t slot, address where, std::uint8_t width) noexcept {
    if (compares_at_sample_) {
        if (slot >= sample_slots_ || !running_) return false;
        sample_watches_[slot] = {where, width, true, true};
        return true;
    }
    if (slot >= slots_ || !running_) return false;
    armed_slot& armed = slots[slot];
    std::uint64_t base = 0;
    std::uint8_t length = 0;
    if (!breakpoint_cover(where, width == 0 ? 1 : width, base, length)) {
        counters_.arm_failures.fetch_add(1, std::memory_order_relaxed);
        return false;
    }
    begin_slot_update(armed);
    armed.armed.store(false, std::memory_order_release);
    armed.base.store(base, std::memory_order_release);
    armed.length.store(length, std::memory_order_release);
    armed.where.store(where, std::memory_order_release);
    armed.width.store(width, std::memory_order_release);
    armed.armed.store(true, std::memory_order_release);
    end_slot_update(armed);
    bool all = true;
    if (chosen_ != sampler_kind::none) {
        // Lazy: only the calling thread's register now. Every other thread points its own at the next sampling
        // interrupt it takes (sync_breakpoints), which comes while it runs, the only time it can touch the
        // address. Rewriting a register of a thread running on another CPU costs a cross-CPU call, and with
        // many threads every arm would pay one per thread.
        const pid_t tid = current_tid();
        if (thread_state* self = threads.find(tid)) {
            all = internals::set_breakpoint(*this, *self, slot, tid);
            self->synced_generation[slot] = armed.generation.load(std::memory_order_relaxed);
        }
    } else {
        threads.for_each([&](pid_t tid, thread_state& state) { all &= internals::set_breakpoint(*this, state, slot, tid); });
    }
    if (!all) {
        counters_.arm_failures.fetch_add(1, std::memory_order_relaxed);
        disarm(slot);
    }
    return all;
}

// Lazy: the slot is marked free and the calling thread's debug register turned off; the other threads' copies stay
// until they trap once on the old address (and turn theirs off), take a sampling interrupt (sync_breakpoints) or
// the slot is re-armed. Disabling a breakpoint
// of a thread running on another CPU costs a cross-CPU call, and the profiler disarms after every trap — usually
// to re-arm the slot elsewhere soon after, which rewrites every copy anyway.
void hardware_backend::disarm(std::size_t slot) noexcept {
    if (compares_at_sample_) {
        if (slot < sample_slots_) sample_watches_[slot] = {};
        return;
    }
    if (slot >= slots_) return;
    armed_slot& armed = slots[slot];
    begin_slot_update(armed);
    armed.armed.store(false, std::memory_order_release);
    end_slot_update(armed);
    const pid_t tid = current_tid();
    if (thread_state* self = threads.find(tid)) {
        internals::set_breakpoint(*this, *self, slot, tid);
        if (chosen_ != sampler_kind::none) self->synced_generation[slot] = armed.generation.load(std::memory_order_relaxed);
    }
}

std::optional<hardware_backend::armed_watch> hardware_backend::take_armed_at_sample() noexcept {
    for (std::size_t slot = 0; slot < sample_slots_; ++slot) {
        sample_watch& watch = sample_watches_[slot];
        if (watch.armed && watch.pending) {
            watch.pending = false;
            return armed_watch{slot, watch.where, watch.width};
        }
    }
    return std::nullopt;
}

} // namespace ojx::hardware
