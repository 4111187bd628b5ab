// Identical groups among the whole objects digested at one allocation site: the histogram of their content
// digests (objects and sampling weights per distinct content), which is the sufficient statistic of every
// whole-object estimate, and the estimators computed from it — the share of objects in the largest identical
// group with a confidence interval (a direct estimate of X_N/X), the identical-pair fraction (θ over all pairs,
// not over the pairs comparisons happened to make), the number of distinct contents, and whether the largest
// group is all zeros.
//
// Bounded memory. A site's table keeps at most `capacity` distinct contents, each with its exact counts: once a
// content is kept, every later object with it is counted there. When the table is full, a new content takes the
// place of a kept content seen only once (the one with the largest digest, a choice that does not depend on
// arrival order), and from then on contents whose digest is at least the evicted one's are not kept; where every
// kept content has been seen twice or more, new contents are not kept. An object whose content is not kept is
// counted in `unkept`. Invariant: a content is either kept with all of its objects or not kept with none of them
// (a content refused or evicted once is refused forever: the digest limit only falls, and a full table of
// repeated contents never frees a place). So the kept groups are exact groups, and only the grouping of the
// unkept objects is unknown: the largest group may be among them only if there are at least as many of them as
// objects in the largest kept group, and the estimators widen their upper ends by what they might hold. How much
// that is, a small weighted space-saving sketch of the unkept objects' digests bounds: no content's unkept weight
// exceeds the sketch's largest counter (a counted content's is at most its counter, any other's at most the
// smallest), so a site of many distinct contents gets an upper end near its largest kept group, not one that
// allows every unkept object to be a single group.
//
// Weights. An object may stand for 1/p objects (allocation sampling, a sweep's subsampling). Shares are weighted;
// intervals use Kish's effective sample size (Σw)²/Σw². Where every object of the site was digested
// (population known and reached), the shares are the exact counts' (whatever the weights) and the intervals
// collapse onto them (finite population correction).
//
// Recording allocates only when a site's table doubles (a few times at most: it starts with room for
// `initial_room` contents); it runs where the profiler's digests do, under the caller's lock and never in a signal
// handler. Summaries and estimates allocate and are for reports.
#pragma once

#include "ojx/replica_bounds.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <new>
#include <vector>

namespace ojx {

// One distinct content of a site and the objects that had it.
struct content_group {
    std::uint64_t digest = 0;
    std::uint64_t objects = 0;
    double weight = 0;         // Σ w over its objects
    double weight_squared = 0; // Σ w²
    double heaviest = 0;       // max w
    bool all_zero = false;     // the content is all zero bytes

    friend bool operator==(const content_group&, const content_group&) = default;
};

// The sufficient statistic of a site's identical groups. Summaries of disjoint sets of objects (threads,
// processes, hosts) add up: kept contents by digest, unkept objects by count. The sum is exact for every content
// kept by all the summaries that saw it; a content one summary kept and another counted as unkept is undercounted
// by the latter's objects, which stay in `unkept_*` (and widen the upper ends as for one profile).
struct identical_groups_summary {
    std::vector<content_group> groups; // kept contents, ordered by digest
    std::uint64_t unkept_objects = 0;
    double unkept_weight = 0;
    double unkept_weight_squared = 0;
    // At least the weight of any one content among the unkept objects, at most unkept_weight; 0 where a profile
    // written before this bound has unkept objects (then unkept_weight bounds it: see heaviest_unkept).
    double unkept_largest_weight = 0;

    // The bound on one content's weight among the unkept objects that the estimators use.
    double heaviest_unkept() const noexcept {
        return unkept_largest_weight > 0 ? std::min(unkept_largest_weight, unkept_weight) : unkept_weight;
    }

    friend bool operator==(const identical_groups_summary&, const identical_groups_summary&) = default;

    std::uint64_t objects() const noexcept {
        std::uint64_t n = unkept_objects;
        for (const content_group& g : groups) n += g.objects;
        return n;
    }

