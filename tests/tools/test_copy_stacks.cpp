// Copy volume as stacks (copy_stacks.hpp) and as collapsed stack lines: by destination, every edge into a heap
// location is one stack under its destination's allocation context, the location and the source as leaves; by
// the code that copied, each such edge is split over its code contexts by their samples (other code and code not
// recorded under a frame of their own), the copies apportioned exactly; uses by computations are left out; either
// way the lines' values sum to the bytes the copies view reports copied into heap locations.
#include "collapsed_stacks.hpp"
#include "copy_stacks.hpp"

#include "ojx/copies_view.hpp"
#include "ojx/copy_profile.hpp"
#include "ojx/random.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace ojx;
using namespace ojx::tool;

namespace {

// Context 1: records decoded; context 2: the arrays they are copied into; context 3: a site with no frames.
copy_profile sample_copies() {
    const copy_node record16 = copy_node::field(1, 16), array = copy_node::field(2, copy_node::elements);
    sampled_copy_graph graph;
    for (const std::uint64_t period : {64, 64, 64, 256}) graph.add({record16, array, 8}, period);
    graph.add({copy_node::allocation(1), copy_node::field(3, 8), 4}, 32);
    graph.add({copy_node::static_location(0x7f3a00001000), record16, 4}, 16);
    graph.add({copy_node::field(3, 8), copy_node::static_location(0x7f3a00002000), 2}, 16);
    graph.add({array, copy_node::consumer(), 8}, 1000); // a use, not a copy
    const std::vector<copy_site> names = {{},
                                          {"Record", {"Decoder.next(Decoder.java:58)", "Job.run(Job.java:31)"}},
                                          {"long[]", {"Buffer.grow(Buffer.java:12)", "Job.run(Job.java:40)"}},
                                          {"Cell", {}}};
    return copy_profile_of(graph, {}, "period 64", [&](context_id c) { return names.at(c); });
}

// Context 1: records decoded; 2: the arrays they are copied into; 3: a site with no frames. Code: 10 and 11 copy
// records into the arrays (with one sample whose context was not kept), 10 reads the static table too, 12 (no
// frames) stores into the static location, no code was counted for the fresh references (a section merged with
// one that records none), and 13 is a computation's use.
copy_profile coded_copies() {
    const copy_node record16 = copy_node::field(1, 16), array = copy_node::field(2, copy_node::elements);
    const copy_edge arrays{record16, array, 8}, fresh{copy_node::allocation(1), copy_node::field(3, 8), 4},
        table{copy_node::static_location(0x7f3a00001000), record16, 4},
        statics{copy_node::field(3, 8), copy_node::static_location(0x7f3a00002000), 2},
        use{array, copy_node::consumer(), 8};
    sampled_copy_graph graph;
    for (const std::uint64_t period : {64, 64, 64, 255}) graph.add(arrays, period); // 447 copies
    graph.add(fresh, 32);
    graph.add(table, 16);
    graph.add(statics, 16);
    graph.add(use, 1000);
    copy_code code;
    code.add(arrays, {{{10, 2}, {11, 1}}, 1});
    code.add(table, {{{10, 1}}, 0});
    code.add(statics, {{{12, 1}}, 0});
    code.add(use, {{{13, 1}}, 0});
    const std::vector<copy_site> names = {{},
                                          {"Record", {"Decoder.next(Decoder.java:58)", "Job.run(Job.java:31)"}},
                                          {"long[]", {"Buffer.grow(Buffer.java:12)", "Job.run(Job.java:40)"}},
                                          {"Cell", {}}};
    const std::map<context_id, copy_code_context> code_names = {
        {10, {{"Buffer.append(Buffer.java:30)", "Job.run(Job.java:40)"}}},
        {11, {{"System.arraycopy(Native Method)", "Buffer.grow(Buffer.java:12)"}}},
        {12, {}},
        {13, {{"Stats.sum(Stats.java:9)"}}}};
    return copy_profile_of(graph, code, {}, "period 64", [&](context_id c) { return names.at(c); },
                           [&](context_id c) { return code_names.at(c); });
}

std::string collapsed(const std::vector<copy_stack>& stacks) {
    std::ostringstream out;
    for (const copy_stack& stack : stacks) write_collapsed(out, stack);
    return out.str();
}

std::string collapsed(const copy_profile& copies) { return collapsed(copy_stacks(copies)); }

std::uint64_t bytes_of(const std::vector<copy_stack>& stacks) {
    std::uint64_t bytes = 0;
    for (const copy_stack& s : stacks) bytes += s.bytes;
    return bytes;
}

// What the copies view reports copied into heap locations, in bytes.
std::uint64_t copied_into_locations(const copy_profile& copies) {
    return static_cast<std::uint64_t>(estimated_copy_totals(copies, 0.95).copied.bytes);
}

} // namespace

