// How often each edge and block of a method runs per execution of the method: measured (the graph's own
// frequencies, from counts of an earlier instrumentation) or, before anything was measured, estimated by static
// heuristics. Planners choose hot paths and spanning trees by these weights; a plan's expected cost is its counters'
// weights summed.
//
// The estimate: where a block can stay in its loop or leave it, it stays 88 % of the time (about eight iterations),
// other branches split evenly; block frequencies are the expected visits of that Markov chain from the entry
// (frequencies_from_probabilities, which also gives a synthetic method's true frequencies from its branch
// probabilities). Exceptional transfers are rare and left out: a handler's frequency is zero unless measured.
#pragma once

#include "ojx/counting/control_flow_graph.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <utility>
#include <vector>

namespace ojx::counting {

struct edge_frequencies {
    std::vector<double> edge;  // per flow edge
    std::vector<double> block; // per block, and the exit last: arrivals per execution (the entry counts its own)
};

namespace detail {

// One depth-first walk from the entry: the edges that close a cycle (loop back edges in a reducible graph; in an
// irreducible one, some edge of each cycle), and every block and the exit in reverse postorder, those the entry
// does not reach after.
struct depth_first {
    std::vector<bool> back;
    std::vector<block_id> reverse_postorder;
};

inline depth_first walk_depth_first(const control_flow_graph& g) {
    depth_first walk{std::vector<bool>(g.edges().size(), false), {}};
    enum : unsigned char { unseen, open, done };
    std::vector<unsigned char> state(g.block_count() + 1, unseen);
    std::vector<std::pair<block_id, std::size_t>> stack{{control_flow_graph::entry(), 0}};
    state[control_flow_graph::entry()] = open;
    while (!stack.empty()) {
        auto& [b, next] = stack.back();
        const auto& out = g.successors(b);
        if (next == out.size()) {
            state[b] = done;
            walk.reverse_postorder.push_back(b);
            stack.pop_back();
            continue;
        }
        const edge_index e = out[next++];
        const block_id to = g.edge(e).to;
        if (state[to] == open) walk.back[e] = true;
        else if (state[to] == unseen) {
            state[to] = open;
            stack.emplace_back(to, 0);
        }
    }
    std::reverse(walk.reverse_postorder.begin(), walk.reverse_postorder.end());
    for (block_id b = 0; b <= g.block_count(); ++b)
        if (state[b] == unseen) walk.reverse_postorder.push_back(b);
    return walk;
}

// Per edge: true where it leaves a loop its block is in. A loop is a back edge's header and every block that
// reaches the back edge without passing the header (its natural loop where the graph is reducible).
inline std::vector<bool> loop_exits(const control_flow_graph& g) {
    const auto back = walk_depth_first(g).back;
    const std::size_t n = g.block_count() + 1;
    std::vector<std::vector<bool>> loops;
    std::vector<std::size_t> loop_of_header(n, loops.max_size());
    for (edge_index e = 0; e < g.edges().size(); ++e) {
        if (!back[e]) continue;
        const block_id header = g.edge(e).to;
        if (loop_of_header[header] == loops.max_size()) {
            loop_of_header[header] = loops.size();
            loops.emplace_back(n, false);
            loops.back()[header] = true;
        }
        auto& body = loops[loop_of_header[header]];
        std::vector<block_id> stack{g.edge(e).from};
        while (!stack.empty()) {
            const block_id b = stack.back();
            stack.pop_back();
            if (body[b]) continue;
            body[b] = true;
            for (edge_index in : g.predecessors(b)) stack.push_back(g.edge(in).from);
        }
    }
    std::vector<bool> exits(g.edges().size(), false);
    for (edge_index e = 0; e < g.edges().size(); ++e)
        for (const auto& body : loops)
            if (body[g.edge(e).from] && !body[g.edge(e).to]) exits[e] = true;
    return exits;
}

inline void fill_block_frequencies(const control_flow_graph& g, edge_frequencies& f) {
    f.block.assign(g.block_count() + 1, 0.0);
    f.block[control_flow_graph::entry()] = 1.0;
    for (std::size_t e = 0; e < g.edges().size(); ++e) f.block[g.edge(static_cast<edge_index>(e)).to] += f.edge[e];
}

} // namespace detail

// Frequencies from the probability of taking each edge when its block ends: the expected visits of that Markov
// chain from the entry, v = entry + Pᵀ v, by Gauss–Seidel sweeps until nothing moves by more than 10⁻¹⁰ (capped,
// so that a loop with no way out stays finite).
inline edge_frequencies frequencies_from_probabilities(const control_flow_graph& g,
                                                       const std::vector<double>& probability) {
    constexpr double cap = 1e9;
    // A block with no way to the exit loops until an exception leaves it; say once in a hundred blocks, so that
    // such loops have finite visits.
    std::vector<bool> reaches_exit(g.block_count() + 1, false);
    std::vector<block_id> stack{g.exit()};
    reaches_exit[g.exit()] = true;
    while (!stack.empty()) {
        const block_id b = stack.back();
        stack.pop_back();
        for (edge_index e : g.predecessors(b))
            if (!reaches_exit[g.edge(e).from]) {
                reaches_exit[g.edge(e).from] = true;
                stack.push_back(g.edge(e).from);
            }
    }
    const auto taken = [&](edge_index e) {
        return probability.at(e) * (reaches_exit[g.edge(e).from] ? 1.0 : 0.99);
    };
    // Sweeping in reverse postorder carries a value through a loop-free stretch in one sweep.
    const auto order = detail::walk_depth_first(g).reverse_postorder;
    std::vector<double> visits(g.block_count() + 1, 0.0);
    for (int sweep = 0; sweep < 100000; ++sweep) {
        double moved = 0;
        for (block_id b : order) {
            double v = b == control_flow_graph::entry() ? 1.0 : 0.0;
            for (edge_index e : g.predecessors(b)) v += taken(e) * visits[g.edge(e).from];
            v = std::min(v, cap);
            moved = std::max(moved, std::abs(v - visits[b]) / std::max(1.0, v));
            visits[b] = v;
        }
        if (moved < 1e-10) break;
    }
    edge_frequencies f;
    f.edge.resize(g.edges().size());
    for (std::size_t e = 0; e < g.edges().size(); ++e)
        f.edge[e] = taken(static_cast<edge_index>(e)) * visits[g.edge(static_cast<edge_index>(e)).from];
    detail::fill_block_frequencies(g, f);
    return f;
}

inline edge_frequencies estimate_frequencies(const control_flow_graph& g) {
    constexpr double loop_taken = 0.88;
    const auto exits = detail::loop_exits(g);
    std::vector<double> probability(g.edges().size(), 0.0);
    for (block_id b = 0; b < g.block_count(); ++b) {
        const auto& out = g.successors(b);
        const auto leaving = static_cast<std::size_t>(std::count_if(out.begin(), out.end(), [&](edge_index e) {
            return exits[e];
        }));
        const std::size_t staying = out.size() - leaving;
        for (edge_index e : out) {
            if (leaving == 0 || staying == 0) probability[e] = 1.0 / static_cast<double>(out.size());
            else
                probability[e] = (exits[e] ? 1 - loop_taken : loop_taken) /
                                 static_cast<double>(exits[e] ? leaving : staying);
        }
    }
    return frequencies_from_probabilities(g, probability);
}

// The graph's measured frequencies where every edge has one, the estimate otherwise.
inline edge_frequencies frequencies_of(const control_flow_graph& g) {
    if (!g.has_frequencies()) return estimate_frequencies(g);
    edge_frequencies f;
    for (const auto& e : g.edges()) f.edge.push_back(e.frequency);
    detail::fill_block_frequencies(g, f);
    return f;
}

} // namespace ojx::counting
