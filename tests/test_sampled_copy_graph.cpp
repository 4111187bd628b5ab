// The sampled copy graph (docs/copy-profiling.md, "The sampled copy graph") against the exact one.
//
// Exact cases: every access sampled (period 1), the sampled graph is the exact graph but for the edges from
// allocation nodes (no load makes them); the bound stops a following and counts it; string moves give their
// edges at once; merging is exact. Statistical cases (tolerances stated where asserted):
//   - estimator coverage: binomially thinned counts at one period and at two, 4000 draws per cell;
//   - 24 generated programs × 10 sampler seeds at period 16: top-5 edge overlap, coverage of the 95 % bytes
//     intervals of every edge of the exact graph, no copy edge from a control ever, and the planted chains, clone
//     pairs and carriers found on the sampled graph in nearly every run at the stated sample budget.
#include "ojx/emulation/copy_programs.hpp"
#include "ojx/emulation/emulated_machine.hpp"
#include "ojx/emulation/register_machine.hpp"
#include "ojx/emulation/synthetic_heap.hpp"
#include "ojx/calling_context_tree.hpp"
#include "ojx/carrier_sites.hpp"
#include "ojx/copy_clone_pairs.hpp"
#include "ojx/copy_estimate.hpp"
#include "ojx/copy_graph.hpp"
#include "ojx/exact_copy_graph_builder.hpp"
#include "ojx/hot_copy_chains.hpp"
#include "ojx/random.hpp"
#include "ojx/sampled_copy_graph.hpp"
#include "ojx/sampled_copy_graph_builder.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <set>
#include <vector>

using namespace ojx;
using namespace ojx::emulation;

namespace {

// The machine's sink: passes samples on to the sampled builder, as the profiler's sample sources will.
struct sample_forwarder {
    sampled_copy_graph_builder* builder = nullptr;
    void on_allocation(address, std::uint64_t, context_id, type_id, const allocation_shape&) {}
    void on_free(address) {}
    void on_move(address, address) {}
    void on_gc_start() {}
    void on_sample(const access_sample& sample) { builder->on_sample(sample); }
    void on_trap(const watchpoint_trap&) {}
};

// The edges a load makes: all but those from allocation nodes.
copy_graph without_allocation_edges(const copy_graph& graph) {
    copy_graph kept;
    for (const auto& [edge, volume] : graph.edges())
        if (edge.from.kind != copy_node_kind::allocation) kept.add(edge, volume.count);
    return kept;
}

struct sampled_run {
    copy_program_truth truth;
    sampled_copy_graph graph;
    sampled_copy_stats stats;
    std::size_t following = 0;
    std::uint64_t accesses = 0;
};

copy_program_config program(std::uint64_t seed, address statics, std::uint32_t min_repetitions) {
    fast_random shape(seed);
    return {.seed = seed,
            .chains = static_cast<std::uint32_t>(1 + shape.below(4)),
            .clones = static_cast<std::uint32_t>(1 + shape.below(2)),
            .carriers = static_cast<std::uint32_t>(shape.below(3)),
            .controls = static_cast<std::uint32_t>(1 + shape.below(2)),
            .references = static_cast<std::uint32_t>(shape.below(2)),
            .min_repetitions = min_repetitions,
            .max_repetitions = 4 * min_repetitions,
            .collect_every = static_cast<std::uint32_t>(seed % 3 == 0 ? 0 : 7 + seed),
            .static_area = statics};
}

sampled_run run_sampled(std::uint64_t program_seed, std::uint64_t sampler_seed, const sampled_copy_options& options,
                        std::uint32_t min_repetitions) {
    synthetic_heap heap(std::size_t{1} << 20, 0x7f0000000000ULL, 4096);
    emulated_sampler sampler({.period = options.period, .randomized = true, .seed = sampler_seed});
    emulated_watchpoints watchpoints(4);
    sampled_copy_graph_builder builder(options);
    sample_forwarder sink{&builder};
    emulated_machine<sample_forwarder> plain(heap, sampler, watchpoints, sink);
    register_machine machine(plain, builder);
    calling_context_tree<> tree(256);
    sampled_run run;
    run.truth = run_copy_program(machine, tree, program(program_seed, heap.statics(), min_repetitions));
    run.graph = builder.graph();
    run.stats = builder.stats();
    run.following = builder.following();
    run.accesses = plain.accesses();
    return run;
}

constexpr context_id site_a = 1, site_b = 2, site_c = 3, code = 9;

struct bench {
    explicit bench(std::uint32_t bound) : builder({.period = 1, .bound = bound}) {}
    synthetic_heap heap{1 << 20, 0x10000, 4096};
    emulated_sampler sampler{{.period = 1}};
    emulated_watchpoints watchpoints{4};
    sampled_copy_graph_builder builder;
    sample_forwarder sink{&builder};
    emulated_machine<sample_forwarder> plain{heap, sampler, watchpoints, sink};
    register_machine<emulated_machine<sample_forwarder>, sampled_copy_graph_builder> machine{plain, builder};
};

} // namespace

