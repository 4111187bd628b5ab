// A method's control-flow graph as exact allocation counting sees it: blocks holding allocation sites in execution
// order, normal edges between blocks (a return is an edge to the method's exit), and the handlers an exception
// raised inside a block may reach. Counter plans (counter_plan.hpp) place their counters on this graph; the bytecode
// backend builds it from a method's code, the emulation backend generates it (synthetic_cfg.hpp).
//
// Exact counting needs positions finer than blocks: an exception may leave a block after some of its sites and
// before others. A *point* is a block and a cut (how many of its sites have allocated), so a block with k sites has
// the points cut 0 … k; the method's exit is one more point. Points are joined by *site steps* (cut j to cut j + 1:
// the block's j-th site allocates) and by the graph's edges (a block's last point to the first point of the next
// block, or to the exit). Every place a counter can go is one of these two kinds.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ojx::counting {

using block_id = std::uint32_t;
using site_id = std::uint32_t;
using point_id = std::uint32_t;
using edge_index = std::uint32_t;

inline constexpr block_id no_block = std::numeric_limits<block_id>::max();

struct basic_block {
    std::vector<site_id> sites;    // the allocation sites this block executes, in order; each site is in one block
    std::vector<block_id> handlers; // where an exception raised inside the block may go (any of them, by type);
                                    // leaving the method is always possible too
};

// A normal transfer of control. `to` is a block or the graph's exit (a return). `frequency` is how often the edge
// is taken per execution of the method, where measured or estimated; negative where unknown.
struct flow_edge {
    block_id from = 0;
    block_id to = 0;
    double frequency = -1;
};

// Immutable once built (cfg_builder below builds one), so that the planners and the points may index it once.
class control_flow_graph {
public:
    control_flow_graph() : control_flow_graph(std::vector<basic_block>(1), {}) {}
    control_flow_graph(std::vector<basic_block> blocks, std::vector<flow_edge> edges)
        : blocks_(std::move(blocks)), edges_(std::move(edges)) {
        index();
    }

    // Frequencies may be filled in later (measured, then planned again); they change no index.
    void set_frequency(edge_index e, double frequency) { edges_.at(e).frequency = frequency; }

    // The entry is block 0; the exit is a pseudo-block numbered after the last block.
    static constexpr block_id entry() noexcept { return 0; }
    block_id exit() const noexcept { return static_cast<block_id>(blocks_.size()); }
    std::size_t block_count() const noexcept { return blocks_.size(); }
    std::size_t site_count() const noexcept { return sites_; }
    const basic_block& block(block_id b) const { return blocks_.at(b); }
    const std::vector<basic_block>& blocks() const noexcept { return blocks_; }
    const std::vector<flow_edge>& edges() const noexcept { return edges_; }
    const flow_edge& edge(edge_index e) const { return edges_.at(e); }
    const std::vector<edge_index>& successors(block_id b) const { return out_.at(b); }
    const std::vector<edge_index>& predecessors(block_id b) const { return in_.at(b); }
    bool has_frequencies() const noexcept {
        for (const auto& e : edges_)
            if (e.frequency < 0) return false;
        return !edges_.empty();
    }

    // Points: block b's cut j is first_point(b) + j; the exit is the last point.
    point_id first_point(block_id b) const { return first_point_.at(b); }
    point_id last_point(block_id b) const {
        return first_point_.at(b) + static_cast<point_id>(blocks_.at(b).sites.size());
    }
    point_id exit_point() const noexcept { return first_point_.back(); }
    std::size_t point_count() const noexcept { return first_point_.back() + std::size_t{1}; }
    point_id point_of(block_id b, std::uint32_t cut) const { return first_point_.at(b) + cut; }
    // The block a site is in and its position there.
    block_id block_of(site_id s) const { return site_block_.at(s); }
    std::uint32_t position_of(site_id s) const { return site_position_.at(s); }

