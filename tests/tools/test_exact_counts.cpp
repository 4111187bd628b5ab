// The profile's exact counts section (include/ojx/exact_counts.hpp): written and read back field for field; bad
// sections refused with one line naming the problem; `ojx merge` adds counts site by site whatever the order of its
// inputs; the text view says what was counted, at what cost, and the sites that allocated most; what the JVM
// reported merges and shows where every profile has it; and a site's count splits over its calling contexts
// exactly (exact_counts_by_context.hpp).
#include "profile_merger.hpp"
#include "profile_reader.hpp"
#include "scratch_file.hpp"

#include "ojx/exact_counts_by_context.hpp"
#include "ojx/exact_counts_view.hpp"
#include "ojx/profile_writer.hpp"
#include "ojx/random.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace ojx;
using namespace ojx::tool;

namespace {

using ojx::tool::testing::scratch_file;

counted_site site(std::string method, std::uint32_t bci, std::uint64_t objects) {
    counted_site s;
    s.method = std::move(method);
    s.bci = bci;
    s.frame = s.method.substr(0, s.method.find('(')) + "(X.java:" + std::to_string(bci + 10) + ")";
    s.type = "byte[]";
    s.objects = objects;
    s.elements = 16 * objects;
    return s;
}

exact_counts sample_counts() {
    exact_counts c;
    c.plans = {"paths"};
    c.increments = 1234;
    c.corrections = 7;
    c.methods_instrumented = 42;
    c.left_alone = {{"no allocation site", 100}, {"split edge into a frame holding an uninitialized object", 2}};
    c.sites = {site("a.B.f()V", 3, 500), site("a.B.f()V", 17, 20), site("c.D.<init>(I)V", 0, 9)};
    normalise(c);
    return c;
}

// sample_counts as counted at heap sampling interval 0: the JVM allocated all but 120 of the first site's objects.
exact_counts reported_counts() {
    exact_counts c = sample_counts();
    c.jvm_reported = true;
    for (counted_site& s : c.sites) s.jvm_allocated = s.objects;
    c.sites.front().jvm_allocated -= 120;
    return c;
}

std::string json_of(const profile& p) {
    std::ostringstream out;
    write_profile_json(out, p);
    return out.str();
}

struct read_back {
    std::optional<std::string> error;
    std::optional<exact_counts> exact;
};

read_back read(const std::string& name, const std::string& json) {
    const scratch_file file(name, json);
    read_back r;
    run_profile run;
    r.error = read_profile(file.path.string(), run, [](context_profile&&) {}, nullptr, &r.exact);
    return r;
}

const std::string head = R"json({"ojx_profile_version": 1, "run": {"samples": 0}, "contexts": [], "exact_counts": )json";

} // namespace

TEST_CASE("the exact counts section reads back field for field") {
    profile p;
    p.exact = sample_counts();
    const read_back r = read("round.json", json_of(p));
    REQUIRE_FALSE(r.error);
    REQUIRE(r.exact);
    CHECK(*r.exact == *p.exact);
    // Written again, the same bytes.
    profile again;
    again.exact = r.exact;
    CHECK(json_of(again) == json_of(p));
    // And with what the JVM reported.
    profile reported;
    reported.exact = reported_counts();
    const read_back with = read("reported.json", json_of(reported));
    REQUIRE_FALSE(with.error);
    REQUIRE(with.exact);
    CHECK(*with.exact == *reported.exact);
    // A profile without the section has none.
    const read_back none = read("none.json", json_of(profile{}));
    REQUIRE_FALSE(none.error);
    CHECK_FALSE(none.exact);
}

