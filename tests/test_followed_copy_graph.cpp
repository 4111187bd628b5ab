// Copy profiling where the backend follows sampled loads itself (followed_copy_graph.hpp): the host finds each
// followed value's objects once (analysis_host::on_followed_value), the sink turns its uses into edges between
// whole objects' sites, and the fixed edge table (copy_edge_table.hpp) keeps what a sampled_copy_graph would, up
// to its capacity.
#include "ojx/analysis_host.hpp"
#include "ojx/copy_edge_table.hpp"
#include "ojx/emulation/session.hpp"
#include "ojx/followed_copy_graph.hpp"
#include "ojx/random.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <map>
#include <vector>

using namespace ojx;
using namespace ojx::emulation;

namespace {

copy_edge random_edge(fast_random& rng, std::uint64_t sites) {
    const auto node = [&](bool consumer_allowed) {
        switch (rng.below(consumer_allowed ? 3 : 2)) {
        case 0: return copy_node::field(static_cast<context_id>(rng.below(sites)), rng.below(4) * 8);
        case 1: return copy_node::static_location(rng.below(3) * 4096);
        default: return copy_node::consumer();
        }
    };
    return copy_edge{node(false), node(true), static_cast<std::uint8_t>(1u << rng.below(4))};
}

} // namespace

TEST_CASE("the edge table keeps what a sampled copy graph keeps, and counts what finds it full") {
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
        fast_random rng(seed);
        copy_edge_table table(64);
        sampled_copy_graph expected;
        std::uint64_t dropped = 0;
        for (int i = 0; i < 2000; ++i) {
            const copy_edge edge = random_edge(rng, 4 + seed);
            const std::uint64_t period = 1 + rng.below(16);
            const bool known = expected.edges().contains(edge);
            if (known || expected.edges().size() < 64) {
                expected.add(edge, period);
                CHECK(table.add(edge, period));
            } else {
                CHECK_FALSE(table.add(edge, period));
                ++dropped;
            }
        }
        CHECK(table.size() == expected.edges().size());
        CHECK(table.dropped() == dropped);
        CHECK(table.graph() == expected);
    }
}

// A profiler on an emulated heap (objects of 64 bytes and more tracked) and the copy sink on its host.
struct followed_copies_host {
    synthetic_heap heap{std::size_t{1} << 20};
    emulated_watchpoints watchpoints{0};
    profiler<policies<>> prof{profiler_config{.min_object_size = 64, .context_tree_capacity = 64}, watchpoints, heap};
    followed_copy_graph copies;
    analysis_host<profiler<policies<>>, followed_copy_graph> host{prof, copies};

    context_id site(address leaf) { return prof.contexts().child(calling_context_tree<context_metrics>::root, leaf); }
};

TEST_CASE("followed values become edges between the sites of whole objects, found once by the host") {
    followed_copies_host h;
    synthetic_heap& heap = h.heap;
    followed_copy_graph& copies = h.copies;
    auto& host = h.host;
    const context_id source_site = h.site(0x100), copy_site = h.site(0x200);
    const address source = *heap.allocate(256);
    const address copy = *heap.allocate(256);
    const address small = *heap.allocate(16); // below the threshold: untracked
    REQUIRE(host.on_allocation(source, 256, source_site, 0));
    REQUIRE(host.on_allocation(copy, 256, copy_site, 0));
    REQUIRE_FALSE(host.on_allocation(small, 16, source_site, 0));

    const auto followed = [](address from, std::initializer_list<followed_value::use> uses, follow_end end,
                             context_id code = no_context) {
        followed_value value;
        value.load = access_sample{
            .ip = 0x1000, .effective_address = from, .width = 8, .kind = access_kind::load, .access_context = code};
        for (const followed_value::use& use : uses) REQUIRE(value.add(use));
        value.steps = 3;
        value.end = end;
        return value;
    };
    // Not prepared: nothing kept.
    host.on_followed_value(followed(source + 8, {{value_use::copied, 8, copy + 8}}, follow_end::released));
    CHECK(copies.graph().empty());

    copies.prepare(16);
    // A copy into another tracked object, at whatever offset: one edge between the two sites' whole objects.
    host.on_followed_value(followed(source + 8, {{value_use::copied, 8, copy + 8}}, follow_end::released, 41));
    host.on_followed_value(followed(source + 64, {{value_use::copied, 8, copy + 200}}, follow_end::released, 41));
    // Into memory no tracked object holds, then consumed; the bound reached.
    host.on_followed_value(followed(source, {{value_use::copied, 4, small}, {value_use::consumed, 8, 0}},
                                    follow_end::bound));
    // Loaded from memory no tracked object holds (freed since the sample, say): not an edge.
    host.on_followed_value(followed(small, {{value_use::copied, 8, copy}}, follow_end::released));
    // Nothing used: the bound reached with no edge.
    host.on_followed_value(followed(copy, {}, follow_end::bound));
    // A string move's element: its copy at once, nothing followed, so no following ended.
    followed_value moved = followed(source + 16, {{value_use::copied, 8, copy + 16}}, follow_end::released);
    moved.string_move = true;
    moved.steps = 0;
    host.on_followed_value(moved);

    const copy_node from = copy_node::field(source_site, copy_node::elements);
    const sampled_copy_graph graph = copies.graph();
    const auto& edges = graph.edges();
    REQUIRE(edges.size() == 3);
    CHECK(edges.at({from, copy_node::field(copy_site, copy_node::elements), 8}).samples == 3);
    CHECK(edges.at({from, followed_copy_graph::untracked_memory, 4}).samples == 1);
    CHECK(edges.at({from, copy_node::consumer(), 8}).samples == 1);
    // The code that copied: each sample at its load's access context, the string move's (none) as other.
    const copy_code code = copies.code();
    const edge_code& copied = code.of({from, copy_node::field(copy_site, copy_node::elements), 8});
    CHECK(copied.contexts == std::map<context_id, std::uint64_t>{{41, 2}});
    CHECK(copied.other == 1);
    CHECK(code.of({from, copy_node::consumer(), 8}).other == 1);
    const sampled_copy_stats& stats = copies.stats();
    CHECK(stats.loads_followed == 4);
    CHECK(stats.string_move_samples == 1);
    CHECK(stats.ended == 2);
    CHECK(stats.bound_reached == 2);
    CHECK(stats.bound_reached_no_edge == 1);
    CHECK(stats.edges == 5);
    CHECK(stats.steps == 12);
    CHECK(copies.origins_gone() == 1);
}

