// The heap locations of a copy graph (docs/copy-profiling.md): which node an address is, from the live objects —
// (allocation context, offset) inside one, every element of an array one node, and outside every live object
// (freed memory too) a static location by address. Objects are followed through frees and moves, so an address
// names the node of the object that is there when the access happens.
#pragma once

#include "ojx/allocation_metrics.hpp"
#include "ojx/copy_graph.hpp"
#include "ojx/types.hpp"

#include <cstdint>
#include <map>

namespace ojx {

class copy_locations {
public:
    void on_allocation(address where, std::uint64_t size, context_id context, const allocation_shape& shape) {
        objects_[where] = {size, context, shape.array_length.has_value()};
    }
    void on_free(address where) { objects_.erase(where); }
    void on_move(address from, address to) {
        const auto it = objects_.find(from);
        if (it == objects_.end()) return;
        const object moved = it->second;
        objects_.erase(it);
        objects_[to] = moved;
    }

    copy_node at(address where) const {
        auto it = objects_.upper_bound(where);
        if (it == objects_.begin()) return copy_node::static_location(where);
        --it;
        if (where - it->first >= it->second.size) return copy_node::static_location(where);
        return copy_node::field(it->second.context, it->second.array ? copy_node::elements : where - it->first);
    }

private:
    struct object {
        std::uint64_t size = 0;
        context_id context = no_context;
        bool array = false;
    };

    std::map<address, object> objects_; // live objects by start
};

} // namespace ojx
