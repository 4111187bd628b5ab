// Counters on the chords of a maximum-weight spanning tree (Knuth and Stevenson; Ball and Larus, "Optimally profiling
// and tracing programs", TOPLAS 1994): the most frequent links form the tree and carry no counter, so the counters sit
// on the links taken least. Ball and Larus recover every edge's count from the chords' by flow conservation; here
// the same conservation is folded into each chord's meaning (counter_plan.hpp), so only chords whose cycle through
// the tree holds an allocation keep a counter, and the sites' counts are a sum.
//
// Ties go to the links that would be dearest to count: a critical edge (its block has several successors and its
// target several predecessors) needs a block of its own to hold a counter, so it joins the tree first; then site
// steps, so that counters sit on block boundaries rather than between a block's allocations.
#pragma once

#include "ojx/counting/control_flow_graph.hpp"
#include "ojx/counting/counter_plan.hpp"
#include "ojx/counting/edge_frequencies.hpp"

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <string_view>
#include <vector>

namespace ojx::counting {

// True where a counter on edge e would need the edge split: several ways out of its block and several ways into
// its target.
inline bool critical_edge(const control_flow_graph& g, edge_index e) {
    const auto& edge = g.edge(e);
    return g.successors(edge.from).size() > 1 && g.predecessors(edge.to).size() > 1;
}

struct chord_counters {
    static constexpr std::string_view name = "edges";
    counter_plan plan(const control_flow_graph& g, const edge_frequencies& f) const {
        const std::size_t sites = g.site_count();
        const auto weight = [&](std::size_t link) {
            return link < sites ? f.block.at(g.block_of(static_cast<site_id>(link))) : f.edge.at(link - sites);
        };
        const auto rank = [&](std::size_t link) {
            if (link < sites) return 1;
            return critical_edge(g, static_cast<edge_index>(link - sites)) ? 0 : 2;
        };
        std::vector<std::size_t> preferred(link_count(g));
        std::iota(preferred.begin(), preferred.end(), std::size_t{0});
        std::stable_sort(preferred.begin(), preferred.end(), [&](std::size_t x, std::size_t y) {
            const double wx = weight(x), wy = weight(y);
            if (wx != wy) return wx > wy;
            return rank(x) < rank(y);
        });
        return counter_plan::from_forest(g, preferred);
    }
};

} // namespace ojx::counting