TEST_CASE("a bad exact counts section is one line naming the problem") {
    const std::pair<std::string, std::string> bad[] = {
        {R"json([])json", "field 'exact_counts' should be an object"},
        {R"json({"increments": -1})json", "exact_counts: field 'increments' should be a non-negative integer"},
        {R"json({"plans": "paths"})json", "exact_counts: field 'plans' should be a list"},
        {R"json({"sites": [{"method": "a.B.f()V", "bci": 1, "frame": "a.B.f(B.java:1)", "type": "int[]"}]})json",
         "exact_counts: a site needs 'method', 'bci', 'frame', 'type' and 'objects'"},
        {R"json({"sites": [{"method": "a.B.f()V", "bci": 70000, "frame": "f", "type": "t", "objects": 1}]})json",
         "exact_counts: field 'sites.bci' should be a bytecode index (at most 65535)"},
        {R"json({"sites": [{"method": "a.B.f()V", "bci": 1, "frame": "f", "type": "t", "objects": 1},
                           {"method": "a.B.f()V", "bci": 1, "frame": "f", "type": "t", "objects": 2}]})json",
         "exact_counts: site a.B.f()V bci 1 is listed twice"},
        {R"json({"left_alone": {"no allocation site": "many"}})json",
         "exact_counts: field 'left_alone.no allocation site' should be a non-negative integer"},
        {R"json({"jvm_reported": 1})json", "exact_counts: field 'jvm_reported' should be true or false"},
        {R"json({"sites": [{"method": "a.B.f()V", "bci": 1, "frame": "f", "type": "t", "objects": 1, "jvm_allocated": 1}]})json",
         "exact_counts: 'jvm_allocated' without 'jvm_reported': true before the sites"},
        {R"json({"jvm_reported": true, "sites": [{"method": "a.B.f()V", "bci": 1, "frame": "f", "type": "t", "objects": 1}]})json",
         "exact_counts: a site needs 'jvm_allocated' where 'jvm_reported' is true"},
    };
    for (const auto& [section, expected] : bad) {
        CAPTURE(section);
        const read_back r = read("bad.json", head + section + "}");
        REQUIRE(r.error);
        CHECK(r.error->find(expected) != std::string::npos);
        CHECK(r.error->find('\n') == std::string::npos);
    }
}

TEST_CASE("merging adds exact counts site by site, whatever the order") {
    // A run's counts dealt out at random over three profiles, 40 times: merged in any order, the whole comes back.
    const exact_counts whole = sample_counts();
    for (std::uint64_t seed = 0; seed < 40; ++seed) {
        fast_random random(seed);
        std::vector<exact_counts> parts(3);
        for (auto& part : parts) part.plans = whole.plans;
        parts[random.below(3)].increments += whole.increments;
        parts[random.below(3)].corrections += whole.corrections;
        parts[random.below(3)].methods_instrumented += whole.methods_instrumented;
        for (const auto& reason : whole.left_alone) parts[random.below(3)].left_alone.push_back(reason);
        for (const counted_site& s : whole.sites) {
            std::uint64_t left = s.objects;
            for (std::size_t k = 0; k < 3; ++k) {
                const std::uint64_t share = k == 2 ? left : random.below(left + 1);
                counted_site piece = s;
                piece.objects = share;
                piece.elements = k == 0 ? s.elements : 0;
                parts[k].sites.push_back(piece);
                left -= share;
            }
        }
        std::vector<std::string> files;
        std::vector<std::unique_ptr<scratch_file>> scratch;
        for (std::size_t k = 0; k < 3; ++k) {
            normalise(parts[k]);
            profile p;
            p.exact = parts[k];
            scratch.push_back(std::make_unique<scratch_file>("part" + std::to_string(seed) + "-" + std::to_string(k),
                                                             json_of(p)));
            files.push_back(scratch.back()->path.string());
        }
        if (seed % 2) std::swap(files[0], files[2]);
        profile merged;
        REQUIRE_FALSE(load_profiles(files, merged));
        REQUIRE(merged.exact);
        CHECK(*merged.exact == whole);
    }
}

TEST_CASE("what the JVM reported merges only where every profile has it") {
    const exact_counts whole = reported_counts();
    exact_counts halves[2] = {whole, whole};
    for (std::size_t i = 0; i < whole.sites.size(); ++i) {
        halves[0].sites[i].objects = whole.sites[i].objects / 2;
        halves[0].sites[i].jvm_allocated = whole.sites[i].jvm_allocated / 3;
        halves[1].sites[i].objects -= halves[0].sites[i].objects;
        halves[1].sites[i].jvm_allocated -= halves[0].sites[i].jvm_allocated;
        halves[1].sites[i].elements = 0;
    }
    exact_counts both = halves[0];
    add_counts(both, halves[1]);
    CHECK(both.jvm_reported);
    CHECK(both.sites == whole.sites);
    CHECK(objects_not_allocated(both) == 120);
    // One profile without: the counts stay exact, the JVM's figures go.
    exact_counts mixed = halves[0];
    add_counts(mixed, sample_counts());
    CHECK_FALSE(mixed.jvm_reported);
    CHECK(objects_not_allocated(mixed) == 0);
    for (const counted_site& s : mixed.sites) CHECK(s.jvm_allocated == 0);
}

