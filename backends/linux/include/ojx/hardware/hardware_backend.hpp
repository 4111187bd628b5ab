// The Linux hardware backend: address samples and watchpoint traps from the CPU, for any x86-64 Linux machine.
//
// Sampling chooses the best mechanism it can get and says why:
//   precise  — Intel PEBS loads or AMD IBS ops through perf_event: the sample carries the data address;
//   decode   — on a counter overflow (hardware instructions, else the kernel's task clock) or, where perf_event
//              is forbidden, a per-thread CPU-time POSIX timer: single-step a random 0..N instructions with the
//              trap flag, then on to the next instruction that accesses memory, decode it and read the value it
//              is about to access (what a load will read).
// Watchpoints are debug registers through perf_event breakpoints, opened on every attached thread and re-armed
// with PERF_EVENT_IOC_MODIFY_ATTRIBUTES (or reopened where the kernel lacks it). Where debug registers do not
// work (some hypervisors accept them and never trap), or when asked, no register is set: the profiler compares
// each pair at the sample that armed it (compares_at_sample, profiler_config::compare_at_sample).
//
// Signals: perf events (triggers and breakpoints) report by synchronous SIGTRAP where the kernel can (perf sigtrap,
// Linux 5.13), tagged with which event fired; CPU-time timers and, on older kernels, perf events by one real-time
// signal. What ojx promises the program under these signals is docs/design.md's "Failure model": no handler
// loads from a word its own thread's debug registers watch (it would trap again for ever), a watchdog, handlers
// on the interrupted stack, descriptors checked before use.
//
// Signal-safety contract: everything reached from the backend's signal handlers (the sample and trap paths, and
// the delivery callbacks they call) allocates nothing, takes no lock that interrupted code may hold (at most a
// try-lock that gives up), reads foreign memory only through `read_memory`, and preserves errno. Our handlers
// block each other, so a trap never runs inside a sample or the reverse; a trigger arriving while a thread is
// still stepping towards its previous sample is counted and dropped.
//
// One backend per process: signal handlers are process-wide. `attach_current_thread`, `detach_current_thread`,
// `arm` and `disarm` must be serialized by the caller (the agents do it with the profiler's lock).
#pragma once

#include "ojx/hardware/fault_safe_read.hpp"
#include "ojx/followed_value.hpp"
#include "ojx/hardware/perf_events.hpp"
#include "ojx/sampler.hpp"

#include <signal.h>
#include <sys/types.h>
#include <ucontext.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ojx::hardware {

class sample_source; // src/sample_source.hpp
class watch_source;  // src/watch_source.hpp

enum class sampler_kind : std::uint8_t {
    automatic,     // the best available, in the order below
    precise,       // PEBS / IBS
    decode,        // decode on the best trigger available: hardware counter, task clock, CPU-time timer
    decode_timer,  // decode on a CPU-time POSIX timer (works without perf_event)
    none,          // no sampling (watchpoints only; for tests)
};

std::optional<sampler_kind> parse_sampler_kind(std::string_view name) noexcept;

// Where a pair of objects is compared.
enum class comparison_kind : std::uint8_t {
    automatic, // at a watchpoint trap where debug registers work, else at the sample
    watchpoint, // at the trap of a debug-register watchpoint, when the program next touches the word (OJXPerf)
    at_sample,  // at once, reading the word when the sample that chose the pair arrives
};

std::optional<comparison_kind> parse_comparison_kind(std::string_view name) noexcept;
// Each kind's name, as the agents' options take it (parse_… reads it back), and all of them in the order the
// options list them: the one list of names.
std::string_view sampler_kind_name(sampler_kind kind) noexcept;
std::vector<std::string_view> sampler_kind_names();
std::string_view comparison_kind_name(comparison_kind kind) noexcept;
std::vector<std::string_view> comparison_kind_names();

struct backend_options {
    sampler_kind sampler = sampler_kind::automatic;
    double samples_per_second = 200;  // per thread, while it runs
    std::size_t watchpoint_slots = 4; // at most this many (x86 has 4 debug registers); 0: sampling only
    comparison_kind compare = comparison_kind::automatic;
    std::uint32_t max_random_steps = 3; // decode: steps 0..this before looking for a memory access
    std::uint32_t max_steps = 256;      // decode: give up on a sample after this many steps
    // decode: instructions a sampled load's value is followed for after the load, single-stepping the thread,
    // where the delivery asks for it (copy profiling, value_following.cpp); 0: no value is followed.
    std::uint32_t follow_bound = 0;
    std::uint64_t seed = 1;
    bool guarded_reads = true; // handlers read memory by guarded loads where they can (fault_safe_read.hpp)
};

