// The software-emulation backend: synthetic heap, sampler, debug registers, machine and heap-shape generators.
#include "ojx/emulation/emulated_machine.hpp"
#include "ojx/emulation/emulated_sampler.hpp"
#include "ojx/emulation/emulated_watchpoints.hpp"
#include "ojx/emulation/heap_shapes.hpp"
#include "ojx/emulation/session.hpp"
#include "ojx/emulation/synthetic_heap.hpp"
#include "ojx/emulation/synthetic_stack.hpp"
#include "ojx/calling_context_tree.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

using namespace ojx;
using namespace ojx::emulation;

// Each part of the emulation backend models the core concept a real backend must model.
static_assert(sampler<emulated_sampler>);
static_assert(watchpoint_arming<emulated_watchpoints>);
static_assert(memory_reader<synthetic_heap>);
static_assert(context_capture<synthetic_stack, calling_context_tree<>>);
static_assert(sample_sink<session<>::profiler_type>);
static_assert(heap_event_sink<session<>::profiler_type>);

TEST_CASE("a synthetic stack captures into the tree as its frames, root first") {
    calling_context_tree<> tree(16);
    synthetic_stack stack{1, 2};
    stack.push(3);
    const context_id leaf = stack.capture(tree);
    REQUIRE(tree.depth(leaf) == 3);
    REQUIRE(tree.frame_of(leaf) == 3);
    REQUIRE(tree.frame_of(tree.parent(leaf)) == 2);
    stack.pop();
    REQUIRE(stack.capture(tree) == tree.parent(leaf));
    REQUIRE(tree.size() == 4);
}

TEST_CASE("synthetic heap: aligned zeroed allocation, bounded reads, full heap, compaction moves contents") {
    synthetic_heap heap(4096, 0x10000);
    const address a = *heap.allocate(100);
    const address b = *heap.allocate(200);
    const address c = *heap.allocate(50);
    REQUIRE(a == 0x10000);
    REQUIRE(b == 0x10070); // 100 rounded up to 112
    REQUIRE(heap.load(b + 8, 8) == 0);
    heap.store(c, 8, 0x1122334455667788ULL);
    std::uint64_t out = 0;
    REQUIRE_FALSE(heap.read(0x10000 + 4096 - 4, &out, 8)); // runs past the end
    REQUIRE_FALSE(heap.read(0xffff, &out, 1));               // before the start
    REQUIRE_FALSE(heap.allocate(8192));                      // larger than what is left
    REQUIRE(heap.release(b));
    REQUIRE_FALSE(heap.release(b));
    const auto moves = heap.compact();
    REQUIRE(moves.size() == 1);
    REQUIRE(moves[0].from == c);
    REQUIRE(moves[0].to == b);
    REQUIRE(heap.load(b, 8) == 0x1122334455667788ULL);
    REQUIRE(heap.live_objects() == 2);
    REQUIRE(heap.used() == 112 + 64);
}

TEST_CASE("fixed-period sampler samples exactly every period-th access") {
    emulated_sampler sampler({.period = 10, .randomized = false});
    std::vector<int> sampled;
    for (int i = 1; i <= 100; ++i)
        if (sampler.should_sample()) sampled.push_back(i);
    REQUIRE(sampled.size() == 10);
    REQUIRE(sampled.front() == 10);
    REQUIRE(sampled.back() == 100);
    sampler.stop();
    REQUIRE_FALSE(sampler.should_sample());
    REQUIRE(sampler.samples_delivered() == 10);
}

TEST_CASE("randomized sampler has the configured mean gap and is reproducible") {
    // 1,000,000 accesses at mean period 50: ~20,000 samples, sd ≈ 140; require within 3 %.
    emulated_sampler a({.period = 50, .randomized = true, .seed = 9});
    emulated_sampler b({.period = 50, .randomized = true, .seed = 9});
    std::uint64_t same = 0, count = 0;
    for (int i = 0; i < 1000000; ++i) {
        const bool x = a.should_sample();
        same += x == b.should_sample() ? 1 : 0;
        count += x ? 1 : 0;
    }
    REQUIRE(same == 1000000);
    REQUIRE(std::abs(static_cast<double>(count) - 20000.0) < 600);
}

