// DuckTracks' plan (Fitzek, Lengauer, Mössenböck, ICPE'17): split the method's graph into paths, the hot path first,
// and give each path one counter on its least-shared edge, so that most executions increment one counter.
//
// Paths (section 2.1): the hot path starts at the entry and appends the most likely successor of its tail until it
// leaves the method. Side paths branch off at each block with an edge no path has taken yet and append blocks until
// they reach a block of another path (they join it) or leave the method. A path that reaches a block of its own
// closes a loop: the part after that header block becomes a path of its own that branches off and joins at the
// header, and the current path goes on from the header by another successor (or ends there if it has none). Handler
// blocks, which no normal edge reaches, start paths of their own, as the entry does. Every block and edge then
// belongs to exactly one path.
//
// Counters (section 2.2): a path's counter goes on its least-shared edge — shared by one flow for the path itself,
// one more for each path branching off at or after the edge's end block and each path joining at or before its
// start block — ties broken by the lower frequency. Its meaning (the paper's allocations plus branching and joining
// corrections) is the potential difference of counter_plan.hpp: the sites along the path, minus what was counted
// and not yet allocated where it branches off, plus the same where it joins. Those corrections come out of the
// forest that the paths' uncounted edges form, which is why a counter whose meaning is empty is dropped.
//
// Where the paper is silent: a path may join a loop split off from itself when every other successor is taken (the
// paper forbids it; the forest argument does not need it), and exceptions are corrected by the agent at the throw
// (counter_plan.hpp), which the paper leaves for later.
#pragma once

#include "ojx/counting/control_flow_graph.hpp"
#include "ojx/counting/counter_plan.hpp"
#include "ojx/counting/edge_frequencies.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace ojx::counting {

struct control_path {
    // nodes[i] → nodes[i + 1] is edges[i]. A side path's first node is its branching block, owned by another path;
    // a root path's first node is its own first block. The last node is the joining block (another path's, the
    // exit, or the loop header) unless the path ends in a block of its own with no way on.
    std::vector<block_id> nodes;
    std::vector<edge_index> edges;
    bool root = false;  // starts at the entry or a handler
    bool joins = false; // its last node belongs to another path or is the exit
    bool loop = false;  // split off at a loop header: first and last node are that header
    std::size_t counter_edge = 0; // position in `edges` of its least-shared edge, where edges is not empty

    block_id branching() const { return root ? no_block : nodes.front(); }
    block_id joining() const { return joins ? nodes.back() : no_block; }
    // Positions in `nodes` of the blocks this path owns.
    std::size_t first_owned() const { return root ? 0 : 1; }
    std::size_t end_owned() const { return joins ? nodes.size() - 1 : nodes.size(); }
};

struct path_cover {
    std::vector<control_path> paths; // the entry's hot path first
    std::vector<std::uint32_t> block_path; // per block: the path that owns it
    std::vector<std::uint32_t> edge_path;  // per edge: the path it belongs to
};

namespace detail {

class path_builder {
public:
    path_builder(const control_flow_graph& g, const edge_frequencies& f)
        : g_(g), f_(f), cover_{{}, std::vector<std::uint32_t>(g.block_count(), none),
                              std::vector<std::uint32_t>(g.edges().size(), none)} {}

    path_cover build() && {
        root(control_flow_graph::entry());
        branch_all();
        // Handlers, then anything no path reached (dead code), start paths of their own.
        std::vector<block_id> starts;
        for (const auto& b : g_.blocks()) starts.insert(starts.end(), b.handlers.begin(), b.handlers.end());
        for (block_id b = 0; b < g_.block_count(); ++b) starts.push_back(b);
        for (block_id b : starts) {
            if (cover_.block_path[b] != none) continue;
            root(b);
            branch_all();
        }
        place_counters();
        return std::move(cover_);
    }

private:
    static constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();

    void root(block_id b) {
        const auto id = new_path();
        cover_.paths[id].root = true;
        cover_.paths[id].nodes.push_back(b);
        cover_.block_path[b] = id;
        extend(id, b);
    }

    void side(edge_index e) {
        const auto id = new_path();
        auto& p = cover_.paths[id];
        p.nodes.push_back(g_.edge(e).from);
        if (append(id, e)) extend(id, g_.edge(e).to);
    }

    std::uint32_t new_path() {
        cover_.paths.emplace_back();
        parent_of_loop_.push_back(none);
        pending_.push_back(static_cast<std::uint32_t>(cover_.paths.size() - 1));
        return static_cast<std::uint32_t>(cover_.paths.size() - 1);
    }

    // Appends edge e to path id; false when that ends the path (a join, the exit, or a loop split off with nothing
    // left to follow is handled by extend).
    bool append(std::uint32_t id, edge_index e) {
        cover_.edge_path[e] = id;
        const block_id to = g_.edge(e).to;
        cover_.paths[id].edges.push_back(e);
        cover_.paths[id].nodes.push_back(to);
        if (to == g_.exit() || cover_.block_path[to] != none) {
            if (to == g_.exit() || cover_.block_path[to] != id) {
                cover_.paths[id].joins = true;
                return false;
            }
            split_loop(id, to);
            return true; // go on from the header
        }
        cover_.block_path[to] = id;
        return true;
    }