// Where samples and traps go. Called from signal handlers on the sampled thread, with the interrupted context
// (for stack walks) and how memory may be read until the callback returns (read_method_for, already asked):
// must follow the signal-safety contract above.
struct backend_delivery {
    void* target = nullptr;
    // True: follow this load's value (honoured where follow_bound > 0 and the sample was found by decoding, so the
    // load has not run yet); its followed_value comes to on_followed when the following ends.
    bool (*on_sample)(void* target, const access_sample& sample, const ucontext_t& context,
                      const handler_reads& reads) noexcept = nullptr;
    void (*on_trap)(void* target, const watchpoint_trap& trap, const ucontext_t& context,
                    const handler_reads& reads) noexcept = nullptr;
    void (*on_followed)(void* target, const followed_value& value, const ucontext_t& context,
                        const handler_reads& reads) noexcept = nullptr;
};

// Counters updated from signal handlers (relaxed atomics: any thread's handler may bump them).
struct backend_counters {
    std::atomic<std::uint64_t> triggers{0};             // sampling interrupts
    std::atomic<std::uint64_t> triggers_while_stepping{0};
    std::atomic<std::uint64_t> steps{0};                // single-step traps taken
    std::atomic<std::uint64_t> found_ahead{0};          // samples found by decoding ahead: no (more) steps
    std::atomic<std::uint64_t> samples{0};              // samples delivered
    std::atomic<std::uint64_t> gave_up{0};              // no memory access within max_steps
    std::atomic<std::uint64_t> steps_refused{0};        // stopped before a system call, or SIGTRAP was blocked
    std::atomic<std::uint64_t> unreadable{0};           // decoded address (or code) could not be read
    std::atomic<std::uint64_t> traps{0};                // watchpoint traps delivered
    std::atomic<std::uint64_t> traps_unknown{0};        // trap on a slot's old address (lazy disarm / arm)
    std::atomic<std::uint64_t> traps_undecoded{0};      // trapping instruction not found; width assumed
    std::atomic<std::uint64_t> arm_failures{0};
    std::atomic<std::uint64_t> no_stack_room{0};        // events skipped: the interrupted code's stack was short
    std::atomic<std::uint64_t> watchdog_quarantines{0}; // threads the watchdog stopped sampling and watching
    std::atomic<std::uint64_t> descriptors_lost{0};     // our perf descriptors the program closed
    std::atomic<std::uint64_t> timer_fallbacks{0};      // threads on the task clock: no signal-queue slot for a timer
    std::atomic<std::uint64_t> queue_overflows{0};      // SIGIO for a signal of ours that found the queue full
    std::atomic<std::uint64_t> threads_rarely_sampled{0}; // took < 1/20 of the triggers their CPU time asked
    std::atomic<std::uint64_t> values_followed{0};      // sampled loads whose value was followed (delivered)
    std::atomic<std::uint64_t> follow_steps{0};         // single steps taken to reach a load and follow its value
};

class hardware_backend {
public:
    hardware_backend() = default;
    hardware_backend(const hardware_backend&) = delete;
    hardware_backend& operator=(const hardware_backend&) = delete;
    ~hardware_backend() { stop(); }

    // Probes the machine, chooses the mechanisms, installs the signal handlers. The calling thread is not
    // attached yet. Returns an error message when a forced choice is unavailable or nothing works at all.
    std::optional<std::string> start(const backend_options& options, const backend_delivery& delivery);
    // Stops every thread's sampling and watchpoints. Handlers stay installed (signals may still be pending)
    // but do nothing. The backend cannot be started again.
    void stop() noexcept;
    bool running() const noexcept { return running_; }

    // Sets up sampling and the watchpoint slots for the calling thread. Returns an error message on failure
    // (the thread then runs unprofiled).
    std::optional<std::string> attach_current_thread();
    // The same for another thread of this process, e.g. the threads already running when a JVM agent is
    // attached. Its stack bounds are unknown, so capture_stack yields only the pc on that thread.
    std::optional<std::string> attach_thread(pid_t tid);
    // Tears the calling thread's events down (call before the thread exits).
    void detach_current_thread() noexcept;
    std::size_t attached_threads() const noexcept { return attached_.load(std::memory_order_relaxed); }