TEST_CASE("objects laid out by their type have a node per offset; other objects one node for all their bytes") {
    followed_copies_host h;
    synthetic_heap& heap = h.heap;
    followed_copy_graph& copies = h.copies;
    auto& host = h.host;
    copies.prepare(16);
    const context_id record_site = h.site(0x100), clone_site = h.site(0x200), block_site = h.site(0x300);
    const address record = *heap.allocate(128);
    const address clone = *heap.allocate(128);
    const address block = *heap.allocate(128);
    const allocation_shape instance{.header_bytes = 12, .typed_layout = true};
    REQUIRE(host.on_allocation(record, 128, record_site, 0, instance)->typed_layout);
    REQUIRE(host.on_allocation(clone, 128, clone_site, 0, instance)->typed_layout);
    REQUIRE_FALSE(host.on_allocation(block, 128, block_site, 0)->typed_layout);

    const auto copy = [&](address from, address to) {
        followed_value value;
        value.load = access_sample{.ip = 0x1000, .effective_address = from, .width = 8, .kind = access_kind::load};
        REQUIRE(value.add({value_use::copied, 8, to}));
        host.on_followed_value(value);
    };
    copy(record + 8, clone + 8);   // a copy constructor: each field into the same field
    copy(record + 8, clone + 8);
    copy(record + 16, clone + 16);
    copy(record + 24, block + 40); // into a native block: one node for it
    copy(block + 96, clone + 0);   // out of one

    const sampled_copy_graph graph = copies.graph();
    const auto& edges = graph.edges();
    REQUIRE(edges.size() == 4);
    CHECK(edges.at({copy_node::field(record_site, 8), copy_node::field(clone_site, 8), 8}).samples == 2);
    CHECK(edges.at({copy_node::field(record_site, 16), copy_node::field(clone_site, 16), 8}).samples == 1);
    CHECK(edges.at({copy_node::field(record_site, 24), copy_node::field(block_site, copy_node::elements), 8})
              .samples == 1);
    CHECK(edges.at({copy_node::field(block_site, copy_node::elements), copy_node::field(clone_site, 0), 8})
              .samples == 1);
}

TEST_CASE("a followed value keeps as many uses as it has room for, and says when it had more") {
    followed_value value;
    for (std::size_t i = 0; i < followed_value::max_uses; ++i) CHECK(value.add({value_use::consumed, 8, 0}));
    CHECK(value.end == follow_end::released);
    CHECK_FALSE(value.add({value_use::copied, 8, 0x1000}));
    CHECK(value.use_count == followed_value::max_uses);
    CHECK(value.end == follow_end::uses_full);
}

TEST_CASE("a value follower applies the copy model's rules one event at a time") {
    std::vector<std::pair<value_use, address>> uses;
    const auto note = [&](value_use use, address to, std::uint8_t) { uses.emplace_back(use, to); };
    value_follower f(3, 8);
    f.apply(value_flow_event::register_move(5, 3), note); // 3 and 5 hold it
    f.apply(value_flow_event::store(5, 0x2000, 8), note);  // a copy
    const value_register both[] = {3, 5, 3};
    f.apply(value_flow_event::compute(both, std::optional<value_register>(3)), note); // two registers used: two uses; 3 overwritten
    CHECK(f.holds(5));
    CHECK_FALSE(f.holds(3));
    f.apply(value_flow_event::constant(5), note);
    CHECK_FALSE(f.holding());
    REQUIRE(uses.size() == 3);
    CHECK(uses[0] == std::pair{value_use::copied, address{0x2000}});
    CHECK(uses[1].first == value_use::consumed);
    CHECK(uses[2].first == value_use::consumed);
    CHECK_FALSE(value_follower{}.holding());
}
