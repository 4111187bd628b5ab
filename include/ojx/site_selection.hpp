// The best-ranked allocation sites of a profile that pass a filter, kept while the profile streams by: at most
// `limit` of them are held at any time, so a report on a 100 000-site profile costs memory for what it prints.
// Also counts what a report's header says about all sites.
#pragma once

#include "ojx/profile.hpp"

#include <algorithm>
#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

namespace ojx {

struct site_totals {
    std::size_t sites = 0;
    std::size_t estimated = 0;  // with enough comparisons or whole objects for an estimate
    std::size_t replicated = 0; // called replicated (called_replicated)
    std::uint64_t most_comparisons_unestimated = 0; // the most any site without an estimate has
    std::uint64_t most_digested_unestimated = 0;    // objects digested whole: the most any such site has
};

class site_selection {
public:
    site_selection(std::size_t limit, std::function<bool(const context_profile&)> wanted,
                   site_rank rank = site_rank::share);

    void add(const context_profile& site);
    void add(context_profile&& site);

    // The kept sites, best first.
    std::vector<context_profile> best() const;
    const site_totals& totals() const noexcept { return totals_; }

private:
    // The heap's order (the worst kept site on top) and the listing's are one comparison: a before b.
    auto worse_first() const {
        return [rank = rank_](const context_profile& a, const context_profile& b) { return ranks_before(a, b, rank); };
    }
    void keep(context_profile&& site);
    void keep_count(const context_profile& site);

    std::size_t limit_;
    std::function<bool(const context_profile&)> wanted_;
    site_rank rank_;
    std::vector<context_profile> heap_; // worst kept site on top
    site_totals totals_;
};

inline site_selection::site_selection(std::size_t limit, std::function<bool(const context_profile&)> wanted,
                                      site_rank rank)
    : limit_(limit), wanted_(std::move(wanted)), rank_(rank) {}

inline void site_selection::add(const context_profile& site) {
    if (wanted_(site)) keep(context_profile(site));
    else keep_count(site);
}

inline void site_selection::add(context_profile&& site) {
    if (wanted_(site)) keep(std::move(site));
    else keep_count(site);
}

inline void site_selection::keep_count(const context_profile& site) {
    ++totals_.sites;
    if (site.combined.reported()) {
        ++totals_.estimated;
        totals_.replicated += called_replicated(site.combined);
    } else {
        totals_.most_comparisons_unestimated =
            std::max(totals_.most_comparisons_unestimated, site.estimate.comparisons());
        totals_.most_digested_unestimated = std::max(totals_.most_digested_unestimated, site.identical.objects);
    }
}

inline void site_selection::keep(context_profile&& site) {
    keep_count(site);
    if (limit_ == 0) return;
    if (heap_.size() == limit_) {
        if (!ranks_before(site, heap_.front(), rank_)) return;
        std::pop_heap(heap_.begin(), heap_.end(), worse_first());
        heap_.back() = std::move(site);
    } else {
        heap_.push_back(std::move(site));
    }
    std::push_heap(heap_.begin(), heap_.end(), worse_first());
}

inline std::vector<context_profile> site_selection::best() const {
    std::vector<context_profile> sorted = heap_;
    std::sort(sorted.begin(), sorted.end(), worse_first());
    return sorted;
}

} // namespace ojx
