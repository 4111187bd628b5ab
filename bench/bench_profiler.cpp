// Cost of the profiler's hot paths on the emulation backend (no context capture: the access context comes
// with the sample): the access-sample path (object lookup, pairing, remembering the probe, digest of the
// compared window) and the trap path (lookup, digest, comparison, estimator). Also the memory one tracked
// object and one allocation context cost. Target: ≤ 200 ns per sample. The default window is 64.
#include "ojx/emulation/emulated_watchpoints.hpp"
#include "ojx/emulation/session.hpp"
#include "ojx/emulation/synthetic_heap.hpp"
#include "ojx/profiler.hpp"
#include "ojx/random.hpp"

#include <benchmark/benchmark.h>

#include <chrono>
#include <optional>

#include <vector>

using namespace ojx;
using namespace ojx::emulation;

namespace {

using bench_profiler = profiler<policies<>>;

struct setup {
    // `objects` objects of 1 KiB spread over `contexts` allocation contexts; samples come in runs of
    // `samples_per_object` on one object (1: every sample lands on a new object, the worst case, as pairing
    // runs once per object; 8: a program scanning each object, as the paper's case studies do).
    setup(std::size_t objects, std::size_t contexts, std::size_t window, std::size_t samples_per_object = 1,
          watch_trigger trigger = watch_trigger::loads_and_stores)
        : heap(objects * 1024 + (1 << 20)), watchpoints(4, trigger),
          prof(resolved_for_backend(make_config(window), trigger == watch_trigger::at_sample), watchpoints, heap) {
        std::vector<context_id> ids;
        for (std::size_t c = 0; c < contexts; ++c) {
            const std::uint64_t path[] = {1, 100 + c};
            ids.push_back(prof.contexts().insert_path(path));
        }
        const std::uint64_t use[] = {1, 2};
        access_context = prof.contexts().insert_path(use);
        fast_random rng(1);
        for (std::size_t i = 0; i < objects; ++i) {
            const address where = *heap.allocate(1024);
            for (std::uint64_t off = 0; off < 1024; off += 8) heap.store(where + off, 8, rng.below(4));
            prof.on_allocation(where, 1024, ids[i % contexts], 0);
            starts.push_back(where);
        }
        for (std::size_t i = 0; i < 4096; i += samples_per_object) {
            const address object = starts[rng.below(starts.size())];
            for (std::size_t k = 0; k < samples_per_object; ++k) {
                const address a = object + 8 * rng.below(128);
                addresses.push_back(a);
                values.push_back(heap.load(a, 8));
            }
        }
    }

    static profiler_config make_config(std::size_t window) {
        profiler_config config;
        config.compare_window = window;
        config.object_map_capacity = 1 << 16;
        return config;
    }