    identical_groups_summary& operator+=(const identical_groups_summary& other) {
        std::vector<content_group> merged;
        merged.reserve(groups.size() + other.groups.size());
        std::size_t i = 0, j = 0;
        while (i < groups.size() || j < other.groups.size()) {
            if (j == other.groups.size() || (i < groups.size() && groups[i].digest < other.groups[j].digest)) {
                merged.push_back(groups[i++]);
            } else if (i == groups.size() || other.groups[j].digest < groups[i].digest) {
                merged.push_back(other.groups[j++]);
            } else {
                content_group sum = groups[i++];
                const content_group& more = other.groups[j++];
                sum.objects += more.objects;
                sum.weight += more.weight;
                sum.weight_squared += more.weight_squared;
                sum.heaviest = std::max(sum.heaviest, more.heaviest);
                sum.all_zero = sum.all_zero && more.all_zero;
                merged.push_back(sum);
            }
        }
        groups = std::move(merged);
        // A content's unkept objects in the sum are its unkept objects in each summary: their bounds add.
        const double bound = heaviest_unkept() + other.heaviest_unkept();
        unkept_objects += other.unkept_objects;
        unkept_weight += other.unkept_weight;
        unkept_weight_squared += other.unkept_weight_squared;
        unkept_largest_weight = unkept_objects > 0 ? std::min(bound, unkept_weight) : 0;
        return *this;
    }
};

// The bounded table one site records into. Not thread-safe: callers serialize (the profiler's digest calls run
// under the caller's lock).
//
// Storage. Room for min(capacity, initial_room) contents is allocated with the table and doubles as contents
// arrive, up to the capacity: most sites of a real program see a few distinct contents, and a program has
// hundreds of sites, so a table made at its full default room (14 KiB) cost a native program megabytes of
// resident memory for nothing. A growth that fails leaves the table full at the room it has. Contents are found
// through an open-addressing index (linear probing, twice the room), so a record costs O(1) at any capacity; the
// eviction scan is O(kept), and only a full table does it.
class identical_group_table {
public:
    static constexpr std::size_t initial_room = 8;

    explicit identical_group_table(std::size_t capacity) : capacity_(std::max<std::size_t>(capacity, 1)) {
        if (!grow_to(std::min(capacity_, initial_room))) throw std::bad_alloc();
    }

    std::size_t capacity() const noexcept { return capacity_; }
    std::size_t kept() const noexcept { return used_; }

    // One object with content `digest`, standing for `weight` objects. Allocates only when the room doubles.
    void record(std::uint64_t digest, bool all_zero, double weight) noexcept {
        std::size_t at = home(digest);
        for (; index_[at] != 0; at = (at + 1) & mask_) {
            const std::size_t slot = index_[at] - 1;
            if (groups_[slot].digest == digest) {
                add(groups_[slot], weight);
                return;
            }
        }
        if (digest >= limit_) return unkept(digest, weight);
        std::size_t slot = used_;
        if (used_ == groups_.size() && (used_ == capacity_ || !grow_to(std::min(capacity_, 2 * used_)))) {
            // Evict the kept content seen once with the largest digest, if it is larger than this one's.
            std::size_t victim = used_;
            for (std::size_t i = 0; i < used_; ++i)
                if (groups_[i].objects == 1 && (victim == used_ || groups_[i].digest > groups_[victim].digest)) victim = i;
            if (victim == used_) return unkept(digest, weight);
            if (groups_[victim].digest < digest) {
                limit_ = digest;
                return unkept(digest, weight);
            }
            limit_ = std::min(limit_, groups_[victim].digest);
            unkept(groups_[victim].digest, groups_[victim].weight); // a content kept once: one object
            erase_from_index(victim);
            slot = victim;
        } else {
            ++used_;
        }
        groups_[slot] = content_group{digest, 0, 0, 0, 0, all_zero};
        add(groups_[slot], weight);
        insert_into_index(slot);
    }

    identical_groups_summary summary() const {
        identical_groups_summary s;
        s.groups.assign(groups_.begin(), groups_.begin() + static_cast<std::ptrdiff_t>(used_));
        std::sort(s.groups.begin(), s.groups.end(),
                  [](const content_group& a, const content_group& b) { return a.digest < b.digest; });
        s.unkept_objects = unkept_objects_;
        s.unkept_weight = unkept_weight_;
        s.unkept_weight_squared = unkept_weight_squared_;
        for (const sketch_counter& c : sketch_) s.unkept_largest_weight = std::max(s.unkept_largest_weight, c.weight);
        return s;
    }

