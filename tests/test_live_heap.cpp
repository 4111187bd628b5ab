// The heap view (live_heap.hpp) against the truth, in emulation where every object's contents and life are known:
//   - A native program (every death seen, the exit sweep is the moment): a site that keeps its replicas alive
//     and one that drops each at once have the same share, yet only the first saves heap, and the second saves
//     more churn: the two rankings disagree, and each site's savings are the exact ones where every object was
//     digested.
//   - A JVM's collections: the moment is the collection whose survivors held the most tracked bytes, its
//     survivors are the site's live objects, and what they held at its start is what is grouped.
//   - Budgets that digest about a third of the live bytes, over 200 seeds: the 95 % interval of the live
//     largest share covers the truth in >= 90 % of the runs.
//   - The profile carries it: written, read back and merged, the sums are exact and the estimates recomputed.
#include "ojx/context_sum.hpp"
#include "ojx/emulation/session.hpp"
#include "ojx/profile.hpp"
#include "ojx/profile_writer.hpp"
#include "ojx/random.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <cstdio>
#include <span>
#include <sstream>
#include <string>
#include <vector>

using namespace ojx;
using namespace ojx::emulation;

namespace {

constexpr std::uint64_t object_size = 2048;

std::vector<std::uint64_t> random_words(fast_random& rng) {
    std::vector<std::uint64_t> words(object_size / 8);
    for (auto& w : words) w = rng() | 1;
    return words;
}

address allocate(session<>& s, context_id site, const std::vector<std::uint64_t>& words) {
    const address at = *s.machine.allocate(object_size, site, 1);
    s.heap.write(at, words.data(), object_size);
    return at;
}

const context_report& of(const replica_report& report, context_id site) {
    for (const context_report& c : report.contexts)
        if (c.context == site) return c;
    FAIL("no report for the site");
    return report.contexts.front();
}

std::string frame_name(std::uint64_t f) { return "frame" + std::to_string(f); }

profile emulated_profile(session<>& s) {
    const report_naming naming{frame_name, [](type_id) { return std::string("byte[]"); }};
    return profile_of(s.prof.report(), s.prof.contexts(), naming, s.facts());
}

const context_profile& named(const profile& p, const std::string& leaf) {
    for (const context_profile& c : p.contexts)
        if (!c.frames.empty() && c.frames.front() == leaf) return c;
    FAIL("no context " << leaf);
    return p.contexts.front();
}

} // namespace

TEST_CASE("a site that keeps its replicas alive saves heap, one that drops them at once saves churn") {
    session_config config;
    config.heap_bytes = std::size_t{16} << 20;
    config.sampler.period = 1u << 30; // no access samples: whole objects only
    session<> s(config);
    fast_random rng(7);
    const context_id kept = s.prof.contexts().child(context_tree::root, 0x10);    // 48 of 64 alike, all alive
    const context_id dropped = s.prof.contexts().child(context_tree::root, 0x11); // 300 of 400 alike, each freed
    const auto common = random_words(rng);
    for (int i = 0; i < 64; ++i) allocate(s, kept, i < 48 ? common : random_words(rng));
    const auto other = random_words(rng);
    for (int i = 0; i < 400; ++i) {
        const address at = allocate(s, dropped, i % 4 != 0 ? other : random_words(rng));
        REQUIRE(s.prof.digest_at_death(at) == decltype(s.prof)::digest_outcome::digested);
        s.machine.free(at);
    }
    s.prof.digest_tracked_objects(0); // exit: the map holds the live heap

    const replica_report report = s.prof.report();
    CHECK(report.live_moment.at == live_heap_moment::kind::exit);
    CHECK(report.live_moment.bytes == 64.0 * object_size);
    const context_report& k = of(report, kept);
    CHECK(k.live.objects == 64);
    CHECK(k.live.bytes == 64.0 * object_size);
    CHECK(k.live.digested.objects() == 64);
    CHECK(of(report, dropped).live.empty());

    const profile p = emulated_profile(s);
    const context_profile& kp = named(p, "frame16");
    const context_profile& dp = named(p, "frame17");
    // Every object digested, the population known: the shares and savings are exact.
    CHECK(kp.heap.largest_share == Approx(0.75));
    CHECK(kp.heap.largest_share_ci.low == Approx(0.75));
    CHECK(kp.heap_saving().low == Approx(47.0 * object_size));
    CHECK(kp.heap_saving().high == Approx(47.0 * object_size));
    CHECK(!dp.heap.reported());
    CHECK(dp.heap_saving().low == 0);
    CHECK(dp.combined.largest_share == Approx(0.75));
    CHECK(dp.churn_saving().low == Approx(299.0 * object_size));
    CHECK(kp.churn_saving().low == Approx(47.0 * object_size));
    // The two views rank the sites in opposite orders; the share alone ties them.
    CHECK(ranks_before(kp, dp, site_rank::heap));
    CHECK(ranks_before(dp, kp, site_rank::churn));
    CHECK(p.run.heap_moments == std::vector<std::string>{"exit (the objects alive then)"});
}

