// Reading profiles: what the profiler writes comes back field for field (with the evidence sums exact); what
// the tool writes reads back the same; and bad input of every kind gives one line naming the file and the
// problem — never a crash, never a silently partial profile.
#include "generated_profiles.hpp"
#include "profile_reader.hpp"
#include "scratch_file.hpp"

#include "ojx/emulation/heap_shapes.hpp"
#include "ojx/emulation/session.hpp"
#include "ojx/profile_writer.hpp"
#include "ojx/report.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>

using namespace ojx;
using namespace ojx::tool;
using namespace ojx::tool::testing;

namespace {

using ojx::tool::testing::scratch_file;

struct read_result {
    std::optional<std::string> error;
    run_profile run;
    std::vector<context_profile> contexts;
};

read_result read_text(const std::string& name, const std::string& content) {
    const scratch_file file(name, content);
    read_result r;
    r.error = read_profile(file.path.string(), r.run, [&](context_profile&& c) { r.contexts.push_back(std::move(c)); });
    return r;
}

// A profile the profiler itself wrote: an emulated heap with a replicated and a random context.
std::pair<std::string, replica_report> emulated_profile() {
    using namespace ojx::emulation;
    const std::vector<context_shape> shapes{
        {.name = "com.example.Reader.readNext", .type = "byte[]", .group_sizes = {100, 20}},
        {.name = "com.example.Random.fill", .type = "int[]", .group_sizes = std::vector<std::uint32_t>(120, 1)},
    };
    session_config config;
    config.profiler.context_tree_capacity = 256;
    session<> s(config);
    run_workload(s.machine, s.prof.contexts(), shapes, {.seed = 11});
    const report_naming naming{[&](std::uint64_t f) { return synthetic_frame_name(f, shapes); },
                               [&](type_id t) { return shapes.at(t).type; }};
    std::ostringstream json;
    const replica_report report = s.prof.report();
    write_json(json, report, s.prof.contexts(), naming, s.facts());
    return {json.str(), report};
}

const std::string minimal_context =
    R"json({"allocation": {"type": "byte[]", "frames": ["A.f(A.java:1)"]}, "objects": 3, "bytes": 3072,
        "reported": false, "comparisons": {"equal": 1, "different": 2}, "theta": 0.3, "omega": 0, "gamma": 1})json";

std::string profile_with(const std::string& context) {
    return R"json({"ojx_profile_version": 1, "run": {"samples": 5}, "contexts": [)json" + context + "]}";
}

} // namespace

TEST_CASE("a profile the profiler wrote reads back field for field, evidence sums exactly") {
    const auto [json, report] = emulated_profile();
    const read_result r = read_text("emulated.json", json);
    REQUIRE_FALSE(r.error);
    REQUIRE(r.contexts.size() == report.contexts.size());
    REQUIRE(report.contexts.size() >= 1);
    for (std::size_t i = 0; i < report.contexts.size(); ++i) {
        const context_report& expected = report.contexts[i];
        const context_profile& c = r.contexts[i];
        CHECK(c.objects == expected.objects);
        CHECK(c.bytes == expected.bytes);
        CHECK(c.has_evidence);
        CHECK(c.evidence.weighted_equal == expected.evidence.weighted_equal);
        CHECK(c.evidence.weighted_total == expected.evidence.weighted_total);
        CHECK(c.evidence.sum_equal_times_total == expected.evidence.sum_equal_times_total);
        CHECK(c.evidence.sources == expected.evidence.sources);
        CHECK(c.estimate.equal == expected.estimate.equal);
        CHECK(c.estimate.reported == expected.estimate.reported);
        CHECK(c.estimate.theta == Approx(expected.estimate.theta).epsilon(1e-5));
        CHECK(c.estimate.omega == Approx(expected.estimate.omega).epsilon(1e-5).margin(1e-6));
        CHECK(c.accesses.size() == expected.accesses.size());
        // The estimate recomputed from what was read is the profiler's own.
        const replica_estimate again = estimate_replicas(c.objects, c.evidence, r.run.estimator);
        CHECK(again.theta_ci == expected.estimate.theta_ci);
        CHECK(again.gamma == expected.estimate.gamma);
    }
    CHECK(r.run.estimator.min_comparisons == estimator_config{}.min_comparisons);
    CHECK(r.run.estimator.min_digested_objects == estimator_config{}.min_digested_objects);
    REQUIRE(r.run.runtime.size() == 1);
    CHECK(r.run.runtime.front() == "emulation (synthetic heap)");
    bool dropped_store = false;
    for (const run_counter& counter : r.run.counters) dropped_store |= counter.path == "samples_dropped.store";
    CHECK(dropped_store);
}

