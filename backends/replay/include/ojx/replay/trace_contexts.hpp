// A trace's calling context nodes, rebuilt in a profiler's own tree: trace context ids are mapped to the tree's ids
// as the nodes arrive, each after its parent. Replays of the same trace build the same tree with the same ids,
// whatever they configure otherwise, so their reports name sites alike and can be compared site by site.
#pragma once

#include "ojx/profiler.hpp"
#include "ojx/trace_format.hpp"

#include <cstdint>
#include <unordered_map>

namespace ojx::replay {

class trace_contexts {
public:
    explicit trace_contexts(context_tree& tree) : tree_(tree) {}

    void define(const context_symbol& node) {
        to_tree_[node.id] = node.parent == no_context ? context_tree::root : tree_.child(mapped_parent(node.parent), node.frame);
    }

    // The tree's id of a trace context; no_context for none, and for one the trace has not defined (counted).
    context_id mapped(context_id trace_id) {
        if (trace_id == no_context) return no_context;
        const auto found = to_tree_.find(trace_id);
        if (found != to_tree_.end() && found->second != no_context) return found->second;
        ++undefined_;
        return no_context;
    }

    // Events that named a context node the trace did not define before them.
    std::uint64_t undefined() const noexcept { return undefined_; }

private:
    context_id mapped_parent(context_id trace_id) const {
        const auto found = to_tree_.find(trace_id);
        return found != to_tree_.end() ? found->second : no_context; // child() of no_context is no_context
    }

    context_tree& tree_;
    std::unordered_map<context_id, context_id> to_tree_;
    std::uint64_t undefined_ = 0;
};

} // namespace ojx::replay