    // Signal-safe: the call stack `context` interrupted on the calling thread, `tid` (the caller knows it: asking
    // costs a system call), leaf first — the pc, then the return addresses found by walking
    // frame pointers, each minus one so that it falls inside its call instruction. The walk stays inside the
    // calling thread's stack bounds (recorded at attach), so it reads nothing that could fault; code built
    // without frame pointers yields a shorter path. Returns the number of frames written.
    static std::size_t capture_stack(const ucontext_t& context, pid_t tid, std::uint64_t* frames,
                                     std::size_t max) noexcept;

    // One line each, for the report and the start-up message: what was chosen and why.
    const std::string& sampler_description() const noexcept { return sampler_description_; }
    const std::string& watchpoint_description() const noexcept { return watchpoint_description_; }
    const std::string& memory_read_description() const noexcept { return memory_read_description_; }
    // How our perf events signal a thread (a synchronous SIGTRAP, or a queued real-time signal) and why.
    const std::string& signal_description() const noexcept { return signal_description_; }
    // The program installed its own handler over one of ours: sampling and watching stopped (each thread at its
    // next event).
    bool handlers_displaced() const noexcept { return handlers_displaced_.load(std::memory_order_relaxed); }
    // The real-time signal our timers (and, without synchronous traps, perf events) use.
    int sampling_signal() const noexcept;

    // The program is about to install `action` for `signal` (the native agent interposes sigaction and signal).
    // When `signal` is one ojx samples or traps with and `action` is not ojx's own, every thread's events go
    // quiet first, steps under way end, and the run says so (handlers_displaced): the program's handler then
    // receives none of ojx's signals. Waits at most 0.1 s for threads still stepping. Not signal-safe.
    static void before_program_handler(int signal, const struct ::sigaction& action) noexcept;
    // Whether the program has displaced ojx's handlers (one sigaction query for each of SIGTRAP and the sampling
    // signal): where it has, every thread goes quiet as in before_program_handler and handlers_displaced says so.
    // For an agent that cannot interpose sigaction (a JVM's native libraries bind theirs before the agent loads):
    // its own thread calls this periodically, so that a program that took only the timer signal, which never
    // reaches ojx's handlers again, is noticed within one period. Not signal-safe; false when no backend runs.
    static bool poll_handlers() noexcept;
    sampler_kind chosen_sampler() const noexcept { return chosen_; }
    const backend_options& options() const noexcept { return options_; }
    const capabilities& machine() const noexcept { return caps_; }
    const backend_counters& counters() const noexcept { return counters_; }

    // The watchpoint_arming concept. Signal-safe. `arm` affects every attached thread: at once without a sampler;
    // with one, the calling thread at once and each other thread at its next sampling interrupt (no cross-CPU
    // call per thread per arm). `disarm` frees the slot at once and turns the debug registers off lazily. A
    // thread may trap once more on a slot's old address; that trap is counted in `traps_unknown` and not
    // delivered.
    std::size_t slot_count() const noexcept;
    bool arm(std::size_t slot, address where, std::uint8_t width) noexcept;
    void disarm(std::size_t slot) noexcept;

    // No debug register is set: the slots only hold pairs, which the profiler compares at the sample that armed
    // them (the session configures it so), and no watchpoint ever traps.
    bool compares_at_sample() const noexcept { return compares_at_sample_; }

    // How code outside the handlers may read memory on the calling thread (a whole-object digest in free() or at
    // a collection's start): guarded loads where read_method_here allows them, except over what this thread's own
    // debug registers watch (the trap would be taken inside our read). Signal-safe.
    handler_reads reads_here() const noexcept;

    // The backend's private face for its parts (src/backend_internals.hpp).
    struct internals;

private:
    bool running_ = false;
    bool stopped_ = false;
    backend_options options_{};
    backend_delivery delivery_{};
    capabilities caps_{};
    sampler_kind chosen_ = sampler_kind::none;
    std::string sampler_description_;
    std::string watchpoint_description_;
    std::string memory_read_description_;
    std::string signal_description_;
    std::atomic<bool> handlers_displaced_{false};
    std::atomic<bool> quieted_{false}; // every thread was switched off from outside after handlers_displaced_
    bool compares_at_sample_ = false;
    const sample_source* source_ = nullptr; // none with sampler_kind::none
    watch_source* watches_ = nullptr;       // set by start
    std::atomic<std::size_t> attached_{0};
    backend_counters counters_{};
    friend struct internals;
};

static_assert(watchpoint_arming<hardware_backend>);

} // namespace ojx::hardware