TEST_CASE("what the tool writes reads back the same") {
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
        profile p;
        p.run = simulated_run(seed * 100);
        for (const simulated_site& site : simulate_sites(seed, 15)) {
            std::vector<std::size_t> all(site.sources.size());
            for (std::size_t k = 0; k < all.size(); ++k) all[k] = k;
            p.contexts.push_back(context_of(site, all, estimator_config{}));
            p.contexts.back().accesses = site.accesses;
        }
        std::ostringstream first;
        write_profile_json(first, p);
        const read_result r = read_text("roundtrip.json", first.str());
        REQUIRE_FALSE(r.error);
        const profile back{r.run, r.contexts};
        std::ostringstream second;
        write_profile_json(second, back);
        CHECK(second.str() == first.str());
    }
}

TEST_CASE("the heap view and the run's length read back exactly, and the profile writes back the same") {
    using namespace ojx::emulation;
    const std::vector<context_shape> shapes{
        {.name = "com.example.Cache.keep", .type = "byte[]", .group_sizes = {40, 8, 1, 1}},
        {.name = "com.example.Random.fill", .type = "int[]", .group_sizes = std::vector<std::uint32_t>(30, 1)},
    };
    session_config config;
    config.profiler.context_tree_capacity = 256;
    session<> s(config);
    run_workload(s.machine, s.prof.contexts(), shapes, {.seed = 5});
    s.prof.digest_tracked_objects(1 << 16); // exit: the live objects, a budget drawing some of them
    const report_naming naming{[&](std::uint64_t f) { return synthetic_frame_name(f, shapes); },
                               [&](type_id t) { return shapes.at(t).type; }};
    run_facts facts = s.facts();
    facts.seconds = 12.25;
    const profile written = profile_of(s.prof.report(), s.prof.contexts(), naming, facts);
    std::ostringstream first;
    write_profile_json(first, written);
    const read_result r = read_text("heap.json", first.str());
    REQUIRE_FALSE(r.error);
    CHECK(r.run.seconds == 12.25);
    CHECK(r.run.heap_moments == written.run.heap_moments);
    REQUIRE(r.contexts.size() == written.contexts.size());
    std::size_t with_heap = 0;
    for (std::size_t i = 0; i < r.contexts.size(); ++i) {
        const context_profile& back = r.contexts[i];
        const context_profile& made = written.contexts[i];
        CHECK(back.live.objects == made.live.objects);
        CHECK(back.live.weight == made.live.weight);
        CHECK(back.live.bytes == made.live.bytes);
        CHECK(back.live.digested.groups == made.live.digested.groups);
        CHECK(back.live.digested.unkept_weight == made.live.digested.unkept_weight);
        CHECK(back.heap.largest_share_ci == made.heap.largest_share_ci);
        CHECK(back.heap_saving().low == made.heap_saving().low);
        with_heap += !back.live.empty();
    }
    CHECK(with_heap == 2);
    std::ostringstream second;
    write_profile_json(second, profile{r.run, r.contexts});
    CHECK(second.str() == first.str());
    // A heap view whose groups count more objects than were alive is refused, naming the field.
    std::string bad = first.str();
    const std::size_t at = bad.find("\"heap\": {\"objects\": ");
    REQUIRE(at != std::string::npos);
    const std::size_t number = at + std::string("\"heap\": {\"objects\": ").size();
    bad.replace(number, bad.find(',', number) - number, "0");
    const read_result refused = read_text("bad-heap.json", bad);
    REQUIRE(refused.error);
    CHECK(refused.error->find("heap.objects") != std::string::npos);
}

