// The copy section of a profile (docs/profile-format.md, "copies"): a run's sampled copy graph
// (sampled_copy_graph.hpp) with its allocation contexts named, the code that made each edge (copy_code.hpp) with
// its access contexts named, the sampled copy graph builder's counters, and how the samples were taken. The section
// names its own contexts (`sites`; a node's `site` indexes them; `code_contexts`, which each edge's code indexes)
// rather than pointing into the profile's contexts: a copy graph's nodes are the contexts of every allocation, where
// the replica profile lists only the tracked ones (at least the size threshold, within the context table).
//
// Invariants: `sites` and `code_contexts` are sorted and hold nothing twice, every field or allocation node's site
// indexes `sites`, and every edge's code indexes `code_contexts` and names an edge of `graph`, with no more samples
// than it; the section holds only sums and maxima, so sections of threads, processes and hosts merge exactly
// (merge), whatever their sampling periods, in any order and grouping.
#pragma once

#include "ojx/copy_code.hpp"
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

// An access context that copied (the calling context of the sampled loads whose values an edge's samples
// followed), as the section names it: its frames, leaf first.
struct copy_code_context {
    std::vector<std::string> frames;

    friend auto operator<=>(const copy_code_context&, const copy_code_context&) = default;
};

// A field as the runtime names it: `name` lies at `offset` of the contents of `type`'s objects (a field node's
// offset: from where a tracked object begins, after its header). Only where the runtime tells (the JVM agent, by
// the class's fields and Unsafe.objectFieldOffset); elsewhere field nodes are named by their offset.
struct copy_field_name {
    std::string type;
    std::uint64_t offset = 0;
    std::string name;

    friend auto operator<=>(const copy_field_name&, const copy_field_name&) = default;
};

