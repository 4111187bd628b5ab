// The copies view of the text report (`ojx report` on a profile with a copy section): the edges that copied the
// most bytes, estimated from their samples with an interval (copy_estimate.hpp), and the seed's client analyses on
// the graph the samples stand for — the hot copy chains (hot_copy_chains.hpp), the clone pairs
// (copy_clone_pairs.hpp) and the carrier sites (carrier_sites.hpp); every node named by its allocation context's
// type and leaf frame (sites named alike made one: sites_by_leaf), and under each edge the code that copied along
// it (its heaviest access contexts' leaf functions) where the samples named it. Not for signal handlers.
#pragma once

#include "ojx/carrier_sites.hpp"
#include "ojx/copy_clone_pairs.hpp"
#include "ojx/copy_estimate.hpp"
#include "ojx/copy_graph.hpp"
#include "ojx/copy_node_names.hpp"
#include "ojx/copy_profile.hpp"
#include "ojx/hot_copy_chains.hpp"
#include "ojx/profile.hpp"
#include "ojx/text_report.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace ojx {

inline constexpr std::size_t copies_view_edges = 10;  // edges listed, heaviest first
inline constexpr std::size_t copies_view_chains = 5;  // chains listed, heaviest first
inline constexpr std::size_t copies_view_code = 2;    // code contexts named under each edge, heaviest first
inline constexpr std::size_t copies_view_sites = 5;   // clone pairs and carrier sites listed, heaviest first

// The section as the views name its sites, by type and leaf frame: sites that differ only further out (one
// allocating line reached from several callers) are one site there, their edges and code summed, as uses_by_leaf
// makes such uses one line. Otherwise a view would list "the same" edge, pair or carrier once per caller.
inline copy_profile sites_by_leaf(const copy_profile& copies) {
    copy_profile named = copy_profile_of(
        copies.graph, copies.code, copies.counters, "",
        [&](context_id s) {
            const copy_site& site = copies.sites.at(s);
            return copy_site{site.type, {site.frames.begin(), site.frames.begin() + (site.frames.empty() ? 0 : 1)}};
        },
        [&](context_id c) { return copies.code_contexts.at(c); });
    named.sampling = copies.sampling;
    return named;
}

// "A -> B -> C": a chain's nodes named.
inline std::string copy_chain_name(const copy_profile& copies, const copy_chain& chain) {
    std::string text;
    for (const copy_node& node : chain.nodes) text += (text.empty() ? "" : " -> ") + copy_node_name(copies, node);
    return text;
}

struct estimated_copy_edge {
    copy_edge edge;
    std::uint64_t samples = 0;
    copy_estimate estimate;
};

// The section's edges by estimated bytes, heaviest first (ties in edge order), with intervals at `level`.
inline std::vector<estimated_copy_edge> heaviest_copy_edges(const copy_profile& copies, double level) {
    std::vector<estimated_copy_edge> edges;
    for (const auto& [edge, volume] : copies.graph.edges())
        edges.push_back({edge, volume.samples, estimate_copies(volume, edge.width, level)});
    std::stable_sort(edges.begin(), edges.end(), [](const estimated_copy_edge& a, const estimated_copy_edge& b) {
        return a.estimate.bytes > b.estimate.bytes;
    });
    return edges;
}

// The code that copied along `edge`, as the view names it: each code context's leaf function with its samples
// (contexts that differ only further out summed into one), heaviest first. None where the samples named no code.
inline std::vector<std::pair<std::string, std::uint64_t>> copying_code(const copy_profile& copies,
                                                                       const copy_edge& edge) {
    std::vector<named_access_context> contexts;
    for (const auto& [context, samples] : copies.code.of(edge).contexts)
        contexts.push_back({copies.code_contexts.at(context).frames, samples});
    return uses_by_leaf(contexts, [](const named_access_context& c) {
        return c.frames.empty() ? std::string("(no frames)") : leaf_function(c.frames.front());
    });
}

