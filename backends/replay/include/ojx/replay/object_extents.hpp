// Where each object of a trace begins, how big it is and where it was allocated, kept through allocations, frees
// and moves: what a replay needs to expand a region move (which does not list the objects it moves) into single
// moves, to move an object's bytes, and to find the objects whose contents make the ground truth.
#pragma once

#include "ojx/trace_format.hpp"
#include "ojx/types.hpp"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace ojx::replay {

class object_extents {
public:
    struct extent {
        std::uint64_t size = 0;
        context_id context = no_context; // the trace's id
    };
    struct move {
        address from = 0;
        address to = 0;
        std::uint64_t size = 0;
    };

    // Returns the objects the new one overlaps: they are gone (the runtime reused their memory), as in the profiler.
    std::vector<std::pair<address, extent>> allocate(address where, std::uint64_t size, context_id context) {
        std::vector<std::pair<address, extent>> evicted;
        const address end = where + std::max<std::uint64_t>(size, 1);
        auto it = objects_.lower_bound(where);
        if (it != objects_.begin() && std::prev(it)->first + std::prev(it)->second.size > where) --it;
        while (it != objects_.end() && it->first < end) {
            evicted.emplace_back(*it);
            it = objects_.erase(it);
        }
        objects_[where] = {size, context};
        return evicted;
    }
    void free(address where) { objects_.erase(where); }

    // The object at `from` now begins at `to`; its size, if it was known.
    std::optional<std::uint64_t> move_object(address from, address to) {
        const auto found = objects_.find(from);
        if (found == objects_.end()) return std::nullopt;
        const extent object = found->second;
        objects_.erase(found);
        objects_[to] = object;
        return object.size;
    }

    // Every object that begins in the region moves by the same distance: the single moves, in the order that never
    // lands one on another not yet moved (lowest first when sliding down, highest first when sliding up), applied.
    std::vector<move> move_region(const region_move_event& r) {
        std::vector<move> moves;
        for (auto it = objects_.lower_bound(r.from); it != objects_.end() && it->first - r.from < r.length; ++it)
            moves.push_back({it->first, it->first - r.from + r.to, it->second.size});
        if (r.to > r.from) std::reverse(moves.begin(), moves.end());
        for (const move& m : moves) move_object(m.from, m.to);
        return moves;
    }

    // A collection that lists its survivors (a JVM's): each survivor now begins at `to` (its context kept if it
    // was known), and every object not listed is dead.
    template <class Survivor>
    void relocate(const std::vector<Survivor>& survivors) {
        std::map<address, extent> relocated;
        for (const Survivor& s : survivors) {
            const auto known = objects_.find(s.from);
            relocated[s.to] = {s.size, known != objects_.end() ? known->second.context : no_context};
        }
        objects_ = std::move(relocated);
    }

    const std::map<address, extent>& objects() const noexcept { return objects_; }

private:
    std::map<address, extent> objects_;
};

} // namespace ojx::replay
