// The copy section of a profile (docs/profile-format.md, "copies"): a run's sampled copy graph
// (sampled_copy_graph.hpp) with its allocation contexts named, the sampled copy graph builder's counters, and how
// the samples were taken. The section names its own contexts (`sites`; a node's `site` indexes them) rather than
// pointing into the profile's contexts: a copy graph's nodes are the contexts of every allocation, where the
// replica profile lists only the tracked ones (at least the size threshold, within the context table).
//
// Invariants: `sites` is sorted and holds no site twice, and every field or allocation node's site indexes it;
// the section holds only sums and maxima, so sections of threads, processes and hosts merge exactly (merge),
// whatever their sampling periods, in any order and grouping.
#pragma once

#include "ojx/copy_graph.hpp"
#include "ojx/sampled_copy_graph.hpp"
#include "ojx/sampled_copy_graph_builder.hpp"
#include "ojx/types.hpp"

#include <algorithm>
#include <compare>
#include <cstdint>
#include <iterator>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ojx {

// An allocation context as the section names it: the type first allocated there and the frames, leaf first.
struct copy_site {
    std::string type;
    std::vector<std::string> frames;

    friend auto operator<=>(const copy_site&, const copy_site&) = default;
};

// Whether a node names an allocation context: field and allocation nodes do (their `site`).
constexpr bool names_site(const copy_node& node) noexcept {
    return node.kind == copy_node_kind::field || node.kind == copy_node_kind::allocation;
}

// The builder's counters as the section names them, in the order it writes them.
struct copy_counter {
    std::string_view name;
    std::uint64_t sampled_copy_stats::*value;
};

inline constexpr copy_counter copy_counters[] = {
    {"loads_followed", &sampled_copy_stats::loads_followed},
    {"string_move_samples", &sampled_copy_stats::string_move_samples},
    {"ended", &sampled_copy_stats::ended},
    {"bound_reached", &sampled_copy_stats::bound_reached},
    {"bound_reached_no_edge", &sampled_copy_stats::bound_reached_no_edge},
    {"steps", &sampled_copy_stats::steps},
    {"unmatched_samples", &sampled_copy_stats::unmatched_samples},
    {"edge_samples", &sampled_copy_stats::edges},
};

struct copy_profile {
    std::vector<std::string> sampling; // how the samples were taken and followed: every distinct value, sorted
    std::vector<copy_site> sites;
    sampled_copy_graph graph; // field and allocation nodes' `site`: an index into `sites`
    sampled_copy_stats counters;

    // Adds `other`: sites by name, edges with equal (from, to, width) by their sums, counters summed.
    void merge(const copy_profile& other) {
        std::vector<copy_site> all = sites;
        all.insert(all.end(), other.sites.begin(), other.sites.end());
        std::sort(all.begin(), all.end());
        all.erase(std::unique(all.begin(), all.end()), all.end());
        sampled_copy_graph renamed;
        const copy_profile& self = *this;
        for (const copy_profile* part : {&self, &other}) {
            std::vector<context_id> index;
            for (const copy_site& s : part->sites)
                index.push_back(static_cast<context_id>(std::lower_bound(all.begin(), all.end(), s) - all.begin()));
            const auto rename = [&](copy_node node) {
                if (names_site(node)) node.site = index.at(node.site);
                return node;
            };
            for (const auto& [edge, volume] : part->graph.edges())
                renamed.add({rename(edge.from), rename(edge.to), edge.width}, volume);
        }
        std::vector<std::string> notes = sampling;
        notes.insert(notes.end(), other.sampling.begin(), other.sampling.end());
        std::sort(notes.begin(), notes.end());
        notes.erase(std::unique(notes.begin(), notes.end()), notes.end());
        sampling = std::move(notes);
        sites = std::move(all);
        graph = std::move(renamed);
        counters += other.counters;
    }

    friend bool operator==(const copy_profile&, const copy_profile&) = default;
};

// The section of a run's sampled graph, whose nodes name contexts by id: `name_site(context_id)` names each.
// Contexts named alike become one site.
template <class NameSite>
copy_profile copy_profile_of(const sampled_copy_graph& graph, const sampled_copy_stats& counters, std::string sampling,
                             NameSite name_site) {
    copy_profile named;
    named.sampling = {std::move(sampling)};
    named.counters = counters;
    std::map<context_id, context_id> index;
    const auto site = [&](copy_node node) {
        if (!names_site(node)) return node;
        const auto [at, fresh] = index.try_emplace(node.site, static_cast<context_id>(named.sites.size()));
        if (fresh) named.sites.push_back(name_site(node.site));
        node.site = at->second;
        return node;
    };
    for (const auto& [edge, volume] : graph.edges())
        named.graph.add({site(edge.from), site(edge.to), edge.width}, volume);
    copy_profile section; // merged into an empty one: its sites sorted, as the invariant wants
    section.merge(named);
    return section;
}

} // namespace ojx
