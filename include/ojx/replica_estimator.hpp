// The replica estimator: per allocation context, the evidence gathered by comparisons (equal / different),
// an online estimate of α, and the estimate the report prints — θ with a confidence interval, α, and the
// bounds ω and γ on the largest identical group with that uncertainty carried into them.
//
// α online. α is the chance that a comparison finds two *non-identical* objects equal. A pair of objects
// compared at two or more places is known to be non-identical once one place differs; the places compared
// *after* that first difference are, for that pair, unbiased draws of "equal although not identical" (the
// ones before it are all equal by construction and are left out). Their equal fraction estimates α.
//
// Uncertainty. Comparisons are not independent: the places compared in one pair agree or disagree together,
// and one remembered source object is compared with many later targets (a minority-group source makes all of
// them differ). Treating comparisons as independent gives intervals far too narrow. The interval for θ is
// therefore cluster-robust, with clusters = source objects: the variance of θ̂ comes from the spread of the
// per-source counts, and Wilson's interval is taken at the effective sample size that variance implies
// (Kish's design effect). Where θ̂ is 0 or 1 the spread says nothing, and the number of sources is used.
// ω and γ are reported with the intervals carried in: ω from the low end of θ and the high end of α, γ from
// the high end of θ and the low end of α. Once comparisons have differed but no α evidence exists, α's interval
// is [0, 1] and ω is 0: θ alone cannot tell identical objects from partial replicas that compare equal at most
// places, and taking α as 0 there made ω ≈ θ overshoot a partial replica's largest group. Where nothing ever
// differed, α is taken as 0 (ω = θ's low end): replicas the comparisons cannot tell apart count as replicas.
// Record functions are signal-safe (fixed storage, no allocation).
#pragma once

#include "ojx/replica_bounds.hpp"

#include <algorithm>

#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace ojx {

struct estimator_config {
    // No estimate is reported for a context with fewer comparisons than this.
    std::uint64_t min_comparisons = 20;
    // Confidence level of the intervals for θ and α, and of the whole-object intervals.
    double confidence = 0.95;
    // Whole-object evidence is a site's estimate once it has this many digested objects (site_estimate.hpp):
    // three, the fewest whose pairs can show identity (one object shows nothing, two one pair), and enough for an
    // honest interval, which is built for that few (identical_groups.hpp).
    std::uint64_t min_digested_objects = 3;
};

struct replica_estimate {
    bool reported = false; // false: too few comparisons; the numbers below are then not meaningful
    std::uint64_t objects = 0;
    std::uint64_t equal = 0;
    std::uint64_t different = 0;
    std::uint64_t pairs = 0;
    std::uint64_t sources = 0;       // distinct source objects the comparisons came from (clusters)
    double effective_comparisons = 0; // the sample size θ's interval is computed at
    double theta = 0;
    interval theta_ci;
    double alpha = 0;    // 0 when alpha_comparisons is 0 (nothing measured)
    interval alpha_ci;   // [0, 1] when alpha_comparisons is 0, [0, 0] if no comparison differed either
    std::uint64_t alpha_equal = 0;
    std::uint64_t alpha_comparisons = 0;
    double omega = 0; // lower bound on X_N/X, uncertainty carried in
    double gamma = 1; // upper bound on X_N/X, uncertainty carried in

    std::uint64_t comparisons() const noexcept { return equal + different; }
};

// The sufficient statistics of a context's evidence: everything an estimate is computed from. Sums of two
// summaries (other threads, processes, hosts) give the summary of the union, so profiles merge exactly.
struct evidence_summary {
    std::uint64_t equal = 0;
    std::uint64_t different = 0;
    std::uint64_t pairs = 0;
    std::uint64_t alpha_equal = 0;
    std::uint64_t alpha_comparisons = 0;
    // Comparisons weighted by the pairing policy (every pair of objects counts alike); θ = weighted_equal /
    // weighted_total.
    double weighted_equal = 0;
    double weighted_total = 0;
    // Per source object s with (weighted) e_s equal out of n_s: the number of sources and Σe², Σe·n, Σn².
    std::uint64_t sources = 0;
    double sum_equal_squared = 0;
    double sum_equal_times_total = 0;
    double sum_total_squared = 0;

    evidence_summary& operator+=(const evidence_summary& other) noexcept {
        equal += other.equal;
        different += other.different;
        pairs += other.pairs;
        alpha_equal += other.alpha_equal;
        alpha_comparisons += other.alpha_comparisons;
        weighted_equal += other.weighted_equal;
        weighted_total += other.weighted_total;
        sources += other.sources;
        sum_equal_squared += other.sum_equal_squared;
        sum_equal_times_total += other.sum_equal_times_total;
        sum_total_squared += other.sum_total_squared;
        return *this;
    }
};

