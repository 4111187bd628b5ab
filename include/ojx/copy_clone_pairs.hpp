// The clone detector of "Go with the Flow" on a copy graph (docs/copy-profiling.md): pairs of allocation sites
// between whose objects a large volume of data is copied — a copy constructor, `clone`, `Arrays.copyOf`, a memcpy
// into a fresh buffer. Directed (values flow from `from`'s objects into `to`'s), and between the sites themselves:
// the seed also counted copies between the objects reachable from the pair, which needs the heap's references.
#pragma once

#include "ojx/copy_graph.hpp"
#include "ojx/types.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace ojx {

struct site_pair_copies {
    context_id from = no_context;
    context_id to = no_context;
    copy_volume volume;
    double share = 0; // of all bytes copied from field to field

    friend bool operator==(const site_pair_copies&, const site_pair_copies&) = default;
};

// Pairs that carry at least `min_share` of the bytes copied between fields, heaviest first.
inline std::vector<site_pair_copies> copy_clone_pairs(const copy_graph& graph, double min_share = 0.01) {
    std::map<std::pair<context_id, context_id>, copy_volume> pairs;
    std::uint64_t total = 0;
    for (const auto& [edge, volume] : graph.edges()) {
        if (edge.from.kind != copy_node_kind::field || edge.to.kind != copy_node_kind::field) continue;
        pairs[{edge.from.site, edge.to.site}] += volume;
        total += volume.bytes;
    }
    std::vector<site_pair_copies> result;
    if (total == 0) return result;
    for (const auto& [sites, volume] : pairs) {
        const double share = static_cast<double>(volume.bytes) / static_cast<double>(total);
        if (share >= min_share) result.push_back({sites.first, sites.second, volume, share});
    }
    std::stable_sort(result.begin(), result.end(),
                     [](const auto& a, const auto& b) { return a.volume.bytes > b.volume.bytes; });
    return result;
}

} // namespace ojx
