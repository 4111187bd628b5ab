// Contents two allocation sites share whole: objects of one site whose every byte equals an object of another
// (equal digests of the contents and the size), found in the whole-object evidence the agents take at their
// defaults, without sampling one access. Such a pair is a copy (clone(), Arrays.copyOf of a whole array, a memcpy
// into a fresh buffer) or the same contents built twice: the seed's clone detector, on digests. Contents derived
// from another site's (transformed, not copied) have other digests and never pair. All-zero contents are left
// out: every fresh buffer is zeros until it is written, equal by birth, not by copy.
//
// Sites are allocation sites pooled over their calling contexts (site_pools.hpp). For each side of a pair: the
// share of its digested objects (weighted: each stands for the objects its sampling drew it from) whose content
// the other side also holds, with Wilson's interval (continuity corrected) at Kish's effective size (narrowed by
// the finite population correction where the site's population is known, collapsed where all of it was
// digested: as the site's own estimate), its upper end raised by the side's objects whose contents its bounded
// table did not keep (they may be shared too); and that share of the objects and bytes the side allocated. The
// bytes assume the shared objects are of the site's mean size. Where the other site was not seen whole (a budget
// or allocation sampling digested a subsample of it, or its table did not keep every content), a content only
// its undigested objects held goes unseen: the share is then a lower bound (on javac at the defaults, one site's
// clones of another's arrays showed 32 % where the exact mode showed 100 %), and its upper end is 1.
// Not for signal handlers.
#pragma once

#include "ojx/profile.hpp"
#include "ojx/replica_bounds.hpp"
#include "ojx/site_pools.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ojx {

struct shared_side {
    std::string type;                  // the site: its type and leaf frame
    std::string frame;
    std::uint64_t digested_shared = 0; // its digested objects holding a content of the other side
    double share = 0;                  // of its objects, weighted, with its interval
    interval share_ci;
    double objects = 0; // share × the objects it allocated (estimated where allocations were sampled)
    interval objects_ci;
    double bytes = 0; // share × the bytes it allocated
    interval bytes_ci;
};

struct shared_contents_pair {
    std::size_t contents = 0; // distinct contents both sides hold
    shared_side first;        // the side with more bytes shared
    shared_side second;
};

// A content held by more sites than this pairs only its `shared_contents_sites_per_content` heaviest holders:
// pairs grow as the square of the holders, and a content in hundreds of sites (a constant table) says the same
// thing about each of them.
inline constexpr std::size_t shared_contents_sites_per_content = 32;

// Pairs the reports list (the text report, the agents' exit report, the HTML page), most bytes shared first.
inline constexpr std::size_t shared_contents_listed = 5;

namespace shared_contents_detail {

struct side_sums {
    std::uint64_t objects = 0;
    double weight = 0;
};

// Whether every object of the site was digested and its content kept: then a content the site does not show, it
// does not hold. As the site's own estimate takes its population (context_profile::estimate_from_evidence).
inline bool seen_whole(const context_profile& c) {
    const std::uint64_t population = c.digested_population();
    return population > 0 && c.whole.identical.objects() >= population && c.whole.identical.unkept_objects == 0;
}

inline shared_side estimate_side(const std::vector<pooled_site>& sites, std::size_t site, const side_sums& shared,
                                 bool other_seen_whole, double z) {
    const context_profile& c = sites[site].site;
    const type_allocations allocated = c.allocated_total();
    // Where every object of a known population was digested, the share is the counts', exact; where the
    // population is known, the interval narrows by the finite population correction.
    const std::uint64_t population = c.digested_population();
    const std::uint64_t digested = c.whole.identical.objects();
    const bool reached = population > 0 && digested >= population;
    const identical_groups_summary g = reached ? counted_alike(c.whole.identical) : c.whole.identical;
    double weight = g.unkept_weight, squares = g.unkept_weight_squared;
    for (const content_group& group : g.groups) {
        weight += group.weight;
        squares += group.weight_squared;
    }
    shared_side s;
    s.type = c.type;
    s.frame = c.frames.empty() ? std::string() : c.frames.front();
    s.digested_shared = shared.objects;
    if (!(weight > 0) || !(squares > 0)) return s;
    s.share = std::clamp((reached ? static_cast<double>(shared.objects) : shared.weight) / weight, 0.0, 1.0);
    double effective = weight * weight / squares;
    if (population > 1 && population >= digested) {
        const double remaining = static_cast<double>(population - digested) / static_cast<double>(population - 1);
        effective = remaining > 0 ? effective / remaining : std::numeric_limits<double>::infinity();
    }
    s.share_ci =
        std::isfinite(effective) ? wilson_interval_corrected(s.share, effective, z) : interval{s.share, s.share};
    s.share_ci.high = std::min(1.0, s.share_ci.high + g.unkept_weight / weight);
    // Where the other site was not seen whole, any of this side's other objects may hold a content that only its
    // undigested objects held: the share is then a lower bound, and its upper end 1.
    if (!other_seen_whole) s.share_ci.high = 1;
    // The digested objects holding a shared content are certainly among the site's objects.
    s.objects = s.share * allocated.instances;
    s.objects_ci = {std::max(s.share_ci.low * allocated.instances, static_cast<double>(shared.objects)),
                    std::max(s.share_ci.high * allocated.instances, static_cast<double>(shared.objects))};
    s.bytes = s.share * allocated.bytes;
    s.bytes_ci = {s.share_ci.low * allocated.bytes, s.share_ci.high * allocated.bytes};
    return s;
}

} // namespace shared_contents_detail