TEST_CASE("a number printed with 17 digits reads back to the same double") {
    // The fuzzer's find: 0.94999999300000015 read with RapidJSON's fast path came back an ulp off, so a profile
    // read and written again differed in its last digits.
    const read_result r = read_text("digits.json", R"json({"ojx_profile_version": 1, "run": {"samples": 5,
        "estimator": {"min_comparisons": 20, "confidence": 0.94999999300000015}}, "contexts": []})json");
    REQUIRE_FALSE(r.error);
    CHECK(r.run.estimator.confidence == 0.94999999300000015);
}

TEST_CASE("a profile that does not name the whole-object threshold was estimated with 20") {
    // The default is lower; a profile without the field reads as it was estimated, whole-object estimates from
    // 20 digested objects.
    REQUIRE(estimator_config{}.min_digested_objects != 20);
    const read_result unnamed = read_text("unnamed.json", R"json({"ojx_profile_version": 1, "run": {"samples": 5,
        "estimator": {"min_comparisons": 20, "confidence": 0.95}}, "contexts": []})json");
    REQUIRE_FALSE(unnamed.error);
    CHECK(unnamed.run.estimator.min_digested_objects == 20);
    const read_result named = read_text("named.json", R"json({"ojx_profile_version": 1, "run": {"samples": 5,
        "estimator": {"min_comparisons": 20, "confidence": 0.95, "min_digested_objects": 3}}, "contexts": []})json");
    REQUIRE_FALSE(named.error);
    CHECK(named.run.estimator.min_digested_objects == 3);
}

TEST_CASE("bad input gives one line naming the file and the problem") {
    const auto error_for = [](const std::string& name, const std::string& content) {
        const read_result r = read_text(name, content);
        REQUIRE(r.error);
        CHECK(r.error->find('\n') == std::string::npos);
        CHECK_THAT(*r.error, Catch::Contains(name));
        return *r.error;
    };
    CHECK_THAT(error_for("empty.json", ""), Catch::Contains("empty file"));
    CHECK_THAT(error_for("text.json", "this is not JSON"), Catch::Contains("not valid JSON at byte 1: Invalid value"));
    CHECK_THAT(error_for("foreign.json", R"json({"name": "package.json", "version": "1.0"})json"),
               Catch::Contains("not an ojx profile"));
    CHECK_THAT(error_for("array.json", "[1, 2]"), Catch::Contains("top level is an array"));
    CHECK_THAT(error_for("number.json", "42"), Catch::Contains("top level is not a JSON object"));
    CHECK_THAT(error_for("newer.json", R"json({"ojx_profile_version": 2, "contexts": []})json"),
               Catch::Contains("version 2 is newer") && Catch::Contains("(1)"));
    CHECK_THAT(error_for("late.json", R"json({"contexts": [{"objects": 1}], "ojx_profile_version": 1})json"),
               Catch::Contains("no ojx_profile_version before its contexts"));
    std::string wrong = minimal_context;
    wrong.replace(wrong.find("\"objects\": 3"), 12, "\"objects\": \"three\"");
    CHECK_THAT(error_for("wrong-type.json", profile_with(wrong)),
               Catch::Contains("context 1: field 'objects' should be a non-negative integer"));
    std::string missing = minimal_context;
    missing.replace(missing.find(", \"theta\": 0.3"), 14, "");
    CHECK_THAT(error_for("missing.json", profile_with(minimal_context + ", " + missing)),
               Catch::Contains("context 2: missing field 'theta'"));
    CHECK_THAT(error_for("not-object.json", profile_with("17")), Catch::Contains("context 1: not an object"));

    const read_result absent = [] {
        read_result r;
        r.error = read_profile("/nonexistent/ojx/profile.json", r.run, [](context_profile&&) {});
        return r;
    }();
    REQUIRE(absent.error);
    CHECK_THAT(*absent.error, Catch::Contains("/nonexistent/ojx/profile.json: cannot read"));
}