TEST_CASE("a native run's heap moment is its largest census, taken as the tracked heap grows, not its exit") {
    session_config config;
    config.heap_bytes = std::size_t{32} << 20;
    config.sampler.period = 1u << 30;
    config.profiler.live_census_bytes = 0; // every live object read
    session<> s(config);
    fast_random rng(13);
    const context_id site = s.prof.contexts().child(context_tree::root, 0x50);
    const auto common = random_words(rng);
    // The heap grows to 2 000 objects (4 MiB), a quarter of them alike, as a native agent's allocation hook
    // asks for censuses; then the program frees all but 100 before its exit.
    std::vector<address> live;
    std::uint64_t censuses = 0;
    for (int i = 0; i < 2000; ++i) {
        live.push_back(allocate(s, site, i % 4 == 0 ? common : random_words(rng)));
        if (s.prof.live_census_due()) {
            s.prof.census_live_heap();
            ++censuses;
        }
    }
    CHECK(censuses >= 3); // from 1 MiB by halves again to 4 MiB: 1, 1.5, 2.25, 3.38 MiB
    CHECK(censuses <= 5);
    const std::uint64_t digested_before = s.prof.stats().objects_digested;
    CHECK(digested_before == 0); // a census counts nothing into the whole-object evidence
    for (std::size_t i = 100; i < live.size(); ++i) {
        s.prof.digest_at_death(live[i]);
        s.machine.free(live[i]);
    }
    CHECK(!s.prof.live_census_due());
    s.prof.digest_tracked_objects(0); // exit: 100 objects, fewer than the census saw
    const replica_report report = s.prof.report();
    CHECK(report.live_moment.at == live_heap_moment::kind::census);
    const context_report& c = of(report, site);
    CHECK(c.live.objects >= 1728); // the last census: at least 3.375 MiB of 2 KiB objects
    CHECK(c.live.digested.objects() == c.live.objects);
    CHECK(c.whole.objects() == 2000); // every object counted once, at its death or at exit
    const identical_groups_estimate e =
        estimate_identical_groups(c.live.digested, 0.95, c.live.objects);
    const double alike = static_cast<double>((c.live.objects + 3) / 4);
    CHECK(e.largest_share == Approx(alike / static_cast<double>(c.live.objects)));
}

