// The whole-object evidence against the truth, in emulation where every object's contents are known: generated
// heaps with sites of known largest-group shares, near-replica sites (sparse rows differing in 8 of 2048
// elements), an all-zero site and controls with all-distinct contents. Objects are digested through the
// profiler's calls as an agent would make them: at their free (digest_at_death, then on_free), in sweeps of the
// objects allocated since the last one (digest_tracked_objects) and at exit (the same, for the survivors).
//   - Every object digested: the largest share and the identical-pair fraction are exactly the truth, and the
//     intervals are points.
//   - Budgets that digest about a third of the bytes, over 300 seeds: the 95 % interval of the largest share
//     covers the truth in ≥ 90 % of the runs of every site, and in ≥ 93 % pooled.
//   - Near-replica sites are reported as near-replicas, not as identical replicas.
//   - A burst freed in content order (three groups of 600, a seventh of it within the budget), over 200 seeds:
//     the interval covers the truth (1/3) in ≥ 90 % of the runs.
//   - A JVM's collections (hold_collection_digests, settle_collection_digests): arrays filled after a collection
//     started and freed by a later one are counted complete, each once; held digests of objects an allocation
//     evicted before the relocation are counted by their context; a collection that starts before the previous
//     one is settled reads only the objects allocated since.
#include "ojx/emulation/session.hpp"
#include "ojx/random.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <map>
#include <string>
#include <vector>

using namespace ojx;
using namespace ojx::emulation;

