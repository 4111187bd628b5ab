// Counter plans (include/ojx/counting/): the paper's path shapes on its own figures, each plan's meaning on small
// graphs worked by hand, exceptions corrected at the throw, and graphs the planners refuse.
#include "ojx/counting/chord_plan.hpp"
#include "ojx/counting/control_flow_graph.hpp"
#include "ojx/counting/counter_plan.hpp"
#include "ojx/counting/edge_frequencies.hpp"
#include "ojx/counting/hot_path_plan.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

using namespace ojx::counting;

namespace {

// Runs a fixed path through the graph under a plan: the blocks in order (the exit last for a return), with an
// optional exception at (block index in the path, cut) to a handler or out. Returns counted − allocated per site.
struct walk {
    std::vector<block_id> blocks;
    struct raise {
        std::size_t at = 0;
        std::uint32_t cut = 0;
        block_id to = no_block;
        std::vector<block_id> then{}; // blocks after the handler
    };
    std::optional<raise> exception{};
};

std::vector<std::int64_t> error_of(const control_flow_graph& g, const counter_plan& plan, const walk& w) {
    std::vector<std::int64_t> diff(g.site_count(), 0);
    const auto count = [&](std::size_t link) {
        if (const auto c = plan.counter_on(link))
            for (const auto& a : plan.counters()[*c].adds) diff[a.site] += a.amount;
    };
    const auto run = [&](const std::vector<block_id>& blocks, std::size_t stop, std::uint32_t cut) {
        for (std::size_t i = 0; i < blocks.size(); ++i) {
            if (blocks[i] == g.exit()) return;
            const auto& block = g.block(blocks[i]);
            const std::size_t sites = i == stop ? cut : block.sites.size();
            for (std::size_t j = 0; j < sites; ++j) {
                --diff[block.sites[j]];
                count(block.sites[j]);
            }
            if (i == stop) return;
            if (i + 1 < blocks.size()) {
                const auto next = blocks[i + 1];
                std::optional<edge_index> e;
                for (auto candidate : g.successors(blocks[i]))
                    if (g.edge(candidate).to == next) e = candidate;
                REQUIRE(e);
                count(g.site_count() + *e);
            }
        }
    };
    if (!w.exception) {
        run(w.blocks, w.blocks.size(), 0);
        return diff;
    }
    run(w.blocks, w.exception->at, w.exception->cut);
    for (const auto& a : plan.on_exception(g, w.blocks[w.exception->at], w.exception->cut, w.exception->to))
        diff[a.site] += a.amount;
    if (w.exception->to != no_block) {
        auto rest = w.exception->then;
        rest.insert(rest.begin(), w.exception->to);
        run(rest, rest.size(), 0);
    }
    return diff;
}

bool exact(const control_flow_graph& g, const counter_plan& plan, const walk& w) {
    for (auto d : error_of(g, plan, w))
        if (d != 0) return false;
    return true;
}

// The paper's figure 2, left: A branches to B (hot) or D, both reach E, which returns. Sites in B, C, D and E.
control_flow_graph sequential() {
    cfg_builder b;
    const auto a = b.add_block(), bb = b.add_block({0}), c = b.add_block({1}), d = b.add_block({2}),
               e = b.add_block({3});
    b.add_edge(a, bb, 0.9);
    b.add_edge(a, d, 0.1);
    b.add_edge(bb, c, 0.9);
    b.add_edge(c, e, 0.9);
    b.add_edge(d, e, 0.1);
    b.add_return(e, 1.0);
    return std::move(b).build();
}

// Figure 2, middle: A → B → C → D → C (a loop at header C), C → E returns. Sites in B, C and D.
control_flow_graph looping() {
    cfg_builder b;
    const auto a = b.add_block(), bb = b.add_block({0}), c = b.add_block({1}), d = b.add_block({2}),
               e = b.add_block();
    b.add_edge(a, bb, 1);
    b.add_edge(bb, c, 1);
    b.add_edge(c, d, 5);
    b.add_edge(d, c, 5);
    b.add_edge(c, e, 1);
    b.add_return(e, 1);
    return std::move(b).build();
}

} // namespace