    // Path id came back to its own block `header`: the part after the header becomes a loop path.
    void split_loop(std::uint32_t id, block_id header) {
        auto& p = cover_.paths[id];
        // The header's last occurrence before the closing node (it occurs once among the owned nodes).
        std::size_t at = p.nodes.size() - 1;
        while (at-- > 0)
            if (p.nodes[at] == header) break;
        const auto loop_id = new_path();
        auto& current = cover_.paths[id]; // new_path may have moved the vector
        auto& loop = cover_.paths[loop_id];
        loop.loop = true;
        loop.joins = true;
        loop.nodes.assign(current.nodes.begin() + static_cast<std::ptrdiff_t>(at), current.nodes.end());
        loop.edges.assign(current.edges.begin() + static_cast<std::ptrdiff_t>(at), current.edges.end());
        current.nodes.resize(at + 1);
        current.edges.resize(at);
        for (std::size_t i = 1; i + 1 < loop.nodes.size(); ++i) cover_.block_path[loop.nodes[i]] = loop_id;
        for (edge_index e : loop.edges) cover_.edge_path[e] = loop_id;
        parent_of_loop_[loop_id] = id;
    }

    // Follows the most likely successors from `tail` until the path ends.
    void extend(std::uint32_t id, block_id tail) {
        while (true) {
            const auto next = most_likely(id, tail);
            if (!next) return; // no way on: the path ends at its tail
            if (!append(id, *next)) return;
            tail = cover_.paths[id].nodes.back();
        }
    }

    std::optional<edge_index> most_likely(std::uint32_t id, block_id tail) const {
        std::optional<edge_index> best, fallback;
        for (edge_index e : g_.successors(tail)) {
            if (cover_.edge_path[e] != none) continue;
            const block_id to = g_.edge(e).to;
            const bool into_own_loop = to != g_.exit() && cover_.block_path[to] != none &&
                                       cover_.block_path[to] != id && split_off(cover_.block_path[to], id);
            auto& slot = into_own_loop ? fallback : best;
            if (!slot || f_.edge[e] > f_.edge[*slot]) slot = e;
        }
        return best ? best : fallback;
    }

    bool split_off(std::uint32_t path, std::uint32_t from) const {
        for (std::uint32_t p = parent_of_loop_[path]; p != none; p = parent_of_loop_[p])
            if (p == from) return true;
        return false;
    }

    // Side paths at every branching point, breadth first: each finished path's owned blocks, in order.
    void branch_all() {
        while (next_pending_ < pending_.size()) {
            const auto id = pending_[next_pending_++];
            const auto& p = cover_.paths[id];
            std::vector<block_id> owned(p.nodes.begin() + static_cast<std::ptrdiff_t>(p.first_owned()),
                                        p.nodes.begin() + static_cast<std::ptrdiff_t>(p.end_owned()));
            for (block_id b : owned) {
                if (cover_.block_path[b] != id) continue; // moved to a loop split off later
                std::vector<edge_index> out;
                for (edge_index e : g_.successors(b))
                    if (cover_.edge_path[e] == none) out.push_back(e);
                std::stable_sort(out.begin(), out.end(), [&](edge_index x, edge_index y) {
                    return f_.edge[x] > f_.edge[y];
                });
                for (edge_index e : out)
                    if (cover_.edge_path[e] == none) side(e);
            }
        }
    }

    void place_counters() {
        std::vector<std::uint32_t> branches(g_.block_count() + 1, 0), joins(g_.block_count() + 1, 0);
        for (const auto& p : cover_.paths) {
            if (!p.root) ++branches[p.branching()];
            if (p.joins) ++joins[p.joining()];
        }
        for (auto& p : cover_.paths) {
            if (p.edges.empty()) continue;
            const std::size_t first = p.first_owned(), end = p.end_owned();
            const auto owned = [&](std::size_t i) { return i >= first && i < end; };
            std::size_t best = 0;
            std::uint64_t best_share = std::numeric_limits<std::uint64_t>::max();
            for (std::size_t i = 0; i < p.edges.size(); ++i) {
                std::uint64_t share = 1;
                for (std::size_t j = i + 1; j < p.nodes.size(); ++j)
                    if (owned(j)) share += branches[p.nodes[j]];
                for (std::size_t j = 0; j <= i; ++j)
                    if (owned(j)) share += joins[p.nodes[j]];
                if (share < best_share ||
                    (share == best_share && f_.edge[p.edges[i]] < f_.edge[p.edges[best]])) {
                    best = i;
                    best_share = share;
                }
            }
            p.counter_edge = best;
        }
    }

    const control_flow_graph& g_;
    const edge_frequencies& f_;
    path_cover cover_;
    std::vector<std::uint32_t> parent_of_loop_; // per path: the path a loop was split off from
    std::vector<std::uint32_t> pending_;        // paths whose branching points are still to be followed
    std::size_t next_pending_ = 0;
};

} // namespace detail

inline path_cover hot_paths(const control_flow_graph& g, const edge_frequencies& f) {
    return detail::path_builder(g, f).build();
}

struct hot_path_counters {
    static constexpr std::string_view name = "paths";
    counter_plan plan(const control_flow_graph& g, const edge_frequencies& f) const {
        const auto cover = hot_paths(g, f);
        // The forest: every site step (inside a block), every path's edges but its counter's, then the counters'
        // edges, which join the forest only where they are bridges (their meaning would be empty).
        std::vector<std::size_t> preferred;
        for (std::size_t s = 0; s < g.site_count(); ++s) preferred.push_back(s);
        for (const auto& p : cover.paths)
            for (std::size_t i = 0; i < p.edges.size(); ++i)
                if (i != p.counter_edge) preferred.push_back(g.site_count() + p.edges[i]);
        for (const auto& p : cover.paths)
            if (!p.edges.empty()) preferred.push_back(g.site_count() + p.edges[p.counter_edge]);
        return counter_plan::from_forest(g, preferred);
    }
};

} // namespace ojx::counting
