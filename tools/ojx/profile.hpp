// An ojx profile as the `ojx` command holds it: the documented JSON profile (docs/profile-format.md) as values,
// one allocation context at a time. Everything the command writes (text, HTML, collapsed stacks, pprof, merged
// JSON) is made from these.
#pragma once

#include "ojx/report.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ojx::tool {

// A calling context where objects of an allocation context were used, and how often it was sampled there.
using access_context = named_access_context;

// One allocation context (site): what it allocated, the evidence gathered on it and the estimate.
struct context_profile {
    std::string type;
    std::vector<std::string> frames; // leaf first: frames.front() is the allocation site
    std::uint64_t objects = 0;
    std::uint64_t bytes = 0;
    // JP's allocation metrics (instances per type, arrays and their elements). Profiles written before they were
    // carried have none.
    std::optional<named_allocations> allocated;
    // The sufficient statistics the estimate comes from. Profiles written before they were carried have none;
    // such contexts can be reported but not merged.
    bool has_evidence = false;
    evidence_summary evidence;
    replica_estimate estimate; // as the profile says, or recomputed from `evidence` after a merge
    // Objects digested whole (profiles written before this evidence existed have none, which is what it is:
    // nothing digested) and what is estimated from them and from `estimate`; recomputed when read
    // (estimate_from_evidence), so they always follow the summary.
    whole_object_summary whole;
    identical_groups_estimate identical;
    near_replica_estimate near;
    site_estimate combined; // the site's estimate and the evidence it rests on
    std::vector<access_context> accesses; // most sampled first

    // Recomputes identical, near and combined from `whole` and `estimate` with the run's settings, as the profiler
    // computed them (digest_population: the tracked objects are the population where each had weight 1).
    void estimate_from_evidence(const estimator_config& config) {
        identical = estimate_identical_groups(whole.identical, config.confidence,
                                              digest_population(objects, allocated_total().instances));
        near = estimate_near_replicas(whole.near, whole.objects());
        combined = combine_estimates(estimate, identical, config);
    }

    // Instances and bytes the context allocated: the allocation metrics' totals (estimates where allocations
    // were sampled), or the tracked objects where the profile has no metrics.
    type_allocations allocated_total() const noexcept {
        if (allocated) return allocated->total();
        type_allocations total;
        total.seen = objects;
        total.instances = static_cast<double>(objects);
        total.bytes = static_cast<double>(bytes);
        return total;
    }
    bool allocations_estimated() const noexcept { return allocated && allocated->estimated; }

    // At least this many bytes would be saved if the replicas shared one copy.
    double replicated_bytes() const noexcept {
        const type_allocations total = allocated_total();
        return replicated_bytes_lower_bound(combined, total.instances, total.bytes);
    }
};

// A numeric counter of the run, by its path in the profile's `run` object ("samples",
// "samples_dropped.store", "agent.single_steps"), in the order the profile lists them.
struct run_counter {
    std::string path;
    std::uint64_t value = 0;
};

// Facts about the run (or runs, after a merge).
struct run_profile {
    // Each descriptive field with every distinct value seen (one for a single profile), sorted after a merge.
    std::vector<std::string> runtime, sampler, watchpoints, pairing, replacement;
    std::vector<std::string> allocation_counts; // how allocation metrics were counted (none in older profiles)
    // Adaptive tracking (run.allocation_sampling): every target of tracked allocations per second the runs aimed
    // at, sorted (none where every run had a fixed interval), and the smallest and largest interval their tracked
    // objects were sampled at.
    std::vector<std::uint64_t> tracking_targets;
    std::optional<std::pair<std::uint64_t, std::uint64_t>> sampled_interval_range;
    std::vector<run_counter> counters;
    estimator_config estimator;
    std::uint64_t profiles = 1; // how many profiles this one was merged from
};

struct profile {
    run_profile run;
    std::vector<context_profile> contexts; // in rank order (ojx::ranks_before on the estimates)
};

// The order every output lists contexts in: the profile's rank rule (the combined estimate, then comparisons),
// then the site, so that output does not depend on the order profiles were merged in.
inline bool ranks_before(const context_profile& a, const context_profile& b) noexcept {
    if (ojx::ranks_before(a.combined, b.combined)) return true;
    if (ojx::ranks_before(b.combined, a.combined)) return false;
    if (ojx::ranks_before(a.estimate, b.estimate)) return true;
    if (ojx::ranks_before(b.estimate, a.estimate)) return false;
    if (a.type != b.type) return a.type < b.type;
    return a.frames < b.frames;
}

// "a; b" for a field with several values after a merge.
inline std::string joined(const std::vector<std::string>& values) {
    std::string out;
    for (const std::string& value : values) out += (out.empty() ? "" : "; ") + value;
    return out;
}

} // namespace ojx::tool
