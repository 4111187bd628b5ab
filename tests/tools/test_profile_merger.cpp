// Merging profiles, as properties over many generated profiles: merging the parts of a split gives exactly the
// whole (evidence, counts, and the estimate recomputed from them); the order of the inputs does not matter; and
// merging merged profiles (through their JSON) gives what merging everything at once gives. Also the two
// refusals: sites without evidence sums, and profiles estimated with different settings.
#include "generated_profiles.hpp"
#include "profile_merger.hpp"
#include "profile_reader.hpp"

#include "ojx/profile_writer.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

using namespace ojx;
using namespace ojx::tool;
using namespace ojx::tool::testing;

namespace {

constexpr std::size_t seeds = 60;

// A profile split into `parts`: each source of each site goes to a random part; a part lists the sites it got
// sources of, and the access counts are dealt out the same way (an access now and then listed twice in a part).
std::vector<profile> split(const std::vector<simulated_site>& sites, std::size_t parts, std::uint64_t seed) {
    fast_random rng(seed);
    std::vector<profile> out(parts);
    for (std::size_t p = 0; p < parts; ++p) out[p].run = simulated_run(1000 * (p + 1));
    for (const simulated_site& site : sites) {
        std::vector<std::vector<std::size_t>> dealt(parts);
        for (std::size_t k = 0; k < site.sources.size(); ++k) dealt[rng.below(parts)].push_back(k);
        std::vector<std::vector<named_access_context>> accesses(parts);
        for (const named_access_context& a : site.accesses) {
            std::uint64_t left = a.samples;
            for (std::size_t p = 0; p < parts && left > 0; ++p) {
                const std::uint64_t share = p + 1 == parts ? left : rng.below(left + 1);
                // An agent may list one access context twice: two sampled pcs of one source line name alike.
                if (share > 1 && rng.below(3) == 0) {
                    accesses[p].push_back({a.frames, share / 2});
                    accesses[p].push_back({a.frames, share - share / 2});
                } else if (share > 0) {
                    accesses[p].push_back({a.frames, share});
                }
                left -= share;
            }
        }
        for (std::size_t p = 0; p < parts; ++p) {
            if (dealt[p].empty() && accesses[p].empty()) continue;
            context_profile c = context_of(site, dealt[p], estimator_config{});
            c.accesses = accesses[p];
            out[p].contexts.push_back(std::move(c));
        }
    }
    return out;
}

profile merged(const std::vector<profile>& inputs) {
    profile_merger merger;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        for (context_profile c : inputs[i].contexts) merger.add_context(std::move(c), "part" + std::to_string(i));
        REQUIRE_FALSE(merger.add_run(inputs[i].run, "part" + std::to_string(i)));
    }
    profile out;
    REQUIRE_FALSE(merger.finish(out));
    return out;
}

std::string json_of(const profile& p) {
    std::ostringstream out;
    write_profile_json(out, p);
    return out.str();
}

profile through_json(const profile& p, const std::string& name) {
    const auto path = std::filesystem::temp_directory_path() / ("ojx-test-" + name + ".json");
    std::ofstream(path) << json_of(p);
    profile back;
    REQUIRE_FALSE(load_profiles({path.string()}, back));
    std::filesystem::remove(path);
    return back;
}

} // namespace

