// Copy profiling as an analysis on the host (analysis_sink.hpp) where the backend follows each sampled load itself
// (the Linux backend: followed_value.hpp): every use a followed value made becomes one sample of an edge of the
// sampled copy graph (docs/copy-profiling.md, "Copies on Linux"), kept in a fixed table so that it is filled
// inside signal handlers.
//
// Nodes: where the allocation hook said that objects of a type are laid out alike (allocation_shape::typed_layout:
// a JVM instance), each offset in an object is a node of its allocation context, as the seed's field nodes.
// Otherwise an object is one node for all its bytes — its allocation context's `elements` node, as the seed's ELEM
// node for arrays (a copy between two native blocks of two sites is an edge between the sites, wherever in them
// it lands). A store into memory no tracked object holds goes to one node, the untracked memory (static location
// 0); a computation to the consumer. Each sample weighs `period`:
// 1 where the samples are taken in time and the accesses between them are not counted, so that the graph's
// "copies" are sampled copies — shares and ranks, not totals. Each sample also counts for the access context of its
// followed load (copy_code.hpp): the code that copied.
#pragma once

#include "ojx/analysis_sink.hpp"
#include "ojx/copy_code.hpp"
#include "ojx/copy_edge_table.hpp"
#include "ojx/copy_graph.hpp"
#include "ojx/sampled_copy_graph.hpp"
#include "ojx/sampled_copy_graph_builder.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>

namespace ojx {

class followed_copy_graph {
public:
    // The node of memory outside every tracked object.
    static constexpr copy_node untracked_memory = copy_node::static_location(0);
    static constexpr std::size_t default_edge_capacity = 4096;

    // Nothing is kept until prepare: a run that follows no value costs no table.
    followed_copy_graph() = default;
    followed_copy_graph(followed_copy_graph&&) noexcept = default;

    // Outside handlers, before the first event: room for `edge_capacity` edges, each sample weighing `period`.
    void prepare(std::size_t edge_capacity = default_edge_capacity, std::uint64_t period = 1) {
        table_ = std::make_unique<copy_edge_table>(edge_capacity);
        period_ = period;
    }
    bool prepared() const noexcept { return table_ != nullptr; }

    // Signal-safe.
    void on_followed_value(const resolved_follow& follow) noexcept {
        if (!table_) return;
        const followed_value& value = follow.value;
        if (!follow.origin.found()) {
            ++origins_gone_; // freed (or moved) between the sample and the end of its following
            return;
        }
        stats_.steps += value.steps;
        // A string move's element is its copy at once: nothing was followed, so no following ended.
        if (value.string_move) {
            ++stats_.string_move_samples;
        } else {
            ++stats_.loads_followed;
            count_end(value);
        }
        const copy_node from = node_of(follow.origin.object, value.load.effective_address);
        for (std::size_t i = 0; i < value.use_count; ++i) {
            const followed_value::use& use = value.uses[i];
            const copy_node to = use.kind == value_use::consumed ? copy_node::consumer()
                                 : follow.destinations[i]     ? node_of(*follow.destinations[i], use.to)
                                                              : untracked_memory;
            ++stats_.edges;
            table_->add(copy_edge{from, to, use.width}, period_, value.load.access_context);
        }
    }

    // Outside handlers.
    sampled_copy_graph graph() const { return table_ ? table_->graph() : sampled_copy_graph{}; }
    // Each edge's samples by the access context of the followed load that made them.
    copy_code code() const { return table_ ? table_->code() : copy_code{}; }
    // The builder's counters, as the profile's copy section names them.
    const sampled_copy_stats& stats() const noexcept { return stats_; }
    std::uint64_t edges_dropped() const noexcept { return table_ ? table_->dropped() : 0; }
    std::uint64_t origins_gone() const noexcept { return origins_gone_; }
    // Followings that never saw the load; that stopped before an instruction they could not follow.
    std::uint64_t loads_missed() const noexcept { return load_missed_; }
    std::uint64_t followings_stopped() const noexcept { return stopped_; }
    std::uint64_t followings_with_uses_lost() const noexcept { return uses_full_; }

private:
    void count_end(const followed_value& value) noexcept {
        switch (value.end) {
        case follow_end::released: ++stats_.ended; break;
        case follow_end::bound:
            ++stats_.bound_reached;
            if (value.use_count == 0) ++stats_.bound_reached_no_edge;
            break;
        case follow_end::load_missed: ++load_missed_; break;
        case follow_end::undecodable:
        case follow_end::not_stepped: ++stopped_; break;
        case follow_end::uses_full: ++uses_full_; break;
        }
    }

    // The node of the byte at `where` in `object`.
    static copy_node node_of(const tracked_object& object, address where) noexcept {
        return copy_node::field(object.info.allocation_context,
                                object.info.typed_layout ? where - object.begin : copy_node::elements);
    }

    std::unique_ptr<copy_edge_table> table_;
    std::uint64_t period_ = 1;
    sampled_copy_stats stats_;
    std::uint64_t origins_gone_ = 0;
    std::uint64_t load_missed_ = 0;
    std::uint64_t stopped_ = 0;
    std::uint64_t uses_full_ = 0;
};

static_assert(analysis_sink<followed_copy_graph>);

} // namespace ojx