namespace {

struct site_shape {
    const char* name;
    std::uint64_t object_size;
    std::vector<std::uint32_t> groups; // identical groups' sizes (ignored for near and distinct sites)
    enum kind { grouped, near_rows, all_zero, distinct } what = grouped;
    std::uint32_t objects = 0; // for near, zero and distinct sites
};

const std::vector<site_shape>& shapes() {
    static const std::vector<site_shape> all = {
        {"70% one content", 1024, {140, 20, 20, 20}},
        {"two equal groups", 2048, {100, 100}},
        {"20 groups of 5%", 1024, std::vector<std::uint32_t>(20, 10)},
        {"sparse rows 8 of 2048", 16384, {}, site_shape::near_rows, 60},
        {"all zero", 2048, {}, site_shape::all_zero, 150},
        {"distinct dense", 1024, {}, site_shape::distinct, 150},
    };
    return all;
}

struct truth {
    std::uint64_t objects = 0;
    double largest_share = 0;
    double identical_pairs = 0;
};

struct run_result {
    std::vector<truth> truths;
    std::vector<context_report> reports; // per shape
    profiler_stats stats;
};

// One run: objects of all sites interleaved at random, at most `live` alive at once (older ones freed, digested
// at their death first), a moving collection every `collect_every` allocations (its live objects digested at
// its start), and the survivors digested at exit. Budgets 0: every object digested.
run_result run(std::uint64_t seed, std::uint64_t sweep_budget, std::uint64_t death_budget_per_second) {
    session_config config;
    config.profiler.seed = seed;
    config.profiler.death_digest_bytes_per_second = death_budget_per_second;
    config.heap_bytes = std::size_t{16} << 20;
    config.sampler.period = 1u << 30; // no access samples: only whole-object evidence
    session<> s(config);
    fast_random rng(seed);
    const auto& all = shapes();

    // Each object's site and content, in allocation order.
    struct planned {
        std::size_t site;
        std::vector<std::uint64_t> words;
    };
    std::vector<planned> plan;
    run_result result;
    std::vector<context_id> contexts;
    for (std::size_t c = 0; c < all.size(); ++c) {
        const site_shape& shape = all[c];
        contexts.push_back(s.prof.contexts().child(context_tree::root, 0x100 + c));
        const std::size_t words = shape.object_size / 8;
        std::map<std::vector<std::uint64_t>, std::uint64_t> counts;
        const auto add = [&](std::vector<std::uint64_t> content) {
            ++counts[content];
            plan.push_back({c, std::move(content)});
        };
        const auto random_content = [&] {
            std::vector<std::uint64_t> v(words);
            for (auto& w : v) w = rng() | 1;
            return v;
        };
        switch (shape.what) {
        case site_shape::grouped:
            for (const std::uint32_t size : shape.groups) {
                const auto content = random_content();
                for (std::uint32_t i = 0; i < size; ++i) add(content);
            }
            break;
        case site_shape::near_rows: {
            // Sparse rows: mostly zeros, a common pattern of non-zeros, and 8 elements of each row its own.
            std::vector<std::uint64_t> pattern(words, 0);
            for (std::size_t i = 0; i < words; i += 16) pattern[i] = rng() | 1;
            for (std::uint32_t i = 0; i < shape.objects; ++i) {
                auto row = pattern;
                for (int k = 0; k < 8; ++k) row[rng.below(words)] = rng() | 1;
                add(row);
            }
            break;
        }
        case site_shape::all_zero:
            for (std::uint32_t i = 0; i < shape.objects; ++i) add(std::vector<std::uint64_t>(words, 0));
            break;
        case site_shape::distinct:
            for (std::uint32_t i = 0; i < shape.objects; ++i) add(random_content());
            break;
        }
        truth t;
        double pairs = 0;
        std::uint64_t largest = 0;
        for (const auto& [content, count] : counts) {
            t.objects += count;
            largest = std::max(largest, count);
            pairs += static_cast<double>(count) * static_cast<double>(count - 1);
        }
        t.largest_share = static_cast<double>(largest) / static_cast<double>(t.objects);
        t.identical_pairs = pairs / (static_cast<double>(t.objects) * static_cast<double>(t.objects - 1));
        result.truths.push_back(t);
    }
    for (std::size_t i = plan.size(); i > 1; --i) std::swap(plan[i - 1], plan[rng.below(i)]);

    std::deque<address> live;
    std::uint64_t now_ns = 0;
    const std::size_t live_limit = 64;
    const std::size_t collect_every = 250;
    for (std::size_t i = 0; i < plan.size(); ++i) {
        const site_shape& shape = all[plan[i].site];
        const address at = *s.machine.allocate(shape.object_size, contexts[plan[i].site], 1);
        s.heap.write(at, plan[i].words.data(), shape.object_size);
        live.push_back(at);
        now_ns += 2'000'000; // 500 allocations a second
        if (live.size() > live_limit) {
            const std::size_t victim = rng.below(live.size());
            const address dying = live[victim];
            live.erase(live.begin() + static_cast<std::ptrdiff_t>(victim));
            s.prof.digest_at_death(dying, now_ns);
            s.machine.free(dying);
        }
        if ((i + 1) % collect_every == 0) {
            // A JVM agent's collection: the live objects hold their last contents at its start.
            s.prof.digest_tracked_objects(sweep_budget);
            std::map<address, address> moved;
            for (const auto& m : s.machine.collect()) moved.emplace(m.from, m.to);
            for (address& a : live)
                if (const auto it = moved.find(a); it != moved.end()) a = it->second;
        }
    }
    s.prof.digest_tracked_objects(sweep_budget); // exit: the survivors
    const replica_report report = s.prof.report();
    for (const context_id c : contexts) {
        const auto it = std::find_if(report.contexts.begin(), report.contexts.end(),
                                     [&](const context_report& r) { return r.context == c; });
        REQUIRE(it != report.contexts.end());
        result.reports.push_back(*it);
    }
    result.stats = report.stats;
    return result;
}

} // namespace