TEST_CASE("merging the parts of a split profile gives exactly the whole") {
    std::size_t sites_checked = 0;
    for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
        const auto sites = simulate_sites(seed, 25);
        const std::size_t parts = 2 + seed % 4;
        const profile m = merged(split(sites, parts, seed * 7919));
        std::map<std::string, const context_profile*> by_site;
        for (const context_profile& c : m.contexts) by_site[c.type + c.frames.front() + std::to_string(c.frames.size())] = &c;
        for (const simulated_site& site : sites) {
            std::vector<std::size_t> all(site.sources.size());
            for (std::size_t k = 0; k < all.size(); ++k) all[k] = k;
            const context_profile whole = context_of(site, all, estimator_config{});
            const auto found = by_site.find(site.type + site.frames.front() + std::to_string(site.frames.size()));
            if (site.sources.empty() && site.accesses.empty()) {
                CHECK(found == by_site.end());
                continue;
            }
            REQUIRE(found != by_site.end());
            const context_profile& c = *found->second;
            INFO("seed " << seed << ", site " << site.frames.front());
            CHECK(c.objects == whole.objects);
            CHECK(c.bytes == whole.bytes);
            CHECK(c.evidence.weighted_equal == whole.evidence.weighted_equal);
            CHECK(c.evidence.sum_total_squared == whole.evidence.sum_total_squared);
            CHECK(c.evidence.sources == whole.evidence.sources);
            // Recomputed from the sums, not averaged: the same numbers as one profile with every comparison.
            CHECK(c.estimate.reported == whole.estimate.reported);
            CHECK(c.estimate.theta == whole.estimate.theta);
            CHECK(c.estimate.theta_ci == whole.estimate.theta_ci);
            CHECK(c.estimate.alpha_ci == whole.estimate.alpha_ci);
            CHECK(c.estimate.omega == whole.estimate.omega);
            CHECK(c.estimate.gamma == whole.estimate.gamma);
            std::uint64_t samples = 0, expected = 0;
            for (const named_access_context& a : c.accesses) samples += a.samples;
            for (const named_access_context& a : site.accesses) expected += a.samples;
            CHECK(samples == expected);
            ++sites_checked;
        }
        // Counters add up; the merged run says how many profiles it came from.
        CHECK(m.run.profiles == parts);
        const auto samples = std::find_if(m.run.counters.begin(), m.run.counters.end(),
                                          [](const run_counter& c) { return c.path == "samples"; });
        REQUIRE(samples != m.run.counters.end());
        CHECK(samples->value == 1000 * parts * (parts + 1) / 2);
    }
    CHECK(sites_checked > seeds * 15);
}

TEST_CASE("merging does not depend on the order of the inputs") {
    for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
        auto parts = split(simulate_sites(seed, 20), 4, seed);
        const std::string forward = json_of(merged(parts));
        std::reverse(parts.begin(), parts.end());
        CHECK(json_of(merged(parts)) == forward);
        std::swap(parts[1], parts[3]);
        CHECK(json_of(merged(parts)) == forward);
    }
}

TEST_CASE("merging merged profiles (through their JSON) is the same as merging everything at once") {
    for (std::uint64_t seed = 1; seed <= seeds / 3; ++seed) {
        const auto p = split(simulate_sites(seed, 20), 3, seed + 100);
        const std::string at_once = json_of(merged(p));
        const profile ab = through_json(merged({p[0], p[1]}), "ab");
        const profile bc = through_json(merged({p[1], p[2]}), "bc");
        CHECK(json_of(merged({ab, p[2]})) == at_once);
        CHECK(json_of(merged({p[0], bc})) == at_once);
        CHECK(json_of(merged({through_json(p[0], "a"), through_json(p[1], "b"), through_json(p[2], "c")})) ==
              at_once);
    }
}

TEST_CASE("a site seen twice without evidence sums is refused, naming the profile") {
    auto parts = split(simulate_sites(3, 10), 2, 3);
    REQUIRE_FALSE(parts[1].contexts.empty());
    context_profile old = parts[1].contexts.front();
    old.has_evidence = false;
    profile_merger merger;
    merger.add_context(context_profile(old), "new.json");
    merger.add_context(std::move(old), "old.json");
    REQUIRE_FALSE(merger.add_run(parts[0].run, "new.json"));
    profile out;
    const auto error = merger.finish(out);
    REQUIRE(error);
    CHECK_THAT(*error, Catch::Contains("no evidence sums") && Catch::Contains(".json"));
}

TEST_CASE("profiles estimated with different settings are not merged") {
    // Among them the whole-object threshold: a profile that does not name it (20) and one at the default (3)
    // estimate small sites differently.
    struct setting {
        void (*change)(estimator_config&);
        const char* named;
    };
    const setting settings[] = {
        {[](estimator_config& e) { e.min_comparisons = 50; }, "min_comparisons 50"},
        {[](estimator_config& e) { e.min_digested_objects = 20; }, "min_digested_objects 20"},
    };
    for (const setting& s : settings) {
        auto parts = split(simulate_sites(4, 5), 2, 4);
        s.change(parts[1].run.estimator);
        profile_merger merger;
        REQUIRE_FALSE(merger.add_run(parts[0].run, "a.json"));
        const auto error = merger.add_run(parts[1].run, "b.json");
        REQUIRE(error);
        CHECK_THAT(*error, Catch::Contains("b.json") && Catch::Contains(s.named) && Catch::Contains("same settings"));
    }
}

