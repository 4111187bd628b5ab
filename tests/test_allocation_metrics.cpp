// JP's allocation metrics: exact counts where every allocation is seen (emulation), bounded tables, and the
// Horvitz-Thompson scaling of sampled allocations tested against a simulation of HotSpot's heap sampler.
#include "ojx/allocation_metrics.hpp"
#include "ojx/emulation/heap_shapes.hpp"
#include "ojx/emulation/session.hpp"
#include "ojx/random.hpp"
#include "ojx/site_estimate.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

using namespace ojx;
using namespace ojx::emulation;

TEST_CASE("sampling probability is 1 - exp(-s/interval), and every allocation counts 1 without sampling") {
    CHECK(sampling_weight(1024, 0) == 1.0);
    CHECK(sampling_probability(8192, 8192) == Approx(1 - std::exp(-1.0)).epsilon(1e-12));
    CHECK(sampling_probability(1, 524288) == Approx(1.0 / 524288).epsilon(1e-5)); // small objects: ≈ s/interval
    CHECK(sampling_weight(1024, 524288) == Approx(512.5).epsilon(1e-3));
    CHECK(sampling_weight(1 << 30, 524288) == Approx(1.0).epsilon(1e-12)); // far larger than the interval: always
}

TEST_CASE("a context's table keeps the first types, sums the rest, and keeps arrays apart") {
    context_allocations table;
    for (type_id type = 0; type < context_allocations::max_types + 2; ++type)
        table.add(type, 100, {}, 1);
    table.add(0, 300, {.array_length = 75}, 1); // type 0 as an array is another entry: no room, so other
    table.add(1, 100, {}, 1);
    std::vector<type_allocations> kept(table.begin(), table.end());
    REQUIRE(kept.size() == context_allocations::max_types);
    CHECK(kept[0].type == 0);
    CHECK(kept[1].instances == 2);
    CHECK(kept[1].bytes == 200);
    CHECK(table.other().seen == 3);
    CHECK(table.other().elements == 75);
    const type_allocations total = table.total();
    CHECK(total.seen == context_allocations::max_types + 4);
    CHECK(total.bytes == 100 * (context_allocations::max_types + 3) + 300);

    context_allocations arrays;
    arrays.add(5, 4096, {.array_length = 512}, 1);
    arrays.add(5, 4096, {}, 1);
    arrays.add(5, 2048, {.array_length = 256}, 1);
    std::vector<type_allocations> entries(arrays.begin(), arrays.end());
    REQUIRE(entries.size() == 2);
    CHECK((entries[0].array && entries[0].instances == 2 && entries[0].elements == 768));
    CHECK((!entries[1].array && entries[1].instances == 1 && entries[1].elements == 0));
}

TEST_CASE("an emulated run counts every allocation exactly: instances, bytes, arrays and their elements") {
    const std::vector<context_shape> shapes{
        {.name = "a", .type = "byte[]", .object_size = 2048, .group_sizes = {40, 20}},
        {.name = "b", .type = "long[]", .object_size = 1024, .group_sizes = std::vector<std::uint32_t>(70, 1)},
        {.name = "c", .type = "Record", .object_size = 4096, .group_sizes = {30}},
        {.name = "d", .type = "short[]", .object_size = 512, .group_sizes = {25}}, // below the threshold
    };
    session_config config;
    config.heap_bytes = std::size_t{4} << 20;
    config.profiler.context_tree_capacity = 1024;
    session<> s(config);
    const auto result = run_workload(s.machine, s.prof.contexts(), shapes, {.seed = 3, .collect_every = 50});
    const replica_report report = s.prof.report();
    CHECK(report.allocation_sampling_interval == 0);
    const struct {
        std::uint64_t instances, size, elements_each;
        bool array;
    } expected[] = {{60, 2048, 2048, true}, {70, 1024, 128, true}, {30, 4096, 0, false}};
    for (std::size_t c = 0; c < 3; ++c) {
        const auto found = std::find_if(report.contexts.begin(), report.contexts.end(), [&](const context_report& r) {
            return r.context == result.allocation_contexts[c];
        });
        REQUIRE(found != report.contexts.end());
        std::vector<type_allocations> types(found->allocated.begin(), found->allocated.end());
        REQUIRE(types.size() == 1);
        const type_allocations& t = types[0];
        INFO("context " << shapes[c].name);
        CHECK(t.type == c);
        CHECK(t.array == expected[c].array);
        CHECK(t.seen == expected[c].instances);
        CHECK(t.instances == static_cast<double>(expected[c].instances));
        CHECK(t.bytes == static_cast<double>(expected[c].instances * expected[c].size));
        CHECK(t.elements == static_cast<double>(expected[c].instances * expected[c].elements_each));
        CHECK(t.instances_variance == 0);
        CHECK(found->allocated.total().instances == static_cast<double>(found->objects)); // what the bound used before
    }
    CHECK(std::none_of(report.contexts.begin(), report.contexts.end(), [&](const context_report& r) {
        return r.context == result.allocation_contexts[3];
    }));
}