TEST_CASE("every object digested: the estimates are the truth") {
    for (const std::uint64_t seed : {1, 2, 3}) {
        const run_result r = run(seed, 0, 0);
        std::uint64_t total = 0;
        for (std::size_t c = 0; c < shapes().size(); ++c) {
            INFO(shapes()[c].name);
            const context_report& site = r.reports[c];
            const truth& t = r.truths[c];
            total += t.objects;
            REQUIRE(site.whole.objects() == t.objects);
            REQUIRE(site.identical.largest_share == Approx(t.largest_share).epsilon(1e-12));
            REQUIRE(site.identical.largest_share_ci.low == Approx(t.largest_share).epsilon(1e-12));
            REQUIRE(site.identical.largest_share_ci.high == Approx(t.largest_share).epsilon(1e-12));
            REQUIRE(site.identical.identical_pairs == Approx(t.identical_pairs).margin(1e-15));
            REQUIRE(site.identical.identical_pairs_ci.high == Approx(t.identical_pairs).margin(1e-15));
            REQUIRE(site.combined.basis == evidence_basis::whole_objects);
            REQUIRE(site.combined.largest_share == site.identical.largest_share);
        }
        REQUIRE(r.stats.objects_digested == total);
        REQUIRE(r.stats.digests_skipped_budget == 0);
        // The all-zero site is one group of zeros; the controls have nothing in common.
        REQUIRE(r.reports[4].identical.largest_all_zero);
        REQUIRE(r.reports[4].identical.largest_share == 1);
        REQUIRE_FALSE(r.reports[0].identical.largest_all_zero);
        REQUIRE(r.reports[5].identical.distinct_low == r.truths[5].objects);
        REQUIRE_FALSE(r.reports[5].near.found);
        REQUIRE_FALSE(r.reports[0].near.found);
    }
}

TEST_CASE("each tracked object is offered once: at its death or at the first sweep after its allocation") {
    session_config config;
    config.sampler.period = 1u << 30;
    session<> s(config);
    using outcome = session<>::profiler_type::digest_outcome;
    const context_id site = s.prof.contexts().child(context_tree::root, 0x42);
    const address a = *s.machine.allocate(4096, site, 1);
    const address b = *s.machine.allocate(4096, site, 1);
    const address small = *s.machine.allocate(64, site, 1); // below the size threshold: not tracked
    REQUIRE(s.prof.digest_at_death(small) == outcome::untracked);
    REQUIRE(s.prof.digest_at_death(a) == outcome::digested);
    REQUIRE(s.prof.digest_at_death(a) == outcome::offered_before); // twice at one death: once
    s.machine.free(a);
    const auto swept = s.prof.digest_tracked_objects();
    REQUIRE(swept.offered == 1); // b
    REQUIRE(swept.digested == 1);
    REQUIRE(swept.bytes == 4096);
    REQUIRE(s.prof.digest_at_death(b) == outcome::offered_before);
    REQUIRE(s.prof.digest_tracked_objects().offered == 0);
    const address c = *s.machine.allocate(4096, site, 1);
    REQUIRE(s.prof.digest_tracked_objects().offered == 1); // only what was allocated since
    REQUIRE(s.prof.digest_at_death(c) == outcome::offered_before);
    REQUIRE(s.prof.stats().objects_digested == 3);
    REQUIRE(s.prof.stats().bytes_digested == 3 * 4096);
    const replica_report report = s.prof.report();
    REQUIRE(report.contexts.size() == 1);
    // Three zero-filled objects, every tracked one of the site: one group, enough for a whole-object estimate,
    // and exact.
    REQUIRE(report.contexts[0].whole.objects() == 3);
    REQUIRE(report.contexts[0].identical.largest_all_zero);
    REQUIRE(report.contexts[0].combined.basis == evidence_basis::whole_objects);
    REQUIRE(report.contexts[0].combined.largest_share_ci == interval{1, 1});
}

TEST_CASE("near-replica rows are near-replicas, not identical replicas") {
    for (const std::uint64_t seed : {4, 5, 6}) {
        const run_result r = run(seed, 0, 0);
        const context_report& rows = r.reports[3];
        // No two rows are identical: the identical estimate says so, exactly.
        REQUIRE(rows.identical.largest_objects == 1);
        REQUIRE(rows.identical.identical_pairs == 0);
        REQUIRE(rows.combined.largest_share_ci.high < 0.05);
        // They are one family of near-replicas sharing most of their contents.
        REQUIRE(rows.near.found);
        REQUIRE(rows.near.share >= 0.9);
        REQUIRE(rows.near.shared_fraction >= 0.5);
        REQUIRE(rows.near.shared_fraction < 1);
    }
}

