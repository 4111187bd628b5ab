// What perf_event can do for us on this machine, found by trying, and small wrappers to open per-thread events
// whose overflows arrive as a signal on the thread they measure. Everything a reader of a report needs to know
// about why a mechanism was or was not chosen comes from the `capabilities` probe.
#pragma once

#include <linux/perf_event.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

namespace ojx::hardware {

// A precise address-sampling event found on this CPU: Intel PEBS "all loads" or AMD IBS op.
struct precise_event {
    std::string name;           // e.g. "MEM_INST_RETIRED:ALL_LOADS" or "ibs_op"
    perf_event_attr attr{};     // type/config filled in; the caller sets the period and sample fields
};

struct capabilities {
    int perf_event_paranoid = 2;
    bool perf_events = false;          // perf_event_open works at all for this process (software events)
    std::string perf_events_reason;    // why not, when false
    bool hardware_counters = false;    // PERF_TYPE_HARDWARE instructions can be counted and overflow
    std::string hardware_counters_reason;
    std::optional<precise_event> precise;
    std::string precise_reason;        // why there is no precise event, when none
    std::size_t breakpoint_slots = 0;  // debug registers perf gave us, probed by opening them on this thread
    std::string breakpoint_reason;     // why none, when 0
    bool breakpoint_modify = false;    // PERF_EVENT_IOC_MODIFY_ATTRIBUTES re-arms a breakpoint
    // Overflows can arrive as a synchronous SIGTRAP on the thread (perf_event_attr::sigtrap, Linux 5.13): a
    // standard signal, so at most one is ever pending per thread, it takes no slot of the user's real-time
    // signal queue, and a full queue can never turn it into SIGIO. Else each overflow queues a real-time signal.
    bool synchronous_traps = false;
    std::string synchronous_traps_reason; // why not, when false
    // The scheduler tick (1/CONFIG_HZ: 4 ms at HZ 250), which is when the kernel checks CPU-time timers; 0 if
    // unknown. Read as the resolution of CLOCK_MONOTONIC_COARSE, which is one tick.
    std::uint64_t scheduler_tick_ns = 0;
};

// Whether a CPU-time timer can deliver `samples_per_second` per thread: it fires only at a scheduler tick, and
// randomized intervals (0.5-1.5 x the mean) need headroom below one sample per tick, so at most 0.8 per tick.
bool timer_keeps_rate(double samples_per_second, std::uint64_t scheduler_tick_ns) noexcept;

// Probes the machine (opens and closes a few events on the calling thread). Not signal-safe.
capabilities probe_capabilities(std::size_t max_breakpoint_slots = 4);

// perf_event_open(2) for thread `tid` on any CPU. Returns the fd or -errno. The fd is close-on-exec and moved
// to a high number (above what a program usually reaches, below its limit): a program that closes the
// descriptors it inherited and opens its own files gets low numbers, not ours. Signal-safe.
int open_perf_event(perf_event_attr& attr, pid_t tid) noexcept;

// Signal-safe: whether `fd` still is a perf_event descriptor (every one shares one anonymous inode, recorded at
// the first open). A program may close any descriptor, ours too, and be given the number again for its own file:
// ojx checks before it uses or closes one, so that it never acts on the program's.
bool is_perf_event_fd(int fd) noexcept;

// Closes `fd` only if it still is a perf_event descriptor; false when it was not (the program closed ours).
// Signal-safe.
bool close_perf_event(int fd) noexcept;

// Marks `attr` to report each overflow as a synchronous SIGTRAP carrying `tag` in si_perf_data (see
// capabilities::synchronous_traps); remove_on_exec, which the kernel requires with it, drops the event from a
// program that execs.
void deliver_as_sigtrap(perf_event_attr& attr, std::uint64_t tag) noexcept;

// Routes the fd's overflow notifications to `signal` on thread `tid` (O_ASYNC, F_SETSIG, F_SETOWN_EX). On
// failure returns the errno.
int route_to_thread(int fd, int signal, pid_t tid) noexcept;

// Signal-safe: the kernel thread id of the caller.
pid_t current_tid() noexcept;

// A breakpoint attribute watching `length` bytes at `where` (reads and writes; x86 has no read-only breakpoint).
perf_event_attr breakpoint_attr(std::uint64_t where, std::uint8_t length, bool disabled) noexcept;

} // namespace ojx::hardware
