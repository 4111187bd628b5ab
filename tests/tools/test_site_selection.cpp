// The streaming selection behind `ojx report --top N`: whatever order sites arrive in, it keeps exactly the N that
// a full sort by rank would put first, holds no more than N at a time, and counts every site for the header.
#include "generated_profiles.hpp"

#include "ojx/site_selection.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <random>

using namespace ojx;
using namespace ojx::tool;
using namespace ojx::tool::testing;

namespace {

std::vector<context_profile> generated_sites(std::uint64_t seed) {
    std::vector<context_profile> sites;
    for (const simulated_site& site : simulate_sites(seed, 60)) {
        std::vector<std::size_t> all(site.sources.size());
        for (std::size_t k = 0; k < all.size(); ++k) all[k] = k;
        sites.push_back(context_of(site, all, estimator_config{}));
    }
    return sites;
}

std::vector<std::string> names(const std::vector<context_profile>& sites) {
    std::vector<std::string> out;
    for (const context_profile& c : sites) out.push_back(c.type + c.frames.front());
    return out;
}

} // namespace

TEST_CASE("the selection keeps the best N sites in any arrival order, and counts them all") {
    for (std::uint64_t seed = 1; seed <= 40; ++seed) {
        std::vector<context_profile> sites = generated_sites(seed);
        std::vector<context_profile> sorted = sites;
        std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return ranks_before(a, b); });
        std::shuffle(sites.begin(), sites.end(), std::mt19937_64(seed));
        for (const std::size_t limit : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{60}, std::size_t{100}}) {
            site_selection selection(limit, [](const context_profile&) { return true; });
            for (const context_profile& c : sites) selection.add(c);
            const std::vector<context_profile> best = selection.best();
            const std::size_t expected = std::min(limit, sorted.size());
            REQUIRE(best.size() == expected);
            CHECK(names(best) == names({sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(expected)}));
            const site_totals& totals = selection.totals();
            CHECK(totals.sites == sites.size());
            const auto estimated = std::count_if(sites.begin(), sites.end(),
                                                 [](const auto& c) { return c.estimate.reported; });
            CHECK(totals.estimated == static_cast<std::size_t>(estimated));
            const auto replicated = std::count_if(sites.begin(), sites.end(), [](const auto& c) {
                return c.estimate.reported && c.estimate.omega >= replicated_omega;
            });
            CHECK(totals.replicated == static_cast<std::size_t>(replicated));
        }
    }
}

TEST_CASE("sites the filter rejects are counted but never kept") {
    const std::vector<context_profile> sites = generated_sites(7);
    site_selection selection(10, [](const context_profile& c) { return c.estimate.reported && c.estimate.theta >= 0.5; });
    for (const context_profile& c : sites) selection.add(c);
    for (const context_profile& kept : selection.best()) {
        CHECK(kept.estimate.reported);
        CHECK(kept.estimate.theta >= 0.5);
    }
    CHECK(selection.totals().sites == sites.size());
}
