// Synthetic methods for testing counter plans, as synthetic heaps are for the replica estimator: a seeded generator
// of control-flow graphs shaped like compiled code — sequences, if/else, switches with fall-through, while and
// do-while loops nested to a chosen depth with break and continue, early returns, throws, try regions whose blocks
// may reach their handlers, blocks holding several allocation sites — and, on request, jumps into the middle of a loop
// that make the graph irreducible. Each edge gets the probability of being taken from its block (skewed so that
// methods have hot paths; loops repeat a few times), and each point a chance of raising an exception, so that
// cfg_executor.hpp can walk executions whose truth is known.
#pragma once

#include "ojx/counting/control_flow_graph.hpp"
#include "ojx/random.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace ojx::emulation {

struct cfg_shape {
    std::uint32_t statements = 24;      // about how many statements the method has
    std::uint32_t max_depth = 4;        // nesting of loops, branches and try regions
    double sites_per_block = 0.7;       // mean allocation sites a block holds (0 … 3 each)
    double throw_probability = 0.002;   // chance that an exception is raised at any one point
    bool exceptions = true;             // try regions, handlers and throw statements
    std::uint32_t irreducible_jumps = 0; // jumps from outside into a loop body
};

struct synthetic_method {
    counting::control_flow_graph graph;
    std::vector<double> take; // per edge: the probability of leaving its block by it
    double throw_probability = 0;
};

namespace detail {

class cfg_generator {
public:
    cfg_generator(fast_random& random, const cfg_shape& shape) : random_(random), shape_(shape) {}

    synthetic_method generate() && {
        const auto entry = fresh();
        budget_ = shape_.statements;
        const auto end = region(entry, 0);
        if (end) edge(*end, exit_, 1.0);
        for (std::uint32_t i = 0; i < shape_.irreducible_jumps && !loop_bodies_.empty(); ++i) {
            const auto& body = loop_bodies_[random_.below(loop_bodies_.size())];
            const auto into = body.second[random_.below(body.second.size())];
            // From a block made before the loop's header, so that the jump enters the loop from outside.
            if (body.first == 0) continue;
            const auto from = static_cast<counting::block_id>(random_.below(body.first));
            edge(from, into, 0.3);
        }
        return finish();
    }

private:
    static constexpr counting::block_id exit_ = counting::no_block; // the builder's exit until the graph is built

    counting::block_id fresh() {
        const auto b = builder_.add_block();
        const auto sites = random_.below(4);
        for (std::uint64_t i = 0; i < sites; ++i)
            if (random_.unit() < shape_.sites_per_block / 1.5) builder_.add_site(b, next_site_++);
        for (auto h : handlers_) builder_.add_handler(b, h);
        return b;
    }

    void edge(counting::block_id from, counting::block_id to, double weight) {
        if (to == exit_) builder_.add_return(from);
        else builder_.add_edge(from, to);
        edges_.emplace_back(from, weight);
    }

    // Skewed weights: most branches have a clearly hotter side.
    double weight() {
        const double u = random_.unit();
        return 0.02 + u * u;
    }

    // Generates statements starting in block `cur`; returns the block control falls out of, or nothing when the
    // region ends in a return, throw, break or continue.
    std::optional<counting::block_id> region(counting::block_id cur, std::uint32_t depth) {
        const auto count = 1 + random_.below(4);
        for (std::uint64_t i = 0; i < count && budget_ > 0; ++i) {
            --budget_;
            const auto next = statement(cur, depth);
            if (!next) return std::nullopt;
            cur = *next;
        }
        return cur;
    }

