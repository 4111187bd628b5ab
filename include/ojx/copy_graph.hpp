// The copy graph of a run (docs/copy-profiling.md, after "Go with the Flow", Xu et al., PLDI 2009): which heap
// locations values are copied between, and into which locations' values computations consume. Nodes are heap
// locations — a field or offset of the objects of one allocation context, or a static location — plus an
// allocation node per context (the producer of fresh references to its objects) and the one consumer node. An edge
// (from, to, width) holds how many copies of `width` bytes moved values along it, and how many bytes they moved.
//
// Invariant: the graph holds only sums, so graphs of parts of a run (threads, intervals, processes) merge into
// the graph of the whole exactly, in any order.
#pragma once

#include "ojx/types.hpp"

#include <compare>
#include <cstdint>
#include <limits>
#include <map>

namespace ojx {

enum class copy_node_kind : std::uint8_t {
    field,           // (allocation context, offset) — every element of an array is one node, offset `elements`
    allocation,      // (allocation context): a reference to a fresh object of the context, as a `new` produces it
    static_location, // an address outside every tracked object (offset: the address)
    consumer,        // the one sink of values that a computation, comparison or call uses
};

struct copy_node {
    // The offset of the node that stands for every element of an array, as the seed's ELEM node.
    static constexpr std::uint64_t elements = std::numeric_limits<std::uint64_t>::max();

    copy_node_kind kind = copy_node_kind::consumer;
    context_id site = no_context; // field and allocation nodes
    std::uint64_t offset = 0;     // field: offset in the object (or `elements`); static location: its address

    static constexpr copy_node field(context_id site, std::uint64_t offset) noexcept {
        return {copy_node_kind::field, site, offset};
    }
    static constexpr copy_node allocation(context_id site) noexcept { return {copy_node_kind::allocation, site, 0}; }
    static constexpr copy_node static_location(address where) noexcept {
        return {copy_node_kind::static_location, no_context, where};
    }
    static constexpr copy_node consumer() noexcept { return {}; }

    // A heap location: a value can be stored there and loaded from there.
    constexpr bool is_location() const noexcept {
        return kind == copy_node_kind::field || kind == copy_node_kind::static_location;
    }

    friend constexpr auto operator<=>(const copy_node&, const copy_node&) = default;
};

struct copy_edge {
    copy_node from;
    copy_node to;
    std::uint8_t width = 0; // bytes moved by each copy

    friend constexpr auto operator<=>(const copy_edge&, const copy_edge&) = default;
};

struct copy_volume {
    std::uint64_t count = 0;
    std::uint64_t bytes = 0;

    copy_volume& operator+=(const copy_volume& other) noexcept {
        count += other.count;
        bytes += other.bytes;
        return *this;
    }
    friend bool operator==(const copy_volume&, const copy_volume&) = default;
};

class copy_graph {
public:
    // `count` copies of the edge's width each.
    void add(const copy_edge& edge, std::uint64_t count = 1) {
        edges_[edge] += copy_volume{count, count * edge.width};
    }

    void merge(const copy_graph& other) {
        for (const auto& [edge, volume] : other.edges_) edges_[edge] += volume;
    }

    // Ordered by edge (source node, destination node, width): deterministic output.
    const std::map<copy_edge, copy_volume>& edges() const noexcept { return edges_; }
    bool empty() const noexcept { return edges_.empty(); }

    // Copies into heap locations, and uses by computations.
    copy_volume copied() const noexcept { return total(false); }
    copy_volume consumed() const noexcept { return total(true); }

    friend bool operator==(const copy_graph&, const copy_graph&) = default;

private:
    copy_volume total(bool to_consumer) const noexcept {
        copy_volume sum;
        for (const auto& [edge, volume] : edges_)
            if ((edge.to.kind == copy_node_kind::consumer) == to_consumer) sum += volume;
        return sum;
    }

    std::map<copy_edge, copy_volume> edges_;
};

} // namespace ojx
