// Exact allocation counts by bytecode allocation site, from counters placed by a counter plan (docs/design.md,
// "Exact allocation counts"): what the JVM agent's `count=` option measures, the profile's `exact_counts` section
// (docs/profile-format.md). A site's count is exact for every finished execution of its method; merged profiles add
// counts up site by site.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace ojx {

struct counted_site {
    std::string method;     // the method with its descriptor: "com.acme.Reader.read(Ljava/io/InputStream;)[B"
    std::uint32_t bci = 0;  // the allocation instruction's bytecode index in the method as loaded
    std::string frame;      // the site as report frames name it: "com.acme.Reader.read(Reader.java:212)"
    std::string type;       // as reports name types: "byte[]", "com.acme.Record"
    std::uint64_t objects = 0;
};

// Sites are one by method and bytecode index.
inline bool same_site(const counted_site& a, const counted_site& b) noexcept {
    return a.method == b.method && a.bci == b.bci;
}
inline bool site_before(const counted_site& a, const counted_site& b) noexcept {
    return std::tie(a.method, a.bci) < std::tie(b.method, b.bci);
}

struct exact_counts {
    std::vector<std::string> plans;        // the counter plans of the runs ("paths", "edges", "sites"), sorted
    std::uint64_t increments = 0;          // counter increments the runs made
    std::uint64_t corrections = 0;         // frames corrected where an exception left them
    std::uint64_t methods_instrumented = 0;
    // Why methods or classes ran as they were, each reason's kind with how many, sorted by reason.
    std::vector<std::pair<std::string, std::uint64_t>> left_alone;
    std::vector<counted_site> sites; // sorted by method and bytecode index, one per site, objects > 0
};

// Puts `counts` in the order and form the section keeps: sites sorted and one per site (their objects added),
// plans and reasons sorted and merged.
inline void normalise(exact_counts& counts) {
    auto& sites = counts.sites;
    std::sort(sites.begin(), sites.end(), site_before);
    std::vector<counted_site> merged;
    for (auto& s : sites) {
        if (!merged.empty() && same_site(merged.back(), s)) merged.back().objects += s.objects;
        else merged.push_back(std::move(s));
    }
    std::erase_if(merged, [](const counted_site& s) { return s.objects == 0; });
    sites = std::move(merged);
    std::sort(counts.plans.begin(), counts.plans.end());
    counts.plans.erase(std::unique(counts.plans.begin(), counts.plans.end()), counts.plans.end());
    auto& reasons = counts.left_alone;
    std::sort(reasons.begin(), reasons.end());
    std::vector<std::pair<std::string, std::uint64_t>> summed;
    for (auto& r : reasons) {
        if (!summed.empty() && summed.back().first == r.first) summed.back().second += r.second;
        else summed.push_back(std::move(r));
    }
    reasons = std::move(summed);
}

// The `top` sites that allocated most, most first (ties by site), as every report lists them.
inline std::vector<const counted_site*> most_counted(const exact_counts& c, std::size_t top) {
    std::vector<const counted_site*> most;
    for (const counted_site& s : c.sites) most.push_back(&s);
    const std::size_t shown = std::min(top, most.size());
    std::partial_sort(most.begin(), most.begin() + static_cast<std::ptrdiff_t>(shown), most.end(),
                      [](const counted_site* a, const counted_site* b) {
                          return a->objects != b->objects ? a->objects > b->objects : site_before(*a, *b);
                      });
    most.resize(shown);
    return most;
}

// Every object the sites counted.
inline std::uint64_t objects_counted(const exact_counts& c) noexcept {
    std::uint64_t objects = 0;
    for (const counted_site& s : c.sites) objects += s.objects;
    return objects;
}

// Adds `more` into `into`, as `ojx merge` does: counts and totals summed, site by site. The result does not depend
// on the order of additions.
inline void add_counts(exact_counts& into, const exact_counts& more) {
    into.plans.insert(into.plans.end(), more.plans.begin(), more.plans.end());
    into.increments += more.increments;
    into.corrections += more.corrections;
    into.methods_instrumented += more.methods_instrumented;
    into.left_alone.insert(into.left_alone.end(), more.left_alone.begin(), more.left_alone.end());
    into.sites.insert(into.sites.end(), more.sites.begin(), more.sites.end());
    normalise(into);
}

} // namespace ojx