// How the view introduces an edge's code: the code that copied it, or for an edge into the consumer, that used it.
inline const char* copying_code_label(const copy_edge& edge) {
    return edge.to.kind == copy_node_kind::consumer ? "used by" : "copied by";
}

// The hot copy chains of the graph the section's samples stand for, heaviest first.
inline std::vector<copy_chain> copy_chains(const copy_profile& copies) {
    return hot_copy_chains(copies.graph.estimated());
}

// The clone detector's pairs of sites (at least 1 % of the bytes copied between locations of sites), heaviest
// first, each with the interval of the bytes copied from the one site's locations into the other's.
struct estimated_site_pair {
    site_pair_copies pair;
    copy_estimate estimate;
};

inline std::vector<estimated_site_pair> estimated_clone_pairs(const copy_profile& copies, double level) {
    std::vector<estimated_site_pair> result;
    for (const site_pair_copies& pair : copy_clone_pairs(copies.graph.estimated())) {
        result.push_back({pair, copies.graph.estimate(
                                    [&](const copy_edge& e) {
                                        return e.from.kind == copy_node_kind::field &&
                                               e.to.kind == copy_node_kind::field && e.from.site == pair.from &&
                                               e.to.site == pair.to;
                                    },
                                    level)});
    }
    return result;
}

// The carrier sites, heaviest copied out first, each with the intervals of the bytes copied out of its objects
// (into any location) and into them.
struct estimated_carrier_site {
    context_id site = no_context;
    copy_estimate copied_out;
    copy_estimate copied_in;
};

inline std::vector<estimated_carrier_site> estimated_carrier_sites(const copy_profile& copies, double level) {
    std::vector<estimated_carrier_site> result;
    for (const carrier_site& carrier : carrier_sites(copies.graph.estimated())) {
        const auto in_site = [&](const copy_node& node) {
            return node.kind == copy_node_kind::field && node.site == carrier.site;
        };
        result.push_back(
            {carrier.site,
             copies.graph.estimate([&](const copy_edge& e) { return in_site(e.from) && e.to.is_location(); }, level),
             copies.graph.estimate([&](const copy_edge& e) { return in_site(e.to); }, level)});
    }
    return result;
}

// What the section's samples say was copied into heap locations, and what computations used (copies into the
// consumer), each with its interval at `level`.
struct copy_totals {
    copy_estimate copied;
    copy_estimate used;
};

inline copy_totals estimated_copy_totals(const copy_profile& copies, double level) {
    return {copies.graph.estimate([](const copy_edge& e) { return e.to.is_location(); }, level),
            copies.graph.estimate([](const copy_edge& e) { return e.to.kind == copy_node_kind::consumer; }, level)};
}

