// The backend as a composition: the chosen sample source (sampler_choice.cpp; timer_source.cpp,
// perf_counter_source.cpp, precise_source.cpp), the decode stepper (decode_stepper.cpp), the watch source
// (debug_register_watches.cpp or compare_at_sample_watches.cpp), the signal handlers that drive them
// (signal_dispatch.cpp), and the per-thread records they share (backend_internals.hpp). Here: starting and
// stopping, attaching and detaching threads, and the process-wide state the handlers reach.
#include "ojx/hardware/hardware_backend.hpp"

#include "backend_internals.hpp"
#include "sample_source.hpp"
#include "sampler_choice.hpp"
#include "watch_source.hpp"

#include <sys/syscall.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>

namespace ojx::hardware {

std::atomic<hardware_backend*> active{nullptr};
thread_table<thread_state> threads;
chained_handler sampling_handler;
chained_handler step_signal;
chained_handler overflow_signal;
int sampling_signal_number = 0;

namespace {

// Before a thread's events go: whether it was sampled as often as its CPU time asked. A thread that blocks our
// signals (liblzma's workers block all) takes its triggers only when it unblocks: counted, not silent.
void note_coverage(hardware_backend& backend, const thread_state& state, pid_t tid) noexcept {
    if (backend.chosen_sampler() == sampler_kind::none || backend.chosen_sampler() == sampler_kind::precise ||
        hardware_backend::internals::handlers_displaced(backend))
        return; // the program took our signals over: sampling stopped on purpose, and that is said
    const clockid_t clock = static_cast<clockid_t>((~tid) * 8 | 6); // the thread's CPU clock (timer_source.cpp)
    timespec used{};
    if (::clock_gettime(clock, &used) != 0) return;
    const double expected = (static_cast<double>(used.tv_sec) + static_cast<double>(used.tv_nsec) * 1e-9) *
                            hardware_backend::internals::options(backend).samples_per_second;
    if (expected >= 50 && static_cast<double>(state.triggers) < expected / 20)
        hardware_backend::internals::counters(backend).threads_rarely_sampled.fetch_add(1, std::memory_order_relaxed);
}

// Closes what the thread holds open: its trigger and its watches.
void close_thread(hardware_backend& backend, thread_state& state, bool unmap_ring) noexcept {
    backend_counters& counters = hardware_backend::internals::counters(backend);
    close_trigger(state.trigger, counters, unmap_ring);
    hardware_backend::internals::watches(backend).close(state, counters);
}

} // namespace

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

    sampler_choice choice = choose_sampler(options_, caps_);
    if (choice.error) {
        active.store(nullptr);
        return choice.error;
    }
    chosen_ = choice.kind;
    sampler_description_ = std::move(choice.description);
    if (chosen_ == sampler_kind::precise)
        source_ = &precise_source(*this, choice.attr);
    else if (chosen_ == sampler_kind::decode)
        source_ = &perf_counter_source(*this, choice.attr);
    else if (chosen_ == sampler_kind::decode_timer)
        source_ = &timer_source(*this);

    const bool registers_work = caps_.breakpoint_slots > 0;
    const std::size_t slots =
        options_.watchpoint_slots < caps_.breakpoint_slots ? options_.watchpoint_slots : caps_.breakpoint_slots;
    compares_at_sample_ = options_.watchpoint_slots > 0 && chosen_ != sampler_kind::none &&
                          (options_.compare == comparison_kind::at_sample ||
                           (options_.compare == comparison_kind::automatic && !registers_work));
    if (compares_at_sample_) {
        watches_ = &compare_at_sample_watches(*this, options_.watchpoint_slots);
        watchpoint_description_ =
            "compared at the sample (" +
            (options_.compare == comparison_kind::at_sample ? std::string("compare=sample")
                                                            : "no debug registers: " + caps_.breakpoint_reason) +
            "), " + std::to_string(watches_->slot_count()) + " slots";
    } else {
        watches_ = &debug_register_watches(*this, slots, chosen_ != sampler_kind::none);
        if (slots > 0) {
            watchpoint_description_ = "hardware breakpoints (perf_event), " + std::to_string(slots) + " slots, " +
                                      (caps_.breakpoint_modify ? "re-armed in place" : "reopened to re-arm");
        } else if (chosen_ == sampler_kind::none) {
            watchpoint_description_ = "none: no access sampling, so no pair is chosen to compare";
        } else if (options_.watchpoint_slots == 0) {
            watchpoint_description_ = "none (watchpoint slots set to 0): sampling only, no replica comparisons";
        } else {
            watchpoint_description_ = "none: " + caps_.breakpoint_reason + "; sampling only, no replica comparisons";
        }
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
    watches_->stop();
    active.store(nullptr, std::memory_order_release);
    threads.for_each([this](pid_t tid, thread_state& state) {
        threads.remove(tid);
        note_coverage(*this, state, tid);
        close_thread(*this, state, false);
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
    std::optional<std::string> error = watches_->open(*state, tid);
    if (!error && source_ != nullptr) error = source_->open(*state, tid);
    if (error) {
        threads.remove(tid);
        close_thread(*this, *state, true);
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
    note_coverage(*this, *state, tid);
    close_thread(*this, *state, true);
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    attached_.fetch_sub(1, std::memory_order_relaxed);
}

std::size_t hardware_backend::slot_count() const noexcept { return watches_ != nullptr ? watches_->slot_count() : 0; }

bool hardware_backend::arm(std::size_t slot, address where, std::uint8_t width) noexcept {
    return watches_ != nullptr && watches_->arm(slot, where, width);
}

void hardware_backend::disarm(std::size_t slot) noexcept {
    if (watches_ != nullptr) watches_->disarm(slot);
}

} // namespace ojx::hardware
