// Allocation sites pooled over their calling contexts (site_pools.hpp), against the truth of emulated heaps: one
// site (an `Arrays.copyOf`) reached from 30 callers, each context with 5 objects, 60 % of them alike in
// expectation, a third of the bytes digested whole. Each context alone has one or two objects digested, too few
// for an estimate; pooled, the site is one estimate.
//   - Over 200 seeds the pooled interval covers the site's true largest share in ≥ 90 % of the runs, and the
//     pooled site is called replicated in ≥ 95 %.
//   - The text report lists it after the table, with how many contexts it pools.
//   - Pooling adds evidence exactly: every object digested, the pooled share is the site's truth to the object.
#include "ojx/emulation/session.hpp"
#include "ojx/random.hpp"
#include "ojx/report.hpp"
#include "ojx/site_pools.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

using namespace ojx;
using namespace ojx::emulation;

namespace {

constexpr std::size_t callers = 30, per_context = 5, object_size = 1024;
constexpr std::uint64_t leaf = 0x77;

struct pooled_run {
    double truth = 0;           // the site's largest share, over all its objects
    std::vector<pooled_site> pooled;
    profile written;            // the profile of the run, contexts as the profiler reports them
};

// `budget`: bytes the exit sweep digests (0: every object).
pooled_run run(std::uint64_t seed, std::uint64_t budget) {
    session_config config;
    config.profiler.seed = seed;
    config.heap_bytes = std::size_t{4} << 20;
    config.sampler.period = 1u << 30; // no access samples: whole objects only
    session<> s(config);
    fast_random rng(seed);
    std::vector<std::uint64_t> common(object_size / 8);
    for (auto& w : common) w = rng() | 1;
    std::uint64_t alike = 0;
    for (std::size_t caller = 0; caller < callers; ++caller) {
        const context_id at_caller = s.prof.contexts().child(context_tree::root, 0x1000 + caller);
        const context_id context = s.prof.contexts().child(at_caller, leaf);
        for (std::size_t i = 0; i < per_context; ++i) {
            const address at = *s.machine.allocate(object_size, context, 1);
            std::vector<std::uint64_t> words = common;
            if (rng.below(10) < 6) ++alike;
            else words[rng.below(words.size())] = rng() | 1; // its own: no other object has this word there
            s.heap.write(at, words.data(), object_size);
        }
    }
    s.prof.digest_tracked_objects(budget);
    const report_naming naming{[](std::uint64_t frame) {
                                   return frame == leaf ? std::string("java.util.Arrays.copyOf(Arrays.java:3537)")
                                                        : "Caller" + std::to_string(frame) + ".write(Caller.java:9)";
                               },
                               [](type_id) { return std::string("byte[]"); }};
    pooled_run result;
    const double objects = static_cast<double>(callers * per_context);
    result.truth = static_cast<double>(alike > 0 ? alike : 1) / objects;
    result.written = profile_of(s.prof.report(), s.prof.contexts(), naming, s.facts());
    site_pools pools;
    for (const context_profile& c : result.written.contexts) pools.add(c);
    result.pooled = pools.finish(result.written.run.estimator);
    return result;
}

} // namespace

TEST_CASE("a site's contexts pool into one estimate whose interval covers the site's truth", "[statistical]") {
    constexpr int seeds = 200;
    int covered = 0, replicated = 0, contexts_estimated = 0;
    for (int seed = 1; seed <= seeds; ++seed) {
        const pooled_run r = run(static_cast<std::uint64_t>(seed), callers * per_context * object_size / 3);
        REQUIRE(r.written.contexts.size() == callers);
        REQUIRE(r.pooled.size() == 1);
        const pooled_site& site = r.pooled.front();
        REQUIRE(site.contexts == callers);
        REQUIRE(site.site.frames == std::vector<std::string>{"java.util.Arrays.copyOf(Arrays.java:3537)"});
        REQUIRE(site.site.objects == callers * per_context);
        std::uint64_t digested = 0;
        for (const context_profile& c : r.written.contexts) {
            digested += c.identical.objects;
            contexts_estimated += c.combined.reported();
        }
        REQUIRE(site.site.identical.objects == digested);
        const interval ci = site.site.combined.largest_share_ci;
        covered += ci.low <= r.truth && r.truth <= ci.high;
        replicated += called_replicated(site.site.combined);
    }
    INFO("covered " << covered << ", replicated " << replicated << " of " << seeds << "; contexts with an estimate "
                    << contexts_estimated << " of " << seeds * static_cast<int>(callers));
    CHECK(covered >= seeds * 9 / 10);
    CHECK(replicated >= seeds * 95 / 100);
    // The point: alone, most contexts have too few objects digested for any estimate.
    CHECK(contexts_estimated < seeds * static_cast<int>(callers) / 2);
}

TEST_CASE("pooling every digested object gives the site's share exactly") {
    const pooled_run r = run(7, 0);
    REQUIRE(r.pooled.size() == 1);
    const context_profile& site = r.pooled.front().site;
    CHECK(site.identical.objects == callers * per_context);
    CHECK(site.combined.largest_share == Approx(r.truth).margin(1e-12));
}

TEST_CASE("the text report lists a pooled site after the table, with the contexts it pools") {
    const pooled_run r = run(3, callers * per_context * object_size / 3);
    std::ostringstream out;
    write_text_report(out, {}, r.written, 10);
    INFO(out.str());
    const std::string text = out.str();
    const auto section = text.find("Allocation sites pooled over their calling contexts: replicated");
    REQUIRE(section != std::string::npos);
    const auto row = text.find(" byte[] at java.util.Arrays.copyOf(Arrays.java:3537)\n", section);
    REQUIRE(row != std::string::npos);
    CHECK(text.find("        pooled over 30 calling contexts, ", row) != std::string::npos);
}