TEST_CASE("the profiler scales sampled allocations by their whole size, header included") {
    session_config config;
    config.profiler.allocation_sampling_interval = 8192;
    session<> s(config);
    const context_id site = s.prof.contexts().insert_path(std::vector<std::uint64_t>{1, 2});
    s.machine.allocate(4080, site, 0, {.header_bytes = 16, .array_length = 1020});
    const std::vector<context_report> contexts = s.prof.report().contexts;
    REQUIRE(contexts.size() == 1);
    const type_allocations t = contexts[0].allocated.total();
    const double weight = 1 / (1 - std::exp(-4096.0 / 8192));
    CHECK(t.instances == Approx(weight).epsilon(1e-12));
    CHECK(t.bytes == Approx(4080 * weight).epsilon(1e-12));
    CHECK(t.elements == Approx(1020 * weight).epsilon(1e-12));
    CHECK(t.instances_variance == Approx(weight * (weight - 1)).epsilon(1e-12));
}

TEST_CASE("under adaptive tracking each object is weighed at the interval it was sampled at") {
    session_config config;
    config.profiler.allocation_sampling_interval = 8192; // the objects' own intervals take precedence
    config.profiler.allocation_tracking_target = 1000;
    session<> s(config);
    const context_id site = s.prof.contexts().insert_path(std::vector<std::uint64_t>{1, 2});
    s.machine.allocate(4096, site, 0, {.sampling_interval = 0});       // tracked for certain: counts 1
    s.machine.allocate(4096, site, 0, {.sampling_interval = 16384});
    s.machine.allocate(4096, site, 0, {.sampling_interval = 1 << 20});
    const replica_report report = s.prof.report();
    REQUIRE(report.contexts.size() == 1);
    const type_allocations t = report.contexts[0].allocated.total();
    const double expected = 1 + sampling_weight(4096, 16384) + sampling_weight(4096, 1 << 20);
    CHECK(t.seen == 3);
    CHECK(t.instances == Approx(expected).epsilon(1e-12));
    CHECK(report.allocations_estimated());
    CHECK(report.allocation_tracking_target == 1000);
    REQUIRE(report.sampled_interval_range);
    CHECK(report.sampled_interval_range->first == 0);
    CHECK(report.sampled_interval_range->second == 1 << 20);
}

TEST_CASE("adaptive tracking whose interval never left 0 counted every allocation, and knows each site's population") {
    session_config config;
    config.profiler.allocation_tracking_target = 1000;
    session<> s(config);
    const context_id site = s.prof.contexts().insert_path(std::vector<std::uint64_t>{1, 2});
    // Three distinct objects, each tracked at interval 0 (weight 1).
    for (std::uint64_t i = 0; i < 3; ++i) {
        const address at = *s.machine.allocate(4096, site, 0, {.sampling_interval = 0});
        const std::uint64_t word = 100 + i;
        s.heap.write(at, &word, sizeof word);
    }
    s.prof.digest_tracked_objects(1 << 20);
    // Without the tracker's word the interval might have grown and passed over other allocations of the site
    // without a trace: the three are a sample, and their largest group (one object) says nothing.
    const replica_report sampled = s.prof.report();
    CHECK(sampled.allocations_estimated());
    REQUIRE(sampled.contexts.size() == 1);
    CHECK(sampled.contexts[0].identical.objects == 3);
    CHECK(sampled.contexts[0].identical.largest_share_ci.low == 0);
    CHECK(sampled.contexts[0].identical.largest_share_ci.high > 0.5);
    // With it, the counts are counts, and the three are the site's whole population: exactly 1/3.
    s.prof.note_tracking_stayed_exact(true);
    const replica_report counted = s.prof.report();
    CHECK_FALSE(counted.allocations_estimated());
    CHECK(counted.contexts[0].identical.largest_share_ci.low == Approx(1.0 / 3));
    CHECK(counted.contexts[0].identical.largest_share_ci.high == Approx(1.0 / 3));
    CHECK_FALSE(called_replicated(counted.contexts[0].combined)); // one object is no replica
}

