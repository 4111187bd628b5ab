// Contents shared whole between allocation sites (shared_contents.hpp), on an emulated heap with every object
// digested whole or a budget's fair subsample of them:
//   - a site whose objects are copies of part of another's pairs with it, each side's share right;
//   - contents derived from another site's (each word changed), a site of contents of its own, and two sites of
//     zero-filled buffers pair with nothing;
//   - under a digest budget, the records side's interval covers its true share at about its level, over many
//     seeds (a lower bound with an upper end of 1: the copies site was subsampled too, so a copied content may go
//     unseen there);
//   - the text report lists the pair, each side named.
#include "ojx/emulation/session.hpp"
#include "ojx/random.hpp"
#include "ojx/report.hpp"
#include "ojx/shared_contents.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

using namespace ojx;
using namespace ojx::emulation;

namespace {

constexpr std::size_t object_size = 2048, words = object_size / 8, patterns = 20;
// The planted sites' leaf frames.
constexpr std::uint64_t records = 0x10, copies = 0x11, derived = 0x12, own = 0x13, zeros_a = 0x14, zeros_b = 0x15;

std::string frame_name(std::uint64_t frame) {
    switch (frame) {
    case records: return "Records.read(Records.java:12)";
    case copies: return "Cache.put(Cache.java:40)";
    case derived: return "Checksums.of(Checksums.java:7)";
    case own: return "Noise.make(Noise.java:3)";
    case zeros_a: return "Buffers.fresh(Buffers.java:5)";
    case zeros_b: return "Pages.fresh(Pages.java:9)";
    default: return "main(Main.java:1)";
    }
}

struct planted {
    std::size_t record_objects = 400;
    std::size_t copied_patterns = 10; // the copies site copies the records of patterns below this
    std::uint64_t digest_budget = 0;  // 0: every object digested
    std::uint64_t seed = 3;
};

// Records of `patterns` contents, each record's pattern drawn at random; a copy of every record whose pattern is
// below `copied_patterns`; and the control sites.
profile planted_profile(const planted& plant, double& true_record_share) {
    session_config config;
    config.profiler.seed = plant.seed;
    config.heap_bytes = std::size_t{8} << 20;
    config.sampler.period = 1u << 30; // no access samples: whole objects only
    session<> s(config);
    fast_random rng(plant.seed);
    std::vector<std::vector<std::uint64_t>> contents(patterns, std::vector<std::uint64_t>(words));
    for (auto& pattern : contents)
        for (auto& w : pattern) w = rng() | 1;
    const context_id main = s.prof.contexts().child(context_tree::root, 0x1);
    const auto site = [&](std::uint64_t leaf) { return s.prof.contexts().child(main, leaf); };
    const auto put = [&](context_id context, const std::vector<std::uint64_t>& data) {
        const address at = *s.machine.allocate(object_size, context, 1);
        s.heap.write(at, data.data(), object_size);
    };
    std::size_t copied = 0;
    for (std::size_t i = 0; i < plant.record_objects; ++i) {
        const std::size_t p = rng.below(patterns);
        put(site(records), contents[p]);
        if (p < plant.copied_patterns) {
            put(site(copies), contents[p]);
            ++copied;
        }
        std::vector<std::uint64_t> changed = contents[p];
        for (auto& w : changed) w += 1;
        if (i % 4 == 0) put(site(derived), changed);
        std::vector<std::uint64_t> noise(words);
        for (auto& w : noise) w = rng() | 1;
        if (i % 4 == 1) put(site(own), noise);
        if (i % 4 == 2) put(site(zeros_a), std::vector<std::uint64_t>(words));
        if (i % 4 == 3) put(site(zeros_b), std::vector<std::uint64_t>(words));
    }
    true_record_share = static_cast<double>(copied) / static_cast<double>(plant.record_objects);
    s.prof.digest_tracked_objects(plant.digest_budget);
    const report_naming naming{frame_name, [](type_id) { return std::string("byte[]"); }};
    return profile_of(s.prof.report(), s.prof.contexts(), naming, s.facts());
}

std::vector<shared_contents_pair> pairs_of(const profile& p) {
    site_pools pools;
    for (const context_profile& c : p.contexts) pools.add(c);
    return shared_contents(pools.finish_all(p.run.estimator), p.run.estimator.confidence, 100);
}

const shared_side& side_at(const shared_contents_pair& pair, std::uint64_t leaf) {
    return pair.first.frame == frame_name(leaf) ? pair.first : pair.second;
}

} // namespace

TEST_CASE("a site of copies pairs with the site it copies; derived, own and zero contents pair with nothing") {
    double record_share = 0;
    const profile p = planted_profile({}, record_share);
    const std::vector<shared_contents_pair> pairs = pairs_of(p);
    REQUIRE(pairs.size() == 1);
    const shared_contents_pair& pair = pairs.front();
    CHECK(pair.contents == 10);
    const shared_side& from = side_at(pair, records);
    const shared_side& to = side_at(pair, copies);
    REQUIRE(from.frame == frame_name(records));
    REQUIRE(to.frame == frame_name(copies));
    // Every object digested: the shares are the counts'.
    CHECK(to.share == Approx(1.0));
    CHECK(from.share == Approx(record_share).margin(1e-12));
    CHECK(from.share_ci.low <= record_share);
    CHECK(from.share_ci.high >= record_share);
    CHECK(from.objects == Approx(record_share * 400));
    CHECK(from.bytes == Approx(record_share * 400 * object_size));
    CHECK(to.digested_shared == static_cast<std::uint64_t>(record_share * 400 + 0.5));
}

TEST_CASE("under a digest budget each side's interval covers its true share at about its level") {
    // 200 seeds, a third of the bytes digested; the level is the run's (95 %): at least 90 % coverage.
    std::size_t covered = 0, runs = 0;
    for (std::uint64_t seed = 1; seed <= 200; ++seed) {
        planted plant;
        plant.seed = seed;
        plant.copied_patterns = 6;
        plant.digest_budget = 400 * object_size / 3;
        double record_share = 0;
        const profile p = planted_profile(plant, record_share);
        const std::vector<shared_contents_pair> pairs = pairs_of(p);
        INFO("seed " << seed);
        REQUIRE(pairs.size() == 1);
        const shared_side& from = side_at(pairs.front(), records);
        ++runs;
        if (from.share_ci.low <= record_share && record_share <= from.share_ci.high) ++covered;
        CHECK(from.share_ci.high == 1.0); // the copies site was subsampled: the share is a lower bound
    }
    INFO(covered << " of " << runs << " intervals covered the records' true share");
    CHECK(static_cast<double>(covered) >= 0.9 * static_cast<double>(runs));
}

TEST_CASE("the text report lists the pair, each side named") {
    double record_share = 0;
    const profile p = planted_profile({}, record_share);
    std::ostringstream out;
    write_text_report(out, {}, p, 10);
    const std::string text = out.str();
    INFO(text);
    const std::size_t section = text.find("Allocation sites holding the same contents whole");
    REQUIRE(section != std::string::npos);
    const std::string listed = text.substr(section);
    CHECK(listed.find(frame_name(records)) != std::string::npos);
    CHECK(listed.find(frame_name(copies)) != std::string::npos);
    for (const std::uint64_t control : {derived, own, zeros_a, zeros_b})
        CHECK(listed.find(frame_name(control)) == std::string::npos);
}
