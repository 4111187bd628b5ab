// The exact copy graph (docs/copy-profiling.md): the register machine's value flow, the exact builder on small
// programs whose every edge is written out, exact merging, and generated programs with planted copy structure
// (chains through temporaries, clones, carrier sites, controls that compute instead of copy) over many seeds,
// with frees and moving collections: the builder recovers exactly the planted graph, and the client analyses on
// it find exactly the planted chains, clone pairs and carrier sites, and nothing from the controls. A program on
// registers is recorded access by access and replays to its live profile, as any other.
#include "ojx/emulation/access_recorder.hpp"
#include "ojx/emulation/copy_programs.hpp"
#include "ojx/emulation/emulated_machine.hpp"
#include "ojx/emulation/register_machine.hpp"
#include "ojx/emulation/session.hpp"
#include "ojx/emulation/synthetic_heap.hpp"
#include "ojx/calling_context_tree.hpp"
#include "ojx/carrier_sites.hpp"
#include "ojx/copy_clone_pairs.hpp"
#include "ojx/copy_graph.hpp"
#include "ojx/exact_copy_graph_builder.hpp"
#include "ojx/hot_copy_chains.hpp"
#include "ojx/replay/replay_profile.hpp"
#include "ojx/report.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace ojx;
using namespace ojx::emulation;

namespace {

struct counting_sink {
    std::uint64_t samples = 0;
    void on_allocation(address, std::uint64_t, context_id, type_id, const allocation_shape&) {}
    void on_free(address) {}
    void on_move(address, address) {}
    void on_gc_start() {}
    void on_sample(const access_sample&) { ++samples; }
    void on_trap(const watchpoint_trap&) {}
};

// A machine without a profiler, for the small programs.
struct bench {
    synthetic_heap heap{1 << 20, 0x10000, 4096};
    emulated_sampler sampler{{.period = 1}};
    emulated_watchpoints watchpoints{4};
    counting_sink sink;
    emulated_machine<counting_sink> plain{heap, sampler, watchpoints, sink};
    exact_copy_graph_builder builder;
    register_machine<emulated_machine<counting_sink>, exact_copy_graph_builder> machine{plain, builder};
};

constexpr context_id site_a = 1, site_b = 2, site_c = 3, code = 9;
const copy_node consumer = copy_node::consumer();

} // namespace

TEST_CASE("the register machine passes every access on and carries values through registers") {
    bench b;
    const address a = *b.machine.allocate(64, site_a, 0);
    const address c = *b.machine.allocate(64, site_b, 0);
    b.machine.set(0, 0x1122334455667788ULL);
    b.machine.store(0, a + 8, 8, code);
    b.machine.load(1, a + 8, 4, code); // 0x55667788
    b.machine.move(2, 1);
    b.machine.store(2, c + 16, 2, code); // the low two bytes
    REQUIRE(b.heap.load(c + 16, 8) == 0x7788);
    b.machine.string_move(c + 32, a + 8, 8, 4, code);
    REQUIRE(b.heap.load(c + 32, 8) == 0x1122334455667788ULL);
    b.machine.compute(3, {1, 2}, b.machine.value(1) + b.machine.value(2));
    REQUIRE(b.machine.value(3) == 2 * 0x55667788ULL);
    // 1 + 1 + 1 stores and loads, and a load and a store per element of the string move.
    REQUIRE(b.plain.accesses() == 3 + 2 * 2);
    REQUIRE(b.sink.samples == 7);
    REQUIRE_THROWS(b.machine.load(16, a, 8, code)); // no such register
}