TEST_CASE("every access sampled: the sampled graph is the exact graph but for edges from allocation nodes") {
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
        const sampled_run run = run_sampled(seed, seed, {.period = 1, .bound = 8}, 20);
        INFO("seed " << seed);
        REQUIRE(run.graph.estimated() == without_allocation_edges(run.truth.graph));
        REQUIRE(run.stats.unmatched_samples == 0);
        // Each sampled load's every edge lies within 2 events of it in these programs.
        REQUIRE(run.stats.bound_reached_no_edge == 0);
        REQUIRE(run.stats.loads_followed == run.stats.ended + run.stats.bound_reached + run.following);
        REQUIRE(run.stats.string_move_samples > 0);
        for (const auto& [edge, volume] : run.graph.edges()) REQUIRE(volume.samples == volume.weight);
    }
}

TEST_CASE("a sampled load is followed through moves to its stores and uses, and no further than the bound") {
    bench b(4);
    const address a = *b.machine.allocate(64, site_a, 0);
    const address c = *b.machine.allocate(64, site_b, 0);
    const address arr = *b.machine.allocate(64, site_c, 0, synthetic_shape("long[]", 64));
    b.machine.load(0, a + 8, 8, code);  // followed in r0
    b.machine.spill(2, 0);              // to a stack slot (a register, value_flow.hpp)
    b.machine.set(0, 5);                // r0 overwritten; the value lives in the slot
    b.machine.reload(3, 2);
    b.machine.store(3, c + 16, 4, code); // a.8 → b.16, 4 bytes; the 4th event: the bound, a copy seen
    b.machine.store(3, c + 24, 8, code); // past the bound: not seen
    b.machine.load(1, a + 16, 2, code);
    b.machine.compute(2, {1, 1}, 0);    // a.16 → consumer, once
    b.machine.set(1, 0);                // ended: no register holds it
    b.machine.string_move(arr, c + 16, 16, 8, code); // b.16 → c.ELEM and b.24 → c.ELEM at once
    b.machine.load(4, a, 8, code);
    for (int i = 0; i < 4; ++i) b.machine.move(5, 4); // bound reached with nothing seen

    const auto& stats = b.builder.stats();
    CHECK(stats.loads_followed == 3);
    CHECK(stats.string_move_samples == 2);
    CHECK(stats.ended == 1);
    CHECK(stats.bound_reached == 2);
    CHECK(stats.bound_reached_no_edge == 1);
    CHECK(stats.unmatched_samples == 0);
    CHECK(stats.steps == 4 + 2 + 4);
    const copy_node elem = copy_node::field(site_c, copy_node::elements);
    copy_graph expected;
    expected.add({copy_node::field(site_a, 8), copy_node::field(site_b, 16), 4});
    expected.add({copy_node::field(site_a, 16), copy_node::consumer(), 2});
    expected.add({copy_node::field(site_b, 16), elem, 8});
    expected.add({copy_node::field(site_b, 24), elem, 8});
    REQUIRE(b.builder.graph().estimated() == expected);
}

TEST_CASE("sampled graphs merge exactly, at different periods, in any order") {
    const sampled_run one = run_sampled(3, 1, {.period = 8}, 40), two = run_sampled(4, 2, {.period = 32}, 40);
    sampled_copy_graph one_two = one.graph, two_one = two.graph;
    one_two.merge(two.graph);
    two_one.merge(one.graph);
    REQUIRE(one_two == two_one);
    for (const auto& [edge, volume] : one_two.edges()) {
        sampled_volume sum;
        for (const sampled_copy_graph* part : {&one.graph, &two.graph})
            if (const auto it = part->edges().find(edge); it != part->edges().end()) sum += it->second;
        REQUIRE(volume == sum);
    }
    const auto all = [](const copy_edge&) { return true; };
    REQUIRE(one_two.estimate(all, 0.95).bytes ==
            one.graph.estimate(all, 0.95).bytes + two.graph.estimate(all, 0.95).bytes);
}