    // Bytes a table of `capacity` holds before it grows.
    static std::size_t initial_bytes(std::size_t capacity) noexcept {
        const std::size_t room = std::min(std::max<std::size_t>(capacity, 1), initial_room);
        return room * sizeof(content_group) + index_size_for(room) * sizeof(std::uint32_t);
    }

private:
    static void add(content_group& g, double weight) noexcept {
        g.objects += 1;
        g.weight += weight;
        g.weight_squared += weight * weight;
        g.heaviest = std::max(g.heaviest, weight);
    }

    // An object whose content is not kept: counted, and its digest into the space-saving sketch (a counted
    // content adds its weight; a new one takes an empty counter, else the smallest, which it raises by its weight).
    void unkept(std::uint64_t digest, double weight) noexcept {
        unkept_objects_ += 1;
        unkept_weight_ += weight;
        unkept_weight_squared_ += weight * weight;
        sketch_counter* smallest = &sketch_[0];
        for (sketch_counter& c : sketch_) {
            if (c.weight > 0 && c.digest == digest) return void(c.weight += weight);
            if (c.weight < smallest->weight) smallest = &c;
        }
        smallest->digest = digest;
        smallest->weight += weight;
    }

    static std::size_t index_size_for(std::size_t room) noexcept { return std::bit_ceil(2 * room); }

    std::size_t home(std::uint64_t digest) const noexcept {
        return static_cast<std::size_t>((digest * 0x9e3779b97f4a7c15ULL) >> 32) & mask_;
    }

    void insert_into_index(std::size_t slot) noexcept {
        std::size_t at = home(groups_[slot].digest);
        while (index_[at] != 0) at = (at + 1) & mask_;
        index_[at] = static_cast<std::uint32_t>(slot + 1);
    }

    // Removes `slot`'s entry (its digest still in its group), shifting later entries of its probe run back so
    // that every entry stays reachable from its home without passing an empty place.
    void erase_from_index(std::size_t slot) noexcept {
        std::size_t hole = home(groups_[slot].digest);
        while (index_[hole] != slot + 1) hole = (hole + 1) & mask_;
        for (std::size_t next = (hole + 1) & mask_; index_[next] != 0; next = (next + 1) & mask_) {
            const std::size_t want = home(groups_[index_[next] - 1].digest);
            // The entry at `next` may move into the hole unless its home lies cyclically in (hole, next].
            const bool stays = hole <= next ? (hole < want && want <= next) : (hole < want || want <= next);
            if (stays) continue;
            index_[hole] = index_[next];
            hole = next;
        }
        index_[hole] = 0;
    }

    // Room for `room` contents (more than now) and an index for them: false, and the table as it was, where
    // memory is short.
    bool grow_to(std::size_t room) noexcept {
        try {
            std::vector<std::uint32_t> index(index_size_for(room));
            std::vector<content_group> groups(room);
            std::copy_n(groups_.begin(), used_, groups.begin());
            index_ = std::move(index);
            groups_ = std::move(groups);
        } catch (...) {
            return false;
        }
        mask_ = index_.size() - 1;
        for (std::size_t i = 0; i < used_; ++i) insert_into_index(i);
        return true;
    }