namespace {

context_profile site_with(std::string type, std::optional<named_allocations> allocated, std::uint64_t objects) {
    context_profile c;
    c.type = std::move(type);
    c.frames = {"A.f(A.java:1)"};
    c.objects = objects;
    c.bytes = objects * 1024;
    c.has_evidence = true;
    c.allocated = std::move(allocated);
    return c;
}

named_allocations counted(bool estimated, std::vector<named_type_allocations> types) {
    return named_allocations{.estimated = estimated, .types = std::move(types), .other = {}};
}

const named_allocations* merged_allocations(const profile& p) {
    REQUIRE(p.contexts.size() == 1);
    REQUIRE(p.contexts[0].allocated);
    return &*p.contexts[0].allocated;
}

} // namespace

TEST_CASE("allocation metrics add up per type: exact stays exact, anything estimated makes an estimate") {
    const type_allocations arrays{.array = true, .seen = 10, .instances = 10, .bytes = 10240, .elements = 2560};
    const type_allocations records{.seen = 2, .instances = 2, .bytes = 4096};
    const type_allocations scaled{.array = true, .seen = 4, .instances = 31.5, .bytes = 32256, .elements = 8064,
                                  .instances_variance = 200};
    const auto merge = [](std::vector<context_profile> contexts) {
        profile_merger merger;
        for (std::size_t i = 0; i < contexts.size(); ++i) merger.add_context(std::move(contexts[i]), "p.json");
        REQUIRE_FALSE(merger.add_run(run_profile{}, "p.json"));
        profile out;
        REQUIRE_FALSE(merger.finish(out));
        return out;
    };

    const profile exact = merge({site_with("int[]", counted(false, {{"int[]", arrays}}), 10),
                                 site_with("int[]", counted(false, {{"Record", records}, {"int[]", arrays}}), 12)});
    const named_allocations* sum = merged_allocations(exact);
    CHECK_FALSE(sum->estimated);
    REQUIRE(sum->types.size() == 2);
    CHECK(sum->types[1].type == "int[]"); // by name: the order of the inputs does not matter
    CHECK(sum->types[1].counts.instances == 20);
    CHECK(sum->types[1].counts.elements == 5120);
    CHECK(sum->types[0].counts.instances == 2);
    CHECK(exact.contexts[0].objects == 22);

    const profile mixed = merge({site_with("int[]", counted(false, {{"int[]", arrays}}), 10),
                                 site_with("int[]", counted(true, {{"int[]", scaled}}), 4)});
    sum = merged_allocations(mixed);
    CHECK(sum->estimated);
    CHECK(sum->types[0].counts.instances == 41.5);
    CHECK(sum->types[0].counts.seen == 14);
    CHECK(sum->types[0].counts.instances_variance == 200);

    // A profile from before the metrics counts as its tracked objects, exactly, of the site's type.
    const profile with_old = merge({site_with("int[]", std::nullopt, 7),
                                    site_with("int[]", counted(false, {{"int[]", arrays}}), 10)});
    sum = merged_allocations(with_old);
    CHECK_FALSE(sum->estimated);
    REQUIRE(sum->types.size() == 2); // the old one does not know its objects were arrays
    CHECK(sum->total().instances == 17);
    CHECK(sum->total().bytes == 7 * 1024 + 10240);
    const profile old_only = merge({site_with("int[]", std::nullopt, 7), site_with("int[]", std::nullopt, 5)});
    CHECK_FALSE(old_only.contexts[0].allocated);
}