TEST_CASE("emulated debug registers trigger on overlapping accesses, per trigger kind") {
    emulated_watchpoints rw(4);
    REQUIRE(rw.slot_count() == 4);
    REQUIRE(rw.arm(2, 0x1000, 8));
    REQUIRE_FALSE(rw.arm(4, 0x2000, 8)); // no such slot
    REQUIRE_FALSE(rw.arm(0, 0x2000, 16)); // wider than a debug register
    REQUIRE(rw.check(0x1004, 4, false)->slot == 2);
    REQUIRE(rw.check(0x0ffc, 8, true)->slot == 2); // overlaps the first 4 bytes
    REQUIRE_FALSE(rw.check(0x1008, 8, false));
    rw.disarm(2);
    REQUIRE_FALSE(rw.check(0x1000, 8, false));
    emulated_watchpoints loads(4, watch_trigger::loads_only);
    loads.arm(0, 0x1000, 8);
    REQUIRE_FALSE(loads.check(0x1000, 8, true));
    REQUIRE(loads.check(0x1000, 8, false));
}

namespace {

// Records what the machine delivers and, on the first sample, arms a watchpoint at the sampled address —
// as the profiler would when a sample pairs with a remembered offset there.
struct recorder {
    emulated_watchpoints* watchpoints = nullptr;
    std::vector<access_sample> samples;
    std::vector<watchpoint_trap> traps;
    std::vector<std::pair<address, address>> moves;
    int allocations = 0, frees = 0, gcs = 0;

    void on_allocation(address, std::uint64_t, context_id, type_id, const allocation_shape&) { ++allocations; }
    void on_free(address) { ++frees; }
    void on_move(address from, address to) { moves.emplace_back(from, to); }
    void on_gc_start() { ++gcs; }
    void on_sample(const access_sample& s) {
        samples.push_back(s);
        if (samples.size() == 1) watchpoints->arm(0, s.effective_address, s.width);
    }
    void on_trap(const watchpoint_trap& t) { traps.push_back(t); }
};

} // namespace

TEST_CASE("the machine delivers samples with the accessed value and traps after the access") {
    synthetic_heap heap(1 << 16);
    emulated_sampler sampler({.period = 3, .randomized = false});
    emulated_watchpoints watchpoints(4);
    recorder sink{&watchpoints};
    emulated_machine machine(heap, sampler, watchpoints, sink);
    const address a = *machine.allocate(256, 1, 0);
    machine.store(a, 8, 41, 2);
    machine.store(a + 8, 8, 42, 2);
    REQUIRE(sink.samples.empty());
    REQUIRE(machine.load(a + 8, 8, 3) == 42); // third access: sampled, and the watchpoint armed by the sample
    REQUIRE(sink.samples.size() == 1);         // fires on this very access, as on hardware
    REQUIRE(sink.samples[0].value == 42);
    REQUIRE(sink.samples[0].kind == access_kind::load);
    REQUIRE(sink.samples[0].access_context == 3);
    REQUIRE(sink.traps.size() == 1);
    machine.store(a + 8, 8, 99, 2);
    REQUIRE(sink.traps.size() == 2);
    REQUIRE(sink.traps[1].value == 99); // the value after the store
    REQUIRE(sink.traps[1].kind == access_kind::store);
    machine.free(a);
    const address b = *machine.allocate(64, 1, 0);
    const auto moves = machine.collect();
    REQUIRE(sink.frees == 1);
    REQUIRE(sink.gcs == 1);
    REQUIRE(moves.size() == 1);
    REQUIRE(sink.moves == std::vector<std::pair<address, address>>{{b, a}});
    REQUIRE(machine.accesses() == 4);
}

