// A second analysis on a real Linux session (basic_profiling_session<Sinks...> over ojx/analysis_host.hpp): a
// histogram of samples and allocations per tracked allocation context, added next to the replica profiler without
// touching it, receives exactly the samples (those staged while the session's lock was held too) and the
// allocations the profiler receives, each sample with the object the host found for both.
//
// One hardware backend per process: the scenario runs in a child process (child_process.hpp). Where this machine
// cannot sample, it is skipped, saying why.
#include "ojx/hardware/profiling_session.hpp"

#include "child_process.hpp"
#include "hardware_test_support.hpp"

#include <catch2/catch.hpp>

#include "ojx/random.hpp"
#include "ojx/report.hpp"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <optional>
#include <vector>

using namespace ojx;
using namespace ojx::hardware;
using namespace ojx::hardware::testing;

namespace {

constexpr std::size_t tree_capacity = 4096;

// The second analysis. Its sample handler runs in the signal handler: it only increments preallocated counters.
struct context_histogram {
    explicit context_histogram(std::size_t contexts) : samples(contexts), allocations(contexts) {}

    void on_sample(const resolved_sample& resolved) noexcept {
        const context_id site = resolved.object.info.allocation_context;
        if (resolved.found() && site < samples.size())
            ++samples[site];
        else
            ++samples_outside;
    }
    void on_allocation(const allocation_event& allocation, const std::optional<object_info>& tracked) {
        if (tracked && allocation.context < allocations.size())
            ++allocations[allocation.context];
        else
            ++allocations_untracked;
    }

    std::uint64_t sample_count() const noexcept {
        std::uint64_t sum = samples_outside;
        for (const std::uint64_t n : samples) sum += n;
        return sum;
    }

    std::vector<std::uint64_t> samples;     // per allocation context: samples in its tracked objects
    std::vector<std::uint64_t> allocations; // per allocation context: tracked allocations
    std::uint64_t samples_outside = 0;      // in no tracked object
    std::uint64_t allocations_untracked = 0;
};
static_assert(takes_samples<context_histogram> && takes_allocations<context_histogram> &&
              !takes_traps<context_histogram>);

using histogram_session = basic_profiling_session<context_histogram>;

// The samples the profiler counted for an allocation context's objects (over all its access contexts).
std::uint64_t profiled_samples(const replica_report& report, context_id allocation_context) {
    const auto entry = std::find_if(report.contexts.begin(), report.contexts.end(),
                                    [&](const context_report& c) { return c.context == allocation_context; });
    if (entry == report.contexts.end()) return 0;
    return std::accumulate(entry->accesses.begin(), entry->accesses.end(), std::uint64_t{0},
                           [](std::uint64_t sum, const context_report::access& a) { return sum + a.samples; });
}

unsigned long long ull(std::uint64_t value) { return static_cast<unsigned long long>(value); }

} // namespace

TEST_CASE("a sink added to the Linux session gets the samples and allocations the profiler gets") {
    in_child_process([] {
        int failures = 0;
        histogram_session session{context_histogram(tree_capacity)};
        session_options options;
        options.backend.samples_per_second = 1000;
        options.backend.watchpoint_slots = 0; // samples only: what this sink takes
        options.profiler.min_object_size = 64;
        options.profiler.context_tree_capacity = tree_capacity;
        if (auto error = session.start(options)) {
            std::printf("skipped: this machine cannot sample here: %s\n", error->c_str());
            return child_skipped;
        }
        std::printf("%s\n", session.backend().sampler_description().c_str());

        constexpr std::size_t words = 8192; // 64 KiB each
        fast_random rng(71);
        std::vector<std::vector<std::uint64_t>> buffers(3, std::vector<std::uint64_t>(words));
        for (auto& buffer : buffers)
            for (std::uint64_t& word : buffer) word = rng();
        const auto where = [&](std::size_t i) { return reinterpret_cast<address>(buffers[i].data()); };
        constexpr std::uint64_t bytes = words * sizeof(std::uint64_t);
        std::uint64_t small[4] = {};
        const std::uint64_t frames_a[] = {0xA001, 0xA000}, frames_b[] = {0xB001, 0xB000}; // leaf first

        // Two objects of A, one of B, one too small to track.
        const auto a0 = session.on_allocation(where(0), bytes, frames_a, 1);
        const auto a1 = session.on_allocation(where(1), bytes, frames_a, 1);
        const auto b = session.on_allocation(where(2), bytes, frames_b, 2);
        EXPECT(!session.on_allocation(reinterpret_cast<address>(small), sizeof(small), frames_a, 1));
        if (!a0 || !a1 || !b) return failures + 1;
        const context_id site_a = a0->allocation_context, site_b = b->allocation_context;
        EXPECT(a1->allocation_context == site_a);
        EXPECT(site_a != site_b);

        if (auto error = session.attach_current_thread()) {
            std::printf("skipped: this thread cannot be sampled here: %s\n", error->c_str());
            return child_skipped;
        }
        read_loop(buffers[0].data(), words, 0.3);
        read_loop(buffers[2].data(), words, 0.3);
        // With the lock held by the sampled thread itself: its samples are staged, and the host hands them to both
        // when the lock is let go.
        session.with_analyses([&](auto&, auto&) { read_loop(buffers[1].data(), words, 0.3); });
        session.detach_current_thread();
        session.stop();

        const std::uint64_t delivered = session.backend().counters().samples.load();
        if (delivered == 0) {
            std::printf("skipped: the backend started but delivered no sample on this machine\n");
            return child_skipped;
        }
        session.with_analyses([&](auto& p, const context_histogram& h) {
            const profiler_stats& stats = p.stats();
            const replica_report report = p.report();
            std::printf("delivered %llu (staged %llu, dropped busy %llu): profiler %llu samples, A %llu, B %llu; "
                        "sink %llu samples, A %llu, B %llu, outside %llu; allocations: profiler %llu (small %llu), "
                        "sink A %llu, B %llu, untracked %llu\n",
                        ull(delivered), ull(session.samples_staged()), ull(session.samples_dropped_busy()),
                        ull(stats.samples), ull(profiled_samples(report, site_a)), ull(profiled_samples(report, site_b)),
                        ull(h.sample_count()), ull(h.samples[site_a]), ull(h.samples[site_b]), ull(h.samples_outside),
                        ull(stats.allocations), ull(stats.allocations_ignored_small), ull(h.allocations[site_a]),
                        ull(h.allocations[site_b]), ull(h.allocations_untracked));
            // Every sample the profiler got, the sink got, staged ones included; and each found in the same object.
            EXPECT(stats.samples + session.samples_dropped_paused() + session.samples_dropped_busy() == delivered);
            EXPECT(h.sample_count() == stats.samples);
            EXPECT(session.samples_staged() > 0);
            EXPECT(h.samples[site_a] >= 10);
            EXPECT(h.samples[site_b] >= 5);
            EXPECT(h.samples[site_a] == profiled_samples(report, site_a));
            EXPECT(h.samples[site_b] == profiled_samples(report, site_b));
            // Every allocation, tracked or not, with the profiler's verdict.
            EXPECT(h.allocations[site_a] == 2);
            EXPECT(h.allocations[site_b] == 1);
            EXPECT(h.allocations[site_a] == p.contexts().metrics(site_a).allocations);
            EXPECT(h.allocations[site_b] == p.contexts().metrics(site_b).allocations);
            EXPECT(h.allocations_untracked == stats.allocations_ignored_small);
            EXPECT(h.allocations_untracked == 1);
        });
        return failures;
    });
}
