// The sampled copy graph of a run (docs/copy-profiling.md): the copy graph's edges as sampling saw them, each with
// the sufficient statistics of its samples (ojx/copy_estimate.hpp), from which the copies and bytes the run made
// along it are estimated with an interval. `estimated()` is the copy graph the samples stand for, on which the
// client analyses (hot chains, clone pairs, carrier sites) run unchanged.
//
// Invariant: only sums and maxima of integers, so graphs of parts of a run merge exactly, in any order.
#pragma once

#include "ojx/copy_estimate.hpp"
#include "ojx/copy_graph.hpp"

#include <algorithm>
#include <cstdint>
#include <map>

namespace ojx {

class sampled_copy_graph {
public:
    // One sample of the edge, taken at `period`.
    void add(const copy_edge& edge, std::uint64_t period) { edges_[edge].add(period); }
    // Samples already summed (a profile's edge, a part of a run's).
    void add(const copy_edge& edge, const sampled_volume& volume) { edges_[edge] += volume; }

    void merge(const sampled_copy_graph& other) {
        for (const auto& [edge, volume] : other.edges_) add(edge, volume);
    }

    const std::map<copy_edge, sampled_volume>& edges() const noexcept { return edges_; }
    bool empty() const noexcept { return edges_.empty(); }

    // Each edge with the copies its samples stand for.
    copy_graph estimated() const {
        copy_graph graph;
        for (const auto& [edge, volume] : edges_) graph.add(edge, volume.weight);
        return graph;
    }

    // The bytes moved along the edges `select` accepts, with an interval at `level`.
    template <class Select>
    copy_estimate estimate(Select select, double level) const {
        double copies = 0, y = 0, v = 0, max_weight = 0;
        for (const auto& [edge, volume] : edges_) {
            if (!select(edge)) continue;
            const double w = edge.width;
            copies += static_cast<double>(volume.weight);
            y += w * static_cast<double>(volume.weight);
            v += w * w * static_cast<double>(volume.weight_squares);
            max_weight = std::max(max_weight, w * static_cast<double>(volume.max_weight));
        }
        return {copies, y, weighted_poisson_interval(y, v, max_weight, level)};
    }

    friend bool operator==(const sampled_copy_graph&, const sampled_copy_graph&) = default;

private:
    std::map<copy_edge, sampled_volume> edges_;
};

} // namespace ojx
