// Executes a synthetic method (synthetic_cfg.hpp) under a counter plan, as an instrumented method would run: random
// paths by the edges' probabilities, exceptions raised at random points and caught by a handler or leaving the
// method, every site's allocations recorded (the truth), every counter the path passes incremented (the cost), and
// on each exception the plan's correction added, as the agent adds it at the throw. A walk longer than `step_limit`
// ends as an exception leaving the method, as a stack overflow would.
#pragma once

#include "ojx/counting/control_flow_graph.hpp"
#include "ojx/counting/counter_plan.hpp"
#include "ojx/emulation/synthetic_cfg.hpp"
#include "ojx/random.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace ojx::emulation {

// What the instrumented method leaves behind: its counters' values and the corrections added at throws.
struct counting_state {
    std::vector<std::uint64_t> counters;
    std::vector<std::int64_t> corrections; // per site

    counting_state(const counting::counter_plan& plan, std::size_t sites)
        : counters(plan.counters().size(), 0), corrections(sites, 0) {}

    // The sites' counts as the agent reports them.
    std::vector<std::int64_t> counts(const counting::counter_plan& plan) const {
        std::vector<std::int64_t> totals(corrections);
        counting::add_counted(plan, counters, totals);
        return totals;
    }
};

struct execution_truth {
    std::vector<std::int64_t> allocated; // per site, over every execution so far
    std::uint64_t increments = 0;        // counter increments
    std::uint64_t corrections = 0;       // exceptions corrected
    std::uint64_t steps = 0;             // blocks entered

    explicit execution_truth(std::size_t sites) : allocated(sites, 0) {}
};

class cfg_executor {
public:
    cfg_executor(const synthetic_method& method, const counting::counter_plan& plan, std::uint64_t step_limit = 4096)
        : method_(method), plan_(plan), limit_(step_limit) {}

    // One execution from the entry to a return or an exception leaving the method.
    void run(fast_random& random, counting_state& state, execution_truth& truth) const {
        const auto& g = method_.graph;
        counting::block_id b = counting::control_flow_graph::entry();
        for (std::uint64_t step = 0;; ++step) {
            ++truth.steps;
            const auto& block = g.block(b);
            const auto& out = g.successors(b);
            bool moved = false;
            for (std::uint32_t cut = 0; cut <= block.sites.size(); ++cut) {
                const bool last = cut == block.sites.size();
                if (random.unit() < method_.throw_probability || (last && out.empty()) || step >= limit_) {
                    b = raise(random, state, truth, b, cut, step >= limit_);
                    if (b == counting::no_block) return;
                    moved = true;
                    break;
                }
                if (last) break;
                const counting::site_id s = block.sites[cut];
                ++truth.allocated[s];
                bump(state, truth, s);
            }
            if (moved) continue;
            const counting::edge_index e = choose(random, out);
            bump(state, truth, g.site_count() + e);
            b = g.edge(e).to;
            if (b == g.exit()) return;
        }
    }

private:
    void bump(counting_state& state, execution_truth& truth, std::size_t link) const {
        if (const auto c = plan_.counter_on(link)) {
            ++state.counters[*c];
            ++truth.increments;
        }
    }

    // An exception at (b, cut): to a handler of the block (four times in five, where it has one) or out of the
    // method. Returns the handler, or no_block when the execution ends.
    counting::block_id raise(fast_random& random, counting_state& state, execution_truth& truth, counting::block_id b,
                             std::uint32_t cut, bool out) const {
        const auto& handlers = method_.graph.block(b).handlers;
        counting::block_id to = counting::no_block;
        if (!out && !handlers.empty() && random.below(5) != 0) to = handlers[random.below(handlers.size())];
        for (const auto& a : plan_.on_exception(method_.graph, b, cut, to)) state.corrections[a.site] += a.amount;
        ++truth.corrections;
        return to;
    }

    counting::edge_index choose(fast_random& random, const std::vector<counting::edge_index>& out) const {
        double u = random.unit();
        for (const auto e : out) {
            u -= method_.take[e];
            if (u < 0) return e;
        }
        return out.back();
    }

    const synthetic_method& method_;
    const counting::counter_plan& plan_;
    std::uint64_t limit_;
};

} // namespace ojx::emulation
