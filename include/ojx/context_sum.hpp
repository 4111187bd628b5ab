// Adding one context's evidence to another's: what `ojx merge` does for one site seen in several profiles, and what
// pooling does for the contexts of one allocation site reached from several callers (site_pools.hpp). Every part
// of the evidence adds exactly: objects digested whole by their content digests, comparisons by their sums,
// allocation metrics per type. The estimate is then recomputed from the sum, never averaged.
#pragma once

#include "ojx/profile.hpp"

#include <algorithm>
#include <tuple>
#include <utility>

namespace ojx {

// A context's allocation metrics, or, for a context written without them (an older profile), its tracked objects
// counted exactly under its type.
inline named_allocations allocations_of(const context_profile& c) {
    if (c.allocated) return *c.allocated;
    named_allocations as_tracked;
    as_tracked.types.push_back({c.type, c.allocated_total()});
    return as_tracked;
}

// Allocation metrics add up per type: exact + exact is exact; anything estimated makes the sum an estimate.
inline void add_allocations(context_profile& into, const context_profile& more) {
    if (!into.allocated && !more.allocated) return;
    named_allocations sum = allocations_of(into);
    const named_allocations added = allocations_of(more);
    sum.estimated = sum.estimated || added.estimated;
    sum.other += added.other;
    for (const named_type_allocations& t : added.types) {
        const auto same = std::find_if(sum.types.begin(), sum.types.end(), [&](const named_type_allocations& s) {
            return s.type == t.type && s.counts.array == t.counts.array;
        });
        if (same != sum.types.end()) same->counts += t.counts;
        else sum.types.push_back(t);
    }
    // In an order that does not depend on the inputs'.
    std::sort(sum.types.begin(), sum.types.end(), [](const named_type_allocations& a, const named_type_allocations& b) {
        return std::tie(a.type, a.counts.array) < std::tie(b.type, b.counts.array);
    });
    into.allocated = std::move(sum);
}

// `more`'s objects, metrics and evidence added to `into`'s (not its access contexts, which callers fold their own
// way). Comparison sums add only where both have them: a context without them (an older profile) cannot be
// summed, which the caller decides what to do about. Afterwards the caller recomputes the estimate
// (estimate_replicas from `evidence`, then estimate_from_evidence).
inline void add_context_evidence(context_profile& into, const context_profile& more) {
    add_allocations(into, more); // before the objects add up: a context without metrics counts as its objects
    into.objects += more.objects;
    into.bytes += more.bytes;
    if (into.has_evidence && more.has_evidence) into.evidence += more.evidence;
    into.has_evidence = into.has_evidence && more.has_evidence;
    into.whole += more.whole; // a context without whole-object evidence digested nothing: adding it is exact
    into.live += more.live;   // each profile's heap moment: the sum of the processes' heaps at their moments
}

} // namespace ojx