TEST_CASE("shapes ojx never writes are refused before use, naming the field") {
    const auto error_for = [](const std::string& name, const std::string& content) {
        const read_result r = read_text(name, content);
        REQUIRE(r.error);
        CHECK(r.error->find('\n') == std::string::npos);
        CHECK_THAT(*r.error, Catch::StartsWith(std::filesystem::temp_directory_path().string()) &&
                                 Catch::Contains(name));
        CHECK(r.contexts.empty());
        return *r.error;
    };
    const auto with_field = [](const std::string& field) {
        std::string context = minimal_context;
        context.insert(1, field + ", ");
        return profile_with(context);
    };
    CHECK_THAT(error_for("contexts-object.json", R"json({"ojx_profile_version": 1, "contexts": {}})json"),
               Catch::Contains("field 'contexts' should be a list of contexts"));
    CHECK_THAT(error_for("contexts-number.json", R"json({"ojx_profile_version": 1, "contexts": 3})json"),
               Catch::Contains("field 'contexts' should be a list of contexts"));
    CHECK_THAT(error_for("run-null.json", R"json({"ojx_profile_version": 1, "run": null, "contexts": []})json"),
               Catch::Contains("field 'run' should be an object"));
    CHECK_THAT(error_for("run-array.json", R"json({"ojx_profile_version": 1, "run": [], "contexts": []})json"),
               Catch::Contains("field 'run' should be an object"));
    // A value where a list holds objects: there is no object to fill (this once reached back() on an empty list).
    CHECK_THAT(error_for("types-null.json", with_field(R"json("allocated": {"types": [null]})json")),
               Catch::Contains("context 1: field 'allocated.types' should be a list of objects"));
    CHECK_THAT(error_for("accesses-number.json", with_field(R"json("accesses": [{"samples": 1}, 7])json")),
               Catch::Contains("context 1: field 'accesses' should be a list of objects"));
    CHECK_THAT(error_for("merged-zero.json",
                         R"json({"ojx_profile_version": 1, "run": {"merged": {"profiles": 0}}, "contexts": []})json"),
               Catch::Contains("run: field 'merged.profiles' should be at least 1"));
}

TEST_CASE("estimates outside their ranges are refused with the field and the value") {
    const auto error_for = [](const std::string& name, const std::string& from, const std::string& to) {
        std::string context = minimal_context;
        REQUIRE(context.find(from) != std::string::npos);
        context.replace(context.find(from), from.size(), to);
        const read_result r = read_text(name, profile_with(context));
        REQUIRE(r.error);
        CHECK(r.error->find('\n') == std::string::npos);
        CHECK_THAT(*r.error, Catch::Contains(name) && Catch::Contains("context 1: "));
        CHECK(r.contexts.empty());
        return *r.error;
    };
    CHECK_THAT(error_for("theta-500.json", "\"theta\": 0.3", "\"theta\": 5"),
               Catch::Contains("field 'theta' is 5, outside [0, 1]"));
    CHECK_THAT(error_for("omega-huge.json", "\"omega\": 0", "\"omega\": 9007199254740993"),
               Catch::Contains("field 'omega' is 9.0072e+15, outside [0, 1]"));
    CHECK_THAT(error_for("gamma-negative.json", "\"gamma\": 1", "\"gamma\": -0.5"),
               Catch::Contains("field 'gamma' is -0.5, outside [0, 1]"));
    CHECK_THAT(error_for("ci-reversed.json", "\"theta\": 0.3", "\"theta\": 0.3, \"theta_ci\": [2, -1]"),
               Catch::Contains("field 'theta_ci' is not an interval within [0, 1]"));
    CHECK_THAT(error_for("ci-backwards.json", "\"theta\": 0.3", "\"theta\": 0.3, \"alpha_ci\": [0.5, 0.4]"),
               Catch::Contains("field 'alpha_ci' is not an interval within [0, 1]"));
    CHECK_THAT(error_for("ci-one-end.json", "\"theta\": 0.3", "\"theta\": 0.3, \"theta_ci\": [0.2]"),
               Catch::Contains("field 'theta_ci' should be two numbers"));
    CHECK_THAT(error_for("effective-negative.json", "\"equal\": 1", "\"equal\": 1, \"effective\": -3"),
               Catch::Contains("field 'comparisons.effective' should be a non-negative number"));
    CHECK_THAT(error_for("comparisons-wrap.json", "\"equal\": 1", "\"equal\": 18446744073709551615"),
               Catch::Contains("add up to more than 2^64"));
    const std::string evidence = R"json(, "evidence": {"alpha_equal": 0, "weighted_equal": 1, "weighted_total": 3,
        "sum_equal_squared": 1, "sum_equal_times_total": 3, "sum_total_squared": 9})json";
    CHECK_THAT(error_for("evidence-negative.json", "\"gamma\": 1",
                         "\"gamma\": 1" + std::regex_replace(evidence, std::regex("\"weighted_total\": 3"),
                                                               "\"weighted_total\": -3")),
               Catch::Contains("field 'evidence.weighted_total' should be a finite non-negative number"));
    CHECK_THAT(error_for("evidence-alpha.json", "\"gamma\": 1",
                         "\"gamma\": 1" + std::regex_replace(evidence, std::regex("\"alpha_equal\": 0"),
                                                               "\"alpha_equal\": 2")),
               Catch::Contains("field 'evidence.alpha_equal' is larger than 'alpha_comparisons'"));
    // The same context with its evidence in range, and null (not finite) where the writers write it, is read.
    std::string fine = minimal_context;
    fine.replace(fine.find("\"theta\": 0.3"), 12, "\"theta\": null, \"theta_ci\": [0, 1], \"alpha_ci\": [0, 0]");
    fine.replace(fine.find("\"gamma\": 1"), 10, "\"gamma\": 1" + evidence);
    const read_result r = read_text("in-range.json", profile_with(fine));
    INFO(r.error.value_or(""));
    REQUIRE_FALSE(r.error);
    REQUIRE(r.contexts.size() == 1);
    CHECK(r.contexts[0].has_evidence);
    CHECK(std::isnan(r.contexts[0].estimate.theta));
}

