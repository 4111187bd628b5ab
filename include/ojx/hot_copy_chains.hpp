// The hot copy chain detector of "Go with the Flow" on a copy graph (docs/copy-profiling.md): chains of copies that
// carry values through two or more heap locations, ranked by the bytes that can have flowed along the whole chain.
// The graph keeps edges, not chains, so chains are recovered by the seed's kind of heuristic: starting from the
// heaviest copy edge between two locations not yet in a chain, the chain grows forward along the heaviest edge out
// of its last node (into a location, or ends at the consumer) and backward along the heaviest edge into its first
// node (from a location, or starts at an allocation node), while that edge carries at least `continuation` times
// the chain's bytes so far. A chain's bytes are those of its lightest edge (widths summed per pair of nodes).
#pragma once

#include "ojx/copy_graph.hpp"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace ojx {

struct copy_chain {
    std::vector<copy_node> nodes; // in the direction values flow
    std::uint64_t bytes = 0;      // of the lightest edge along it

    friend bool operator==(const copy_chain&, const copy_chain&) = default;
};

struct hot_chain_options {
    double continuation = 0.5;
    std::size_t max_nodes = 16;
};

inline std::vector<copy_chain> hot_copy_chains(const copy_graph& graph, const hot_chain_options& options = {}) {
    using pair = std::pair<copy_node, copy_node>;
    std::map<pair, std::uint64_t> bytes;
    for (const auto& [edge, volume] : graph.edges()) bytes[{edge.from, edge.to}] += volume.bytes;
    std::map<copy_node, std::vector<std::pair<copy_node, std::uint64_t>>> out, in;
    std::vector<std::pair<std::uint64_t, pair>> seeds;
    for (const auto& [nodes, b] : bytes) {
        out[nodes.first].emplace_back(nodes.second, b);
        in[nodes.second].emplace_back(nodes.first, b);
        if (nodes.first.is_location() && nodes.second.is_location()) seeds.emplace_back(b, nodes);
    }
    std::stable_sort(seeds.begin(), seeds.end(), [](const auto& a, const auto& b) { return a.first > b.first; });

    // The heaviest neighbour not yet in the chain that `accept` allows (ties: the smallest node).
    const auto heaviest = [](const auto& neighbours, const std::deque<copy_node>& chain, auto accept) {
        std::optional<std::pair<copy_node, std::uint64_t>> best;
        for (const auto& [node, b] : neighbours) {
            if (!accept(node) || std::find(chain.begin(), chain.end(), node) != chain.end()) continue;
            if (!best || b > best->second) best = {node, b};
        }
        return best;
    };
    const auto grows = [&](const auto& best, std::uint64_t so_far) {
        return best && static_cast<double>(best->second) >= options.continuation * static_cast<double>(so_far);
    };

    std::set<pair> used;
    std::vector<copy_chain> chains;
    for (const auto& [seed_bytes, seed] : seeds) {
        if (used.contains(seed)) continue;
        used.insert(seed);
        std::deque<copy_node> chain{seed.first, seed.second};
        std::uint64_t chain_bytes = seed_bytes;
        while (chain.size() < options.max_nodes && chain.back().is_location()) {
            const auto it = out.find(chain.back());
            if (it == out.end()) break;
            const auto best = heaviest(it->second, chain, [](const copy_node&) { return true; });
            if (!grows(best, chain_bytes)) break;
            used.insert({chain.back(), best->first});
            chain.push_back(best->first);
            chain_bytes = std::min(chain_bytes, best->second);
        }
        while (chain.size() < options.max_nodes && chain.front().is_location()) {
            const auto it = in.find(chain.front());
            if (it == in.end()) break;
            const auto best = heaviest(it->second, chain, [](const copy_node& n) {
                return n.is_location() || n.kind == copy_node_kind::allocation;
            });
            if (!grows(best, chain_bytes)) break;
            used.insert({best->first, chain.front()});
            chain.push_front(best->first);
            chain_bytes = std::min(chain_bytes, best->second);
        }
        chains.push_back({{chain.begin(), chain.end()}, chain_bytes});
    }
    std::stable_sort(chains.begin(), chains.end(), [](const auto& a, const auto& b) { return a.bytes > b.bytes; });
    return chains;
}

} // namespace ojx