namespace {

// HotSpot's heap sampler as in JDK 17 (ThreadHeapSampler): the bytes until the next sample are drawn from an
// exponential distribution with mean `interval`; the allocation that reaches the sampling point is sampled, and a
// fresh gap starts at its end. Memoryless, so the sampling points are a Poisson process over the allocated bytes.
// (JDK 11's sampler took the overshoot past the point off the next gap when the gap was longer; simulated here,
// that over-samples whatever follows a large sampled object: +14 % for 1 KiB objects at the default 512 KiB
// interval in a mix with 1 MiB ones. The estimates are for JDK 17 and later.)
class hotspot_sampler {
public:
    hotspot_sampler(std::uint64_t interval, std::uint64_t seed) : interval_(static_cast<double>(interval)), rng_(seed) {
        until_ = next_gap();
    }
    bool sample(std::uint64_t size) {
        const double bytes = static_cast<double>(size);
        if (bytes < until_) {
            until_ -= bytes;
            return false;
        }
        until_ = next_gap();
        return true;
    }

private:
    double next_gap() { return -std::log(1 - rng_.unit()) * interval_; }
    double interval_;
    fast_random rng_;
    double until_;
};

struct kind {
    std::uint64_t size;
    std::uint64_t count;
};

} // namespace

// Tolerance: over 300 seeds the mean of the estimates is within 1 % of the truth for every kind (the standard
// error of that mean is 0.1-0.4 %: a biased estimator of 1 % would fail, an unbiased one passes with room), and
// the per-run interval ± 1.96·sqrt(variance estimate) covers the truth in 92-98 % of the runs (95 % nominal; at
// 300 runs the binomial spread of the coverage is ±1.3 %).
TEST_CASE("the scaled estimates are unbiased under HotSpot's sampling, with honest variances (300 seeds)") {
    const std::uint64_t interval = 64 * 1024;
    // Objects of very different sampling chances, interleaved at random: 2 % to 100 %.
    const std::vector<kind> kinds{{1024, 6000}, {6144, 2000}, {40 * 1024, 400}, {1 << 20, 30}};
    const int seeds = 300;
    std::vector<double> mean_ratio(kinds.size(), 0);
    std::vector<int> covered(kinds.size(), 0);
    for (int seed = 1; seed <= seeds; ++seed) {
        fast_random order(static_cast<std::uint64_t>(seed) * 7919);
        hotspot_sampler sampler(interval, static_cast<std::uint64_t>(seed));
        std::vector<type_allocations> estimates(kinds.size());
        std::vector<std::uint64_t> left;
        std::uint64_t remaining = 0;
        for (const kind& k : kinds) {
            left.push_back(k.count);
            remaining += k.count;
        }
        for (; remaining > 0; --remaining) {
            std::uint64_t pick = order.below(remaining);
            std::size_t which = 0;
            while (pick >= left[which]) pick -= left[which++];
            --left[which];
            const std::uint64_t size = kinds[which].size;
            if (sampler.sample(size)) estimates[which].add(size, {}, sampling_weight(size, interval));
        }
        for (std::size_t k = 0; k < kinds.size(); ++k) {
            const double truth = static_cast<double>(kinds[k].count);
            mean_ratio[k] += estimates[k].instances / truth / seeds;
            covered[k] += std::abs(estimates[k].instances - truth) <= 1.96 * std::sqrt(estimates[k].instances_variance)
                              ? 1
                              : 0;
        }
    }
    for (std::size_t k = 0; k < kinds.size(); ++k) {
        INFO("objects of " << kinds[k].size << " bytes: mean estimate / truth " << mean_ratio[k] << ", interval covered "
                           << covered[k] << " of " << seeds);
        CHECK(std::abs(mean_ratio[k] - 1) < 0.01);
        if (kinds[k].size < interval) { // the largest are always sampled: no variance, always covered
            CHECK(covered[k] >= seeds * 92 / 100);
            CHECK(covered[k] <= seeds * 98 / 100);
        } else {
            CHECK(covered[k] == seeds);
        }
    }
}
