// The host's seam (analysis_host.hpp): a second analysis added next to the replica profiler, without touching it,
// receives the same samples — each with the object the host found once — and the profiler's profile is the one it
// makes alone. Driven by two sample sources through the same interface: the emulated machine's sampler, and a
// source that injects samples at chosen addresses.
#include "ojx/analysis_host.hpp"
#include "ojx/emulation/heap_shapes.hpp"
#include "ojx/emulation/session.hpp"
#include "ojx/report.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

using namespace ojx;
using namespace ojx::emulation;

namespace {

using test_profiler = profiler<policies<>>;

// The second analysis: per allocation site, how often its objects were sampled, loads and stores apart. It
// declares samples and traps only.
struct access_histogram {
    explicit access_histogram(std::size_t sites) : per_site(sites) {}

    void on_sample(const resolved_sample& resolved) noexcept {
        if (!resolved.found()) {
            ++outside_objects;
            return;
        }
        const context_id site = resolved.object.info.allocation_context;
        if (site < per_site.size()) ++per_site[site][resolved.sample.kind == access_kind::store ? 1 : 0];
    }
    void on_trap(const watchpoint_trap&) noexcept { ++traps; }

    std::uint64_t loads() const noexcept { return total(0); }
    std::uint64_t stores() const noexcept { return total(1); }
    std::uint64_t total(std::size_t kind) const noexcept {
        std::uint64_t sum = 0;
        for (const auto& site : per_site) sum += site[kind];
        return sum;
    }

    std::vector<std::array<std::uint64_t, 2>> per_site; // [site][load, store]
    std::uint64_t outside_objects = 0;
    std::uint64_t traps = 0;
};
static_assert(analysis_sink<access_histogram>);
static_assert(takes_samples<access_histogram> && takes_traps<access_histogram> &&
              !takes_allocations<access_histogram>);
static_assert(takes_samples<test_profiler> && takes_traps<test_profiler>);
static_assert(heap_event_sink<analysis_host<test_profiler, access_histogram>>);

constexpr std::size_t tree_capacity = 4096;

profiler_config small_objects() {
    profiler_config config;
    config.min_object_size = 256;
    config.context_tree_capacity = tree_capacity;
    return config;
}

std::vector<context_shape> shapes() {
    return {{.name = "identical", .object_size = 512, .group_sizes = {200}},
            {.name = "groups", .object_size = 1024, .group_sizes = {120, 60, 20}},
            {.name = "distinct", .object_size = 512, .group_sizes = std::vector<std::uint32_t>(150, 1)}};
}

// One emulated run with the profiler driven by `Sink` (the profiler itself, or a host around it): its JSON profile.
struct emulated_run {
    explicit emulated_run(watch_trigger trigger)
        : watchpoints(4, trigger), prof(profiler_config_for(small_objects(), trigger), watchpoints, heap) {}

    template <class Sink>
    std::string profile(Sink& sink) {
        emulated_machine machine(heap, sampler, watchpoints, sink);
        const auto planted = shapes();
        run_workload(machine, prof.contexts(), planted, {.seed = 7, .compare_window = 64, .collect_every = 300});
        std::ostringstream json;
        write_json(json, prof.report(), prof.contexts(), {}, run_facts{});
        return json.str();
    }

    synthetic_heap heap{std::size_t{16} << 20};
    emulated_sampler sampler{sampler_config{.period = 97, .seed = 3}};
    emulated_watchpoints watchpoints;
    test_profiler prof;
};

} // namespace

