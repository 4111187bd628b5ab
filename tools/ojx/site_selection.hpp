// The best-ranked allocation sites of a profile that pass a filter, kept while the profile streams by: at most
// `limit` of them are held at any time, so a report on a 100 000-site profile costs memory for what it prints.
// Also counts what a report's header says about all sites.
#pragma once

#include "profile.hpp"

#include <cstddef>
#include <functional>
#include <vector>

namespace ojx::tool {

struct site_totals {
    std::size_t sites = 0;
    std::size_t estimated = 0;  // with enough comparisons or whole objects for an estimate
    std::size_t replicated = 0; // estimated, and the largest group's share is at least 10 % (its lower end)
    std::uint64_t most_comparisons_unestimated = 0; // the most any site without an estimate has
    std::uint64_t most_digested_unestimated = 0;    // objects digested whole: the most any such site has
};

// ojx calls a site replicated when at least this share of its objects are provably one identical group (the lower
// end of the largest share: ω from comparisons, the interval's low end from whole objects).
inline constexpr double replicated_omega = 0.1;

class site_selection {
public:
    site_selection(std::size_t limit, std::function<bool(const context_profile&)> wanted);

    void add(const context_profile& site);
    void add(context_profile&& site);

    // The kept sites, best first.
    std::vector<context_profile> best() const;
    const site_totals& totals() const noexcept { return totals_; }

private:
    void keep(context_profile&& site);
    void keep_count(const context_profile& site);

    std::size_t limit_;
    std::function<bool(const context_profile&)> wanted_;
    std::vector<context_profile> heap_; // worst kept site on top
    site_totals totals_;
};

} // namespace ojx::tool