TEST_CASE("whole-object evidence merges exactly through the profile") {
    // One site's objects digested in three processes: the merged histogram is the one of all the objects, and so
    // is every estimate made from it; near-replica families whose representatives are near each other join.
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
        fast_random rng(seed);
        identical_group_table all(256);
        std::vector<identical_group_table> parts;
        std::vector<near_replica_table> near_parts;
        for (int p = 0; p < 3; ++p) {
            parts.emplace_back(256);
            near_parts.emplace_back(8);
        }
        object_fingerprint row;
        row.size = 16384;
        for (std::size_t b = 0; b < fingerprint_blocks; ++b) row.blocks[b] = static_cast<std::uint32_t>(rng());
        row.digest = rng();
        std::uint64_t near_total = 0;
        for (int i = 0; i < 200; ++i) {
            const std::uint64_t digest = (rng.below(30) + 1) * 0x9e3779b97f4a7c15ULL;
            const std::size_t part = rng.below(3);
            all.record(digest, false, 1);
            parts[part].record(digest, false, 1);
            object_fingerprint near = row;
            if (i % 4 != 0) {
                near.blocks[rng.below(fingerprint_blocks)] ^= 1;
                near.digest = rng();
                ++near_total;
            }
            near_parts[part].record(near);
        }
        std::vector<profile> inputs(3);
        for (std::size_t p = 0; p < 3; ++p) {
            inputs[p].run = simulated_run(100 * (p + 1));
            context_profile c;
            c.type = "long[]";
            c.frames = {"Rows.make(Rows.java:7)"};
            c.has_evidence = true; // no comparisons: sums of zero
            c.whole.identical = parts[p].summary();
            c.whole.near = near_parts[p].summary();
            c.objects = c.whole.objects();
            c.bytes = c.objects * 16384;
            c.estimate_from_evidence(inputs[p].run.estimator);
            inputs[p].contexts.push_back(c);
        }
        const profile m = merged({through_json(inputs[0], "w0"), through_json(inputs[1], "w1"), through_json(inputs[2], "w2")});
        REQUIRE(m.contexts.size() == 1);
        const context_profile& c = m.contexts.front();
        REQUIRE(c.whole.identical.groups == all.summary().groups);
        const auto expected = estimate_identical_groups(all.summary(), estimator_config{}.confidence, 200);
        CHECK(c.identical.largest_share == expected.largest_share);
        CHECK(c.identical.largest_share_ci == expected.largest_share_ci);
        CHECK(c.identical.identical_pairs == expected.identical_pairs);
        CHECK(c.combined.basis == evidence_basis::whole_objects);
        REQUIRE(c.near.found);
        // One family of all 200; which of them count as identical depends on each part's representative (a part
        // whose first object was a variant counts the pattern's copies as near-replicas of it).
        CHECK(c.near.members == 200);
        CHECK(c.near.near >= near_total);
    }
}

TEST_CASE("adaptive tracking's targets and interval ranges merge exactly, and survive the JSON") {
    profile adaptive;
    adaptive.run.allocation_counts = {describe_allocation_counting(0, 2000)};
    adaptive.run.tracking_targets = {2000};
    adaptive.run.sampled_interval_range = std::pair<std::uint64_t, std::uint64_t>{0, 1 << 20};
    profile other = adaptive;
    other.run.tracking_targets = {500};
    other.run.allocation_counts = {describe_allocation_counting(0, 500)};
    other.run.sampled_interval_range = std::pair<std::uint64_t, std::uint64_t>{4096, 1 << 22};
    profile fixed;
    fixed.run.allocation_counts = {describe_allocation_counting(65536)};

    const profile back = through_json(adaptive, "adaptive");
    CHECK(back.run.tracking_targets == std::vector<std::uint64_t>{2000});
    CHECK(back.run.sampled_interval_range == adaptive.run.sampled_interval_range);

    const profile all = through_json(merged({adaptive, fixed, other}), "adaptive-merged");
    CHECK(all.run.tracking_targets == std::vector<std::uint64_t>{500, 2000});
    REQUIRE(all.run.sampled_interval_range);
    CHECK(all.run.sampled_interval_range->first == 0);
    CHECK(all.run.sampled_interval_range->second == 1 << 22);
    CHECK(all.run.allocation_counts.size() == 3);
    CHECK(json_of(merged({fixed, other, adaptive})) == json_of(merged({adaptive, fixed, other})));
    // A fixed interval alone says nothing of adaptive tracking.
    CHECK(json_of(through_json(fixed, "fixed")).find("allocation_sampling") == std::string::npos);
}

TEST_CASE("a malformed interval range is refused with the field named") {
    const auto path = std::filesystem::temp_directory_path() / "ojx-test-bad-range.json";
    std::ofstream(path) << R"({"ojx_profile_version": 1, "run": {"allocation_sampling": {"targets_per_second": [2000],
        "interval_range": [5, 1]}}, "contexts": []})";
    profile back;
    const auto error = load_profiles({path.string()}, back);
    std::filesystem::remove(path);
    REQUIRE(error);
    CHECK(error->find("allocation_sampling.interval_range") != std::string::npos);
}