TEST_CASE("the exact builder follows values from load to store or computation, and nothing else") {
    bench b;
    const allocation_shape array = synthetic_shape("long[]", 128);
    const address a = *b.machine.allocate(64, site_a, 0);
    const address arr = *b.machine.allocate(128, site_b, 0, array);
    const address statics = b.heap.statics();
    b.machine.load(0, a + 8, 8, code);
    b.machine.move(5, 0);
    b.machine.store(5, arr + 40, 8, code); // a.8 → b.ELEM
    b.machine.store(0, statics, 4, code);  // a.8 → static, 4 bytes wide
    b.machine.load(1, statics, 4, code);
    b.machine.compute(2, {1, 1, 0}, 0); // uses static (once) and a.8
    b.machine.store(2, a + 16, 8, code); // a computed value: no edge
    b.machine.load(3, a + 24, 8, code);
    b.machine.set(3, 1);
    b.machine.store(3, a + 32, 8, code); // overwritten by a constant: no edge
    b.machine.move(4, 2);
    b.machine.store(4, a + 40, 8, code); // a computed value, moved: no edge
    b.machine.string_move(a + 48, arr + 8, 16, 8, code); // two elements into a.48 and a.56
    b.machine.allocate_into(6, 64, site_c, 0);
    b.machine.store(6, arr, 8, code); // a fresh c's reference → b.ELEM

    const copy_node a8 = copy_node::field(site_a, 8), elem = copy_node::field(site_b, copy_node::elements);
    const copy_node st = copy_node::static_location(statics);
    copy_graph expected;
    expected.add({a8, elem, 8});
    expected.add({a8, st, 4});
    expected.add({st, consumer, 4});
    expected.add({a8, consumer, 8});
    expected.add({elem, copy_node::field(site_a, 48), 8});
    expected.add({elem, copy_node::field(site_a, 56), 8});
    expected.add({copy_node::allocation(site_c), elem, 8});
    REQUIRE(b.builder.graph() == expected);
    REQUIRE(b.builder.graph().copied() == copy_volume{5, 36});
    REQUIRE(b.builder.graph().consumed() == copy_volume{2, 12});
    REQUIRE(b.builder.stats() == exact_copy_stats{.loads = 3, .stores_of_copies = 3, .stores_of_new_values = 3,
                                                  .string_moves = 1, .computations = 1});
}

TEST_CASE("the exact builder follows objects through frees and moving collections") {
    bench b;
    const address dead = *b.machine.allocate(64, site_a, 0);
    REQUIRE(b.machine.allocate(64, site_b, 0) == dead + 64);
    REQUIRE(b.machine.free(dead));
    b.machine.load(0, dead + 8, 8, code); // freed memory: a static location now
    REQUIRE(b.machine.collect().size() == 1);
    // b slid down to where the freed a was; a new c lands after it.
    const address c = *b.machine.allocate(64, site_c, 0);
    REQUIRE(c == dead + 64);
    b.machine.load(1, dead + 24, 8, code);
    b.machine.store(1, c + 8, 8, code);
    copy_graph expected;
    expected.add({copy_node::field(site_b, 24), copy_node::field(site_c, 8), 8});
    REQUIRE(b.builder.graph() == expected);
}

TEST_CASE("copy graphs merge exactly: the sum of the parts, in any order") {
    synthetic_heap heap_one(1 << 22, 0x100000, 4096), heap_two(1 << 22, 0x100000, 4096);
    emulated_sampler sampler({.period = 97});
    emulated_watchpoints watchpoints(4);
    counting_sink sink;
    calling_context_tree<> tree(256);
    copy_program_truth truths[2];
    exact_copy_graph_builder builders[2];
    synthetic_heap* heaps[2] = {&heap_one, &heap_two};
    for (int part = 0; part < 2; ++part) {
        emulated_machine<counting_sink> plain(*heaps[part], sampler, watchpoints, sink);
        register_machine machine(plain, builders[part]);
        truths[part] = run_copy_program(machine, tree, {.seed = 40u + static_cast<unsigned>(part),
                                                        .static_area = heaps[part]->statics()});
    }
    copy_graph one_then_two = builders[0].graph(), two_then_one = builders[1].graph();
    one_then_two.merge(builders[1].graph());
    two_then_one.merge(builders[0].graph());
    copy_graph truth = truths[0].graph;
    truth.merge(truths[1].graph);
    REQUIRE(one_then_two == two_then_one);
    REQUIRE(one_then_two == truth);
    copy_volume sum = builders[0].graph().copied();
    sum += builders[1].graph().copied();
    REQUIRE(one_then_two.copied() == sum);
}