TEST_CASE("budgets subsample fairly: the largest-share interval covers the truth at its level", "[statistical]") {
    const int seeds = 300;
    std::vector<int> covered(shapes().size(), 0), pairs_covered(shapes().size(), 0);
    std::uint64_t digested = 0, skipped = 0;
    for (int seed = 1; seed <= seeds; ++seed) {
        // The heap offers ≈ 0.9 MB a second at death and ≈ 150 kB per collection: about a third of each is read.
        const run_result r = run(static_cast<std::uint64_t>(seed) * 104729, 50 << 10, 300 << 10);
        digested += r.stats.objects_digested;
        skipped += r.stats.digests_skipped_budget;
        for (std::size_t c = 0; c < shapes().size(); ++c) {
            covered[c] += r.reports[c].identical.largest_share_ci.contains(r.truths[c].largest_share) ? 1 : 0;
            pairs_covered[c] += r.reports[c].identical.identical_pairs_ci.contains(r.truths[c].identical_pairs) ? 1 : 0;
        }
    }
    std::printf("digested %llu, skipped by budget %llu\n", static_cast<unsigned long long>(digested),
                static_cast<unsigned long long>(skipped));
    REQUIRE(2 * skipped > digested); // the budgets bind
    int pooled = 0;
    for (std::size_t c = 0; c < shapes().size(); ++c) {
        std::printf("%-24s largest %3d%%  pairs %3d%%\n", shapes()[c].name, covered[c] * 100 / seeds,
                    pairs_covered[c] * 100 / seeds);
        CHECK(covered[c] >= 0.90 * seeds);
        CHECK(pairs_covered[c] >= 0.88 * seeds);
        pooled += covered[c];
    }
    REQUIRE(pooled >= 0.93 * seeds * static_cast<double>(shapes().size()));
}

// A burst freed in content order (an image converter's frame buffers: three groups of 600 identical buffers,
// allocated and freed in frame order, all in one second whose predecessor offered nothing at death): a budget
// that stopped at its cap digested only the burst's first objects, all of the first group, and reported a
// largest share near 1 against a truth of 1/3. Every object must keep a chance to be drawn, weighed by it.
TEST_CASE("a burst freed in content order is subsampled fairly", "[statistical]") {
    constexpr std::uint32_t groups = 3, per_group = 600;
    constexpr std::uint64_t object_size = 4096;
    const int seeds = 200;
    int covered = 0;
    double digested = 0, mean_share = 0;
    for (int seed = 1; seed <= seeds; ++seed) {
        session_config config;
        config.profiler.seed = static_cast<std::uint64_t>(seed) * 7919;
        config.profiler.death_digest_bytes_per_second = 1 << 20; // a seventh of the burst's 7.2 MiB
        config.heap_bytes = std::size_t{16} << 20;
        config.sampler.period = 1u << 30;
        session<> s(config);
        fast_random rng(static_cast<std::uint64_t>(seed));
        const context_id site = s.prof.contexts().child(context_tree::root, 0x77);
        std::vector<address> buffers;
        std::uint64_t now_ns = 0;
        for (std::uint32_t g = 0; g < groups; ++g) {
            std::vector<std::uint64_t> content(object_size / 8);
            for (auto& w : content) w = rng() | 1;
            for (std::uint32_t i = 0; i < per_group; ++i) {
                const address at = *s.machine.allocate(object_size, site, 1);
                s.heap.write(at, content.data(), object_size);
                buffers.push_back(at);
                now_ns += 1'000'000;
            }
        }
        now_ns += 2'000'000'000;
        for (const address at : buffers) {
            s.prof.digest_at_death(at, now_ns);
            s.machine.free(at);
            now_ns += 1000; // the whole burst within a millisecond or two
        }
        const replica_report report = s.prof.report();
        REQUIRE(report.contexts.size() == 1);
        const identical_groups_estimate& e = report.contexts[0].identical;
        covered += e.largest_share_ci.contains(1.0 / groups) ? 1 : 0;
        digested += static_cast<double>(report.stats.objects_digested);
        mean_share += e.largest_share;
    }
    digested /= seeds;
    mean_share /= seeds;
    std::printf("burst in content order: %.0f of %u digested on average, mean largest share %.3f (truth %.3f), "
                "interval covers the truth in %d of %d runs\n",
                digested, groups * per_group, mean_share, 1.0 / groups, covered, seeds);
    REQUIRE(digested < 0.75 * groups * per_group); // the budget binds
    CHECK(mean_share < 0.45);
    REQUIRE(covered >= 0.90 * seeds);
}