TEST_CASE("the hot path follows the likely successors and side paths join it", "[counting]") {
    const auto g = sequential();
    const auto cover = hot_paths(g, frequencies_of(g));
    REQUIRE(cover.paths.size() == 2);
    const auto& hot = cover.paths[0];
    CHECK(hot.root);
    CHECK(hot.nodes == std::vector<block_id>{0, 1, 2, 4, g.exit()});
    CHECK(hot.joining() == g.exit());
    const auto& side = cover.paths[1];
    CHECK(side.branching() == 0);
    CHECK(side.joining() == 4);
    CHECK(side.nodes == std::vector<block_id>{0, 3, 4});
    // Every block and edge belongs to exactly one path.
    for (auto p : cover.block_path) CHECK(p < cover.paths.size());
    for (auto p : cover.edge_path) CHECK(p < cover.paths.size());
    // The hot path's edges between where the side path branches off and where it joins are shared by one flow;
    // E → exit by both. The counter goes on one of the first.
    CHECK(g.edge(hot.edges[hot.counter_edge]).from != 4);
    // The side path's counter carries D's site, minus what the hot path's counter has counted of B, C and E, plus
    // E's own site; either way exact.
    const auto plan = hot_path_counters{}.plan(g, frequencies_of(g));
    CHECK(plan.counters().size() == 2);
    CHECK(exact(g, plan, walk{{0, 1, 2, 4, g.exit()}}));
    CHECK(exact(g, plan, walk{{0, 3, 4, g.exit()}}));
}

TEST_CASE("a path that comes back to itself splits off a loop at the header", "[counting]") {
    const auto g = looping();
    const auto cover = hot_paths(g, frequencies_of(g));
    REQUIRE(cover.paths.size() == 2);
    const auto& hot = cover.paths[0];
    CHECK(hot.nodes == std::vector<block_id>{0, 1, 2, 4, g.exit()});
    const auto& loop = cover.paths[1];
    CHECK(loop.loop);
    CHECK(loop.branching() == 2);
    CHECK(loop.joining() == 2);
    CHECK(loop.nodes == std::vector<block_id>{2, 3, 2});
    // The loop's counter means one iteration: D's site and the header's (section 2.2.2, figure 4).
    const auto plan = hot_path_counters{}.plan(g, frequencies_of(g));
    bool found = false;
    for (const auto& c : plan.counters())
        if (c.place.where == counter_place::kind::on_edge && cover.edge_path[c.place.index] == 1) {
            found = true;
            CHECK(c.adds == site_vector{{1, 1}, {2, 1}});
        }
    CHECK(found);
    for (int iterations = 0; iterations < 4; ++iterations) {
        walk w{{0, 1, 2}};
        for (int i = 0; i < iterations; ++i) w.blocks.insert(w.blocks.end(), {3, 2});
        w.blocks.insert(w.blocks.end(), {4, g.exit()});
        for (const auto& p : {hot_path_counters{}.plan(g, frequencies_of(g)), chord_counters{}.plan(g, frequencies_of(g)),
                              site_counters{}.plan(g, frequencies_of(g))})
            CHECK(exact(g, p, w));
    }
}

TEST_CASE("one counter per site adds that site alone, right after it", "[counting]") {
    const auto g = sequential();
    const auto plan = site_counters{}.plan(g, frequencies_of(g));
    REQUIRE(plan.counters().size() == g.site_count());
    for (const auto& c : plan.counters()) {
        CHECK(c.place.where == counter_place::kind::after_site);
        CHECK(c.adds == site_vector{{c.place.index, 1}});
    }
    // Nothing to correct at a throw: every allocation is counted where it happens.
    CHECK(plan.on_exception(g, 2, 0, no_block).empty());
    CHECK(plan.expected_increments(g, frequencies_of(g)) == Approx(0.9 + 0.9 + 0.1 + 1.0));
}

TEST_CASE("straight-line sites share one counter, and the chords sit on the coldest links", "[counting]") {
    cfg_builder b;
    const auto a = b.add_block({0, 1}), c = b.add_block({2, 3, 4});
    b.add_edge(a, c, 1);
    b.add_return(c, 1);
    const auto g = std::move(b).build();
    const auto chords = chord_counters{}.plan(g, frequencies_of(g));
    // One execution path, five sites: everything the method allocates is one counter's meaning.
    REQUIRE(chords.counters().size() == 1);
    CHECK(chords.counters()[0].adds == site_vector{{0, 1}, {1, 1}, {2, 1}, {3, 1}, {4, 1}});
    CHECK(chords.expected_increments(g, frequencies_of(g)) == Approx(1.0));
    const auto paths = hot_path_counters{}.plan(g, frequencies_of(g));
    REQUIRE(paths.counters().size() == 1);
    CHECK(site_counters{}.plan(g, frequencies_of(g)).expected_increments(g, frequencies_of(g)) == Approx(5.0));
}

