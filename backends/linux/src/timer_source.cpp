// The timer sample source: a one-shot CPU-time POSIX timer per thread, delivered by our real-time signal; works
// where perf_event is forbidden. The sample is then found by decoding. A thread that gets no timer (each holds a
// slot of the user's signal queue) samples on the task clock instead, where synchronous traps need no slot.
#include "sample_source.hpp"

#include <time.h>

#include <cerrno>
#include <cstring>

namespace ojx::hardware {

namespace {

// The task clock as a decode trigger at `samples_per_second`.
perf_event_attr task_clock_trigger(double samples_per_second) noexcept {
    perf_event_attr attr{};
    attr.exclude_kernel = 1;
    attr.disabled = 1;
    attr.wakeup_events = 1;
    attr.type = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_TASK_CLOCK;
    attr.sample_period = static_cast<std::uint64_t>(1e9 / samples_per_second);
    return attr;
}

class cpu_timer_source final : public sample_source {
public:
    hardware_backend* backend = nullptr;

    std::optional<std::string> open(thread_state& state, pid_t tid) const override {
        sigevent event{};
        event.sigev_notify = SIGEV_THREAD_ID;
        event.sigev_signo = sampling_signal_number;
        event._sigev_un._tid = tid;
        // Another thread's CPU clock: the kernel's encoding of a per-thread CPU-time clock id (as glibc's
        // pthread_getcpuclockid computes it), CPUCLOCK_SCHED of thread `tid`.
        const clockid_t clock =
            tid == current_tid() ? CLOCK_THREAD_CPUTIME_ID : static_cast<clockid_t>((~tid) * 8 | 6);
        trigger_state& trigger = state.trigger;
        if (::timer_create(clock, &event, &trigger.timer) == 0) {
            trigger.source = this;
            trigger.has_timer = true;
            trigger.timer_clock = clock;
            trigger.timer_expiry_ns = 0; // the first arming starts from now
            rearm(state);
            return std::nullopt;
        }
        // A timer holds a slot of the user's signal queue (RLIMIT_SIGPENDING), which other processes of the
        // user may have filled. The task clock with synchronous traps needs none: sample on it instead.
        const int error = errno;
        const capabilities& caps = hardware_backend::internals::caps(*backend);
        if (error != EAGAIN || !caps.synchronous_traps || !caps.perf_events)
            return std::string("timer_create: ") + std::strerror(error);
        hardware_backend::internals::counters(*backend).timer_fallbacks.fetch_add(1, std::memory_order_relaxed);
        return fallback().open(state, tid);
    }

    bool on_trigger(thread_state& state, pid_t, const ucontext_t&) const noexcept override {
        rearm(state);
        return true;
    }

private:
    double rate() const noexcept { return hardware_backend::internals::options(*backend).samples_per_second; }

    const sample_source& fallback() const { return perf_counter_source(*backend, task_clock_trigger(rate())); }

    // Signal-safe: the one-shot timer, set for a random interval after its previous expiry. The kernel checks
    // CPU-time timers at the scheduler tick, so a timer fires up to one tick (1-10 ms) after its expiry; setting
    // each expiry from the previous one (absolute time), not from the late firing, keeps the requested rate on
    // average. A thread that fell a whole interval behind (it had stopped the timer while stepping, say) starts
    // afresh from now rather than firing a burst to catch up.
    void rearm(thread_state& state) const noexcept {
        trigger_state& trigger = state.trigger;
        const std::uint64_t period = random_period(state, 1e9 / rate());
        timespec now{};
        ::clock_gettime(trigger.timer_clock, &now);
        const std::uint64_t now_ns =
            static_cast<std::uint64_t>(now.tv_sec) * 1000000000ULL + static_cast<std::uint64_t>(now.tv_nsec);
        trigger.timer_expiry_ns += period;
        if (trigger.timer_expiry_ns <= now_ns) trigger.timer_expiry_ns = now_ns + period;
        itimerspec spec{};
        spec.it_value.tv_sec = static_cast<time_t>(trigger.timer_expiry_ns / 1000000000ULL);
        spec.it_value.tv_nsec = static_cast<long>(trigger.timer_expiry_ns % 1000000000ULL);
        ::timer_settime(trigger.timer, TIMER_ABSTIME, &spec, nullptr);
    }
};

cpu_timer_source timer; // one backend per process

} // namespace

const sample_source& timer_source(hardware_backend& backend) {
    timer.backend = &backend;
    return timer;
}

} // namespace ojx::hardware
