// Carrier sites, the seed's "not assigned to heap" analysis adapted to a copy graph (docs/copy-profiling.md):
// allocation sites whose objects' contents are copied out of into other locations and never used by a
// computation — objects that only carry data onward (temporaries, parameter objects, intermediate buffers), whose
// allocation and copies a rewrite can often remove.
#pragma once

#include "ojx/copy_graph.hpp"
#include "ojx/types.hpp"

#include <algorithm>
#include <map>
#include <vector>

namespace ojx {

struct carrier_site {
    context_id site = no_context;
    copy_volume copied_out; // from its objects into other locations
    copy_volume copied_in;  // into its objects from other locations

    friend bool operator==(const carrier_site&, const carrier_site&) = default;
};

// Heaviest copied out first.
inline std::vector<carrier_site> carrier_sites(const copy_graph& graph) {
    struct flows {
        copy_volume out, in;
        bool consumed = false;
    };
    std::map<context_id, flows> sites;
    for (const auto& [edge, volume] : graph.edges()) {
        if (edge.from.kind == copy_node_kind::field) {
            flows& site = sites[edge.from.site];
            if (edge.to.kind == copy_node_kind::consumer) site.consumed = true;
            else site.out += volume;
        }
        if (edge.to.kind == copy_node_kind::field) sites[edge.to.site].in += volume;
    }
    std::vector<carrier_site> result;
    for (const auto& [site, f] : sites)
        if (!f.consumed && f.out.count > 0) result.push_back({site, f.out, f.in});
    std::stable_sort(result.begin(), result.end(),
                     [](const auto& a, const auto& b) { return a.copied_out.bytes > b.copied_out.bytes; });
    return result;
}

} // namespace ojx
