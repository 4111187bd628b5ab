// A sample source: what interrupts a thread to take an address sample. Each opens a per-thread trigger and, at
// each firing, sets up the next one and says whether the sample is still to be found by decoding (the stepper) or
// was delivered already (a precise event carries the data address). The sources, each in its own file:
//   timer_source.cpp        — a per-thread CPU-time POSIX timer (no perf_event needed);
//   perf_counter_source.cpp — a perf counter's overflow: instructions retired (a PMU counter) or the task clock;
//   precise_source.cpp      — a precise perf event with its ring buffer: Intel PEBS loads or AMD IBS ops.
// The backend chooses one (sampler_choice.cpp) and records in each thread's trigger_state the source that opened
// it. Closing and quieting a trigger is the same for all: whatever the trigger holds open goes.
#pragma once

#include "backend_internals.hpp"

#include <sys/types.h>
#include <ucontext.h>

#include <optional>
#include <string>

namespace ojx::hardware {

class sample_source {
public:
    virtual ~sample_source() = default;
    // Outside signal handlers: opens and enables thread `tid`'s trigger in `state`. Error message on failure.
    virtual std::optional<std::string> open(thread_state& state, pid_t tid) const = 0;
    // Signal-safe, on the thread whose trigger fired, interrupting `context`: sets up the next firing. True: the
    // sample is to be found by decoding at `context`; false: nothing more to do (delivered, or none).
    virtual bool on_trigger(thread_state& state, pid_t tid, const ucontext_t& context) const noexcept = 0;
};

// Signal-safe: the trigger goes quiet for good (the watchdog, or the program took our signals).
void quiet_trigger(trigger_state& trigger) noexcept;
// Outside handlers: closes what the trigger holds. A descriptor the program closed (and may have been given again)
// is neither used nor closed: counted in descriptors_lost. `unmap_ring`: only the thread itself (signals blocked)
// may unmap its ring; when stopping from another thread a handler may be draining it right now, so the mapping
// stays (it is small, and the process is usually exiting).
void close_trigger(trigger_state& trigger, backend_counters& counters, bool unmap_ring) noexcept;

// The sources, configured for the backend that starts (one per process). Each returns the source to open.
const sample_source& timer_source(hardware_backend& backend);
const sample_source& perf_counter_source(hardware_backend& backend, const perf_event_attr& attr);
const sample_source& precise_source(hardware_backend& backend, const perf_event_attr& attr);

// perf_counter_source.cpp: opens `attr` as thread `tid`'s trigger in `state`, its overflows delivered as a
// synchronous SIGTRAP where the kernel can, else as our real-time signal; with `ring_pages`, maps that many pages
// of sample buffer. For the precise source too.
std::optional<std::string> open_perf_trigger(const hardware_backend& backend, trigger_state& state, pid_t tid,
                                             perf_event_attr attr, std::size_t ring_pages);

} // namespace ojx::hardware
