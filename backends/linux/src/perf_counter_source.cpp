// The perf-counter sample source: a counter of the thread (instructions retired on a PMU, else the kernel's task
// clock) whose overflow interrupts it; the sample is then found by decoding. The period is randomized at each
// overflow. Also what opens any perf trigger (the precise source's too), and what closes any trigger.
#include "sample_source.hpp"

#include "ojx/hardware/perf_events.hpp"

#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ojx::hardware {

namespace {

class counter_source final : public sample_source {
public:
    hardware_backend* backend = nullptr;
    perf_event_attr attr{};

    std::optional<std::string> open(thread_state& state, pid_t tid) const override {
        state.trigger.source = this;
        return open_perf_trigger(*backend, state.trigger, tid, attr, 0);
    }

    bool on_trigger(thread_state& state, pid_t, const ucontext_t&) const noexcept override {
        if (state.trigger.period != 0 && state.trigger.fd >= 0) {
            std::uint64_t period = random_period(state, static_cast<double>(state.trigger.period));
            ::ioctl(state.trigger.fd, PERF_EVENT_IOC_PERIOD, &period);
        }
        return true;
    }
};

counter_source counter; // one backend per process

} // namespace

const sample_source& perf_counter_source(hardware_backend& backend, const perf_event_attr& attr) {
    counter.backend = &backend;
    counter.attr = attr;
    return counter;
}

std::optional<std::string> open_perf_trigger(const hardware_backend& backend, trigger_state& state, pid_t tid,
                                             perf_event_attr attr, std::size_t ring_pages) {
    const bool synchronous = hardware_backend::internals::caps(backend).synchronous_traps;
    if (synchronous) deliver_as_sigtrap(attr, trigger_tag);
    const int fd = open_perf_event(attr, tid);
    if (fd < 0) return std::string("perf_event_open (sampling): ") + std::strerror(-fd);
    state.fd = fd;
    state.period = attr.freq != 0 ? 0 : attr.sample_period;
    if (ring_pages > 0) {
        const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
        state.ring_bytes = (1 + ring_pages) * page;
        void* ring = ::mmap(nullptr, state.ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (ring == MAP_FAILED) return std::string("mmap of the sample buffer: ") + std::strerror(errno);
        state.ring = ring;
    }
    if (!synchronous) {
        if (const int error = route_to_thread(fd, sampling_signal_number, tid); error != 0)
            return std::string("routing samples to the thread: ") + std::strerror(error);
    }
    ::ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
    return std::nullopt;
}

void quiet_trigger(trigger_state& trigger) noexcept {
    if (trigger.has_timer) {
        itimerspec off{};
        ::timer_settime(trigger.timer, 0, &off, nullptr);
    }
    if (is_perf_event_fd(trigger.fd)) ::ioctl(trigger.fd, PERF_EVENT_IOC_DISABLE, 0);
}

void close_trigger(trigger_state& trigger, backend_counters& counters, bool unmap_ring) noexcept {
    if (trigger.has_timer) ::timer_delete(trigger.timer);
    trigger.has_timer = false;
    if (trigger.fd >= 0) {
        if (is_perf_event_fd(trigger.fd)) ::ioctl(trigger.fd, PERF_EVENT_IOC_DISABLE, 0);
        if (!close_perf_event(trigger.fd)) counters.descriptors_lost.fetch_add(1, std::memory_order_relaxed);
    }
    trigger.fd = -1;
    if (trigger.ring != nullptr && unmap_ring) ::munmap(trigger.ring, trigger.ring_bytes);
    trigger.ring = nullptr;
}

} // namespace ojx::hardware