// The estimate from a summary; what the profiler reports and what tools recompute after merging profiles.
inline replica_estimate estimate_replicas(std::uint64_t objects, const evidence_summary& s,
                                          const estimator_config& config) noexcept {
    replica_estimate e;
    e.objects = objects;
    e.equal = s.equal;
    e.different = s.different;
    e.pairs = s.pairs;
    e.sources = s.sources;
    e.alpha_equal = s.alpha_equal;
    e.alpha_comparisons = s.alpha_comparisons;
    const std::uint64_t n = s.equal + s.different;
    if (n == 0) return e;
    const double z = normal_quantile_two_sided(config.confidence);
    const double total = s.weighted_total > 0 ? s.weighted_total : static_cast<double>(n);
    e.theta = s.weighted_total > 0 ? std::clamp(s.weighted_equal / s.weighted_total, 0.0, 1.0)
                                   : static_cast<double>(s.equal) / static_cast<double>(n);
    // Cluster-robust variance of θ̂: C/(C−1) · Σ(e_s − θ̂·n_s)² / n² (weighted sums), and the effective
    // sample size it implies, at most the number of comparisons.
    const double clusters = static_cast<double>(s.sources);
    double effective = clusters;
    if (s.sources >= 2 && e.theta > 0 && e.theta < 1) {
        const double spread = s.sum_equal_squared - 2 * e.theta * s.sum_equal_times_total +
                              e.theta * e.theta * s.sum_total_squared;
        const double variance = clusters / (clusters - 1) * std::max(0.0, spread) / (total * total);
        effective = variance > 0 ? e.theta * (1 - e.theta) / variance : static_cast<double>(n);
    }
    effective = std::clamp(effective, 1.0, static_cast<double>(n));
    e.effective_comparisons = effective;
    e.theta_ci = wilson_interval_fractional(e.theta, effective, z);
    if (s.alpha_comparisons > 0)
        e.alpha = static_cast<double>(s.alpha_equal) / static_cast<double>(s.alpha_comparisons);
    // Wilson's interval at every count, [0, 1] at none: ω may be no tighter than the α evidence supports. Where
    // no comparison ever differed there is no non-identical pair for α to describe, and it is taken as 0.
    e.alpha_ci = s.different == 0 && s.alpha_comparisons == 0
                     ? interval{0, 0}
                     : wilson_interval(s.alpha_equal, s.alpha_comparisons, z);
    e.omega = lower_bound_factor(e.theta_ci.low, e.alpha_ci.high);
    e.gamma = upper_bound_factor(e.theta_ci.high, e.alpha_ci.low, objects);
    e.reported = n >= config.min_comparisons;
    return e;
}

// The order profiles list contexts in: contexts with an estimate first, then by ω, θ and number of comparisons.
inline bool ranks_before(const replica_estimate& a, const replica_estimate& b) noexcept {
    if (a.reported != b.reported) return a.reported;
    if (a.omega != b.omega) return a.omega > b.omega;
    if (a.theta != b.theta) return a.theta > b.theta;
    return a.comparisons() > b.comparisons();
}

// Lower bound on the bytes a fix would save, for a context that allocated `instances` objects of `bytes` in all:
// at least ω of them are identical, and all but one of them could go. Where allocations are sampled, `instances`
// and `bytes` are the scaled estimates of all the context's allocations (allocation_metrics.hpp), not the
// sampled objects: ω is a share, and the share of the sample estimates the share of them all.
inline double replicated_bytes_lower_bound(const replica_estimate& e, double instances, double bytes) noexcept {
    if (!e.reported || !(instances > 0)) return 0;
    const double mean_size = bytes / instances;
    const double identical = std::floor(e.omega * instances);
    return identical > 1 ? (identical - 1) * mean_size : 0;
}

class replica_evidence {
public:
    // One comparison between `source` (an earlier object) and `target` (a later one), identified by their
    // serial numbers, with the pairing policy's weight. Signal-safe.
    void record(std::uint64_t source, std::uint64_t target, bool equal, double weight = 1) noexcept {
        (equal ? summary_.equal : summary_.different) += 1;
        summary_.weighted_total += weight;
        summary_.weighted_equal += equal ? weight : 0;
        cluster_sums& cluster = cluster_of(source);
        cluster.equal += equal ? weight : 0;
        cluster.total += weight;
        ++cluster.comparisons;
        pair_state& pair = find_or_start(source, target);
        if (pair.seen_different) {
            ++summary_.alpha_comparisons;
            summary_.alpha_equal += equal ? 1 : 0;
        } else if (!equal) {
            pair.seen_different = true;
        }
    }