// The view, intervals at `level` (the profile's estimator confidence); frames' source lines as `options` says.
inline void write_copies_view(std::ostream& out, const copy_profile& section, double level,
                              const text_options& options) {
    using namespace report_detail;
    const copy_profile copies = sites_by_leaf(section);
    const sampled_copy_stats& c = copies.counters;
    const auto range = [&](const copy_estimate& e) {
        return "~" + bytes(e.bytes) + " [" + bytes(e.bytes_interval.low) + ", " + bytes(e.bytes_interval.high) + "]";
    };
    const copy_totals totals = estimated_copy_totals(copies, level);
    out << "\ncopies (sampled copy graph): " << joined(copies.sampling) << "\n  " << c.edges << " edge samples; "
        << c.loads_followed << " sampled loads followed: " << c.ended << " ended, " << c.bound_reached
        << " at the bound (" << c.bound_reached_no_edge << " with no edge); " << c.string_move_samples
        << " string-move elements\n  copied into heap locations " << range(totals.copied) << ", used by computations "
        << range(totals.used) << " (" << percent(level) << " intervals)\n";
    const std::vector<estimated_copy_edge> edges = heaviest_copy_edges(copies, level);
    if (edges.empty()) {
        out << "  no copy was sampled\n";
        return;
    }
    char header[128];
    std::snprintf(header, sizeof header, "%3s  %-10s  %-24s  %7s  %5s  ", "#", "copied",
                  ("[" + percent(level) + " interval]").c_str(), "samples", "width");
    out << '\n' << header << "from -> to\n";
    for (std::size_t i = 0; i < edges.size() && i < copies_view_edges; ++i) {
        const estimated_copy_edge& e = edges[i];
        char row[160];
        std::snprintf(row, sizeof row, "%3zu  %-10s  [%10s, %10s]  %7llu  %3u B  ", i + 1,
                      bytes(e.estimate.bytes).c_str(), bytes(e.estimate.bytes_interval.low).c_str(),
                      bytes(e.estimate.bytes_interval.high).c_str(),
                      static_cast<unsigned long long>(e.samples), unsigned{e.edge.width});
        out << row << copy_node_name(copies, e.edge.from) << " -> " << copy_node_name(copies, e.edge.to) << '\n';
        for (const copy_node& node : {e.edge.from, e.edge.to})
            if (names_site(node) && !copies.sites.at(node.site).frames.empty())
                write_source(out, copies.sites.at(node.site).frames.front(), options);
        // Shares of the samples whose code was counted, "other" code included, so that they add up to at most 100 %.
        const std::uint64_t counted = copies.code.of(e.edge).samples();
        const auto code = copying_code(copies, e.edge);
        for (std::size_t k = 0; k < code.size() && k < copies_view_code; ++k) {
            char share[64];
            std::snprintf(share, sizeof share, " (%llu samples, %s)", static_cast<unsigned long long>(code[k].second),
                          percent(static_cast<double>(code[k].second) / static_cast<double>(counted)).c_str());
            write_frame_line(out, (std::string("     ") + copying_code_label(e.edge) + ' ').c_str(), code[k].first,
                             share, options);
        }
    }
    const std::vector<copy_chain> chains = copy_chains(copies);
    out << "\nhot copy chains (values carried through two or more heap locations; bytes of the lightest edge):\n";
    if (chains.empty()) out << "  none\n";
    for (std::size_t i = 0; i < chains.size() && i < copies_view_chains; ++i) {
        char rank[32];
        std::snprintf(rank, sizeof rank, "%3zu  %-10s  ", i + 1, bytes(static_cast<double>(chains[i].bytes)).c_str());
        out << rank << copy_chain_name(copies, chains[i]) << '\n';
    }
    const std::vector<estimated_site_pair> pairs = estimated_clone_pairs(copies, level);
    out << "\nclone pairs (sites between whose objects the most bytes are copied; share of the bytes copied between "
           "sites):\n";
    if (pairs.empty()) out << "  none\n";
    for (std::size_t i = 0; i < pairs.size() && i < copies_view_sites; ++i) {
        char row[128];
        std::snprintf(row, sizeof row, "%3zu  %-10s  [%10s, %10s]  %5s  ", i + 1,
                      bytes(pairs[i].estimate.bytes).c_str(), bytes(pairs[i].estimate.bytes_interval.low).c_str(),
                      bytes(pairs[i].estimate.bytes_interval.high).c_str(), percent(pairs[i].pair.share).c_str());
        out << row << copy_site_name(copies, pairs[i].pair.from) << " -> " << copy_site_name(copies, pairs[i].pair.to)
            << '\n';
    }
    const std::vector<estimated_carrier_site> carriers = estimated_carrier_sites(copies, level);
    out << "\ncarrier sites (objects copied out of and never seen computed on; bytes copied out, then in):\n";
    if (carriers.empty()) out << "  none\n";
    for (std::size_t i = 0; i < carriers.size() && i < copies_view_sites; ++i) {
        char row[128];
        std::snprintf(row, sizeof row, "%3zu  %-10s  [%10s, %10s]  in %-10s  ", i + 1,
                      bytes(carriers[i].copied_out.bytes).c_str(),
                      bytes(carriers[i].copied_out.bytes_interval.low).c_str(),
                      bytes(carriers[i].copied_out.bytes_interval.high).c_str(),
                      bytes(carriers[i].copied_in.bytes).c_str());
        out << row << copy_site_name(copies, carriers[i].site) << '\n';
    }
}

} // namespace ojx
