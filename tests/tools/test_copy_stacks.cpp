// Copy volume as stacks (copy_stacks.hpp) and as collapsed stack lines: every edge into a heap location is one
// stack under its destination's allocation context, the location and the source as leaves; uses by computations
// are left out; the lines' values sum to the bytes the copies view reports copied into heap locations.
#include "collapsed_stacks.hpp"
#include "copy_stacks.hpp"

#include "ojx/copy_profile.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
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

std::string collapsed(const copy_profile& copies) {
    std::ostringstream out;
    for (const copy_stack& stack : copy_stacks(copies)) write_collapsed(out, stack);
    return out.str();
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