// The pairs of `sites` (every site, reached from one context or more: site_pools::finish_all) that
// hold contents in common, most bytes shared first (the larger side's), at most `top`.
inline std::vector<shared_contents_pair> shared_contents(const std::vector<pooled_site>& sites, double confidence,
                                                         std::size_t top) {
    using namespace shared_contents_detail;
    struct holder {
        std::size_t site;
        const content_group* group;
    };
    std::unordered_map<std::uint64_t, std::vector<holder>> holders;
    for (std::size_t i = 0; i < sites.size(); ++i)
        for (const content_group& g : sites[i].site.whole.identical.groups)
            if (!g.all_zero) holders[g.digest].push_back({i, &g});

    struct pair_sums {
        std::size_t contents = 0;
        side_sums low, high; // the sides by site index
    };
    std::map<std::pair<std::size_t, std::size_t>, pair_sums> pairs;
    for (auto& [digest, held] : holders) {
        if (held.size() < 2) continue;
        if (held.size() > shared_contents_sites_per_content) {
            std::partial_sort(held.begin(), held.begin() + shared_contents_sites_per_content, held.end(),
                              [](const holder& a, const holder& b) {
                                  return a.group->weight != b.group->weight ? a.group->weight > b.group->weight
                                                                            : a.site < b.site;
                              });
            held.resize(shared_contents_sites_per_content);
        }
        for (std::size_t a = 0; a < held.size(); ++a)
            for (std::size_t b = a + 1; b < held.size(); ++b) {
                const bool ordered = held[a].site < held[b].site;
                const holder& low = ordered ? held[a] : held[b];
                const holder& high = ordered ? held[b] : held[a];
                pair_sums& sums = pairs[{low.site, high.site}];
                ++sums.contents;
                sums.low.objects += low.group->objects;
                sums.low.weight += low.group->weight;
                sums.high.objects += high.group->objects;
                sums.high.weight += high.group->weight;
            }
    }

    const double z = normal_quantile_two_sided(confidence);
    std::vector<shared_contents_pair> found;
    found.reserve(pairs.size());
    for (const auto& [key, sums] : pairs) {
        shared_contents_pair p;
        p.contents = sums.contents;
        p.first = estimate_side(sites, key.first, sums.low, seen_whole(sites[key.second].site), z);
        p.second = estimate_side(sites, key.second, sums.high, seen_whole(sites[key.first].site), z);
        if (p.second.bytes > p.first.bytes) std::swap(p.first, p.second);
        found.push_back(p);
    }
    std::stable_sort(found.begin(), found.end(), [](const shared_contents_pair& a, const shared_contents_pair& b) {
        return a.first.bytes > b.first.bytes;
    });
    if (found.size() > top) found.resize(top);
    return found;
}

} // namespace ojx