TEST_CASE("each copy into a heap location is a stack: destination context, location, source", "[copies]") {
    const copy_profile copies = sample_copies();
    const std::vector<copy_stack> stacks = copy_stacks(copies);
    REQUIRE(stacks.size() == 4); // the use by a computation is not a copy
    std::uint64_t bytes = 0;
    for (const copy_stack& s : stacks) {
        CHECK(s.bytes == s.copies * s.width);
        bytes += s.bytes;
    }
    const copy_estimate total = copies.graph.estimate([](const copy_edge& e) { return e.to.is_location(); }, 0.95);
    CHECK(bytes == static_cast<std::uint64_t>(total.bytes));
    CHECK(bytes == (3 * 64 + 256) * 8 + 32 * 4 + 16 * 4 + 16 * 2);

    const auto heaviest = std::find_if(stacks.begin(), stacks.end(), [](const copy_stack& s) { return s.width == 8; });
    REQUIRE(heaviest != stacks.end());
    CHECK(heaviest->frames == std::vector<std::string>{"Buffer.grow(Buffer.java:12)", "Job.run(Job.java:40)"});
    CHECK(heaviest->location == "[long[] elements]");
    CHECK(heaviest->source == "[copied from Record+16 at Decoder.next(Decoder.java:58)]");
    CHECK(heaviest->copies == 3 * 64 + 256);
    CHECK(heaviest->samples == 4);
}

TEST_CASE("collapsed copy lines name the sites and sum to the bytes copied into heap locations", "[copies]") {
    // Sites are sorted by name in the section (Cell, Record, long[]); edges in node order: fields, then
    // allocations, then static locations.
    CHECK(collapsed(sample_copies()) ==
          "[static 0x7f3a00002000];[copied from Cell+8 at (no frames)] 32\n"
          "Job.run(Job.java:40);Buffer.grow(Buffer.java:12);[long[] elements];"
          "[copied from Record+16 at Decoder.next(Decoder.java:58)] 3584\n"
          "[Cell+8];[copied from new Record at Decoder.next(Decoder.java:58)] 128\n"
          "Job.run(Job.java:31);Decoder.next(Decoder.java:58);[Record+16];[copied from static 0x7f3a00001000] 64\n");
}

TEST_CASE("a section with no copies into heap locations writes no line", "[copies]") {
    sampled_copy_graph graph;
    graph.add({copy_node::field(0, 0), copy_node::consumer(), 8}, 16);
    const copy_profile uses = copy_profile_of(graph, {}, "period 16", [](context_id) { return copy_site{"T", {}}; });
    CHECK(copy_stacks(uses).empty());
    CHECK(collapsed(uses).empty());
}

TEST_CASE("by code, each edge is split over the code that copied it, other and unrecorded code under frames of "
          "their own", "[copies]") {
    const copy_profile copies = coded_copies();
    // Code contexts are sorted by frames in the section: (no frames), Buffer.append, Stats.sum, System.arraycopy.
    CHECK(collapsed(copying_code_stacks(copies)) ==
          "(no frames);[into static 0x7f3a00002000];[copied from Cell+8 at (no frames)] 32\n"
          // 447 copies by samples 2 : 1 : 1 are 223.5, 111.75 and 111.75: the two largest remainders get the two
          // copies left after rounding down.
          "Job.run(Job.java:40);Buffer.append(Buffer.java:30);"
          "[into long[] elements at Buffer.grow(Buffer.java:12)];"
          "[copied from Record+16 at Decoder.next(Decoder.java:58)] 1784\n"
          "Buffer.grow(Buffer.java:12);System.arraycopy(Native Method);"
          "[into long[] elements at Buffer.grow(Buffer.java:12)];"
          "[copied from Record+16 at Decoder.next(Decoder.java:58)] 896\n"
          "[other code];[into long[] elements at Buffer.grow(Buffer.java:12)];"
          "[copied from Record+16 at Decoder.next(Decoder.java:58)] 896\n"
          "[code not recorded];[into Cell+8 at (no frames)];"
          "[copied from new Record at Decoder.next(Decoder.java:58)] 128\n"
          "Job.run(Job.java:40);Buffer.append(Buffer.java:30);[into Record+16 at Decoder.next(Decoder.java:58)];"
          "[copied from static 0x7f3a00001000] 64\n");

    const std::vector<copy_stack> stacks = copying_code_stacks(copies);
    REQUIRE(stacks.size() == 6); // the use by Stats.sum is not a copy
    for (const copy_stack& s : stacks) {
        CHECK(s.bytes == s.copies * s.width);
        CHECK(s.frames.empty() != s.code.empty()); // frames name the code, or a frame stands for it
    }
    CHECK(stacks[1].copies + stacks[2].copies + stacks[3].copies == 447);
    CHECK(stacks[1].samples == 2);
    CHECK(stacks[3].samples == 1);
    CHECK(bytes_of(stacks) == copied_into_locations(copies));
    CHECK(bytes_of(stacks) == bytes_of(copy_stacks(copies)));
}