namespace {

bool has_pair(const std::vector<site_pair_copies>& pairs, context_id from, context_id to) {
    return std::any_of(pairs.begin(), pairs.end(), [&](const auto& p) { return p.from == from && p.to == to; });
}

void check_planted(const copy_program_truth& truth, const copy_graph& graph) {
    REQUIRE(graph == truth.graph);

    // Every planted chain, whole and with its bytes; planted chains ranked by their bytes.
    const auto chains = hot_copy_chains(graph);
    std::vector<std::size_t> ranks;
    for (const copy_chain& planted : truth.chains) {
        const auto found = std::find(chains.begin(), chains.end(), planted);
        REQUIRE(found != chains.end());
        ranks.push_back(static_cast<std::size_t>(found - chains.begin()));
    }
    for (std::size_t i = 0; i < truth.chains.size(); ++i)
        for (std::size_t j = 0; j < truth.chains.size(); ++j)
            if (truth.chains[i].bytes > truth.chains[j].bytes) REQUIRE(ranks[i] < ranks[j]);
    for (std::size_t i = 1; i < chains.size(); ++i) REQUIRE(chains[i - 1].bytes >= chains[i].bytes);

    // The planted clones are the heaviest pairs, with their exact bytes; a control's sites are no pair at all.
    const auto pairs = copy_clone_pairs(graph, 0);
    REQUIRE(pairs.size() >= truth.clones.size());
    for (std::size_t i = 0; i < truth.clones.size(); ++i) {
        const auto planted = std::find_if(truth.clones.begin(), truth.clones.end(), [&](const planted_clone& c) {
            return c.from == pairs[i].from && c.to == pairs[i].to;
        });
        REQUIRE(planted != truth.clones.end());
        REQUIRE(pairs[i].volume.bytes == planted->bytes);
    }
    for (const planted_control& control : truth.controls) {
        REQUIRE_FALSE(has_pair(pairs, control.computed_from, control.stored_into));
        for (const auto& [edge, v] : graph.edges())
            if (edge.from.site == control.computed_from) REQUIRE(edge.to == consumer);
    }

    // Exactly the planted carriers.
    std::set<context_id> carriers;
    for (const carrier_site& c : carrier_sites(graph)) carriers.insert(c.site);
    REQUIRE(carriers == truth.carriers);
}

} // namespace

TEST_CASE("generated programs: the exact builder recovers the planted copy structure, over many seeds") {
    std::uint64_t edges = 0, collections = 0;
    for (std::uint64_t seed = 1; seed <= 60; ++seed) {
        synthetic_heap heap(std::size_t{1} << 20, 0x7f0000000000ULL, 4096);
        emulated_sampler sampler({.period = 61, .randomized = true, .seed = seed});
        emulated_watchpoints watchpoints(4);
        counting_sink sink;
        emulated_machine<counting_sink> plain(heap, sampler, watchpoints, sink);
        exact_copy_graph_builder builder;
        register_machine machine(plain, builder);
        calling_context_tree<> tree(256);
        fast_random shape(seed);
        const copy_program_config config{.seed = seed,
                                         .chains = static_cast<std::uint32_t>(1 + shape.below(5)),
                                         .clones = static_cast<std::uint32_t>(1 + shape.below(3)),
                                         .carriers = static_cast<std::uint32_t>(shape.below(4)),
                                         .controls = static_cast<std::uint32_t>(1 + shape.below(3)),
                                         .references = static_cast<std::uint32_t>(shape.below(3)),
                                         .collect_every = static_cast<std::uint32_t>(seed % 3 == 0 ? 0 : 7 + seed),
                                         .static_area = heap.statics()};
        const copy_program_truth truth = run_copy_program(machine, tree, config);
        INFO("seed " << seed);
        check_planted(truth, builder.graph());
        edges += truth.graph.edges().size();
        collections += truth.collections;
    }
    // The 1 MiB heaps fill and are collected in the seeds that never collect on a schedule, too.
    CHECK(collections > 60);
    CHECK(edges > 60 * 8);
}

TEST_CASE("a generated program runs under the profiler as any other, and its accesses record and replay") {
    session_config config;
    config.profiler.seed = 5;
    config.sampler = {.period = 31, .randomized = true, .seed = 5};
    config.heap_bytes = std::size_t{4} << 20;
    const report_naming naming{[](std::uint64_t frame) { return "frame " + std::to_string(frame); },
                               [](type_id type) { return "type " + std::to_string(type); }};
    access_recording_session<> recording(config, naming);
    exact_copy_graph_builder builder;
    register_machine machine(recording.machine, builder);
    const copy_program_truth truth =
        run_copy_program(machine, recording.prof.contexts(), {.seed = 5, .collect_every = 50});
    REQUIRE(builder.graph() == truth.graph);
    REQUIRE(recording.machine.accesses() > 1000);
    REQUIRE(recording.prof.stats().samples > recording.machine.accesses() / 31 / 2);

    std::ostringstream live;
    write_json(live, recording.prof.report(), recording.prof.contexts(), naming, recording.facts());
    const auto bytes = recording.trace.finish();
    REQUIRE(recording.trace.writer().events_dropped() == 0);
    const auto replayed = replay::replay_profile(bytes, "copies.ojxt");
    INFO(replayed.error);
    REQUIRE(replayed.error.empty());
    REQUIRE(replayed.accesses == recording.machine.accesses());
    REQUIRE(replayed.json == live.str());
    REQUIRE_FALSE(replayed.copies); // no value flow recorded: no copy section, as before value flow in traces
}