    // Two objects that cannot be replicas without looking (e.g. different sizes): one different comparison.
    void record_mismatch(std::uint64_t source, std::uint64_t target, double weight = 1) noexcept {
        record(source, target, false, weight);
    }

    // Everything recorded so far, including the sources still open. Signal-safe.
    evidence_summary summary() const noexcept {
        evidence_summary s = summary_;
        for (const cluster_sums& cluster : cluster_sums_)
            if (cluster.comparisons > 0) fold(s, cluster);
        return s;
    }

    // Adds another context's (or thread's) evidence. Its sources count as distinct from ours.
    void merge(const replica_evidence& other) noexcept { summary_ += other.summary(); }

    replica_estimate estimate(std::uint64_t objects, const estimator_config& config) const noexcept {
        return estimate_replicas(objects, summary(), config);
    }

private:
    struct pair_state {
        std::uint64_t source = 0;
        std::uint64_t target = 0;
        bool seen_different = false;
        bool used = false;
    };

    // An open source's comparisons so far; its source and last use are kept apart (cluster_of).
    struct cluster_sums {
        double equal = 0; // weighted
        double total = 0; // weighted
        std::uint64_t comparisons = 0;
    };

    static void fold(evidence_summary& s, const cluster_sums& c) noexcept {
        const double e = c.equal;
        const double n = c.total;
        s.sources += 1;
        s.sum_equal_squared += e * e;
        s.sum_equal_times_total += e * n;
        s.sum_total_squared += n * n;
    }

    // The open cluster of `source`; the least recently used one is closed (folded into the sums) to make room.
    // The profiler remembers fewer sources per context (16 by default) than this table holds, so a source that
    // comes back after being closed is rare, and would only make the interval slightly narrower than it should be.
    // Every comparison searches the table, so the sources and last uses it searches have arrays of their own
    // (8 cache lines instead of the whole table's 20). A cluster is open iff its last use is not 0: the clock
    // starts at 1, and an opened cluster is counted in at once.
    cluster_sums& cluster_of(std::uint64_t source) noexcept {
        ++clock_;
        std::size_t victim = 0;
        for (std::size_t i = 0; i < cluster_sources_.size(); ++i) {
            if (cluster_last_use_[i] != 0 && cluster_sources_[i] == source) {
                cluster_last_use_[i] = clock_;
                return cluster_sums_[i];
            }
            if (cluster_last_use_[i] < cluster_last_use_[victim]) victim = i;
        }
        if (cluster_sums_[victim].comparisons > 0) fold(summary_, cluster_sums_[victim]);
        cluster_sources_[victim] = source;
        cluster_last_use_[victim] = clock_;
        cluster_sums_[victim] = cluster_sums{};
        return cluster_sums_[victim];
    }

    pair_state& find_or_start(std::uint64_t source, std::uint64_t target) noexcept {
        // Every entry is compared, without a branch per entry: where the match lies varies from one comparison to
        // the next, and an early exit mispredicts. Distinct used entries hold distinct pairs, so at most one matches.
        unsigned matches = 0;
        for (std::size_t i = 0; i < recent_pairs_.size(); ++i) {
            const pair_state& pair = recent_pairs_[i];
            matches |= static_cast<unsigned>(pair.used & (pair.source == source) & (pair.target == target)) << i;
        }
        if (matches != 0) return recent_pairs_[static_cast<std::size_t>(std::countr_zero(matches))];
        ++summary_.pairs;
        pair_state& slot = recent_pairs_[next_pair_slot_];
        next_pair_slot_ = (next_pair_slot_ + 1) % recent_pairs_.size();
        slot = pair_state{source, target, false, true};
        return slot;
    }

    evidence_summary summary_; // closed sources only; open ones are in the clusters
    std::array<std::uint64_t, 32> cluster_sources_{};
    std::array<std::uint64_t, 32> cluster_last_use_{}; // 0: the cluster is not open
    std::array<cluster_sums, 32> cluster_sums_{};
    std::uint64_t clock_ = 0;
    // Comparisons of one pair arrive close together (the watchpoints of one pair are armed at once), so a
    // short memory of recent pairs suffices and keeps the evidence bounded.
    std::array<pair_state, 8> recent_pairs_{};
    std::size_t next_pair_slot_ = 0;
};

} // namespace ojx
