#include "site_selection.hpp"

#include <algorithm>

namespace ojx::tool {
namespace {

bool worse_on_top(const context_profile& a, const context_profile& b) { return ranks_before(a, b); }

} // namespace

site_selection::site_selection(std::size_t limit, std::function<bool(const context_profile&)> wanted)
    : limit_(limit), wanted_(std::move(wanted)) {}

void site_selection::add(const context_profile& site) {
    if (wanted_(site)) keep(context_profile(site));
    else keep_count(site);
}

void site_selection::add(context_profile&& site) {
    if (wanted_(site)) keep(std::move(site));
    else keep_count(site);
}

void site_selection::keep_count(const context_profile& site) {
    ++totals_.sites;
    if (site.combined.reported()) {
        ++totals_.estimated;
        totals_.replicated += site.combined.largest_share_ci.low >= replicated_omega;
    } else {
        totals_.most_comparisons_unestimated =
            std::max(totals_.most_comparisons_unestimated, site.estimate.comparisons());
        totals_.most_digested_unestimated = std::max(totals_.most_digested_unestimated, site.identical.objects);
    }
}

void site_selection::keep(context_profile&& site) {
    keep_count(site);
    if (limit_ == 0) return;
    if (heap_.size() == limit_) {
        if (!ranks_before(site, heap_.front())) return;
        std::pop_heap(heap_.begin(), heap_.end(), worse_on_top);
        heap_.back() = std::move(site);
    } else {
        heap_.push_back(std::move(site));
    }
    std::push_heap(heap_.begin(), heap_.end(), worse_on_top);
}

std::vector<context_profile> site_selection::best() const {
    std::vector<context_profile> sorted = heap_;
    std::sort(sorted.begin(), sorted.end(), [](const context_profile& a, const context_profile& b) {
        return ranks_before(a, b);
    });
    return sorted;
}

} // namespace ojx::tool