    std::optional<counting::block_id> statement(counting::block_id cur, std::uint32_t depth) {
        const bool nest = depth < shape_.max_depth;
        switch (random_.below(nest ? 10 : 2)) {
        case 0: { // a new block, as after a call that ends a block
            const auto b = fresh();
            edge(cur, b, 1.0);
            return b;
        }
        case 1: // jumps out: return, throw, break or continue (the last two inside loops)
            return jump(cur);
        case 2:
        case 3: { // if, or if/else
            const auto then = fresh(), join = fresh();
            edge(cur, then, weight());
            if (const auto end = region(then, depth + 1)) edge(*end, join, 1.0);
            if (random_.below(2) == 0) edge(cur, join, weight());
            else {
                const auto other = fresh();
                edge(cur, other, weight());
                if (const auto end = region(other, depth + 1)) edge(*end, join, 1.0);
            }
            return join;
        }
        case 4: { // switch, cases falling through to the next now and then
            const auto join = fresh();
            const auto cases = 2 + random_.below(4);
            counting::block_id fall = counting::no_block; // a case that falls through into the next
            for (std::uint64_t c = 0; c < cases; ++c) {
                const auto arm = fresh();
                edge(cur, arm, weight());
                if (fall != counting::no_block) edge(fall, arm, 1.0);
                fall = counting::no_block;
                if (const auto end = region(arm, depth + 1)) {
                    if (random_.below(4) == 0 && c + 1 < cases) fall = *end;
                    else edge(*end, join, 1.0);
                }
            }
            if (fall != counting::no_block) edge(fall, join, 1.0);
            edge(cur, join, weight()); // the default
            return join;
        }
        case 5:
        case 6: { // while: the header tests, the body runs, continue goes back, break goes out
            const auto header = fresh(), after = fresh();
            edge(cur, header, 1.0);
            const auto body = fresh();
            edge(header, body, 3.0 + 6.0 * random_.unit());
            edge(header, after, 1.0);
            loops_.push_back({header, after});
            const auto first = static_cast<counting::block_id>(builder_.block_count());
            if (const auto end = region(body, depth + 1)) edge(*end, header, 1.0);
            loops_.pop_back();
            note_body(header, body, first);
            return after;
        }
        case 7: { // do-while: the body first, the test at its end
            const auto body = fresh(), after = fresh();
            edge(cur, body, 1.0);
            loops_.push_back({body, after});
            const auto first = static_cast<counting::block_id>(builder_.block_count());
            if (const auto end = region(body, depth + 1)) {
                edge(*end, body, 3.0 + 6.0 * random_.unit());
                edge(*end, after, 1.0);
            }
            loops_.pop_back();
            note_body(body, body, first);
            return after;
        }
        default: { // try/catch: blocks made inside the try region may reach the handler
            if (!shape_.exceptions) return cur;
            const auto handler = fresh(), join = fresh(), start = fresh();
            edge(cur, start, 1.0);
            handlers_.push_back(handler);
            builder_.add_handler(start, handler);
            const auto end = region(start, depth + 1);
            handlers_.pop_back();
            if (end) edge(*end, join, 1.0);
            if (const auto caught = region(handler, depth + 1)) edge(*caught, join, 1.0);
            return join;
        }
        }
    }

    std::optional<counting::block_id> jump(counting::block_id cur) {
        const auto kind = random_.below(shape_.exceptions ? 4 : 3);
        if (kind == 0) {
            edge(cur, exit_, 1.0);
            return std::nullopt;
        }
        if (kind == 3) return std::nullopt; // throw: a block with no normal successor
        if (loops_.empty()) return cur;
        const auto& loop = loops_.back();
        edge(cur, kind == 1 ? loop.first : loop.second, 1.0); // continue, break
        return std::nullopt;
    }

    void note_body(counting::block_id header, counting::block_id body, counting::block_id first_inside) {
        std::vector<counting::block_id> inside{body};
        for (auto b = first_inside; b < builder_.block_count(); ++b) inside.push_back(b);
        if (body != header) loop_bodies_.emplace_back(header, std::move(inside));
    }

    synthetic_method finish() {
        synthetic_method m{std::move(builder_).build(), {}, shape_.exceptions ? shape_.throw_probability : 0.0};
        // Normalise each block's weights into probabilities.
        std::vector<double> total(m.graph.block_count(), 0.0);
        for (const auto& [from, w] : edges_) total[from] += w;
        for (const auto& [from, w] : edges_) m.take.push_back(w / total[from]);
        return m;
    }

    fast_random& random_;
    const cfg_shape& shape_;
    counting::cfg_builder builder_;
    std::vector<std::pair<counting::block_id, double>> edges_; // per edge in order: its block and weight
    std::vector<counting::block_id> handlers_;                 // the try regions open now, outermost first
    std::vector<std::pair<counting::block_id, counting::block_id>> loops_; // open loops: continue and break targets
    std::vector<std::pair<counting::block_id, std::vector<counting::block_id>>> loop_bodies_;
    std::uint32_t budget_ = 0;
    counting::site_id next_site_ = 0;
};

} // namespace detail

inline synthetic_method generate_method(fast_random& random, const cfg_shape& shape = {}) {
    return detail::cfg_generator(random, shape).generate();
}

} // namespace ojx::emulation
