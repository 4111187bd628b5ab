// Exact allocation counts by bytecode allocation site, from counters placed by a counter plan (docs/design.md,
// "Exact allocation counts"): what the JVM agent's `count=` option measures, the profile's `exact_counts` section
// (docs/profile-format.md). A site's count is exact for every finished execution of its method; merged profiles add
// counts up site by site.
//
// Where the JVM also reported every allocation (heap sampling at interval 0 while counting), each site carries the
// objects the JVM reported allocated there: those counted and never allocated are what the JIT removed (escape
// analysis' scalar replacement), which nothing else shows site by site.
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
    // An array site: the lengths of its arrays summed (a multianewarray's outermost dimension); 0 for others.
    std::uint64_t elements = 0;
    // With exact_counts::jvm_reported: the objects of `type` the JVM reported allocated at this instruction.
    std::uint64_t jvm_allocated = 0;
    std::uint64_t jvm_elements = 0; // and, of an array site, their lengths summed

    friend bool operator==(const counted_site&, const counted_site&) = default;
};

// Whether the site allocates arrays (its type as reports name it ends in "[]").
inline bool array_site(const counted_site& s) noexcept { return s.type.ends_with("[]"); }

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
    // Whether the JVM reported every allocation while counting (heap sampling at interval 0), so that each site's
    // jvm_allocated is its count of what the counted allocations became.
    bool jvm_reported = false;
    std::vector<counted_site> sites; // sorted by method and bytecode index, one per site, something counted

    friend bool operator==(const exact_counts&, const exact_counts&) = default;
};

// Counted at `site` and never allocated: what the JIT eliminated (0 where the JVM did not report allocations, or
// reported more than was counted).
inline std::uint64_t not_allocated(const exact_counts& c, const counted_site& site) noexcept {
    return c.jvm_reported && site.objects > site.jvm_allocated ? site.objects - site.jvm_allocated : 0;
}

// Puts `counts` in the order and form the section keeps: sites sorted and one per site (their objects added),
// plans and reasons sorted and merged.
inline void normalise(exact_counts& counts) {
    auto& sites = counts.sites;
    std::sort(sites.begin(), sites.end(), site_before);
    std::vector<counted_site> merged;
    for (auto& s : sites) {
        if (!merged.empty() && same_site(merged.back(), s)) {
            merged.back().objects += s.objects;
            merged.back().elements += s.elements;
            merged.back().jvm_allocated += s.jvm_allocated;
            merged.back().jvm_elements += s.jvm_elements;
        } else {
            merged.push_back(std::move(s));
        }
    }
    if (!counts.jvm_reported)
        for (counted_site& s : merged) s.jvm_allocated = s.jvm_elements = 0;
    std::erase_if(merged, [](const counted_site& s) { return s.objects == 0 && s.elements == 0 && s.jvm_allocated == 0; });
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

// The `top` sites with the largest `measure` (a counted_site -> std::uint64_t), most first (ties by site), leaving
// out those where it is 0.
template <class Measure>
std::vector<const counted_site*> most_by(const exact_counts& c, std::size_t top, Measure measure) {
    std::vector<const counted_site*> most;
    for (const counted_site& s : c.sites)
        if (measure(s) > 0) most.push_back(&s);
    const std::size_t shown = std::min(top, most.size());
    std::partial_sort(most.begin(), most.begin() + static_cast<std::ptrdiff_t>(shown), most.end(),
                      [&](const counted_site* a, const counted_site* b) {
                          const std::uint64_t x = measure(*a), y = measure(*b);
                          return x != y ? x > y : site_before(*a, *b);
                      });
    most.resize(shown);
    return most;
}

// The `top` sites that allocated most, most first, as every report lists them.
inline std::vector<const counted_site*> most_counted(const exact_counts& c, std::size_t top) {
    return most_by(c, top, [](const counted_site& s) { return s.objects; });
}

// Every object the sites counted.
inline std::uint64_t objects_counted(const exact_counts& c) noexcept {
    std::uint64_t objects = 0;
    for (const counted_site& s : c.sites) objects += s.objects;
    return objects;
}

// Every object counted and never allocated (not_allocated), over the sites.
inline std::uint64_t objects_not_allocated(const exact_counts& c) noexcept {
    std::uint64_t objects = 0;
    for (const counted_site& s : c.sites) objects += not_allocated(c, s);
    return objects;
}

// The `top` sites with most objects counted and never allocated, most first; none where the JVM did not report.
inline std::vector<const counted_site*> most_not_allocated(const exact_counts& c, std::size_t top) {
    return most_by(c, top, [&](const counted_site& s) { return not_allocated(c, s); });
}

// Objects the JVM reported at sites beyond what was counted there (0 where counting saw every allocation it made).
inline std::uint64_t objects_reported_beyond_count(const exact_counts& c) noexcept {
    std::uint64_t objects = 0;
    if (c.jvm_reported)
        for (const counted_site& s : c.sites) objects += s.jvm_allocated > s.objects ? s.jvm_allocated - s.objects : 0;
    return objects;
}

// Adds `more` into `into`, as `ojx merge` does: counts and totals summed, site by site. The result does not depend
// on the order of additions. What the JVM reported stays only where every profile had it.
inline void add_counts(exact_counts& into, const exact_counts& more) {
    into.jvm_reported = into.jvm_reported && more.jvm_reported;
    into.plans.insert(into.plans.end(), more.plans.begin(), more.plans.end());
    into.increments += more.increments;
    into.corrections += more.corrections;
    into.methods_instrumented += more.methods_instrumented;
    into.left_alone.insert(into.left_alone.end(), more.left_alone.begin(), more.left_alone.end());
    into.sites.insert(into.sites.end(), more.sites.begin(), more.sites.end());
    normalise(into);
}

} // namespace ojx