    std::size_t capacity_;
    std::vector<content_group> groups_;  // kept contents, slot by slot
    std::vector<std::uint32_t> index_;   // slot + 1 by digest, 0: empty; 2× the room, a power of two
    std::size_t mask_ = 0;
    std::size_t used_ = 0;
    std::uint64_t limit_ = std::numeric_limits<std::uint64_t>::max(); // contents with digest ≥ this are not kept
    std::uint64_t unkept_objects_ = 0;
    double unkept_weight_ = 0;
    double unkept_weight_squared_ = 0;
    struct sketch_counter {
        std::uint64_t digest = 0;
        double weight = 0; // 0: empty
    };
    std::array<sketch_counter, 16> sketch_{};
};

struct identical_groups_estimate {
    std::uint64_t objects = 0;         // digested
    std::uint64_t unkept_objects = 0;  // digested, content not kept
    double effective_objects = 0;      // Kish's (Σw)²/Σw², before the finite population correction
    // The largest identical group: its share of the (weighted) objects, an interval for the site's true largest
    // share X_N/X, its digested objects, whether its content is all zeros, and whether it is certainly the
    // largest (fewer unkept objects than it has).
    double largest_share = 0;
    interval largest_share_ci{0, 1};
    std::uint64_t largest_objects = 0;
    bool largest_all_zero = false;
    bool largest_certain = true;
    std::size_t contenders = 0; // groups that could be the largest; the lower end is adjusted for choosing among them
    // The fraction of pairs of objects that are identical, Σ(W_g² − Σw²)/(W² − Σw²) (unweighted: the U-statistic
    // Σc(c−1)/(n(n−1))), and its interval. Unkept objects count as distinct in the point estimate; the upper end
    // allows them to be one group.
    double identical_pairs = 0;
    interval identical_pairs_ci{0, 1};
    // Distinct contents among the digested objects: exactly `distinct_low` when nothing is unkept, else between
    // the two.
    std::uint64_t distinct_low = 0;
    std::uint64_t distinct_high = 0;
};

// The population a site's digested objects were drawn from, as estimate_identical_groups takes it: its `tracked`
// objects where allocations were counted, not sampled (`counted`: every allocation at or above the size threshold
// was tracked) and the allocation metrics' `instances` equal them (within a rounding a profile's printed numbers
// allow), else 0, unknown. Where allocations were sampled, objects tracked with weight 1 do not make the site's
// population known: the site's other allocations may each have been passed over at a smaller probability (an
// adaptive interval grows), and none of them left a trace. One rule for the profiler and for a profile read back,
// so both give the same estimate.
inline std::uint64_t digest_population(std::uint64_t tracked, double instances, bool counted) noexcept {
    return counted && instances <= static_cast<double>(tracked) * (1 + 1e-6) ? tracked : 0;
}

// The same objects, each standing for itself: where every object of a known population was digested, the
// shares are their counts', whatever weights the draws gave them. A weight is at least 1 (the inverse of a
// probability), so an unkept content's weight bound bounds its count too.
inline identical_groups_summary counted_alike(identical_groups_summary s) noexcept {
    for (content_group& g : s.groups) {
        g.weight = g.weight_squared = static_cast<double>(g.objects);
        g.heaviest = 1;
    }
    s.unkept_weight = s.unkept_weight_squared = static_cast<double>(s.unkept_objects);
    s.unkept_largest_weight = std::min(s.unkept_largest_weight, s.unkept_weight);
    return s;
}

// The largest group's share from few digested objects, by the binomial tail: the smallest p for which some group
// of the population holding at most a share p of it could give `largest` or more of `drawn` objects with
// probability at least `tail`. Whatever the groups' shares p_g ≤ p, P(some group has ≥ k) ≤ Σ_g P(Bin(n, p_g) ≥ k)
// ≤ Σ_g p_g · max_{q ≤ p} P(Bin(n, q) ≥ k)/q, and P(Bin(n, q) ≥ k)/q grows with q for k > 1, so the bound is the p
// where P(Bin(n, p) ≥ k)/p reaches `tail` (drawing without replacement only concentrates the count further). It
// needs no correction for having chosen the largest group, which is where the Wilson end pays most: k of n all
// identical at small n (three of three: 0.16 at tail 0.025, against 0.13 from the corrected Wilson end). For
// weighted draws n and k are Kish's effective size and the share of it, real numbers (P(Bin(n, p) ≥ k) is the
// regularized incomplete beta I_p(k, n − k + 1)): an approximation, which tests/test_whole_object_evidence.cpp
// measures with the rest. A group of one or fewer effective objects says nothing (0).
namespace identical_groups_detail {

// I_x(a, b) by its continued fraction (Lentz), the usual way for 0 < x < 1, a, b > 0.
inline double incomplete_beta_fraction(double a, double b, double x) noexcept {
    constexpr double tiny = 1e-300;
    double c = 1, d = 1 - (a + b) * x / (a + 1);
    if (std::fabs(d) < tiny) d = tiny;
    d = 1 / d;
    double h = d;
    for (int m = 1; m <= 300; ++m) {
        const double md = m;
        double num = md * (b - md) * x / ((a + 2 * md - 1) * (a + 2 * md));
        for (int half = 0; half < 2; ++half) {
            d = 1 + num * d;
            if (std::fabs(d) < tiny) d = tiny;
            c = 1 + num / c;
            if (std::fabs(c) < tiny) c = tiny;
            d = 1 / d;
            const double step = d * c;
            h *= step;
            if (half == 1 && std::fabs(step - 1) < 1e-13) return h;
            num = -(a + md) * (a + b + md) * x / ((a + 2 * md) * (a + 2 * md + 1));
        }
    }
    return h;
}

inline double regularized_incomplete_beta(double a, double b, double x) noexcept {
    if (x <= 0) return 0;
    if (x >= 1) return 1;
    const double front =
        std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x));
    if (x < (a + 1) / (a + b + 2)) return front * incomplete_beta_fraction(a, b, x) / a;
    return 1 - front * incomplete_beta_fraction(b, a, 1 - x) / b;
}

} // namespace identical_groups_detail

