// One estimate per allocation site from two kinds of evidence: comparisons (access samples and watchpoint or
// at-sample comparisons: θ, α and the bounds ω..γ) and whole objects (digested whole: the largest identical
// group's share with its interval, and the exact identical-pair fraction). Each number says which it rests on.
//
// The rule: whole objects where the site has at least `min_digested_objects` digested objects — they measure the
// largest group directly, and are not inflated by near-replicas that compare equal at most places — otherwise
// comparisons where they are enough for an estimate (`min_comparisons`), otherwise none.
#pragma once

#include "ojx/identical_groups.hpp"
#include "ojx/replica_bounds.hpp"
#include "ojx/replica_estimator.hpp"

#include <cmath>
#include <cstdint>

namespace ojx {

enum class evidence_basis : std::uint8_t {
    none,          // too little of either kind
    comparisons,   // sampled comparisons: bounds ω..γ, A = (θ − α)/(1 − α)
    whole_objects, // objects digested whole: the largest group measured
};

inline const char* evidence_basis_name(evidence_basis basis) noexcept {
    switch (basis) {
    case evidence_basis::comparisons: return "comparisons";
    case evidence_basis::whole_objects: return "whole_objects";
    case evidence_basis::none: break;
    }
    return "none";
}

struct site_estimate {
    evidence_basis basis = evidence_basis::none;
    // The share of the site's objects in its largest identical group, X_N/X: a point and interval from whole
    // objects; from comparisons only the interval [ω, γ] (the point is NaN).
    double largest_share = NAN;
    interval largest_share_ci{0, 1};
    // The fraction of pairs of the site's objects that are identical: the U-statistic from whole objects. From
    // comparisons there is none (NaN, interval [0, 1]): they measure θ over the pairs they compared, and α, which
    // the comparison fields say.
    double identical_pairs = NAN;
    interval identical_pairs_ci{0, 1};
    // From whole objects: how many digested objects the largest identical group holds (0 from comparisons).
    std::uint64_t largest_objects = 0;

    bool reported() const noexcept { return basis != evidence_basis::none; }
};

// ojx calls a site replicated when at least this share of its objects are provably one identical group (the lower
// end of the largest share: ω from comparisons, the interval's low end from whole objects).
inline constexpr double replicated_omega = 0.1;

// The call every report makes: the lower end reaches `replicated_omega`, and the evidence holds two identical
// objects. A group of one object is no replica, whatever share of a site of few objects it is: a comparison-based
// lower end above 0 rests on equal comparisons, a whole-object one can rest on a single object where the site's
// population is known (its share is then at least 1/N).
inline bool called_replicated(const site_estimate& e) noexcept {
    return e.reported() && e.largest_share_ci.low >= replicated_omega &&
           (e.basis != evidence_basis::whole_objects || e.largest_objects >= 2);
}

inline site_estimate combine_estimates(const replica_estimate& comparisons, const identical_groups_estimate& whole,
                                       const estimator_config& config) noexcept {
    site_estimate e;
    if (whole.objects > 0 && whole.objects >= config.min_digested_objects) {
        e.basis = evidence_basis::whole_objects;
        e.largest_share = whole.largest_share;
        e.largest_share_ci = whole.largest_share_ci;
        e.identical_pairs = whole.identical_pairs;
        e.identical_pairs_ci = whole.identical_pairs_ci;
        e.largest_objects = whole.largest_objects;
    } else if (comparisons.reported) {
        e.basis = evidence_basis::comparisons;
        e.largest_share_ci = {comparisons.omega, comparisons.gamma};
    }
    return e;
}

// Lower bound on the bytes a fix would save at a site that allocated `instances` objects of `bytes` in all: at
// least the lower end of the largest group's share of them are identical, and all but one could go.
inline double replicated_bytes_lower_bound(const site_estimate& e, double instances, double bytes) noexcept {
    if (!e.reported() || !(instances > 0)) return 0;
    // A share of whole objects (k/n: every object digested, or an end at a whole count) times n must give k, not
    // k - 1 by the last bit of a double or by the six significant digits a profile prints, which are off by up to
    // 5e-6 of the value (0.333333 is 1/3 less 1e-6 of it): the product is taken 1e-5 larger before it is rounded down.
    const double identical = std::floor(e.largest_share_ci.low * instances * (1 + 1e-5));
    return identical > 1 ? (identical - 1) * bytes / instances : 0;
}

// The order reports list sites in: sites with an estimate first, then by the lower end of the largest group's
// share (what a fix is sure to save), then its upper end.
inline bool ranks_before(const site_estimate& a, const site_estimate& b) noexcept {
    if (a.reported() != b.reported()) return a.reported();
    if (a.largest_share_ci.low != b.largest_share_ci.low) return a.largest_share_ci.low > b.largest_share_ci.low;
    return a.largest_share_ci.high > b.largest_share_ci.high;
}

} // namespace ojx