TEST_CASE("a JVM's heap moment is the collection whose survivors held the most, with their contents at its start") {
    session_config config;
    config.heap_bytes = std::size_t{16} << 20;
    config.sampler.period = 1u << 30;
    config.profiler.sweep_sees_live_heap = false; // a JVM: exit holds garbage no collection found
    session<> s(config);
    fast_random rng(9);
    const context_id site = s.prof.contexts().child(context_tree::root, 0x20);
    const auto common = random_words(rng);
    const auto collect = [&](std::span<const address> surviving) {
        s.prof.hold_collection_digests(0);
        std::vector<relocated_object> survivors;
        for (const address at : surviving) survivors.push_back({at, at, object_size, *s.prof.object_at(at)});
        s.prof.settle_collection_digests(survivors);
        s.prof.on_collection(survivors);
    };
    // Collection 1: 10 survivors, all alike. Collection 2: 30 survivors, 20 alike (written before it starts),
    // then rewritten after its start (their contents at its start are what counts). Collection 3: 5 survivors.
    std::vector<address> live;
    for (int i = 0; i < 10; ++i) live.push_back(allocate(s, site, common));
    collect(live);
    for (int i = 0; i < 20; ++i) live.push_back(allocate(s, site, i < 10 ? common : random_words(rng)));
    s.prof.hold_collection_digests(0);
    for (const address at : live) {
        const auto fresh = random_words(rng);
        s.heap.write(at, fresh.data(), object_size);
    }
    {
        std::vector<relocated_object> survivors;
        for (const address at : live) survivors.push_back({at, at, object_size, *s.prof.object_at(at)});
        s.prof.settle_collection_digests(survivors);
        s.prof.on_collection(survivors);
    }
    live.resize(5);
    collect(live);
    s.prof.digest_tracked_objects(0); // exit: not a moment here

    const replica_report report = s.prof.report();
    CHECK(report.live_moment.at == live_heap_moment::kind::collection);
    CHECK(report.live_moment.collection == 2);
    CHECK(report.live_moment.collections == 3);
    const context_report& c = of(report, site);
    CHECK(c.live.objects == 30);
    CHECK(c.live.digested.objects() == 30);
    const identical_groups_estimate e = estimate_identical_groups(c.live.digested, 0.95, 30);
    CHECK(e.largest_share == Approx(20.0 / 30)); // the contents at the collection's start
    const profile p = emulated_profile(s);
    CHECK(p.run.heap_moments.size() == 1);
    CHECK(p.run.heap_moments[0].starts_with("the survivors of collection 2 of 3"));
}

TEST_CASE("subsampled live objects: the interval of the live largest share covers the truth", "[statistical]") {
    // 600 live objects of one site, 40 % of them one content, the rest distinct; the exit sweep reads a third of
    // their bytes.
    constexpr int seeds = 200, objects = 600;
    int covered = 0;
    double digested = 0;
    for (int seed = 1; seed <= seeds; ++seed) {
        session_config config;
        config.heap_bytes = std::size_t{8} << 20;
        config.sampler.period = 1u << 30;
        config.profiler.seed = static_cast<std::uint64_t>(seed);
        session<> s(config);
        fast_random rng(static_cast<std::uint64_t>(seed) * 31);
        const context_id site = s.prof.contexts().child(context_tree::root, 0x30);
        const auto common = random_words(rng);
        std::uint64_t alike = 0; // the truth: live objects holding the common content
        for (int i = 0; i < objects; ++i) {
            const bool common_one = rng.below(5) < 2;
            alike += common_one;
            allocate(s, site, common_one ? common : random_words(rng));
        }
        s.prof.digest_tracked_objects(objects * object_size / 3);
        const profile p = emulated_profile(s);
        const context_profile& c = p.contexts.front();
        REQUIRE(c.live.objects == objects);
        digested += static_cast<double>(c.live_identical.objects);
        REQUIRE(c.heap.reported());
        covered += c.heap.largest_share_ci.contains(static_cast<double>(alike) / objects);
    }
    digested /= seeds;
    std::printf("live subsample: %.0f of %d digested on average; the interval covers the truth in %d of %d runs\n",
                digested, objects, covered, seeds);
    REQUIRE(digested < 0.5 * objects); // the budget binds
    REQUIRE(covered >= 0.90 * seeds);
}

TEST_CASE("the heap view is written, read back by its sums and merged exactly") {
    session_config config;
    config.sampler.period = 1u << 30;
    session<> s(config);
    fast_random rng(3);
    const context_id site = s.prof.contexts().child(context_tree::root, 0x40);
    const auto common = random_words(rng);
    for (int i = 0; i < 30; ++i) allocate(s, site, i < 20 ? common : random_words(rng));
    s.prof.digest_tracked_objects(0);
    profile p = emulated_profile(s);
    context_profile twice = p.contexts.front();
    add_context_evidence(twice, p.contexts.front());
    twice.estimate_from_evidence(p.run.estimator);
    CHECK(twice.live.objects == 60);
    CHECK(twice.live.digested.groups.size() == 11); // the common content once, twice as many objects
    CHECK(twice.heap.largest_share == Approx(40.0 / 60));
    CHECK(twice.heap_saving().low == Approx(39.0 * object_size));
    std::ostringstream json;
    write_profile_json(json, p);
    CHECK(json.str().find("\"heap_moments\": [\"exit (the objects alive then)\"]") != std::string::npos);
    CHECK(json.str().find("\"heap\": {\"objects\": 30") != std::string::npos);
}