inline double largest_share_low_from_draws(double drawn, double largest, double tail) noexcept {
    if (!(largest > 1) || !(drawn >= largest)) return 0;
    const double b = drawn - largest + 1;
    double below = 0, above = 1; // P(Bin ≥ k)/p < tail at `below`, ≥ at `above`
    for (int i = 0; i < 50; ++i) {
        const double p = (below + above) / 2;
        if (identical_groups_detail::regularized_incomplete_beta(largest, b, p) >= tail * p) above = p;
        else below = p;
    }
    return below;
}

// Beyond this many effective objects the Wilson end is as good as the tail's.
inline constexpr double small_draw_limit = 200;

// The estimates from a summary at confidence level `confidence`. `population`: the number of objects the
// digested ones were drawn from, when every object had weight 1 (no allocation sampling), 0 when unknown; where
// the digested objects are all of them, the estimates are exact.
inline identical_groups_estimate estimate_identical_groups(const identical_groups_summary& given, double confidence,
                                                           std::uint64_t population = 0) {
    identical_groups_estimate e;
    e.objects = given.objects();
    const bool reached = population > 0 && e.objects >= population;
    const identical_groups_summary s = reached ? counted_alike(given) : given;
    e.unkept_objects = s.unkept_objects;
    if (e.objects == 0) return e;
    double w = s.unkept_weight, q = s.unkept_weight_squared;
    for (const content_group& g : s.groups) {
        w += g.weight;
        q += g.weight_squared;
    }
    if (!(w > 0) || !(q > 0)) return e;
    e.effective_objects = w * w / q;
    // Finite population correction: the variance of a share shrinks by (N − n)/(N − 1); at n = N it is 0.
    double effective = e.effective_objects;
    if (population >= e.objects && population > 1) {
        const double remaining = static_cast<double>(population - e.objects) / static_cast<double>(population - 1);
        effective = remaining > 0 ? effective / remaining : std::numeric_limits<double>::infinity();
    }
    const double z = normal_quantile_two_sided(confidence);

    const content_group* largest = nullptr;
    for (const content_group& g : s.groups)
        if (largest == nullptr || g.weight > largest->weight) largest = &g; // ties: the smallest digest
    double pair_weight = 0, cubes = 0, squares = 0;
    for (const content_group& g : s.groups) {
        const double p = g.weight / w;
        pair_weight += g.weight * g.weight - g.weight_squared;
        squares += p * p;
        cubes += p * p * p;
    }
    e.distinct_low = s.groups.size() + (s.unkept_objects > 0 ? 1 : 0);
    e.distinct_high = s.groups.size() + s.unkept_objects;

    // The largest share. Its intervals are Wilson's with a continuity correction: a site is estimated from as
    // few as three digested objects, where the plain Wilson interval covers well under its level near shares of
    // 0 and 1 (tests/test_whole_object_evidence.cpp measures this one there). Its upper end needs no adjustment:
    // the truly largest group's observed share is at most the observed largest one, and the upper end grows with
    // the share. Its lower end does: the observed largest group is chosen for being large, and where several
    // groups are of similar size its share is biased upwards. The lower end is therefore the one at the
    // Bonferroni level over the groups that could be the largest (those whose upper end reaches the largest one's
    // lower end), and for the share without its heaviest object: a group seen once among many small ones was
    // chosen by that one object alone, and says nothing (lower end 0, or 1/N — its object is certainly one of the
    // N); where weights differ, one heavy object can make a small group the largest, which Kish's effective size
    // alone does not capture. Where N is known, every group's objects are certainly in the population, so the
    // lower end is at least the largest count over N; and the true share is a whole number of objects over N,
    // while near n = N the finite population correction narrows the interval below one object (one object left
    // undigested may or may not be in the group), so both ends go outward to whole counts.
    if (largest != nullptr) {
        e.largest_share = std::clamp(largest->weight / w, 0.0, 1.0);
        e.largest_objects = largest->objects;
        e.largest_all_zero = largest->all_zero;
        const interval plain = wilson_interval_corrected(e.largest_share, effective, z);
        for (const content_group& g : s.groups)
            if (wilson_interval_corrected(g.weight / w, effective, z).high >= plain.low) ++e.contenders;
        const double adjusted_level =
            1 - (1 - confidence) / static_cast<double>(std::max<std::size_t>(e.contenders, 1));
        const double chosen_without_one =
            std::isfinite(effective)
                ? std::max(0.0, largest->weight - largest->heaviest) / w
                : e.largest_share;
        double low =
            wilson_interval_corrected(chosen_without_one, effective, normal_quantile_two_sided(adjusted_level)).low;
        // Few objects: the binomial tail's end where it is the higher (largest_share_low_from_draws), at Kish's
        // size without the finite population correction (the ends below take N into account), the group's
        // heaviest object counted as one: a heavy object makes no group larger than one object.
        if (e.effective_objects <= small_draw_limit && std::isfinite(effective)) {
            const double others = std::max(0.0, largest->weight - largest->heaviest) / w;
            low = std::max(low, largest_share_low_from_draws(e.effective_objects, others * e.effective_objects + 1,
                                                             (1 - confidence) / 2));
        }
        double high = plain.high;
        if (population > 0) {
            const double all = static_cast<double>(population);
            low = std::max(std::floor(low * all + 1e-9) / all, static_cast<double>(largest->objects) / all);
            high = std::min(1.0, std::ceil(high * all - 1e-9) / all);
        }
        e.largest_share_ci = {std::min(low, e.largest_share), std::max(high, e.largest_share)};
    } else {
        e.largest_share_ci = {0, 0};
    }
    e.largest_certain = s.unkept_objects < e.largest_objects;
    if (s.unkept_objects > 0) {
        // An unkept content may be larger than every kept one: by as much as the bound on its weight.
        const double unkept_share = std::clamp(s.heaviest_unkept() / w, 0.0, 1.0);
        e.largest_share_ci.high =
            std::max(e.largest_share_ci.high, wilson_interval_corrected(unkept_share, effective, z).high);
    }

    // The identical-pair fraction: the weighted U-statistic and a Wilson interval at the number of independent
    // pairs its variance implies. The U-statistic's variance is ≈ 4(Σp³ − (Σp²)²)/n + 2Σp²(1 − Σp²)/n²; where
    // that says nothing (a fraction of 0 or 1), ⌊n/2⌋ disjoint pairs are what the data hold.
    const double all_pairs = w * w - q;
    e.identical_pairs = all_pairs > 0 ? std::clamp(pair_weight / all_pairs, 0.0, 1.0) : 0;
    const double theta = e.identical_pairs;
    double pairs = effective / 2;
    if (theta > 0 && theta < 1 && std::isfinite(effective)) {
        const double variance = 4 * std::max(0.0, cubes - squares * squares) / effective +
                                2 * squares * (1 - squares) / (effective * effective);
        if (variance > 0) pairs = theta * (1 - theta) / variance;
    }
    if (std::isfinite(effective)) pairs = std::clamp(pairs, 1.0, std::max(1.0, effective * (effective - 1) / 2));
    e.identical_pairs_ci = wilson_interval_fractional(theta, pairs, z);
    if (s.unkept_objects > 1 && all_pairs > 0) {
        // Σ_g W_g² over the unkept contents is at most (the heaviest one's weight) × (their total weight).
        const double unkept_pairs = std::max(0.0, s.heaviest_unkept() * s.unkept_weight - s.unkept_weight_squared);
        e.identical_pairs_ci.high =
            std::min(1.0, std::max(e.identical_pairs_ci.high,
                                   wilson_interval_fractional((pair_weight + unkept_pairs) / all_pairs, pairs, z).high));
    }
    return e;
}

} // namespace ojx