TEST_CASE("a profile cut anywhere is an error, never a partial profile taken as whole") {
    const std::string json = emulated_profile().first;
    std::size_t cuts = 0;
    for (std::size_t at = 1; at + 1 < json.size(); at += 37) {
        // A cut inside trailing white space leaves a complete document; everything else must be refused.
        if (json.find_first_not_of(" \n}]", at) == std::string::npos) continue;
        const read_result r = read_text("cut.json", json.substr(0, at));
        INFO("cut at byte " << at << " of " << json.size());
        REQUIRE(r.error);
        ++cuts;
    }
    CHECK(cuts > 20);
    const read_result r = read_text("cut.json", json.substr(0, json.size() / 2));
    REQUIRE(r.error);
    CHECK_THAT(*r.error, Catch::Contains("truncated"));
}

TEST_CASE("a profile without contexts, fields nobody knows and an empty frame list are fine") {
    const read_result none = read_text("none.json", R"json({"ojx_profile_version": 1, "run": {}, "contexts": []})json");
    CHECK_FALSE(none.error);
    CHECK(none.contexts.empty());
    std::string context = minimal_context;
    const std::string frames = "[\"A.f(A.java:1)\"]";
    context.replace(context.find(frames), frames.size(), "[]");
    context.insert(1, R"json("future": {"nested": [1, {"x": null}]}, )json");
    const read_result r = read_text("unknown-fields.json", profile_with(context));
    INFO(r.error.value_or(""));
    REQUIRE_FALSE(r.error);
    REQUIRE(r.contexts.size() == 1);
    CHECK(r.contexts[0].frames.empty());
    CHECK_FALSE(r.contexts[0].has_evidence);
    CHECK(r.contexts[0].estimate.comparisons() == 3);
}

