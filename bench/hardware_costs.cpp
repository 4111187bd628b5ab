// What one delivered sample and one watchpoint trap cost the profiled thread, on this machine, in microseconds.
//
// Measured from outside the handlers, so the kernel's part (the interrupt, the signal frames, every single-step
// trap) is included: the same fixed work is timed in thread CPU time with and without the mechanism, and the
// difference is divided by the number of samples or traps delivered. Configurations alternate within one run
// and the median of the repetitions is reported. Delivery goes to a recorder that stores the sample (no
// profiler), so this is the backend's cost; the profiler's sample path is in bench_profiler.
//
//   hardware_costs [repetitions]
#include "ojx/hardware/hardware_backend.hpp"

#include <time.h>

#include <algorithm>
#include <cmath>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

using namespace ojx;
using namespace ojx::hardware;

namespace {

std::atomic<std::uint64_t> delivered_samples{0};
std::atomic<std::uint64_t> delivered_traps{0};
std::uint64_t sink = 0;

bool on_sample(void*, const access_sample& sample, const ucontext_t&, const ojx::hardware::handler_reads&) noexcept {
    delivered_samples.fetch_add(1, std::memory_order_relaxed);
    sink += sample.value;
    return false; // no value followed
}
void on_trap(void*, const watchpoint_trap& trap, const ucontext_t&, const ojx::hardware::handler_reads&) noexcept {
    delivered_traps.fetch_add(1, std::memory_order_relaxed);
    sink += trap.value;
}

double cpu_seconds() {
    timespec now{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

constexpr std::size_t words = 8192;
alignas(64) volatile std::uint64_t buffer[words];

// Fixed work: `passes` sweeps over a 64 KiB buffer (L2-resident, so the time is steady).
[[gnu::noinline]] double timed_sweeps(int passes) {
    const double start = cpu_seconds();
    std::uint64_t sum = 0;
    for (int pass = 0; pass < passes; ++pass)
        for (std::size_t i = 0; i < words; ++i) sum += buffer[i];
    sink += sum;
    return cpu_seconds() - start;
}

double median(std::vector<double> values) {
    if (values.empty()) return NAN;
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
    const int repetitions = argc > 1 ? std::atoi(argv[1]) : 7;
    hardware_backend backend;
    backend_options options;
    options.samples_per_second = 2000;
    options.watchpoint_slots = 1;
    options.compare = comparison_kind::watchpoint; // traps are what is measured; none where the registers never trap
    if (auto error = backend.start(options, backend_delivery{nullptr, on_sample, on_trap})) {
        std::fprintf(stderr, "hardware_costs: %s\n", error->c_str());
        return 1;
    }
    std::printf("sampler: %s\nwatchpoints: %s\n", backend.sampler_description().c_str(),
                backend.watchpoint_description().c_str());
    constexpr int passes = 40000; // ~0.25 s of work here
    timed_sweeps(passes / 4);    // warm up

    // Samples: the same sweeps before and after attaching (attaching starts sampling), alternated by detaching.
    std::vector<double> per_sample_us;
    std::vector<double> baseline_seconds;
    for (int r = 0; r < repetitions; ++r) {
        const double plain = timed_sweeps(passes);
        if (backend.attach_current_thread()) return 1;
        const std::uint64_t before = delivered_samples.load();
        const double sampled = timed_sweeps(passes);
        const std::uint64_t samples = delivered_samples.load() - before;
        backend.detach_current_thread();
        baseline_seconds.push_back(plain);
        if (samples > 0) per_sample_us.push_back((sampled - plain) / static_cast<double>(samples) * 1e6);
    }
    std::printf("decode sample: %.2f us per delivered sample (median of %d; work %.3f s CPU per run, %.0f "
                "samples/s requested)\n",
                median(per_sample_us), repetitions, median(baseline_seconds), options.samples_per_second);

    if (backend.slot_count() == 0) {
        std::printf("watchpoint trap: not measured (no working debug register here)\n");
        backend.stop();
        return sink == 42 ? 2 : 0;
    }
    // Traps: a watch on one word that the sweep reads once per pass, with sampling off for this part.
    std::vector<double> per_trap_us;
    std::vector<double> slot_arm_us;
    for (int r = 0; r < repetitions; ++r) {
        const double plain = timed_sweeps(passes);
        if (backend.attach_current_thread()) return 1;
        // Attaching also started sampling; measure sampling-only first, then add the watch.
        const std::uint64_t samples_before = delivered_samples.load();
        const double sampled_only = timed_sweeps(passes);
        const std::uint64_t samples_only = delivered_samples.load() - samples_before;
        const double arm_start = cpu_seconds();
        for (int k = 0; k < 1000; ++k)
            backend.arm(0, reinterpret_cast<std::uint64_t>(&buffer[(k * 8) % words]), 8);
        slot_arm_us.push_back((cpu_seconds() - arm_start) / 1000 * 1e6);
        backend.arm(0, reinterpret_cast<std::uint64_t>(&buffer[100]), 8);
        const std::uint64_t traps_before = delivered_traps.load();
        const std::uint64_t samples_before_watch = delivered_samples.load();
        const double watched = timed_sweeps(passes);
        const std::uint64_t traps = delivered_traps.load() - traps_before;
        const std::uint64_t samples_during = delivered_samples.load() - samples_before_watch;
        backend.disarm(0);
        backend.detach_current_thread();
        const double sample_cost = samples_only ? (sampled_only - plain) / static_cast<double>(samples_only) : 0;
        const double trap_part = watched - plain - sample_cost * static_cast<double>(samples_during);
        if (traps > 0) per_trap_us.push_back(trap_part / static_cast<double>(traps) * 1e6);
    }
    std::printf("watchpoint trap: %.2f us per trap (median of %d; %d traps per run)\n", median(per_trap_us),
                repetitions, passes);
    std::printf("re-arming one slot on one thread: %.2f us\n", median(slot_arm_us));
    backend.stop();
    return sink == 42 ? 2 : 0; // keep `sink` alive
}