namespace {

// A JVM's collection, as its agent drives the profiler: fingerprints held at the start, the dead ones counted
// after it, then the map rebuilt with the survivors (each `size` bytes), which stay where they are here.
void collection(session<>& s, std::span<const address> survivors_at, std::uint64_t size, std::uint64_t budget) {
    s.prof.hold_collection_digests(budget);
    std::vector<relocated_object> survivors;
    for (const address at : survivors_at) {
        const auto info = s.prof.object_at(at);
        REQUIRE(info.has_value());
        survivors.push_back({at, at, size, *info});
    }
    s.prof.settle_collection_digests(survivors);
    s.prof.on_collection(survivors);
}

} // namespace

// Arrays still being filled when a collection starts (a BitSet's words, a StringBuffer's array), completed
// after it, and freed by a later collection: every one is complete at its death, all alike. Judged at the first
// collection after their allocation, each was caught at its own fill level (a site of identical arrays read as
// 0.49 [0.19, 0.72]); judged at death, the site is one group.
TEST_CASE("objects a collection frees are judged on their contents at death, not mid-fill") {
    constexpr std::size_t arrays = 200, words = 256;
    for (const std::uint64_t budget : {std::uint64_t{0}, std::uint64_t{64} << 10}) {
        session_config config;
        config.profiler.seed = 11;
        config.heap_bytes = std::size_t{8} << 20;
        config.sampler.period = 1u << 30;
        session<> s(config);
        fast_random rng(3);
        const context_id site = s.prof.contexts().child(context_tree::root, 0x51);
        std::vector<std::uint64_t> complete(words);
        for (auto& w : complete) w = rng() | 1;
        std::vector<address> filling;
        for (std::size_t i = 0; i < arrays; ++i) {
            const address at = *s.machine.allocate(words * 8, site, 1);
            const std::size_t filled = rng.below(words); // how far the program got before the collection
            s.heap.write(at, complete.data(), filled * 8);
            filling.push_back(at);
        }
        collection(s, filling, words * 8, budget); // all alive: nothing counted yet
        REQUIRE(s.prof.stats().objects_digested == 0);
        for (const address at : filling) s.heap.write(at, complete.data(), words * 8);
        collection(s, {}, words * 8, budget); // all freed, complete
        const replica_report report = s.prof.report();
        REQUIRE(report.contexts.size() == 1);
        const context_report& c = report.contexts[0];
        INFO("budget " << budget);
        REQUIRE(c.whole.objects() == report.stats.objects_digested);
        REQUIRE(report.stats.objects_digested + report.stats.digests_skipped_budget == arrays);
        if (budget == 0) REQUIRE(report.stats.objects_digested == arrays);
        REQUIRE(c.identical.largest_share == 1);
    }
}