// Tolerance: the Garwood interval is conservative and the binomial less variable than the Poisson, so 95 %
// intervals cover at ≥ 95 % up to the Wilson–Hilferty quantiles' error; each cell of 4000 draws must cover at
// ≥ 93.5 % (the binomial standard error of a 95 % rate over 4000 draws is 0.34 %).
TEST_CASE("estimator: 95 % intervals of binomially thinned copies cover the truth at their level") {
    fast_random rng(7);
    const auto thinned = [&](std::uint64_t n, std::uint64_t period, sampled_volume& volume) {
        for (std::uint64_t i = 0; i < n; ++i)
            if (rng.below(period) == 0) volume.add(period);
    };
    double lowest = 1, highest = 0;
    for (const std::uint64_t n : {1u, 4u, 20u, 100u, 1000u, 5000u})
        for (const std::uint64_t period : {2u, 16u, 128u})
            for (const bool mixed : {false, true}) {
                std::uint64_t covered = 0;
                constexpr int draws = 4000;
                for (int d = 0; d < draws; ++d) {
                    // Mixed: the first half of the copies sampled at `period`, the second at 4 × `period`.
                    sampled_volume volume{.max_weight = mixed ? 4 * period : period};
                    thinned(mixed ? n / 2 : n, period, volume);
                    if (mixed) thinned(n - n / 2, 4 * period, volume);
                    const copy_estimate e = estimate_copies(volume, 4, 0.95);
                    if (e.bytes_interval.contains(4.0 * static_cast<double>(n))) ++covered;
                }
                const double coverage = static_cast<double>(covered) / draws;
                INFO("n " << n << " period " << period << " mixed " << mixed << " coverage " << coverage);
                CHECK(coverage >= 0.935);
                lowest = std::min(lowest, coverage);
                highest = std::max(highest, coverage);
            }
    std::cout << "estimator: 95% interval coverage per cell from " << lowest << " to " << highest << "\n";
}