namespace {

struct null_sink {
    void on_allocation(address, std::uint64_t, context_id, type_id, const allocation_shape&) {}
    void on_free(address) {}
    void on_move(address, address) {}
    void on_gc_start() {}
    void on_sample(const access_sample&) {}
    void on_trap(const watchpoint_trap&) {}
};

workload_result run(std::span<const context_shape> shapes, std::uint64_t seed, std::uint32_t collect_every = 0) {
    synthetic_heap heap(1 << 22);
    emulated_sampler sampler({.period = 1000});
    emulated_watchpoints watchpoints(4);
    null_sink sink;
    emulated_machine machine(heap, sampler, watchpoints, sink);
    calling_context_tree<> tree(64);
    return run_workload(machine, tree, shapes, {.seed = seed, .compare_window = 256, .collect_every = collect_every});
}

} // namespace

TEST_CASE("heap shapes have the ground truth they were built with") {
    const std::vector<context_shape> shapes{
        {.name = "groups", .group_sizes = {60, 30, 10}},
        {.name = "distinct", .group_sizes = std::vector<std::uint32_t>(50, 1)},
        {.name = "identical", .group_sizes = {40}},
        {.name = "partial", .group_sizes = {40}, .differing_words = 3},
        {.name = "mutated", .group_sizes = {30, 10}, .mutated_words = 5},
    };
    const auto result = run(shapes, 5, 37);
    REQUIRE(result.truths.size() == 5);
    REQUIRE(result.allocation_contexts.size() == 5);
    CHECK(result.truths[0].objects == 100);
    CHECK(result.truths[0].largest_group_ratio == Approx(0.6));
    // θ for uniformly random pairs = Σ Xn(Xn−1) / X(X−1) when groups differ everywhere.
    CHECK(result.truths[0].theta == Approx((60.0 * 59 + 30 * 29 + 10 * 9) / (100 * 99)).margin(0.02));
    CHECK(result.truths[1].largest_group_ratio == Approx(1.0 / 50));
    CHECK(result.truths[1].theta < 0.01);
    CHECK(result.truths[2].theta == 1.0);
    CHECK(result.truths[3].largest_group_ratio == Approx(1.0 / 40)); // every partial replica is unique
    // A pair of partial replicas differs in 6 random words; a 256-byte window (a quarter of the object) is
    // equal when none of them falls in it: (3/4)^6.
    CHECK(result.truths[3].theta == Approx(std::pow(0.75, 6)).margin(0.03));
    CHECK(result.truths[4].largest_group_ratio == Approx(0.75));     // mutation keeps replicas replicas
}

TEST_CASE("run-structured and repeat shapes put equal objects next to each other") {
    fast_random rng(3);
    const context_shape runs{.name = "runs", .group_sizes = {5, 3, 2}, .order = ordering::runs};
    const auto groups = detail::group_sequence(runs, rng);
    REQUIRE(groups.size() == 10);
    int changes = 0;
    for (std::size_t i = 1; i < groups.size(); ++i) changes += groups[i] != groups[i - 1] ? 1 : 0;
    REQUIRE(changes == 2);
    // repeat p: the number of new values is 1 + Binomial(n − 1, 1 − p); mean 1 + 999 · 0.2 ≈ 200.8, sd ≈ 12.6.
    const context_shape repeat{.name = "repeat", .repeat_probability = 0.8, .objects = 1000};
    const auto repeated = detail::group_sequence(repeat, rng);
    REQUIRE(repeated.size() == 1000);
    REQUIRE(std::abs(static_cast<double>(repeated.back() + 1) - 200.8) < 5 * 12.6);
}

TEST_CASE("workloads are reproducible from their seed") {
    const std::vector<context_shape> shapes{{.name = "a", .group_sizes = {20, 20}}, {.name = "b", .repeat_probability = 0.5, .objects = 40}};
    const auto one = run(shapes, 17);
    const auto two = run(shapes, 17);
    const auto other = run(shapes, 18);
    REQUIRE(one.truths[1].largest_group == two.truths[1].largest_group);
    REQUIRE(one.truths[1].theta == two.truths[1].theta);
    REQUIRE(one.truths[0].theta != other.truths[0].theta);
}
