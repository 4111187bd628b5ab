// A counter plan: where a method's counters go and what one increment of each means — the exact number of objects
// each allocation site of the method allocated, recovered from counters that need not sit at the sites.
//
// Every plan here is one spanning forest of the method's points (control_flow_graph.hpp). Links in the forest carry
// no counter; every other link may. Give each point p a *potential* φ(p), a vector over the method's sites: what the
// counters have counted minus what the sites have allocated, when control is at p. φ is zero at the entry and at the
// exit, and constant along every forest link except for the site a site step allocates, which fixes it on every
// point from the roots down. A counter on link u → v then adds
//
//     adds(u → v) = φ(v) − φ(u) + allocated(u → v)
//
// (one site for a site step, nothing for an edge), and a link without a counter satisfies the same equation with
// adds = 0. Summed along any execution from the entry to the exit, the right side telescopes: counted − allocated =
// φ(exit) − φ(entry) = 0. So every plan is exact for every execution, whatever its path — and a counter whose adds
// are zero (DuckTracks' "empty semantics") is dropped.
//
// Exceptions break the sum where they leave a point p for a handler h, or for the caller: there the agent adds
// φ(h) − φ(p), or −φ(p), itself (`on_exception`), on the rare exceptional path, and the sum is exact again. The
// paper leaves exceptions for later; here they cost nothing until one is thrown. Counts read while a method is
// running are off by that execution's φ at its current point; they are exact for every finished execution.
//
// The plans differ only in the forest: one counter per site (no forest: φ = 0 everywhere, each site step counted),
// DuckTracks' hot paths (hot_path_plan.hpp) and a maximum-weight spanning tree's chords (chord_plan.hpp).
#pragma once