TEST_CASE("the text view names what was counted and never allocated") {
    std::ostringstream out;
    write_exact_counts_view(out, reported_counts(), 2);
    const std::string text = out.str();
    CHECK(text.find("the JVM reported every allocation (heap sampling at interval 0): 120 objects counted were never "
                    "allocated (22.7%)") != std::string::npos);
    CHECK(text.find("objects   allocated  allocation site") != std::string::npos);
    CHECK(text.find("500         380  byte[] (8000 elements) at a.B.f(X.java:13) (bci 3)") != std::string::npos);
    const auto removed = text.find("counted and never allocated, most first:");
    REQUIRE(removed != std::string::npos);
    CHECK(text.find("120         380  byte[] (8000 elements) at a.B.f(X.java:13) (bci 3)", removed) != std::string::npos);
    // Without the JVM's report, no such line or column.
    std::ostringstream plain;
    write_exact_counts_view(plain, sample_counts(), 2);
    CHECK(plain.str().find("never allocated") == std::string::npos);
    CHECK(plain.str().find("allocated  allocation site") == std::string::npos);
}

TEST_CASE("the text view says what was counted, at what cost, and the sites that allocated most") {
    std::ostringstream out;
    write_exact_counts_view(out, sample_counts(), 2);
    const std::string text = out.str();
    CHECK(text.find("Exact allocation counts (count=paths): 529 objects at 3 bytecode sites, counted with 1234 "
                    "counter increments (2.33 per object); 42 methods instrumented, 7 frames corrected") !=
          std::string::npos);
    CHECK(text.find("ran as loaded: 102 (100 no allocation site; 2 split edge") != std::string::npos);
    // The two largest, largest first, then how many more.
    const auto first = text.find("500  byte[] (8000 elements) at a.B.f(X.java:13) (bci 3)");
    const auto second = text.find("20  byte[] (320 elements) at a.B.f(X.java:27) (bci 17)");
    CHECK(first != std::string::npos);
    CHECK(second != std::string::npos);
    CHECK(first < second);
    CHECK(text.find("(1 more sites)") != std::string::npos);
    CHECK(text.find("c.D.<init>") == std::string::npos);
}

TEST_CASE("a site's count splits over its calling contexts by their sampled allocations, adding up exactly") {
    const exact_counts counts = reported_counts(); // a.B.f bci 3: 500 counted, 120 never allocated; bci 17: 20
    const auto context = [](std::vector<std::string> frames, double instances) {
        context_profile c;
        c.type = "byte[]";
        c.frames = std::move(frames);
        c.objects = 1;
        c.allocated.emplace();
        named_type_allocations t;
        t.counts.instances = instances;
        c.allocated->types.push_back(t);
        return c;
    };
    exact_counts_by_context split;
    // Two calling contexts of the first site, sampled 1 : 2; one of the second; none of c.D.<init>'s.
    split.add(context({"a.B.f(X.java:13)", "main.A.run(A.java:1)"}, 100.4));
    split.add(context({"a.B.f(X.java:13)", "main.A.other(A.java:9)"}, 200.6));
    split.add(context({"a.B.f(X.java:27)", "main.A.run(A.java:2)"}, 7));
    split.add(context({"unrelated.F.g(F.java:1)"}, 50));
    const std::vector<context_count> parts = split.finish(counts);
    REQUIRE(parts.size() == 4);
    CHECK(parts[0].frames.back() == "main.A.run(A.java:1)");
    CHECK(parts[0].objects == 166); // 500 × 100/301 = 166.1 and 500 × 201/301 = 333.9: the one left to the larger
    CHECK(parts[1].objects == 334);
    CHECK(parts[0].objects + parts[1].objects == 500);
    CHECK(parts[0].never_allocated + parts[1].never_allocated == 120);
    CHECK(parts[0].split);
    CHECK(parts[2].objects == 20);
    CHECK_FALSE(parts[2].split);
    // A site no context sampled stands alone, as its own frame.
    CHECK(parts[3].frames == std::vector<std::string>{"c.D.<init>(X.java:10)"});
    CHECK(parts[3].objects == 9);
    // Over many random splits, every site's parts add up to its count.
    for (std::uint64_t seed = 0; seed < 200; ++seed) {
        fast_random random(seed);
        exact_counts_by_context by;
        std::uint64_t sampled = 0;
        for (std::size_t k = 0; k < 1 + random.below(6); ++k) {
            by.add(context({"a.B.f(X.java:13)", "caller" + std::to_string(k)}, static_cast<double>(random.below(1000))));
            ++sampled;
        }
        std::uint64_t objects = 0, never = 0, contexts = 0;
        for (const context_count& c : by.finish(counts)) {
            if (c.frames.front() != "a.B.f(X.java:13)") continue;
            objects += c.objects;
            never += c.never_allocated;
            ++contexts;
        }
        CHECK(objects == 500);
        CHECK(never == 120);
        CHECK(contexts == sampled);
    }
}
