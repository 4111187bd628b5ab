// Exact counts over calling contexts: a bytecode site's count (exact_counts.hpp) is one number, while a profile has
// one context per calling context that reached the site, whose objects come from sampling. Each context gets its
// site's count times its share of the site's sampled allocations (its allocation metrics' instances, or its tracked
// objects where it has no metrics), apportioned so that a site's contexts add up to its count exactly: exact per
// site, estimated per context. A site that no context sampled stands alone, as a stack of its own frame. What
// collapsed stacks and pprof show with `ojx report --value exact-objects` or `never-allocated`.
#pragma once

#include "ojx/apportioned.hpp"
#include "ojx/exact_counts.hpp"
#include "ojx/profile.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace ojx {

struct context_count {
    std::vector<std::string> frames; // leaf first, as context_profile's
    std::string type;
    std::uint64_t objects = 0;         // the site's exact count, this context's part of it
    std::uint64_t site_objects = 0;    // the site's whole count
    std::uint64_t never_allocated = 0; // likewise of what the JVM never allocated (exact_counts.hpp)
    bool split = false;                // a part estimated from sampling (the site had several contexts)
};

class exact_counts_by_context {
public:
    // Keeps what the split needs of a context (its stack, type and sampled allocations), as contexts are read.
    void add(const context_profile& c) {
        if (c.frames.empty()) return;
        // A context with a sampled object stands for at least one allocation.
        const double instances = c.allocated ? c.allocated->total().instances : static_cast<double>(c.objects);
        contexts_.push_back({c.frames, c.type, std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::llround(instances)))});
    }

    // Every site's count over the contexts added, the sites in `counts`' order and each one's contexts in the
    // order added; sites with nothing counted or never allocated are left out.
    std::vector<context_count> finish(const exact_counts& counts) const {
        // Sites one by frame and type: two allocation instructions of one type on one line share their contexts.
        std::map<std::pair<std::string, std::string>, std::pair<std::uint64_t, std::uint64_t>> sites;
        std::vector<std::pair<std::string, std::string>> order;
        for (const counted_site& s : counts.sites) {
            auto [it, inserted] = sites.try_emplace({s.frame, s.type}, 0, 0);
            if (inserted) order.push_back(it->first);
            it->second.first += s.objects;
            it->second.second += not_allocated(counts, s);
        }
        std::map<std::pair<std::string, std::string>, std::vector<std::size_t>> reached;
        for (std::size_t i = 0; i < contexts_.size(); ++i)
            reached[{contexts_[i].frames.front(), contexts_[i].type}].push_back(i);
        std::vector<context_count> out;
        for (const auto& key : order) {
            const auto [objects, never] = sites.at(key);
            if (objects == 0 && never == 0) continue;
            const auto found = reached.find(key);
            if (found == reached.end()) {
                out.push_back({{key.first}, key.second, objects, objects, never, false});
                continue;
            }
            std::vector<std::uint64_t> weights;
            for (const std::size_t i : found->second) weights.push_back(contexts_[i].weight);
            const std::vector<std::uint64_t> parts = apportioned(objects, weights),
                                             never_parts = apportioned(never, weights);
            for (std::size_t k = 0; k < found->second.size(); ++k) {
                const kept& c = contexts_[found->second[k]];
                out.push_back({c.frames, c.type, parts[k], objects, never_parts[k], found->second.size() > 1});
            }
        }
        return out;
    }

private:
    struct kept {
        std::vector<std::string> frames;
        std::string type;
        std::uint64_t weight = 1;
    };
    std::vector<kept> contexts_;
};

// Context `c`'s part of `parts` (exact_counts_by_context::finish), if its site was counted.
inline const context_count* part_of(const std::vector<context_count>& parts, const context_profile& c) {
    for (const context_count& part : parts)
        if (part.type == c.type && part.frames == c.frames) return &part;
    return nullptr;
}

} // namespace ojx