#include "ojx/counting/control_flow_graph.hpp"
#include "ojx/counting/edge_frequencies.hpp"

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace ojx::counting {

// A sparse vector over a method's sites, sorted by site, without zero amounts.
struct site_amount {
    site_id site = 0;
    std::int64_t amount = 0;
    friend bool operator==(const site_amount&, const site_amount&) = default;
};
using site_vector = std::vector<site_amount>;

// Where a counter is incremented: right after a site's allocation, or on a flow edge.
struct counter_place {
    enum class kind : std::uint8_t { after_site, on_edge };
    kind where = kind::on_edge;
    std::uint32_t index = 0; // the site, or the flow edge
    friend bool operator==(const counter_place&, const counter_place&) = default;
};

struct counter {
    counter_place place;
    site_vector adds; // what one increment adds to the sites' counts (never empty)
};

// A link between points: a site step (a site allocates) or a flow edge. Links are numbered sites first, then
// edges, so a plan's forest is a list of link numbers.
struct point_link {
    point_id from = 0;
    point_id to = 0;
    std::optional<site_id> allocates;
    counter_place place;
};

inline std::size_t link_count(const control_flow_graph& g) { return g.site_count() + g.edges().size(); }

inline point_link link_of(const control_flow_graph& g, std::size_t link) {
    if (link < g.site_count()) {
        const auto s = static_cast<site_id>(link);
        const point_id from = g.point_of(g.block_of(s), g.position_of(s));
        return point_link{from, from + 1, s, counter_place{counter_place::kind::after_site, s}};
    }
    const auto e = static_cast<edge_index>(link - g.site_count());
    const auto& edge = g.edge(e);
    const point_id to = edge.to == g.exit() ? g.exit_point() : g.first_point(edge.to);
    return point_link{g.last_point(edge.from), to, std::nullopt, counter_place{counter_place::kind::on_edge, e}};
}

inline std::size_t link_of_place(const control_flow_graph& g, counter_place place) {
    return place.where == counter_place::kind::after_site ? place.index : g.site_count() + place.index;
}

class counter_plan {
public:
    counter_plan() = default;

    const std::vector<counter>& counters() const noexcept { return counters_; }
    // The counter on a link, if it has one.
    std::optional<std::uint32_t> counter_on(std::size_t link) const {
        if (link >= link_counter_.size() || link_counter_[link] == none) return std::nullopt;
        return link_counter_[link];
    }

    // φ(p): counted minus allocated when control is at point p.
    site_vector potential(point_id p) const {
        std::vector<site_amount> steps;
        for (point_id q = p; parent_[q] != q; q = parent_[q])
            if (step_sign_[q] != 0) steps.push_back(site_amount{step_site_[q], step_sign_[q]});
        return normalise(std::move(steps));
    }

    // What the agent adds when an exception leaves block `block` after `cut` of its sites allocated, for handler
    // `handler` (no_block: the exception leaves the method).
    site_vector on_exception(const control_flow_graph& g, block_id block, std::uint32_t cut, block_id handler) const {
        site_vector left = potential(g.point_of(block, cut));
        for (auto& a : left) a.amount = -a.amount;
        if (handler == no_block) return left;
        return sum(potential(g.first_point(handler)), left);
    }

    // Increments per execution of the method, from its frequencies. A counter after a site is weighed by its
    // block's arrivals (an exception that leaves the block first makes it a little less).
    double expected_increments(const control_flow_graph& g, const edge_frequencies& f) const {
        double total = 0;
        for (const auto& c : counters_)
            total += c.place.where == counter_place::kind::after_site ? f.block.at(g.block_of(c.place.index))
                                                                        : f.edge.at(c.place.index);
        return total;
    }

    // Builds the plan whose forest takes `preferred` links in order wherever they join two trees (Kruskal's rule),
    // the exit joined to the entry first. Links not preferred always carry a counter (unless its adds are zero).
    static counter_plan from_forest(const control_flow_graph& g, std::span<const std::size_t> preferred) {
        counter_plan plan;
        const std::size_t points = g.point_count();
        std::vector<point_id> set(points);
        std::iota(set.begin(), set.end(), point_id{0});
        const auto find = [&](point_id p) {
            while (set[p] != p) p = set[p] = set[set[p]];
            return p;
        };
        // Forest adjacency: (neighbour, link) per point; the exit–entry join is the link number link_count(g).
        const std::size_t virtual_link = link_count(g);
        std::vector<std::vector<std::pair<point_id, std::size_t>>> adjacent(points);
        const auto join = [&](point_id a, point_id b, std::size_t link) {
            const point_id ra = find(a), rb = find(b);
            if (ra == rb) return false;
            set[ra] = rb;
            adjacent[a].emplace_back(b, link);
            adjacent[b].emplace_back(a, link);
            return true;
        };
        const point_id entry = g.first_point(control_flow_graph::entry());
        join(g.exit_point(), entry, virtual_link);
        std::vector<bool> in_forest(link_count(g), false);
        for (std::size_t link : preferred) {
            if (link >= in_forest.size() || in_forest[link]) continue;
            const auto l = link_of(g, link);
            in_forest[link] = join(l.from, l.to, link);
        }
        // Parents by a walk from each root, the entry's tree first.
        plan.parent_.assign(points, none);
        plan.step_site_.assign(points, 0);
        plan.step_sign_.assign(points, 0);
        std::vector<point_id> order{entry};
        std::vector<point_id> roots{entry};
        for (point_id p = 0; p < points; ++p) roots.push_back(p);
        for (point_id root : roots) {
            if (plan.parent_[root] != none) continue;
            plan.parent_[root] = root;
            order.assign(1, root);
            for (std::size_t next = 0; next < order.size(); ++next) {
                const point_id p = order[next];
                for (const auto& [q, link] : adjacent[p]) {
                    if (plan.parent_[q] != none) continue;
                    plan.parent_[q] = p;
                    order.push_back(q);
                    if (link == virtual_link) continue;
                    const auto l = link_of(g, link);
                    if (!l.allocates) continue;
                    // Along from → to the potential drops by the site allocated; against it, it rises.
                    plan.step_site_[q] = *l.allocates;
                    plan.step_sign_[q] = l.from == p ? -1 : 1;
                }
            }
        }
        plan.link_counter_.assign(link_count(g), none);
        for (std::size_t link = 0; link < link_count(g); ++link) {
            if (in_forest[link]) continue;
            const auto l = link_of(g, link);
            site_vector adds = plan.potential(l.from);
            for (auto& a : adds) a.amount = -a.amount;
            adds = sum(plan.potential(l.to), adds);
            if (l.allocates) adds = sum(adds, site_vector{site_amount{*l.allocates, 1}});
            if (adds.empty()) continue;
            plan.link_counter_[link] = static_cast<std::uint32_t>(plan.counters_.size());
            plan.counters_.push_back(counter{l.place, std::move(adds)});
        }
        return plan;
    }

    static site_vector sum(const site_vector& a, const site_vector& b) {
        std::vector<site_amount> both(a);
        both.insert(both.end(), b.begin(), b.end());
        return normalise(std::move(both));
    }

private:
    static constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();

    static site_vector normalise(std::vector<site_amount> amounts) {
        std::sort(amounts.begin(), amounts.end(), [](const auto& x, const auto& y) { return x.site < y.site; });
        site_vector out;
        for (const auto& a : amounts) {
            if (!out.empty() && out.back().site == a.site) out.back().amount += a.amount;
            else out.push_back(a);
            if (out.back().amount == 0) out.pop_back();
        }
        return out;
    }

    std::vector<counter> counters_;
    std::vector<std::uint32_t> link_counter_;
    std::vector<point_id> parent_;      // roots are their own parent
    std::vector<site_id> step_site_;    // the site allocated on the link to the parent, where step_sign_ ≠ 0
    std::vector<std::int8_t> step_sign_; // φ(p) = φ(parent) + sign · site
};

// Adds what the counters counted to per-site totals: `values` holds each counter's increments, in plan order.
inline void add_counted(const counter_plan& plan, std::span<const std::uint64_t> values,
                        std::span<std::int64_t> site_totals) {
    for (std::size_t c = 0; c < plan.counters().size() && c < values.size(); ++c)
        for (const auto& a : plan.counters()[c].adds)
            site_totals[a.site] += a.amount * static_cast<std::int64_t>(values[c]);
}

// What a planner provides: a name, and a plan for a method's graph given its frequencies.
template <class P>
concept counter_planner = requires(const P& planner, const control_flow_graph& g, const edge_frequencies& f) {
    { P::name } -> std::convertible_to<std::string_view>;
    { planner.plan(g, f) } -> std::same_as<counter_plan>;
};

// The baseline: one counter right after each allocation site.
struct site_counters {
    static constexpr std::string_view name = "sites";
    counter_plan plan(const control_flow_graph& g, const edge_frequencies&) const {
        return counter_plan::from_forest(g, {});
    }
};

} // namespace ojx::counting
