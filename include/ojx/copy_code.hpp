// The code that made a sampled copy graph's edges (docs/copy-profiling.md, "The code that copies"): for each edge,
// the access contexts its samples were taken in (the calling context where the following that made the edge
// ended, within the follow bound of its load: the code that copied) with the samples of each, and the samples whose context was not kept ("other": a context past what
// a signal handler keeps per edge, copy_code_slots.hpp, or none at all). A run's contexts are context ids of its
// calling context tree; a profile's copy section indexes its own list of named contexts (copy_profile.hpp).
//
// Invariants: only sums of sample counts, so the code of parts of a run merges exactly, in any order; an edge's
// kept samples plus `other` are the samples counted for it, never more than the edge's own samples.
#pragma once

#include "ojx/copy_graph.hpp"
#include "ojx/types.hpp"

#include <cstdint>
#include <map>

namespace ojx {

// One edge's code: samples by access context, and those whose context was not kept.
struct edge_code {
    std::map<context_id, std::uint64_t> contexts;
    std::uint64_t other = 0;

    std::uint64_t samples() const noexcept {
        std::uint64_t sum = other;
        for (const auto& [context, samples] : contexts) sum += samples;
        return sum;
    }
    bool empty() const noexcept { return contexts.empty() && other == 0; }

    // The same samples with each context renamed by `rename(context_id)`: contexts renamed alike are summed.
    template <class Rename>
    edge_code renamed(Rename rename) const {
        edge_code named{{}, other};
        for (const auto& [context, samples] : contexts) named.contexts[rename(context)] += samples;
        return named;
    }

    edge_code& operator+=(const edge_code& more) {
        for (const auto& [context, samples] : more.contexts) contexts[context] += samples;
        other += more.other;
        return *this;
    }

    friend bool operator==(const edge_code&, const edge_code&) = default;
};

class copy_code {
public:
    // Samples of `edge` already counted (a fixed table's, a profile's); an empty one adds nothing.
    void add(const copy_edge& edge, const edge_code& code) {
        if (!code.empty()) edges_[edge] += code;
    }
    void merge(const copy_code& more) {
        for (const auto& [edge, code] : more.edges_) add(edge, code);
    }

    const std::map<copy_edge, edge_code>& edges() const noexcept { return edges_; }
    bool empty() const noexcept { return edges_.empty(); }
    // The edge's code; an empty one where none was counted.
    const edge_code& of(const copy_edge& edge) const {
        static const edge_code none;
        const auto it = edges_.find(edge);
        return it == edges_.end() ? none : it->second;
    }

    friend bool operator==(const copy_code&, const copy_code&) = default;

private:
    std::map<copy_edge, edge_code> edges_;
};

} // namespace ojx
