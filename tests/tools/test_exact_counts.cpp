// The profile's exact counts section (include/ojx/exact_counts.hpp): written and read back field for field; bad
// sections refused with one line naming the problem; `ojx merge` adds counts site by site whatever the order of its
// inputs; and the text view says what was counted, at what cost, and the sites that allocated most.
#include "profile_merger.hpp"
#include "profile_reader.hpp"
#include "scratch_file.hpp"

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

bool same(const exact_counts& a, const exact_counts& b) {
    if (a.plans != b.plans || a.increments != b.increments || a.corrections != b.corrections ||
        a.methods_instrumented != b.methods_instrumented || a.left_alone != b.left_alone ||
        a.sites.size() != b.sites.size())
        return false;
    for (std::size_t i = 0; i < a.sites.size(); ++i) {
        const counted_site &x = a.sites[i], &y = b.sites[i];
        if (x.method != y.method || x.bci != y.bci || x.frame != y.frame || x.type != y.type || x.objects != y.objects)
            return false;
    }
    return true;
}

const std::string head = R"json({"ojx_profile_version": 1, "run": {"samples": 0}, "contexts": [], "exact_counts": )json";

} // namespace

TEST_CASE("the exact counts section reads back field for field") {
    profile p;
    p.exact = sample_counts();
    const read_back r = read("round.json", json_of(p));
    REQUIRE_FALSE(r.error);
    REQUIRE(r.exact);
    CHECK(same(*r.exact, *p.exact));
    // Written again, the same bytes.
    profile again;
    again.exact = r.exact;
    CHECK(json_of(again) == json_of(p));
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
        CHECK(same(*merged.exact, whole));
    }
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
    const auto first = text.find("500  byte[] at a.B.f(X.java:13) (bci 3)");
    const auto second = text.find("20  byte[] at a.B.f(X.java:27) (bci 17)");
    CHECK(first != std::string::npos);
    CHECK(second != std::string::npos);
    CHECK(first < second);
    CHECK(text.find("(1 more sites)") != std::string::npos);
    CHECK(text.find("c.D.<init>") == std::string::npos);
}