TEST_CASE("a second sink on the host sees the profiler's samples and leaves its profile as it was") {
    for (const watch_trigger trigger : {watch_trigger::loads_and_stores, watch_trigger::at_sample}) {
        CAPTURE(watch_trigger_name(trigger));
        emulated_run alone(trigger);
        const std::string alone_profile = alone.profile(alone.prof);

        emulated_run hosted(trigger);
        access_histogram histogram(tree_capacity);
        analysis_host host(hosted.prof, histogram);
        CHECK(hosted.profile(host) == alone_profile);

        const profiler_stats& stats = hosted.prof.stats();
        REQUIRE(stats.samples > 1000);
        REQUIRE(stats.traps > 0);
        // The histogram hears every sample the profiler does, stores included (which the profiler ignores: stores
        // are not probed), and counts the same loads in tracked objects and the same traps. Where pairs are compared
        // at the sample no watchpoint traps: the profiler compares inside its own on_sample, so the host's sinks
        // see no trap and the profiler counts each comparison as one.
        CHECK(histogram.loads() + histogram.stores() + histogram.outside_objects == stats.samples);
        CHECK(histogram.loads() == stats.samples - stats.samples_stores_ignored - stats.samples_untracked -
                                       stats.samples_busy);
        CHECK(histogram.stores() > 0);
        CHECK(histogram.traps == (trigger == watch_trigger::at_sample ? 0 : stats.traps));
        // Per site, the same loads as the profiler's access contexts of that site (each site has fewer access
        // contexts than the profiler keeps, so none is evicted).
        const replica_report report = hosted.prof.report();
        REQUIRE(report.contexts.size() == 3);
        for (const context_report& site : report.contexts) {
            std::uint64_t sampled = 0;
            for (const auto& access : site.accesses) sampled += access.samples;
            CHECK(histogram.per_site[site.context][0] == sampled);
        }
    }
}

namespace {

// A second sample source: samples injected at chosen addresses, delivered to whatever sink it is built with, as
// the emulated machine's sampler delivers its own.
template <sample_sink Sink>
class injected_samples {
public:
    explicit injected_samples(Sink& sink) noexcept : sink_(sink) {}
    void load(address where, std::uint64_t value, context_id access_context) noexcept {
        sink_.on_sample(access_sample{0x1000, where, value, 8, access_kind::load, 1, access_context});
    }

private:
    Sink& sink_;
};

} // namespace

TEST_CASE("injected samples reach every sink resolved to the object they hit") {
    synthetic_heap heap(1 << 20);
    emulated_watchpoints watchpoints(4);
    profiler_config config = small_objects();
    config.compare_window = 0;
    config.estimator.min_comparisons = 1;
    test_profiler prof(config, watchpoints, heap);
    const std::uint64_t site_path[] = {1, 2};
    const std::uint64_t use_path[] = {1, 3};
    const context_id site = prof.contexts().insert_path(site_path);
    const context_id use = prof.contexts().insert_path(use_path);

    access_histogram histogram(tree_capacity);
    analysis_host host(prof, histogram);
    injected_samples source(host);

    const address first = *heap.allocate(512);
    const address second = *heap.allocate(512);
    const auto first_info = host.on_allocation(first, 512, site, 0);
    REQUIRE(host.on_allocation(second, 512, site, 0));
    REQUIRE(first_info);
    CHECK(prof.resolve(access_sample{.effective_address = first + 511}).object ==
          tracked_object{first, first + 512, *first_info});
    CHECK(prof.resolve(access_sample{.effective_address = first + 512}).object.begin == second);

    source.load(first + 64, 0, use);
    source.load(second + 64, 0, use);
    source.load(heap.base() - 8, 0, use); // outside every object
    CHECK(histogram.per_site[site][0] == 2);
    CHECK(histogram.outside_objects == 1);
    CHECK(prof.stats().samples == 3);
    CHECK(prof.stats().samples_untracked == 1);
    CHECK(prof.stats().pairs == 1); // the second object paired with the first: the profiler used the found object

    // Freed: the host's map forgets it before any sink hears of a later sample there.
    host.on_free(second);
    source.load(second + 64, 0, use);
    CHECK(histogram.outside_objects == 2);
    CHECK(prof.stats().samples_untracked == 2);
}