namespace copy_profile_detail {

// The sorted union of two lists of names, each name once.
template <class Name>
std::vector<Name> sorted_union(const std::vector<Name>& a, const std::vector<Name>& b) {
    std::vector<Name> all = a;
    all.insert(all.end(), b.begin(), b.end());
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    return all;
}

// Where each of `part`'s names is in `all`, which holds them all, sorted.
template <class Name>
std::vector<context_id> positions_in(const std::vector<Name>& all, const std::vector<Name>& part) {
    std::vector<context_id> index;
    for (const Name& name : part)
        index.push_back(static_cast<context_id>(std::lower_bound(all.begin(), all.end(), name) - all.begin()));
    return index;
}

// Numbers a run's contexts as they are first named, each name pushed to `names`: contexts named alike get two
// numbers here, made one by copy_profile::merge.
template <class Name, class NameOf>
class context_numbering {
public:
    context_numbering(std::vector<Name>& names, NameOf name_of) : names_(names), name_of_(std::move(name_of)) {}
    context_id operator()(context_id context) {
        const auto [at, fresh] = index_.try_emplace(context, static_cast<context_id>(names_.size()));
        if (fresh) names_.push_back(name_of_(context));
        return at->second;
    }

private:
    std::vector<Name>& names_;
    NameOf name_of_;
    std::map<context_id, context_id> index_;
};

} // namespace copy_profile_detail

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
    std::vector<copy_code_context> code_contexts; // empty where the samples carried no access context
    sampled_copy_graph graph; // field and allocation nodes' `site`: an index into `sites`
    copy_code code;           // edges as `graph` names them; contexts: indices into `code_contexts`
    sampled_copy_stats counters;
    // Sorted by (type, offset), each (type, offset) once; empty where the runtime names no fields.
    std::vector<copy_field_name> field_names;

    // The name of the field at `offset` of `type`'s objects, or null where none is known.
    const std::string* field_name(std::string_view type, std::uint64_t offset) const {
        const auto at = std::lower_bound(field_names.begin(), field_names.end(), std::pair{type, offset},
                                         [](const copy_field_name& f, const std::pair<std::string_view, std::uint64_t>& key) {
                                             return std::pair<std::string_view, std::uint64_t>{f.type, f.offset} < key;
                                         });
        return at != field_names.end() && at->type == type && at->offset == offset ? &at->name : nullptr;
    }

    // Adds `other`: sites and code contexts by name, edges with equal (from, to, width) by their sums, each edge's
    // code by its contexts' sums, counters summed, field names joined (where two runs name one (type, offset)
    // differently, as classes of one name from two loaders may, the first name in order stays: any order and
    // grouping of merges gives the same).
    void merge(const copy_profile& other) {
        using namespace copy_profile_detail;
        std::vector<copy_site> all_sites = sorted_union(sites, other.sites);
        std::vector<copy_code_context> all_code = sorted_union(code_contexts, other.code_contexts);
        sampled_copy_graph renamed;
        copy_code renamed_code;
        const copy_profile& self = *this;
        for (const copy_profile* part : {&self, &other}) {
            const std::vector<context_id> site_at = positions_in(all_sites, part->sites);
            const std::vector<context_id> code_at = positions_in(all_code, part->code_contexts);
            const auto rename = [&](const copy_edge& edge) {
                copy_edge named = edge;
                for (copy_node* node : {&named.from, &named.to})
                    if (names_site(*node)) node->site = site_at.at(node->site);
                return named;
            };
            for (const auto& [edge, volume] : part->graph.edges()) renamed.add(rename(edge), volume);
            for (const auto& [edge, counted] : part->code.edges())
                renamed_code.add(rename(edge), counted.renamed([&](context_id c) { return code_at.at(c); }));
        }
        sampling = sorted_union(sampling, other.sampling);
        sites = std::move(all_sites);
        code_contexts = std::move(all_code);
        graph = std::move(renamed);
        code = std::move(renamed_code);
        counters += other.counters;
        field_names = sorted_union(field_names, other.field_names);
        field_names.erase(std::unique(field_names.begin(), field_names.end(),
                                      [](const copy_field_name& a, const copy_field_name& b) {
                                          return a.type == b.type && a.offset == b.offset;
                                      }),
                          field_names.end());
    }

    friend bool operator==(const copy_profile&, const copy_profile&) = default;
};

// The section of a run's sampled graph and its edges' code, whose nodes and code name contexts by id:
// `name_site(context_id)` names each allocation context, `name_code(context_id)` each access context. Contexts
// named alike become one.
template <class NameSite, class NameCode>
copy_profile copy_profile_of(const sampled_copy_graph& graph, const copy_code& code, const sampled_copy_stats& counters,
                             std::string sampling, NameSite name_site, NameCode name_code) {
    using namespace copy_profile_detail;
    copy_profile named;
    named.sampling = {std::move(sampling)};
    named.counters = counters;
    context_numbering site_number(named.sites, std::move(name_site));
    context_numbering code_number(named.code_contexts, std::move(name_code));
    const auto site = [&](copy_node node) {
        if (names_site(node)) node.site = site_number(node.site);
        return node;
    };
    for (const auto& [edge, volume] : graph.edges()) {
        const copy_edge renamed{site(edge.from), site(edge.to), edge.width};
        named.graph.add(renamed, volume);
        named.code.add(renamed, code.of(edge).renamed([&](context_id c) { return code_number(c); }));
    }
    copy_profile section; // merged into an empty one: its sites and code contexts sorted, as the invariant wants
    section.merge(named);
    return section;
}

// The same with no code: samples that carried no access context (the emulation's).
template <class NameSite>
copy_profile copy_profile_of(const sampled_copy_graph& graph, const sampled_copy_stats& counters, std::string sampling,
                             NameSite name_site) {
    return copy_profile_of(graph, copy_code{}, counters, std::move(sampling), std::move(name_site),
                           [](context_id) { return copy_code_context{}; });
}

} // namespace ojx