TEST_CASE("allocation metrics read back: exact from the profiler, estimated through the tool's writer") {
    const auto [json, report] = emulated_profile();
    const read_result r = read_text("emulated.json", json);
    REQUIRE_FALSE(r.error);
    REQUIRE(r.run.allocation_counts.size() == 1);
    CHECK_THAT(r.run.allocation_counts.front(), Catch::StartsWith("exact"));
    for (std::size_t i = 0; i < report.contexts.size(); ++i) {
        const context_profile& c = r.contexts[i];
        REQUIRE(c.allocated);
        CHECK_FALSE(c.allocated->estimated);
        const std::vector<type_allocations> expected(report.contexts[i].allocated.begin(),
                                                     report.contexts[i].allocated.end());
        REQUIRE(c.allocated->types.size() == expected.size());
        for (std::size_t t = 0; t < expected.size(); ++t) {
            CHECK(c.allocated->types[t].type == c.type);
            CHECK(c.allocated->types[t].counts.array == expected[t].array);
            CHECK(c.allocated->types[t].counts.seen == expected[t].seen);
            CHECK(c.allocated->types[t].counts.instances == expected[t].instances);
            CHECK(c.allocated->types[t].counts.elements == expected[t].elements);
        }
        // Exact metrics count what the profiler tracked: the saving is the one its objects and bytes give.
        CHECK(c.replicated_bytes() == replicated_bytes_lower_bound(c.estimate, static_cast<double>(c.objects),
                                                                   static_cast<double>(c.bytes)));
    }

    profile p;
    p.run = r.run;
    p.run.allocation_counts = {describe_allocation_counting(8192)};
    context_profile sampled = r.contexts.front();
    named_allocations& a = sampled.allocated.emplace();
    a.estimated = true;
    a.types.push_back({"byte[]", {.array = true, .seen = 40, .instances = 123.456789012345678,
                                  .bytes = 7.5e5 / 3, .elements = 1e5 / 7, .instances_variance = 987.654321}});
    a.types.push_back({"Record", {.seen = 3, .instances = 9.25, .bytes = 9472, .instances_variance = 12.5}});
    a.other = {.seen = 2, .instances = 4.5, .bytes = 4608, .elements = 99, .instances_variance = 3};
    p.contexts = {sampled};
    std::ostringstream first;
    write_profile_json(first, p);
    const read_result back = read_text("estimated.json", first.str());
    REQUIRE_FALSE(back.error);
    REQUIRE(back.contexts.size() == 1);
    const named_allocations& read = *back.contexts[0].allocated;
    CHECK(read.estimated);
    REQUIRE(read.types.size() == 2);
    CHECK(read.types[0].counts.instances == a.types[0].counts.instances); // 17 digits: exact
    CHECK(read.types[0].counts.elements == a.types[0].counts.elements);
    CHECK(read.types[0].counts.instances_variance == a.types[0].counts.instances_variance);
    CHECK_FALSE(read.types[1].counts.array);
    CHECK(read.other.seen == 2);
    CHECK(read.other.elements == 99);
    std::ostringstream second;
    write_profile_json(second, profile{back.run, back.contexts});
    CHECK(second.str() == first.str());
    // Sampled: the saving is of every allocation, estimated, not of the 45 sampled objects.
    const type_allocations total = back.contexts[0].allocated_total();
    CHECK(total.instances == Approx(123.456789012345678 + 9.25 + 4.5));
    CHECK(back.contexts[0].replicated_bytes() ==
          replicated_bytes_lower_bound(back.contexts[0].estimate, total.instances, total.bytes));
}

TEST_CASE("a profile without allocation metrics reads, its totals from objects and bytes, and bad metrics are named") {
    const read_result old = read_text("old.json", profile_with(minimal_context));
    REQUIRE_FALSE(old.error);
    CHECK_FALSE(old.contexts[0].allocated);
    CHECK(old.run.allocation_counts.empty());
    CHECK(old.contexts[0].allocated_total().instances == 3);
    CHECK(old.contexts[0].allocated_total().bytes == 3072);

    std::string context = minimal_context;
    context.insert(1, R"json("allocated": {"estimated": "yes", "types": []}, )json");
    const read_result bad = read_text("bad.json", profile_with(context));
    REQUIRE(bad.error);
    CHECK_THAT(*bad.error, Catch::EndsWith("bad.json: context 1: field 'allocated.estimated' should be true or false"));
    context = minimal_context;
    context.insert(1, R"json("allocated": {"estimated": true, "types": [{"type": "int[]", "instances": -2}]}, )json");
    const read_result negative = read_text("negative.json", profile_with(context));
    REQUIRE(negative.error);
    CHECK_THAT(*negative.error, Catch::EndsWith("negative.json: context 1: field 'allocated.types.instances' should be "
                                                 "a non-negative number"));
}
