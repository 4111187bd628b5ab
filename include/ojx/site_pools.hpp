// Allocation sites pooled over their calling contexts. One allocation site (a type and the frame that allocates
// it) reached from many callers is many contexts, each with a handful of objects and an interval spanning most of
// [0, 1]; pooled (context_sum.hpp: identical groups by their content digests, comparisons by their sums), they are
// one estimate with a narrow interval — the finding no single context shows. Pools are kept while a profile
// streams by, at most `limit` sites; a site past that is counted, not pooled.
#pragma once

#include "ojx/context_sum.hpp"
#include "ojx/profile.hpp"
#include "ojx/replica_estimator.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ojx {

// Where along the stack a pooled site's replicas concentrate (frame_pools.hpp, locate_concentrations): a frame
// node, named by its path of frames from the outermost, and the site pooled over the contexts below it.
struct site_concentration {
    std::vector<std::string> path; // outermost frame first; the last is the node's own
    std::size_t contexts = 0;       // the site's contexts below the node
    context_profile pooled;         // the site pooled over them, with its estimate
};

// One allocation site pooled over `contexts` calling contexts: `site` has the leaf frame alone, the sum of their
// objects, metrics and evidence, and the estimate recomputed from that sum.
struct pooled_site {
    context_profile site;
    std::size_t contexts = 0;
    std::size_t replicated_contexts = 0; // of them called replicated on their own evidence
    std::uint64_t objects_elsewhere = 0;  // tracked in the contexts not called replicated on their own
    std::optional<site_concentration> concentrated; // where it is known and narrower than the site's own
};

// What names an allocation site across its calling contexts: its type and its leaf frame.
inline std::string site_key(const context_profile& c) {
    std::string key = c.type;
    (key += '\x1f') += c.frames.empty() ? std::string() : c.frames.front();
    return key;
}

class site_pools {
public:
    explicit site_pools(std::size_t limit = 16384) : limit_(limit) {}

    void add(const context_profile& c) {
        std::string key = site_key(c);
        const auto found = index_.find(key);
        if (found == index_.end()) {
            if (pools_.size() == limit_) {
                ++unpooled_;
                return;
            }
            index_.emplace(std::move(key), pools_.size());
            const bool alone = called_replicated(c.combined);
            pooled_site& fresh =
                pools_.emplace_back(pooled_site{c, 1, alone ? 1u : 0u, alone ? 0 : c.objects, std::nullopt});
            fresh.site.frames.resize(std::min<std::size_t>(1, c.frames.size()));
            fresh.site.accesses.clear(); // where the objects were used stays with each context
            return;
        }
        pooled_site& pool = pools_[found->second];
        ++pool.contexts;
        const bool alone = called_replicated(c.combined);
        pool.replicated_contexts += alone;
        if (!alone) pool.objects_elsewhere += c.objects;
        add_context_evidence(pool.site, c);
    }

    // Every site, each with its estimate from the pooled evidence (`config`: the run's), best first.
    std::vector<pooled_site> finish_all(const estimator_config& config) const { return estimated(config, 1); }

    // The sites reached from at least two contexts (a site of one context is that context), best first. Only
    // they are estimated: frame_pools finishes a pool at every frame of a tree, where most sites have one context.
    std::vector<pooled_site> finish(const estimator_config& config) const { return estimated(config, 2); }

    // Of `sites` (finish_all's), those reached from at least two contexts, in their order: finish's, without
    // estimating them again.
    static std::vector<pooled_site> reached_from_several(std::vector<pooled_site> sites) {
        std::erase_if(sites, [](const pooled_site& p) { return p.contexts < 2; });
        return sites;
    }

    // Contexts of sites beyond the limit, not pooled.
    std::size_t unpooled() const noexcept { return unpooled_; }

private:
    std::vector<pooled_site> estimated(const estimator_config& config, std::size_t min_contexts) const {
        std::vector<pooled_site> result;
        for (const pooled_site& pool : pools_) {
            if (pool.contexts < min_contexts) continue;
            pooled_site& done = result.emplace_back(pool);
            context_profile& s = done.site;
            // Comparisons pool only where every context carried their sums (an older profile may not).
            s.estimate = s.has_evidence ? estimate_replicas(s.objects, s.evidence, config) : replica_estimate{};
            s.estimate.objects = s.objects;
            s.estimate_from_evidence(config);
        }
        std::sort(result.begin(), result.end(),
                  [](const pooled_site& a, const pooled_site& b) { return ranks_before(a.site, b.site); });
        return result;
    }

    std::size_t limit_;
    std::vector<pooled_site> pools_;
    std::unordered_map<std::string, std::size_t> index_;
    std::size_t unpooled_ = 0;
};

// What reports list of the pooled sites: those pooling calls replicated where contexts not replicated on their
// own hold at least a quarter of the site's tracked objects — the finding the contexts alone do not make (a site
// whose one replicated context holds nearly all its objects is that context's row).
inline bool is_pooled_finding(const pooled_site& p) {
    return called_replicated(p.site.combined) && 4 * p.objects_elsewhere >= p.site.objects;
}

// The pooled sites reports list, best first, at most `top`.
inline std::vector<pooled_site> pooled_findings(const std::vector<pooled_site>& pooled, std::size_t top) {
    std::vector<pooled_site> shown;
    for (const pooled_site& p : pooled)
        if (shown.size() < top && is_pooled_finding(p)) shown.push_back(p);
    return shown;
}

} // namespace ojx