TEST_CASE("a collection counts each freed object once, survivors not at all, and a held digest evicted before "
          "it by its context") {
    session_config config;
    config.sampler.period = 1u << 30;
    session<> s(config);
    const context_id site = s.prof.contexts().child(context_tree::root, 0x52);
    const address a = *s.machine.allocate(4096, site, 1);
    const address b = *s.machine.allocate(4096, site, 1);
    const address c = *s.machine.allocate(4096, site, 1);
    const std::vector<std::byte> died_with(4096, std::byte{0x5c}), reused(4096, std::byte{0x0d});
    s.heap.write(b, died_with.data(), died_with.size());
    s.heap.write(c, died_with.data(), died_with.size());
    const auto held = s.prof.hold_collection_digests();
    REQUIRE(held.offered == 3);
    REQUIRE(held.digested == 3);
    // An allocation between the collection and its relocation takes c's memory (the collection freed c): c's
    // entry is evicted, and its new contents differ from those it died with.
    REQUIRE(s.prof.on_allocation(c, 4096, site, 1).has_value());
    const address d = c;
    s.heap.write(d, reused.data(), reused.size());
    REQUIRE(s.prof.stats().objects_evicted_by_overlap == 1);
    std::vector<relocated_object> survivors;
    for (const address at : {a, d}) survivors.push_back({at, at, 4096, *s.prof.object_at(at)});
    std::vector<whole_object_digest> noted;
    const auto settled =
        s.prof.settle_collection_digests(survivors, [&](const whole_object_digest& decided) { noted.push_back(decided); });
    s.prof.on_collection(survivors);
    CHECK(settled.digested == 2); // b, and c by its context, each with its contents at death
    CHECK(settled.skipped == 0);
    CHECK(s.prof.stats().objects_digested == 2);
    CHECK(s.prof.stats().digests_skipped_budget == 0);
    // The records a trace gets: b by its address, then c by its context (its address now names d).
    REQUIRE(noted.size() == 2);
    CHECK(noted[0].outcome == whole_object_digest::kind::digested);
    CHECK(noted[0].where == b);
    CHECK(noted[1].outcome == whole_object_digest::kind::digested_gone);
    CHECK(noted[1].context == site);
    CHECK(noted[1].fingerprint == noted[0].fingerprint); // c died as b did, not as d is
    // a survived: it is counted at its later death, once; nothing held outlives the collection it was held for.
    const std::array<address, 1> only_d{d};
    collection(s, only_d, 4096, 0);
    CHECK(s.prof.stats().objects_digested == 3);
    // At exit, the survivors (d) are digested as ever.
    const auto exit = s.prof.digest_tracked_objects();
    CHECK(exit.offered == 1);
    CHECK(s.prof.stats().objects_digested == 4);
}

// A second collection that starts before the first was settled (the agent's thread relocates late on a busy
// machine): the second start reads only the objects allocated since the first, at the addresses they were
// allocated at, and the one settling counts what both collections freed, each once, with its last contents.
TEST_CASE("a collection starting before the previous one is settled holds only the objects allocated since") {
    session_config config;
    config.sampler.period = 1u << 30;
    session<> s(config);
    const context_id site = s.prof.contexts().child(context_tree::root, 0x53);
    const std::vector<std::byte> final_contents(4096, std::byte{0x7e});
    const address a = *s.machine.allocate(4096, site, 1); // freed by the first collection
    const address b = *s.machine.allocate(4096, site, 1); // survives both
    s.heap.write(a, final_contents.data(), final_contents.size());
    REQUIRE(s.prof.hold_collection_digests().offered == 2);
    // The first collection ends; before its relocation, c is allocated and filled.
    const address c = *s.machine.allocate(4096, site, 1);
    s.heap.write(c, final_contents.data(), final_contents.size());
    using scope = session<>::profiler_type::hold_scope;
    const auto second = s.prof.hold_collection_digests(0, scope::since_last_hold);
    CHECK(second.offered == 1); // c alone: a and b are not where the map says
    CHECK(second.digested == 1);
    // After both: b survived; a and c were freed.
    std::vector<relocated_object> survivors{{b, b, 4096, *s.prof.object_at(b)}};
    std::vector<whole_object_digest> noted;
    const auto settled =
        s.prof.settle_collection_digests(survivors, [&](const whole_object_digest& decided) { noted.push_back(decided); });
    s.prof.on_collection(survivors);
    CHECK(settled.digested == 2);
    CHECK(settled.skipped == 0);
    REQUIRE(noted.size() == 2);
    CHECK(noted[0].fingerprint == noted[1].fingerprint); // both with their final contents
    const replica_report report = s.prof.report();
    REQUIRE(report.contexts.size() == 1);
    CHECK(report.contexts[0].identical.largest_share == 1);
    // b is counted once, at exit.
    CHECK(s.prof.digest_tracked_objects().digested == 1);
    CHECK(s.prof.stats().objects_digested == 3);
}
