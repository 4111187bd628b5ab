// A method's control-flow graph from its bytecode: blocks split at targets, after transfers and at exception
// ranges; sites in order; edges by kind; throw offsets turned into points; subroutines and code that runs off its end
// refused.
#include "ojx/bytecode/method_graph.hpp"
#include "ojx/counting/chord_plan.hpp"
#include "ojx/counting/hot_path_plan.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

using namespace ojx::bytecode;
using ojx::counting::block_id;

namespace {

code_attribute code_of(std::vector<std::uint8_t> bytes, std::vector<exception_entry> table = {}) {
    code_attribute code;
    code.max_stack = 4;
    code.max_locals = 4;
    code.code = std::move(bytes);
    code.exception_table = std::move(table);
    return code;
}

method_graph graph_of(const code_attribute& code) {
    auto decoded = decode_instructions(code.code);
    REQUIRE(decoded);
    auto built = build_method_graph(code, *decoded);
    INFO((built ? std::string("ok") : built.error().describe()));
    REQUIRE(built);
    return std::move(built).value();
}

// 0 new; 3 dup; 4 invokespecial; 7 astore_1; 8 iload_0; 9 ifeq → 19; 12 iconst_5; 13 newarray int; 15 pop;
// 16 goto → 20; 19 nop; 20 return. Exceptions in [0, 8) go to 19.
code_attribute sample() {
    return code_of({0xbb, 0x00, 0x02, 0x59, 0xb7, 0x00, 0x03, 0x4c, 0x1a, 0x99, 0x00, 0x0a, 0x08, 0xbc, 0x0a, 0x57, 0xa7,
                    0x00, 0x04, 0x00, 0xb1},
                   {exception_entry{0, 8, 19, 0}});
}

} // namespace

TEST_CASE("blocks start at targets, after transfers and at exception ranges", "[bytecode]") {
    const auto m = graph_of(sample());
    REQUIRE(m.blocks.size() == 5);
    const std::vector<std::uint32_t> starts{0, 8, 12, 19, 20};
    for (std::size_t b = 0; b < starts.size(); ++b) CHECK(m.blocks[b].start == starts[b]);
    CHECK(m.site_offsets == std::vector<std::uint32_t>{0, 13});
    CHECK(m.graph.block(0).sites == std::vector<ojx::counting::site_id>{0});
    CHECK(m.graph.block(2).sites == std::vector<ojx::counting::site_id>{1});
    // Only the range's block reaches the handler.
    CHECK(m.graph.block(0).handlers == std::vector<block_id>{3});
    CHECK(m.graph.block(1).handlers.empty());
    // Edges: 0 falls into 1; 1 branches to 3 and falls into 2; 2 jumps to 4; 3 falls into 4; 4 returns.
    REQUIRE(m.graph.edges().size() == 6);
    const auto exit = m.graph.exit();
    struct expected {
        block_id from, to;
        edge_kind kind;
    };
    const std::vector<expected> edges{{0, 1, edge_kind::fall_through}, {1, 3, edge_kind::branch},
                                      {1, 2, edge_kind::fall_through}, {2, 4, edge_kind::branch},
                                      {3, 4, edge_kind::fall_through}, {4, exit, edge_kind::return_}};
    for (std::size_t e = 0; e < edges.size(); ++e) {
        CAPTURE(e);
        CHECK(m.graph.edge(static_cast<ojx::counting::edge_index>(e)).from == edges[e].from);
        CHECK(m.graph.edge(static_cast<ojx::counting::edge_index>(e)).to == edges[e].to);
        CHECK(m.edges[e].kind == edges[e].kind);
    }
    CHECK(m.graph.problem() == std::nullopt);
}

TEST_CASE("a throw's offset is a point: its block and the sites allocated before it", "[bytecode]") {
    const auto m = graph_of(sample());
    // The allocation at 0 throwing has not allocated; the constructor call at 4 throwing has.
    CHECK(m.point_at(0) == std::pair<block_id, std::uint32_t>{0, 0});
    CHECK(m.point_at(4) == std::pair<block_id, std::uint32_t>{0, 1});
    CHECK(m.point_at(13) == std::pair<block_id, std::uint32_t>{2, 0});
    CHECK(m.point_at(15) == std::pair<block_id, std::uint32_t>{2, 1});
    CHECK(m.point_at(20) == std::pair<block_id, std::uint32_t>{4, 0});
    CHECK_FALSE(m.point_at(21));
}

TEST_CASE("switches give an edge per case and the default", "[bytecode]") {
    // 0 iload_0; 1 tableswitch (padding 2) default → 28, low 0, high 1: → 24, → 26; 24 nop; 25 nop... as below.
    std::vector<std::uint8_t> code{0x1a, 0xaa, 0x00, 0x00};
    const auto s4 = [&](std::int32_t v) {
        for (int shift = 24; shift >= 0; shift -= 8) code.push_back(static_cast<std::uint8_t>(v >> shift));
    };
    s4(27); // default: 1 + 27 = 28
    s4(0);
    s4(1);
    s4(23); // case 0: 24
    s4(25); // case 1: 26
    code.insert(code.end(), {0x00, 0x00, 0x00, 0x00, 0xb1}); // 24 nop, 25 nop, 26 nop, 27 nop, 28 return
    const auto m = graph_of(code_of(code));
    REQUIRE(m.graph.successors(0).size() == 3);
    CHECK(m.edges[0].kind == edge_kind::switch_default);
    CHECK(m.edges[1].kind == edge_kind::switch_case);
    CHECK(m.edges[2].case_index == 1);
    CHECK(m.blocks[*m.block_at(26)].start == 26);
}

TEST_CASE("subroutines and code that runs off its end are refused", "[bytecode]") {
    // 0 jsr → 4; 3 return; 4 astore_1; 5 ret 1.
    const auto jsr = code_of({0xa8, 0x00, 0x04, 0xb1, 0x4c, 0xa9, 0x01});
    auto decoded = decode_instructions(jsr.code);
    REQUIRE(decoded);
    const auto refused = build_method_graph(jsr, *decoded);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().message.find("jsr/ret") != std::string::npos);
    const auto off_end = code_of({0x1a});
    decoded = decode_instructions(off_end.code);
    REQUIRE(decoded);
    const auto runs_off = build_method_graph(off_end, *decoded);
    REQUIRE_FALSE(runs_off);
    CHECK(runs_off.error().message == "the code runs off its end");
}

TEST_CASE("the planners take a bytecode graph", "[bytecode]") {
    const auto m = graph_of(sample());
    const auto f = ojx::counting::frequencies_of(m.graph);
    const auto paths = ojx::counting::hot_path_counters{}.plan(m.graph, f);
    const auto chords = ojx::counting::chord_counters{}.plan(m.graph, f);
    CHECK_FALSE(paths.counters().empty());
    CHECK(chords.expected_increments(m.graph, f) <= ojx::counting::site_counters{}.plan(m.graph, f)
                                                        .expected_increments(m.graph, f));
}
