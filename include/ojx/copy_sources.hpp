// Where the contents of an allocation context's objects were copied from: of the bytes a profile's copy section
// (copy_profile.hpp) estimates were copied into the context's heap locations (its fields, or its arrays'
// elements), how many came from each source — a location of another site or of the same, a static location or
// untracked memory, or a fresh reference — with intervals, as the copies view estimates edges
// (sampled_copy_graph::estimate). What joins the replica table to the copy graph: for a replicated site, the
// chain to cut begins where its contents come from. Uses by computations (edges into the consumer) are not copies
// and are not counted. Not for signal handlers.
#pragma once

#include "ojx/copy_estimate.hpp"
#include "ojx/copy_graph.hpp"
#include "ojx/copy_profile.hpp"
#include "ojx/profile.hpp"
#include "ojx/sampled_copy_graph.hpp"
#include "ojx/types.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace ojx {

// The section's site that is the allocation context `type` at `frames` (a profile's context: the section names
// its sites as the profile names its contexts), if the section has one.
inline std::optional<context_id> copy_site_of(const copy_profile& copies, const std::string& type,
                                              const std::vector<std::string>& frames) {
    const copy_site wanted{type, frames};
    const auto at = std::lower_bound(copies.sites.begin(), copies.sites.end(), wanted);
    if (at == copies.sites.end() || *at != wanted) return std::nullopt;
    return static_cast<context_id>(at - copies.sites.begin());
}

struct copy_source {
    copy_node from;         // the node the bytes were copied out of
    copy_estimate estimate; // the bytes copied from it into the site, with their interval
    double share = 0;       // of all the bytes copied into the site (estimated), in [0, 1]
};

struct copied_contents {
    copy_estimate copied;             // every byte copied into the site's locations, with its interval
    std::vector<copy_source> sources; // by estimated bytes, heaviest first (ties in node order)
};

// What was copied into the locations of the section's site `site`, by source, intervals at `level`. No sources
// where nothing was.
inline copied_contents copied_into(const copy_profile& copies, context_id site, double level) {
    const auto into_site = [site](const copy_edge& e) {
        return e.to.kind == copy_node_kind::field && e.to.site == site;
    };
    sampled_copy_graph into; // the edges into the site alone: each source's estimate looks at no others
    std::vector<copy_node> from;
    for (const auto& [edge, volume] : copies.graph.edges()) {
        if (!into_site(edge)) continue;
        into.add(edge, volume);
        from.push_back(edge.from);
    }
    std::sort(from.begin(), from.end());
    from.erase(std::unique(from.begin(), from.end()), from.end());
    copied_contents contents;
    contents.copied = into.estimate([](const copy_edge&) { return true; }, level);
    for (const copy_node& node : from) {
        const copy_estimate e = into.estimate([&](const copy_edge& edge) { return edge.from == node; }, level);
        contents.sources.push_back({node, e, contents.copied.bytes > 0 ? e.bytes / contents.copied.bytes : 0});
    }
    std::stable_sort(contents.sources.begin(), contents.sources.end(),
                     [](const copy_source& a, const copy_source& b) { return a.estimate.bytes > b.estimate.bytes; });
    return contents;
}

// What was copied into a profile's context, where the section has its site and something was copied into it.
inline std::optional<copied_contents> copied_into(const copy_profile& copies, const context_profile& context,
                                                  double level) {
    const std::optional<context_id> site = copy_site_of(copies, context.type, context.frames);
    if (!site) return std::nullopt;
    copied_contents contents = copied_into(copies, *site, level);
    if (contents.sources.empty()) return std::nullopt;
    return contents;
}

} // namespace ojx
