// An ojx profile in memory: the documented JSON profile (docs/profile-format.md) as values. The agents and the
// emulation demo make one from the profiler's report (report.hpp), `ojx` reads one from a file (tools/ojx's
// profile_reader), merges them, and every output is made from it: the JSON (profile_writer.hpp), the text report
// (text_report.hpp), and `ojx`'s HTML, collapsed stacks and pprof. It holds the sufficient statistics, so that
// profiles merge exactly; the estimates are recomputed from them. A run that built a copy graph adds its copy
// section (copy_profile.hpp).
#pragma once

#include "ojx/allocation_metrics.hpp"
#include "ojx/copy_profile.hpp"
#include "ojx/exact_counts.hpp"
#include "ojx/live_heap.hpp"
#include "ojx/profiler.hpp"
#include "ojx/site_estimate.hpp"
#include "ojx/whole_object_evidence.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ojx {

// A calling context where objects of an allocation context were used, and how often it was sampled there.
struct named_access_context {
    std::vector<std::string> frames; // leaf first
    std::uint64_t samples = 0;
};

// One type's allocation metrics by name (a context_allocations entry, or a profile's).
struct named_type_allocations {
    std::string type;
    type_allocations counts; // its `type` id is not used: the name is what profiles carry
};

// A context's allocation metrics as a profile carries them: JP's instances per type, arrays and their elements.
struct named_allocations {
    bool estimated = false; // scaled from sampled allocations (else every allocation was counted)
    std::vector<named_type_allocations> types;
    type_allocations other; // types beyond the table, summed (seen == 0: none)

    type_allocations total() const noexcept {
        type_allocations sum = other;
        for (const named_type_allocations& t : types) sum += t.counts;
        return sum;
    }
};

// The element type of an array type by its name ("byte" for "byte[]", "java.lang.String[]" for
// "java.lang.String[][]"); empty when the name does not say.
inline std::string_view array_element_type(std::string_view type) noexcept {
    return type.ends_with("[]") ? type.substr(0, type.size() - 2) : std::string_view{};
}

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
    std::vector<named_access_context> accesses; // most sampled first
    // The heap view (live_heap.hpp): the site's objects alive at the run's heap moment (run.heap_moments), and
    // the identical groups among them, estimated as `identical` is (recomputed by estimate_from_evidence).
    // Profiles written before it have none: no heap view.
    live_summary live;
    identical_groups_estimate live_identical;
    site_estimate heap;

    // Recomputes identical, near and combined from `whole` and `estimate` with the run's settings, as the profiler
    // computed them (digest_population: the tracked objects are the population where allocations were counted; a
    // context without metrics counts as its objects, exactly, as `ojx merge` counts it).
    void estimate_from_evidence(const estimator_config& config) {
        identical = estimate_identical_groups(whole.identical, config.confidence, digested_population());
        near = estimate_near_replicas(whole.near, whole.objects());
        combined = combine_estimates(estimate, identical, config);
        estimate_heap(config);
    }

    // The heap view's estimate from `live` (whole objects only: comparisons are of objects over the run).
    void estimate_heap(const estimator_config& config) {
        live_identical = estimate_live_groups(live, config.confidence, !allocations_estimated());
        heap = combine_estimates(replica_estimate{}, live_identical, config);
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

    // The population its digested objects were drawn from (digest_population: 0 where unknown).
    std::uint64_t digested_population() const noexcept {
        return digest_population(objects, allocated_total().instances, !allocations_estimated());
    }

    // At least this many bytes would be saved if the replicas shared one copy.
    double replicated_bytes() const noexcept {
        const type_allocations total = allocated_total();
        return replicated_bytes_lower_bound(combined, total.instances, total.bytes);
    }

    // The two views of what sharing saves: in the heap, the replicated bytes alive at the heap moment; in churn,
    // the replicated bytes allocated over the run (per second: divided by run.seconds). Each from its share's
    // interval; the churn's lower end is replicated_bytes().
    saving heap_saving() const noexcept { return saving_of(heap, live.weight, live.bytes); }
    saving churn_saving() const noexcept {
        const type_allocations total = allocated_total();
        return saving_of(combined, total.instances, total.bytes);
    }
};

// A numeric counter of the run, by its path in the profile's `run` object ("samples",
// "samples_dropped.store", "agent.single_steps"), in the order the profile lists them.
struct run_counter {
    std::string path;
    std::uint64_t value = 0;
};

// The profiler's counters as the profile names them, in the profile's order: the one table of them for the
// profile's writer (`starts_line`: the counter begins a line of the run object) and for the report's conversion.
struct profiler_counter {
    std::string_view path;
    std::uint64_t profiler_stats::*value;
    bool starts_line;
};