namespace {

// The top-k edges by bytes, ties in the exact graph all counted as top: the overlap of the sampled top-k with them.
double top_overlap(const copy_graph& exact, const copy_graph& sampled, std::size_t k) {
    const auto by_bytes = [](const copy_graph& g) {
        std::vector<std::pair<std::uint64_t, copy_edge>> edges;
        for (const auto& [edge, volume] : g.edges()) edges.emplace_back(volume.bytes, edge);
        std::stable_sort(edges.begin(), edges.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
        return edges;
    };
    const auto truth = by_bytes(exact), seen = by_bytes(sampled);
    const std::uint64_t threshold = truth[std::min(k, truth.size()) - 1].first;
    std::set<copy_edge> top;
    for (const auto& [bytes, edge] : truth)
        if (bytes >= threshold) top.insert(edge);
    std::size_t hits = 0;
    for (std::size_t i = 0; i < std::min(k, seen.size()); ++i) hits += top.contains(seen[i].second);
    return static_cast<double>(hits) / static_cast<double>(k);
}

bool chain_found(const std::vector<copy_chain>& chains, const copy_chain& planted) {
    return std::any_of(chains.begin(), chains.end(), [&](const copy_chain& c) { return c.nodes == planted.nodes; });
}

} // namespace

// The sample budget: period 16, every planted pattern repeated 160 to 640 times, so a planted chain's edges
// (one copy per repetition) expect 10 to 40 samples each and clones hundreds. Tolerances: mean top-5 overlap
// ≥ 0.9 and ≥ 0.6 in every run; ≥ 90 % of the 95 % bytes intervals of all edges cover the truth; no control ever
// makes a copy edge; planted chains whole in ≥ 95 % of cases, planted clones as the heaviest pairs in ≥ 95 % of
// runs, planted carriers exactly in ≥ 90 % of runs.
TEST_CASE("generated programs, sampled: top edges, interval coverage, controls and planted structure") {
    constexpr std::uint64_t programs = 24, sampler_seeds = 10, period = 16;
    double overlap_sum = 0, overlap_min = 1;
    std::uint64_t runs = 0, intervals = 0, covered = 0, chains = 0, chains_found = 0, clones_ok = 0, carriers_ok = 0;
    sampled_copy_stats stats;
    std::uint64_t accesses = 0, samples = 0, copies = 0, uses = 0, references = 0;
    for (std::uint64_t p = 1; p <= programs; ++p)
        for (std::uint64_t s = 1; s <= sampler_seeds; ++s) {
            const sampled_run run = run_sampled(p, 1000 * p + s, {.period = period, .bound = 8}, 160);
            INFO("program " << p << " sampler seed " << s);
            ++runs;
            const copy_graph truth = without_allocation_edges(run.truth.graph);
            // What each design can see of the run's edge events: following loads sees copies and uses but not
            // fresh references stored; tying sampled stores to their loads sees copies and fresh references.
            for (const auto& [edge, volume] : run.truth.graph.edges())
                (edge.to == copy_node::consumer()                ? uses
                 : edge.from.kind == copy_node_kind::allocation ? references
                                                                 : copies) += volume.count;
            const copy_graph estimated = run.graph.estimated();
            REQUIRE(run.stats.unmatched_samples == 0);

            const double overlap = top_overlap(truth, estimated, 5);
            overlap_sum += overlap;
            overlap_min = std::min(overlap_min, overlap);

            for (const auto& [edge, volume] : truth.edges()) {
                const auto it = run.graph.edges().find(edge);
                const sampled_volume seen = it != run.graph.edges().end() ? it->second
                                                                          : sampled_volume{.max_weight = period};
                ++intervals;
                covered += estimate_copies(seen, edge.width, 0.95).bytes_interval.contains(
                    static_cast<double>(volume.bytes));
            }
            for (const auto& [edge, volume] : run.graph.edges()) REQUIRE(truth.edges().contains(edge));

            for (const planted_control& control : run.truth.controls)
                for (const auto& [edge, volume] : run.graph.edges()) {
                    if (edge.from.site == control.computed_from) REQUIRE(edge.to == copy_node::consumer());
                    if (edge.to.kind == copy_node_kind::field) REQUIRE(edge.to.site != control.stored_into);
                }

            const auto found = hot_copy_chains(estimated);
            for (const copy_chain& planted : run.truth.chains) {
                ++chains;
                chains_found += chain_found(found, planted);
            }
            const auto pairs = copy_clone_pairs(estimated, 0);
            std::set<std::pair<context_id, context_id>> planted_pairs, top_pairs;
            for (const planted_clone& c : run.truth.clones) planted_pairs.insert({c.from, c.to});
            for (std::size_t i = 0; i < std::min(pairs.size(), planted_pairs.size()); ++i)
                top_pairs.insert({pairs[i].from, pairs[i].to});
            clones_ok += top_pairs == planted_pairs;
            std::set<context_id> carriers;
            for (const carrier_site& c : carrier_sites(estimated)) carriers.insert(c.site);
            carriers_ok += carriers == run.truth.carriers;

            stats.loads_followed += run.stats.loads_followed;
            stats.string_move_samples += run.stats.string_move_samples;
            stats.ended += run.stats.ended;
            stats.bound_reached += run.stats.bound_reached;
            stats.bound_reached_no_edge += run.stats.bound_reached_no_edge;
            stats.steps += run.stats.steps;
            accesses += run.accesses;
            for (const auto& [edge, volume] : run.graph.edges()) samples += volume.samples;
        }
    const double coverage = static_cast<double>(covered) / static_cast<double>(intervals);
    const double chain_rate = static_cast<double>(chains_found) / static_cast<double>(chains);
    const double clone_rate = static_cast<double>(clones_ok) / static_cast<double>(runs);
    const double carrier_rate = static_cast<double>(carriers_ok) / static_cast<double>(runs);
    std::cout << "sampled copy graph, " << runs << " runs, " << accesses << " accesses, " << samples
              << " edge samples: top-5 overlap mean " << overlap_sum / static_cast<double>(runs) << " min "
              << overlap_min << "; 95% bytes intervals cover " << covered << "/" << intervals << " = " << coverage
              << "; planted chains " << chains_found << "/" << chains << ", clone pairs " << clones_ok << "/" << runs
              << ", carriers " << carriers_ok << "/" << runs << "; followed " << stats.loads_followed << " ended "
              << stats.ended << " bound " << stats.bound_reached << " (no edge " << stats.bound_reached_no_edge
              << "), steps " << stats.steps << ", string-move samples " << stats.string_move_samples
              << "; edge events: copies " << copies << ", uses " << uses << ", fresh references " << references
              << "\n";
    CHECK(overlap_sum / static_cast<double>(runs) >= 0.9);
    CHECK(overlap_min >= 0.6);
    CHECK(coverage >= 0.9);
    CHECK(chain_rate >= 0.95);
    CHECK(clone_rate >= 0.95);
    CHECK(carrier_rate >= 0.9);
}
