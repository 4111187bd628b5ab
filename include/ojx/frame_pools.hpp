// Estimates pooled at the frames of the calling-context tree. A frame node is a path of frames from the outermost
// one (a box of a flame view); below it lie the contexts whose stacks start with that path. Below a node, each
// allocation site reached from two or more contexts is pooled over them (site_pools.hpp: objects digested whole
// add exactly, by their content digests): one estimate with a narrower interval than its contexts have alone.
// Going down the tree, these estimates show where along the stack a site's replicas concentrate.
#pragma once

#include "ojx/profile.hpp"
#include "ojx/replica_estimator.hpp"
#include "ojx/site_pools.hpp"

#include <cstddef>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ojx {

// The pooled sites below one frame node. `first_context` (the first of the contexts, in the order given, whose
// stack passes through the node) and `depth` (frames from the outermost to the node's own; 0 is the root, above
// every stack) name the node in any tree built from the same contexts in the same order.
struct frame_pool {
    std::size_t first_context = 0;
    std::size_t depth = 0;
    std::size_t contexts = 0;       // contexts below the node
    std::vector<pooled_site> sites; // the sites reached from two or more of them, pooled, best first
};

// The frames of the node (`first_context`, `depth`), outermost first.
inline std::vector<std::string> frame_path(const std::vector<context_profile>& contexts, const frame_pool& node) {
    const std::vector<std::string>& frames = contexts.at(node.first_context).frames;
    return {frames.rbegin(), frames.rbegin() + static_cast<std::ptrdiff_t>(node.depth)};
}

// Every node of the tree of `contexts` below which a site is reached from two or more contexts, root first, then
// in the order the nodes were first reached. A node with one child frame and no context ending at it has that
// child's contexts below it, so the same pools: only the deepest node of such a chain is listed (a reader walks
// down single-child chains to it).
inline std::vector<frame_pool> frame_pools(const std::vector<context_profile>& contexts,
                                           const estimator_config& config) {
    struct node {
        std::size_t first_context, depth;
        std::map<std::string_view, std::size_t> children; // by frame
        std::vector<std::size_t> ending;                  // contexts whose stacks end here
    };
    std::vector<node> nodes{{0, 0, {}, {}}};
    for (std::size_t i = 0; i < contexts.size(); ++i) {
        std::size_t at = 0;
        const std::vector<std::string>& frames = contexts[i].frames;
        for (auto name = frames.rbegin(); name != frames.rend(); ++name) {
            const std::size_t next = nodes.size();
            const auto [child, added] = nodes[at].children.try_emplace(*name, next);
            const std::size_t found = child->second;
            if (added) nodes.push_back({i, nodes[at].depth + 1, {}, {}});
            at = found;
        }
        nodes[at].ending.push_back(i);
    }
    std::vector<frame_pool> result;
    std::vector<std::size_t> pending;
    for (const node& n : nodes) {
        if (n.children.size() == 1 && n.ending.empty()) continue; // a chain's upper node
        site_pools pools(std::numeric_limits<std::size_t>::max());
        std::size_t below = 0;
        pending.assign(1, static_cast<std::size_t>(&n - nodes.data()));
        while (!pending.empty()) {
            const node& at = nodes[pending.back()];
            pending.pop_back();
            for (const std::size_t i : at.ending) pools.add(contexts[i]);
            below += at.ending.size();
            for (const auto& [name, child] : at.children) pending.push_back(child);
        }
        if (below < 2) continue;
        std::vector<pooled_site> sites = pools.finish(config);
        if (!sites.empty()) result.push_back({n.first_context, n.depth, below, std::move(sites)});
    }
    return result;
}

// Fills `concentrated` of the pooled sites reports list (the first `top` with is_pooled_finding, as
// pooled_findings picks them) from `contexts`, which hold at least every context of those sites: of the frame
// nodes below which a site's contexts pool, the one whose interval starts highest among those holding at least a
// quarter of the site's objects (the deeper on a tie), where it starts above the site's own — the replicas sit
// under that frame rather than spread over every caller.
inline void locate_concentrations(std::vector<pooled_site>& pooled, std::size_t top,
                                  const std::vector<context_profile>& contexts, const estimator_config& config) {
    std::unordered_map<std::string, pooled_site*> wanted;
    for (pooled_site& p : pooled)
        if (wanted.size() < top && is_pooled_finding(p)) wanted.emplace(site_key(p.site), &p);
    std::unordered_map<std::string, std::vector<context_profile>> of_site;
    for (const context_profile& c : contexts)
        if (std::string key = site_key(c); wanted.contains(key)) of_site[std::move(key)].push_back(c);
    for (auto& [key, site_contexts] : of_site) {
        pooled_site& site = *wanted.at(key);
        const frame_pool* best = nullptr;
        const std::vector<frame_pool> nodes = frame_pools(site_contexts, config);
        for (const frame_pool& n : nodes) {
            const context_profile& below = n.sites.front().site; // one site: the contexts are all of it
            if (n.depth == 0 || n.contexts == site.contexts || 4 * below.objects < site.site.objects ||
                !called_replicated(below.combined))
                continue;
            const double low = below.combined.largest_share_ci.low;
            const double best_low = best ? best->sites.front().site.combined.largest_share_ci.low : -1;
            if (low > best_low || (low == best_low && n.depth > best->depth)) best = &n;
        }
        if (best == nullptr ||
            best->sites.front().site.combined.largest_share_ci.low <= site.site.combined.largest_share_ci.low)
            continue;
        site.concentrated = site_concentration{frame_path(site_contexts, *best), best->contexts,
                                               best->sites.front().site};
    }
}

} // namespace ojx
