// The exact copy graph of a run whose every value flow event is seen (ojx/value_flow.hpp; the emulation's register
// machine delivers them): the truth a sampled copy graph is tested against. A shadow register file follows each
// value from where it came — the heap location it was loaded from, or the context of the fresh object it refers
// to — through register moves to its end:
//   - a store of it is a copy edge origin → the stored-to location, of the store's width;
//   - each computation that uses it is an edge origin → consumer, of the width it was loaded with;
//   - a string move is, element by element, a copy edge between the two locations of the element's width.
// A value with no origin (a constant, a computation's result) makes no edge when stored. Locations are named by
// the object that holds them (allocation context, offset; every element of an array one node) or, outside every
// live object, as static locations by address. Objects are followed through frees and moves.
#pragma once

#include "ojx/allocation_metrics.hpp"
#include "ojx/copy_graph.hpp"
#include "ojx/copy_locations.hpp"
#include "ojx/types.hpp"
#include "ojx/value_flow.hpp"

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>

namespace ojx {

// What the builder saw besides the graph: how many stores stored a value with no origin.
struct exact_copy_stats {
    std::uint64_t loads = 0;
    std::uint64_t stores_of_copies = 0;
    std::uint64_t stores_of_new_values = 0;
    std::uint64_t string_moves = 0;
    std::uint64_t computations = 0;

    friend bool operator==(const exact_copy_stats&, const exact_copy_stats&) = default;
};

class exact_copy_graph_builder {
public:
    void on_allocation(address where, std::uint64_t size, context_id context, const allocation_shape& shape) {
        locations_.on_allocation(where, size, context, shape);
    }
    void on_free(address where) { locations_.on_free(where); }
    void on_move(address from, address to) { locations_.on_move(from, to); }

    void on_new_reference(value_register r, context_id context) {
        registers_[r] = {copy_node::allocation(context), sizeof(address)};
    }
    void on_constant(value_register r) { registers_[r] = {}; }

    void on_load(value_register r, address where, std::uint8_t width) {
        ++stats_.loads;
        registers_[r] = {location(where), width};
    }

    void on_register_move(value_register destination, value_register source) {
        registers_[destination] = registers_[source];
    }

    void on_store(value_register r, address where, std::uint8_t width) {
        const origin& from = registers_[r];
        if (!from.node) {
            ++stats_.stores_of_new_values;
            return;
        }
        ++stats_.stores_of_copies;
        graph_.add({*from.node, location(where), width});
    }

    // Each source with an origin is used once, even when it appears twice; the result has no origin.
    void on_compute(std::span<const value_register> sources, std::optional<value_register> result) {
        ++stats_.computations;
        std::array<bool, register_count> used{};
        for (const value_register r : sources) {
            if (used[r] || !registers_[r].node) continue;
            used[r] = true;
            graph_.add({*registers_[r].node, copy_node::consumer(), registers_[r].width});
        }
        if (result) registers_[*result] = {};
    }

    void on_string_move(address destination, address source, std::uint64_t bytes, std::uint8_t element_width) {
        ++stats_.string_moves;
        for (std::uint64_t at = 0; at + element_width <= bytes; at += element_width)
            graph_.add({location(source + at), location(destination + at), element_width});
    }

    const copy_graph& graph() const noexcept { return graph_; }
    const exact_copy_stats& stats() const noexcept { return stats_; }

private:
    static constexpr std::size_t register_count = std::size_t{std::numeric_limits<value_register>::max()} + 1;

    struct origin {
        std::optional<copy_node> node; // none: a value no load or allocation produced
        std::uint8_t width = 0;
    };

    copy_node location(address where) const { return locations_.at(where); }

    copy_locations locations_;
    std::array<origin, register_count> registers_{};
    copy_graph graph_;
    exact_copy_stats stats_;
};

static_assert(value_flow_sink<exact_copy_graph_builder>);

} // namespace ojx