TEST_CASE("an exception between a block's sites is corrected at the throw, for every plan", "[counting]") {
    // A try region: block 1 (three sites) may throw to handler 3, which goes on to 2; 2 returns.
    cfg_builder b;
    const auto a = b.add_block({0}), t = b.add_block({1, 2, 3}), j = b.add_block({4}), h = b.add_block({5});
    b.add_edge(a, t, 1);
    b.add_edge(t, j, 1);
    b.add_edge(h, j, 0);
    b.add_return(j, 1);
    b.add_handler(t, h);
    const auto g = std::move(b).build();
    for (const auto& plan : {site_counters{}.plan(g, frequencies_of(g)), hot_path_counters{}.plan(g, frequencies_of(g)),
                             chord_counters{}.plan(g, frequencies_of(g))}) {
        CHECK(exact(g, plan, walk{{a, t, j, g.exit()}}));
        for (std::uint32_t cut = 0; cut <= 3; ++cut) {
            CAPTURE(cut);
            CHECK(exact(g, plan, walk{{a, t}, walk::raise{1, cut, h, {j, g.exit()}}}));
            CHECK(exact(g, plan, walk{{a, t}, walk::raise{1, cut, no_block, {}}}));
        }
        CHECK(exact(g, plan, walk{{a, t, j}, walk::raise{2, 1, no_block, {}}}));
    }
    // With the flow through the try region counted once, the handler's correction is not empty: the plan counted
    // the region's sites before they allocated, or after.
    const auto chords = chord_counters{}.plan(g, frequencies_of(g));
    CHECK(chords.expected_increments(g, frequencies_of(g)) == Approx(1.0));
    CHECK_FALSE(chords.on_exception(g, t, 1, h).empty());
}

TEST_CASE("measured frequencies move the hot path", "[counting]") {
    auto g = sequential();
    CHECK(hot_paths(g, frequencies_of(g)).paths[0].nodes[1] == 1);
    g.set_frequency(0, 0.1);
    g.set_frequency(1, 0.9);
    g.set_frequency(2, 0.1);
    g.set_frequency(3, 0.1);
    g.set_frequency(4, 0.9);
    CHECK(hot_paths(g, frequencies_of(g)).paths[0].nodes[1] == 3);
}

TEST_CASE("static estimates repeat loops and split branches", "[counting]") {
    auto g = looping();
    for (edge_index e = 0; e < g.edges().size(); ++e) g.set_frequency(e, -1);
    const auto f = frequencies_of(g);
    CHECK(f.block[0] == Approx(1.0));
    CHECK(f.block[g.exit()] == Approx(1.0).epsilon(1e-4));
    // The header's back edge is taken 88 % of the time: 1 / 0.12 visits.
    CHECK(f.block[2] == Approx(1.0 / 0.12).epsilon(1e-4));
    CHECK(f.block[3] == Approx(0.88 / 0.12).epsilon(1e-4));
}

TEST_CASE("graphs the planners cannot take are named", "[counting]") {
    CHECK(control_flow_graph({basic_block{{0}, {}}, basic_block{{1}, {}}}, {}).problem() == std::nullopt);
    CHECK(control_flow_graph({basic_block{{0}, {}}, basic_block{{0}, {}}}, {}).problem() ==
          "site numbers are not 0 … n − 1, each once");
    CHECK(control_flow_graph({basic_block{{1}, {}}}, {}).problem() == "site numbers are not 0 … n − 1, each once");
    CHECK(control_flow_graph({basic_block{{}, {}}}, {flow_edge{0, 3, -1}}).problem() ==
          "edge 0 enters a block that does not exist");
    CHECK(control_flow_graph({basic_block{{}, {4}}}, {}).problem() == "block 0 names a handler that does not exist");
    CHECK(control_flow_graph({}, {}).problem() == "the graph has no block");
}