    synthetic_heap heap;
    emulated_watchpoints watchpoints;
    bench_profiler prof;
    context_id access_context = no_context;
    std::vector<address> starts, addresses;
    std::vector<std::uint64_t> values;
};

void BM_sample_path(benchmark::State& state) {
    setup s(static_cast<std::size_t>(state.range(0)), 64, static_cast<std::size_t>(state.range(1)),
            static_cast<std::size_t>(state.range(2)));
    std::size_t i = 0;
    for (auto _ : state) {
        const std::size_t k = i++ & 4095;
        s.prof.on_sample(access_sample{0x400000, s.addresses[k], s.values[k], 8, access_kind::load, 1,
                                       s.access_context});
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
    state.counters["watch_armed_per_sample"] =
        static_cast<double>(s.prof.stats().watch_armed) / static_cast<double>(s.prof.stats().samples);
    state.counters["map_bytes_per_object"] =
        static_cast<double>(s.prof.object_map_bytes()) / static_cast<double>(s.prof.tracked_objects());
    state.counters["bytes_per_context"] = static_cast<double>(bench_profiler::bytes_per_context(s.prof.config()));
}
BENCHMARK(BM_sample_path)
    ->ArgNames({"objects", "window", "per_object"})
    ->ArgsProduct({{1000, 100000}, {0, 64, 256}, {1, 8}});

// The sample path where every pair is compared at once (as the Linux backend does where debug registers never
// trap): each sample that arms a watchpoint is followed by its comparison, which frees the slot again. So pairing
// arms on every sample that finds a pair, and the estimator is updated: the whole per-sample cost. (In
// BM_sample_path no trap ever comes, the slots stay taken, and the replacement policy declines nearly every offer.)
// As in a real session compared at the sample, each newly remembered object also gets its companion probe.
void BM_sample_path_compared(benchmark::State& state) {
    setup s(static_cast<std::size_t>(state.range(0)), 64, static_cast<std::size_t>(state.range(1)),
            static_cast<std::size_t>(state.range(2)), watch_trigger::at_sample);
    std::size_t i = 0;
    for (auto _ : state) {
        const std::size_t k = i++ & 4095;
        const access_sample sample{0x400000, s.addresses[k], s.values[k], 8, access_kind::load, 1, s.access_context};
        s.prof.on_sample(sample);
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
    state.counters["comparisons_per_sample"] =
        static_cast<double>(s.prof.stats().comparisons) / static_cast<double>(s.prof.stats().samples);
}
BENCHMARK(BM_sample_path_compared)
    ->ArgNames({"objects", "window", "per_object"})
    ->ArgsProduct({{1000, 100000}, {0, 64}, {1, 8}});

void BM_trap_path(benchmark::State& state) {
    setup s(1000, 64, static_cast<std::size_t>(state.range(0)));
    std::size_t i = 0;
    for (auto _ : state) {
        // Samples until a watchpoint is armed, then the trap that fires on it. Only the trap is timed, with the
        // steady clock (manual time): PauseTiming reads the thread CPU clock, a system call costing more than
        // the trap path itself.
        std::optional<emulated_watchpoints::hit> hit;
        while (!hit) {
            const std::size_t k = i++ & 4095;
            s.prof.on_sample(access_sample{0x400000, s.addresses[k], s.values[k], 8, access_kind::load, 1,
                                           s.access_context});
            for (std::size_t slot = 0; slot < s.watchpoints.slot_count() && !hit; ++slot)
                hit = s.watchpoints.watched(slot);
        }
        const watchpoint_trap trap{hit->slot, hit->watched, s.heap.load(hit->watched, 8), 8, access_kind::load,
                                   0x400010, 1, s.access_context};
        const auto start = std::chrono::steady_clock::now();
        s.prof.on_trap(trap);
        const auto stop = std::chrono::steady_clock::now();
        state.SetIterationTime(std::chrono::duration<double>(stop - start).count());
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
    state.counters["comparisons"] = static_cast<double>(s.prof.stats().comparisons);
}
BENCHMARK(BM_trap_path)->ArgName("window")->Arg(0)->Arg(64)->Arg(256)->UseManualTime();

// An allocation and a free, as a malloc hook delivers them: the object's allocation path (`depth` frames, one of
// 64 paths) is inserted into the calling context tree, then the object is filed; a random live object dies first,
// and the new one takes its place (as malloc reuses freed memory). A live population of `objects` 1 KiB objects.
void BM_allocation_path(benchmark::State& state) {
    const auto objects = static_cast<std::size_t>(state.range(0));
    const auto depth = static_cast<std::size_t>(state.range(1));
    setup s(objects, 64, 64);
    std::vector<std::vector<std::uint64_t>> paths(64);
    for (std::size_t c = 0; c < paths.size(); ++c)
        for (std::size_t f = 0; f < depth; ++f) paths[c].push_back(0x400000 + 16 * f + (f + 1 == depth ? c : 0));
    fast_random rng(2);
    for (auto _ : state) {
        const address where = s.starts[rng.below(s.starts.size())];
        s.prof.on_free(where);
        const context_id context = s.prof.contexts().insert_path(paths[rng.below(paths.size())]);
        s.prof.on_allocation(where, 1024, context, 0);
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_allocation_path)->ArgNames({"objects", "depth"})->ArgsProduct({{1000, 100000}, {3, 16}});

// The cost of reading the steady clock twice, to subtract from BM_trap_path.
void BM_clock_pair(benchmark::State& state) {
    for (auto _ : state) {
        const auto start = std::chrono::steady_clock::now();
        const auto stop = std::chrono::steady_clock::now();
        state.SetIterationTime(std::chrono::duration<double>(stop - start).count());
    }
}
BENCHMARK(BM_clock_pair)->UseManualTime();

} // namespace
