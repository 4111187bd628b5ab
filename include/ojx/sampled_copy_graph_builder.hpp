// The sampled copy graph of one thread (docs/copy-profiling.md, "The sampled copy graph"), built from access
// samples and the thread's value flow events after them, as a profiler that single-steps from a sampled load sees
// them. A sampled load's value is followed forward for at most `bound` value flow events (instructions) of the
// thread, in the registers that hold it — a register move (a spill to, or reload from, a stack slot is one: the
// slot is a register, value_flow.hpp) adds the destination, and anything that overwrites a register (a load, a
// constant, a computation's result, a fresh reference, a move of another value) drops it:
//   - a store of a register that holds it is a copy edge, load location → stored-to location, of the store's width;
//   - a computation is an edge load location → consumer, of the load's width, per register it uses that holds it
//     (a register named twice is used once);
//   - following ends when no register holds the value, or at the bound (counted, with whether any edge was seen:
//     edges the value would have made later are lost to the sample).
// A sampled load of a string move names source and destination at once: it is the copy edge of its element, with
// nothing to follow. Sampled stores are not used (docs/copy-profiling.md says why). Each edge seen adds one
// sample at the sampler's period to the sampled graph (ojx/sampled_copy_graph.hpp).
//
// Events arrive in the thread's order: a sample of an access (on_sample) just before the access's value flow event;
// a sampled load that no load or string move of its address takes up is counted (unmatched_samples).
#pragma once

#include "ojx/allocation_metrics.hpp"
#include "ojx/copy_graph.hpp"
#include "ojx/copy_locations.hpp"
#include "ojx/sampled_copy_graph.hpp"
#include "ojx/sampler.hpp"
#include "ojx/types.hpp"
#include "ojx/value_flow.hpp"
#include "ojx/value_follower.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace ojx {

struct sampled_copy_options {
    std::uint64_t period = 64; // mean accesses between samples: each sample's weight
    std::uint32_t bound = 8;   // value flow events followed after a sampled load
};

struct sampled_copy_stats {
    std::uint64_t loads_followed = 0;         // sampled loads into a register
    std::uint64_t string_move_samples = 0;    // sampled loads of string move elements: edges at once
    std::uint64_t ended = 0;                  // followings that ended with no register holding the value
    std::uint64_t bound_reached = 0;          // followings stopped at the bound, the value still in a register
    std::uint64_t bound_reached_no_edge = 0;  // of those, followings that saw no edge at all
    std::uint64_t steps = 0;                  // value flow events followed, all followings together (the cost)
    std::uint64_t unmatched_samples = 0;      // sampled loads no value flow event followed (must stay 0)
    std::uint64_t edges = 0;

    // Counts of parts of a run (threads, processes) add up.
    sampled_copy_stats& operator+=(const sampled_copy_stats& other) noexcept {
        loads_followed += other.loads_followed;
        string_move_samples += other.string_move_samples;
        ended += other.ended;
        bound_reached += other.bound_reached;
        bound_reached_no_edge += other.bound_reached_no_edge;
        steps += other.steps;
        unmatched_samples += other.unmatched_samples;
        edges += other.edges;
        return *this;
    }
    friend bool operator==(const sampled_copy_stats&, const sampled_copy_stats&) = default;
};

class sampled_copy_graph_builder {
public:
    explicit sampled_copy_graph_builder(const sampled_copy_options& options = {}) : options_(options) {}

    void on_sample(const access_sample& sample) {
        if (sample.kind == access_kind::load) pending_.push_back({sample.effective_address, sample.width});
    }

    void on_allocation(address where, std::uint64_t size, context_id context, const allocation_shape& shape) {
        locations_.on_allocation(where, size, context, shape);
    }
    void on_free(address where) { locations_.on_free(where); }
    void on_move(address from, address to) { locations_.on_move(from, to); }

    void on_new_reference(value_register r, context_id) { step([&](follower& f) { f.value.overwrite(r); }); }
    void on_constant(value_register r) { step([&](follower& f) { f.value.overwrite(r); }); }

    void on_load(value_register r, address where, std::uint8_t width) {
        std::optional<copy_node> origin;
        for (const pending_load& p : pending_)
            if (p.where == where && p.width == width) origin = locations_.at(where);
        take_pending(origin ? 1 : 0);
        step([&](follower& f) { f.value.overwrite(r); });
        if (origin) {
            ++stats_.loads_followed;
            followers_.push_back(follower{*origin, value_follower(r, width)});
        }
    }

    void on_register_move(value_register destination, value_register source) {
        step([&](follower& f) { f.value.move(destination, source); });
    }

    void on_store(value_register r, address where, std::uint8_t width) {
        step([&](follower& f) { f.value.store(r, where, width, use_of{*this, f}); });
    }

    void on_compute(std::span<const value_register> sources, std::optional<value_register> result) {
        step([&](follower& f) { f.value.compute(sources, result, use_of{*this, f}); });
    }

    void on_string_move(address destination, address source, std::uint64_t bytes, std::uint8_t element_width) {
        std::uint64_t matched = 0;
        for (const pending_load& p : pending_) {
            if (p.where < source || p.where - source >= bytes || p.width != element_width) continue;
            ++matched;
            ++stats_.string_move_samples;
            ++stats_.edges;
            graph_.add({locations_.at(p.where), locations_.at(destination + (p.where - source)), element_width},
                       options_.period);
        }
        take_pending(matched);
        step([](follower&) {});
    }

    const sampled_copy_graph& graph() const noexcept { return graph_; }
    // Values being followed now: every sampled load followed is ended, stopped at the bound, or still followed.
    std::size_t following() const noexcept { return followers_.size(); }
    const sampled_copy_stats& stats() const noexcept { return stats_; }

private:
    struct pending_load {
        address where = 0;
        std::uint8_t width = 0;
    };
    struct follower {
        copy_node origin;
        value_follower value;
        std::uint32_t steps = 0;
        bool edge_seen = false;
    };

    void take_pending(std::uint64_t matched) {
        stats_.unmatched_samples += pending_.size() - matched;
        pending_.clear();
    }

    void add(follower& f, const copy_edge& edge) {
        f.edge_seen = true;
        ++stats_.edges;
        graph_.add(edge, options_.period);
    }
    // The edge of each use `f`'s value makes: a copy into the stored-to location, a use by the consumer.
    struct use_of {
        sampled_copy_graph_builder& builder;
        follower& f;
        void operator()(value_use use, address where, std::uint8_t width) const {
            builder.add(f, {f.origin, use == value_use::copied ? builder.locations_.at(where) : copy_node::consumer(),
                            width});
        }
    };

    // One value flow event for every value being followed: `apply` it, then end the followings it ends.
    template <class Apply>
    void step(Apply apply) {
        take_pending(0);
        std::erase_if(followers_, [&](follower& f) {
            ++stats_.steps;
            apply(f);
            if (!f.value.holding()) {
                ++stats_.ended;
                return true;
            }
            if (++f.steps < options_.bound) return false;
            ++stats_.bound_reached;
            if (!f.edge_seen) ++stats_.bound_reached_no_edge;
            return true;
        });
    }

    sampled_copy_options options_;
    copy_locations locations_;
    std::vector<pending_load> pending_;
    std::vector<follower> followers_;
    sampled_copy_graph graph_;
    sampled_copy_stats stats_;
};

static_assert(value_flow_sink<sampled_copy_graph_builder>);

} // namespace ojx