inline constexpr profiler_counter profiler_counters[] = {
    {"allocations", &profiler_stats::allocations, true},
    {"allocations_ignored.below_size_threshold", &profiler_stats::allocations_ignored_small, false},
    {"allocations_ignored.context_table_full", &profiler_stats::allocations_ignored_contexts_full, false},
    {"frees", &profiler_stats::frees, false},
    {"moves", &profiler_stats::moves, false},
    {"objects_evicted_by_overlap", &profiler_stats::objects_evicted_by_overlap, false},
    {"samples", &profiler_stats::samples, true},
    {"samples_dropped.untracked_address", &profiler_stats::samples_untracked, false},
    {"samples_dropped.object_map_busy", &profiler_stats::samples_busy, false},
    {"samples_dropped.store", &profiler_stats::samples_stores_ignored, false},
    {"samples_dropped.unreadable", &profiler_stats::samples_unreadable, false},
    {"watchpoints_armed", &profiler_stats::watch_armed, true},
    {"watchpoints_evicted", &profiler_stats::watch_evicted, false},
    {"watchpoints_declined", &profiler_stats::watch_declined, false},
    {"watchpoints_cancelled", &profiler_stats::watch_cancelled, false},
    {"watchpoint_arm_failures", &profiler_stats::watch_arm_failures, false},
    {"traps", &profiler_stats::traps, true},
    {"traps_stale", &profiler_stats::traps_stale, false},
    {"comparisons", &profiler_stats::comparisons, false},
    {"objects_digested", &profiler_stats::objects_digested, true},
    {"bytes_digested", &profiler_stats::bytes_digested, false},
    {"digests_skipped.budget", &profiler_stats::digests_skipped_budget, false},
    {"digests_skipped.unreadable", &profiler_stats::digests_unreadable, false},
};

// Where a counter stands in profiler_counters (its size for one the table does not know, e.g. "agent.…").
inline std::size_t profiler_counter_index(std::string_view path) noexcept {
    std::size_t i = 0;
    while (i < std::size(profiler_counters) && profiler_counters[i].path != path) ++i;
    return i;
}

// How the allocation metrics of a run were counted, for the profile's run.allocation_counts. `tracking_target`:
// tracked allocations per second an adaptive run aimed at (0: the interval was fixed).
inline std::string describe_allocation_counting(std::uint64_t sampling_interval, std::uint64_t tracking_target = 0) {
    if (tracking_target != 0)
        return "estimated from heap sampling at an interval moved to track about " + std::to_string(tracking_target) +
               " allocations per second: each sampled object of s bytes counts 1/(1 - exp(-s/N)) objects, N being "
               "the interval in force when it was sampled (all of them counted while N was 0)";
    if (sampling_interval == 0) return "exact: every allocation of at least the size threshold counted";
    return "estimated from heap sampling every " + std::to_string(sampling_interval) +
           " bytes on average: each sampled object of s bytes counts 1/(1 - exp(-s/" +
           std::to_string(sampling_interval) + ")) objects";
}

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
    // The heap view's moment of each run (live_heap_moment::describe), every distinct one; none where no run had
    // one (a profile written before the heap view, a replay).
    std::vector<std::string> heap_moments;
    // The run's wall time in seconds (after a merge, the longest run's: the processes of one tree run at once);
    // 0 where unknown, and then churn is shown over the run, not per second.
    double seconds = 0;

    // The counter at `path`, 0 where the profile has none.
    std::uint64_t counter(std::string_view path) const noexcept {
        for (const run_counter& c : counters)
            if (c.path == path) return c.value;
        return 0;
    }
};

struct profile {
    run_profile run;
    std::vector<context_profile> contexts; // in rank order (ranks_before below)
    std::optional<copy_profile> copies; // none where the run made no copy graph
    std::optional<exact_counts> exact;  // none where the run counted no allocation exactly (count=)
};

// The order every output lists contexts in: the profile's rank rule (the combined estimate, then comparisons),
// then the site, so that output does not depend on the order profiles were merged in.
inline bool ranks_before(const context_profile& a, const context_profile& b) noexcept {
    if (ranks_before(a.combined, b.combined)) return true;
    if (ranks_before(b.combined, a.combined)) return false;
    if (ranks_before(a.estimate, b.estimate)) return true;
    if (ranks_before(b.estimate, a.estimate)) return false;
    if (a.type != b.type) return a.type < b.type;
    return a.frames < b.frames;
}

// What a report ranks sites by: the largest group's share (its interval's lower end, what the evidence is sure
// of), or what sharing would at least save in the heap at its moment or in allocation churn over the run (each
// saving's lower end), then the share.
enum class site_rank : std::uint8_t { share, heap, churn };
inline constexpr std::string_view site_rank_names[] = {"share", "heap", "churn"};

inline std::optional<site_rank> parse_site_rank(std::string_view name) noexcept {
    for (std::size_t i = 0; i < std::size(site_rank_names); ++i)
        if (site_rank_names[i] == name) return static_cast<site_rank>(i);
    return std::nullopt;
}

inline bool ranks_before(const context_profile& a, const context_profile& b, site_rank rank) noexcept {
    if (rank != site_rank::share) {
        const double x = rank == site_rank::heap ? a.heap_saving().low : a.churn_saving().low;
        const double y = rank == site_rank::heap ? b.heap_saving().low : b.churn_saving().low;
        if (x != y) return x > y;
    }
    return ranks_before(a, b);
}

// "a; b" for a field with several values after a merge.
inline std::string joined(const std::vector<std::string>& values) {
    std::string out;
    for (const std::string& value : values) out += (out.empty() ? "" : "; ") + value;
    return out;
}

} // namespace ojx