TEST_CASE("by code, a section that recorded no code puts every edge under code not recorded", "[copies]") {
    const copy_profile copies = sample_copies();
    const std::vector<copy_stack> by_code = copying_code_stacks(copies), by_destination = copy_stacks(copies);
    REQUIRE(by_code.size() == by_destination.size());
    for (std::size_t i = 0; i < by_code.size(); ++i) {
        CHECK(by_code[i].frames.empty());
        CHECK(by_code[i].code == "[code not recorded]");
        CHECK(by_code[i].copies == by_destination[i].copies);
        CHECK(by_code[i].samples == by_destination[i].samples);
        CHECK(by_code[i].source == by_destination[i].source);
    }
    CHECK(by_code[1].location == "[into long[] elements at Buffer.grow(Buffer.java:12)]");
    CHECK(bytes_of(by_code) == copied_into_locations(copies));
}

TEST_CASE("by code, the shares of an edge sum to its copies exactly, each within one copy of its exact share",
          "[copies]") {
    for (std::uint64_t seed = 1; seed <= 50; ++seed) {
        fast_random rng(seed);
        sampled_copy_graph graph;
        copy_code code;
        for (std::uint64_t e = 0; e < 8; ++e) {
            const copy_edge edge{copy_node::field(0, 8 * e), copy_node::field(1, 8 * e), 8};
            // Up to 2^62 copies, so that copies × samples needs more than 64 bits; the split reads only the
            // samples and the copies.
            const std::uint64_t samples = 1 + rng.below(40);
            graph.add(edge, sampled_volume{samples, samples + rng.below(std::uint64_t{1} << 62), 0, 0});
            edge_code taken;
            std::uint64_t left = samples - rng.below(samples / 4 + 1); // the rest not recorded
            for (context_id c = 0; c < 5 && left > 0; ++c) {
                const std::uint64_t n = rng.below(left + 1);
                if (n > 0) taken.contexts[c] = n;
                left -= n;
            }
            taken.other = left;
            code.add(edge, taken);
        }
        const copy_profile copies = copy_profile_of(
            graph, code, {}, "random", [](context_id c) { return copy_site{"T" + std::to_string(c), {"f"}}; },
            [](context_id c) { return copy_code_context{{"code" + std::to_string(c)}}; });
        const std::vector<copy_stack> stacks = copying_code_stacks(copies);
        std::map<std::string, std::uint64_t> copies_by_edge, samples_by_edge;
        for (const copy_stack& s : stacks) {
            copies_by_edge[s.location] += s.copies;
            samples_by_edge[s.location] += s.samples;
        }
        REQUIRE(copies_by_edge.size() == 8);
        for (const auto& [edge, volume] : copies.graph.edges()) {
            const std::string into = "[into " + copy_node_name(copies, edge.to) + "]";
            CHECK(copies_by_edge.at(into) == volume.weight);
            CHECK(samples_by_edge.at(into) == volume.samples);
            for (const copy_stack& s : stacks) {
                if (s.location != into) continue;
                __extension__ using u128 = unsigned __int128;
                const u128 exact = static_cast<u128>(volume.weight) * s.samples;
                const u128 given = static_cast<u128>(s.copies) * volume.samples;
                CHECK((exact > given ? exact - given : given - exact) < volume.samples);
            }
        }
    }
}