    // Where the graph is not what the planners accept, why (nullopt when it is): edges and handlers name blocks
    // that exist, nothing leaves the exit, and sites are numbered 0 … n − 1, each in exactly one block.
    std::optional<std::string> problem() const {
        if (blocks_.empty()) return "the graph has no block";
        for (std::size_t i = 0; i < edges_.size(); ++i) {
            const auto& e = edges_[i];
            if (e.from >= blocks_.size()) return "edge " + std::to_string(i) + " leaves a block that does not exist";
            if (e.to > blocks_.size()) return "edge " + std::to_string(i) + " enters a block that does not exist";
        }
        for (std::size_t b = 0; b < blocks_.size(); ++b)
            for (block_id h : blocks_[b].handlers)
                if (h >= blocks_.size())
                    return "block " + std::to_string(b) + " names a handler that does not exist";
        if (!sites_valid_) return "site numbers are not 0 … n − 1, each once";
        return std::nullopt;
    }

private:
    void index() {
        out_.assign(blocks_.size() + 1, {});
        in_.assign(blocks_.size() + 1, {});
        for (std::size_t i = 0; i < edges_.size(); ++i) {
            const auto& e = edges_[i];
            if (e.from < out_.size()) out_[e.from].push_back(static_cast<edge_index>(i));
            if (e.to < in_.size()) in_[e.to].push_back(static_cast<edge_index>(i));
        }
        first_point_.assign(blocks_.size() + 1, 0);
        sites_ = 0;
        point_id next = 0;
        std::size_t highest = 0;
        for (std::size_t b = 0; b < blocks_.size(); ++b) {
            first_point_[b] = next;
            next += static_cast<point_id>(blocks_[b].sites.size() + 1);
            sites_ += blocks_[b].sites.size();
            for (site_id s : blocks_[b].sites) highest = std::max<std::size_t>(highest, s + std::size_t{1});
        }
        first_point_.back() = next;
        site_block_.assign(std::max(sites_, highest), no_block);
        site_position_.assign(site_block_.size(), 0);
        sites_valid_ = site_block_.size() == sites_;
        for (std::size_t b = 0; b < blocks_.size(); ++b)
            for (std::uint32_t j = 0; j < blocks_[b].sites.size(); ++j) {
                const site_id s = blocks_[b].sites[j];
                if (site_block_[s] != no_block) sites_valid_ = false;
                site_block_[s] = static_cast<block_id>(b);
                site_position_[s] = j;
            }
    }

    std::vector<basic_block> blocks_;
    std::vector<flow_edge> edges_;
    std::vector<std::vector<edge_index>> out_, in_;
    std::vector<point_id> first_point_;
    std::vector<block_id> site_block_;
    std::vector<std::uint32_t> site_position_;
    std::size_t sites_ = 0;
    bool sites_valid_ = true;
};

// Builds a graph block by block; `build` indexes it once.
class cfg_builder {
public:
    block_id add_block(std::vector<site_id> sites = {}) {
        blocks_.push_back(basic_block{std::move(sites), {}});
        return static_cast<block_id>(blocks_.size() - 1);
    }
    edge_index add_edge(block_id from, block_id to, double frequency = -1) {
        edges_.push_back(flow_edge{from, to, frequency});
        return static_cast<edge_index>(edges_.size() - 1);
    }
    // A return: an edge to the exit, which is numbered after the last block when the graph is built.
    edge_index add_return(block_id from, double frequency = -1) { return add_edge(from, exit_marker, frequency); }
    void add_handler(block_id block, block_id handler) { blocks_.at(block).handlers.push_back(handler); }
    void add_site(block_id block, site_id site) { blocks_.at(block).sites.push_back(site); }
    std::size_t block_count() const noexcept { return blocks_.size(); }

    control_flow_graph build() && {
        for (auto& e : edges_)
            if (e.to == exit_marker) e.to = static_cast<block_id>(blocks_.size());
        return control_flow_graph(std::move(blocks_), std::move(edges_));
    }

private:
    static constexpr block_id exit_marker = no_block;
    std::vector<basic_block> blocks_;
    std::vector<flow_edge> edges_;
};

} // namespace ojx::counting
