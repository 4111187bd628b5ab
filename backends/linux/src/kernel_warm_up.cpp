#include "ojx/hardware/kernel_warm_up.hpp"

#include "ojx/hardware/agent_output_file.hpp"
#include "ojx/hardware/perf_events.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>

namespace ojx::hardware {

namespace {

constexpr int not_yet = -1; // the warm-up has not stored its event
constexpr int ended = -2;   // end_kernel_warm_up ran: an event stored later is closed at once

std::atomic<int> warm_event{not_yet};

void grow_descriptor_table() noexcept {
    const int floor = high_descriptor_floor();
    if (floor < 0) return;
    const int any = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (any < 0) return;
    if (const int high = ::fcntl(any, F_DUPFD_CLOEXEC, floor); high >= 0) ::close(high);
    ::close(any);
}

void enable_perf_scheduler_hooks() noexcept {
    perf_event_attr attr{};
    attr.type = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_TASK_CLOCK;
    attr.disabled = 1;
    attr.exclude_kernel = 1;
    const int fd = open_perf_event(attr, 0);
    if (fd < 0) return;
    int expected = not_yet;
    if (!warm_event.compare_exchange_strong(expected, fd, std::memory_order_acq_rel)) ::close(fd);
}

void* warm_up(void*) {
    grow_descriptor_table();
    enable_perf_scheduler_hooks();
    return nullptr;
}

} // namespace

void start_kernel_warm_up() noexcept {
    sigset_t all{};
    sigset_t previous{};
    sigfillset(&all);
    if (::pthread_sigmask(SIG_SETMASK, &all, &previous) != 0) return;
    pthread_attr_t attributes{};
    if (::pthread_attr_init(&attributes) == 0) {
        ::pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
        ::pthread_attr_setstacksize(&attributes, 64 * 1024);
        pthread_t thread{};
        ::pthread_create(&thread, &attributes, warm_up, nullptr); // the thread inherits the blocked mask
        ::pthread_attr_destroy(&attributes);
    }
    ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

void end_kernel_warm_up() noexcept {
    if (const int fd = warm_event.exchange(ended, std::memory_order_acq_rel); fd >= 0) ::close(fd);
}

} // namespace ojx::hardware
