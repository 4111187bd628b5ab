// The instrumenter: where each kind of edge's counter is placed, the increment snippet (sipush, then ldc_w past
// 32767) and its hook call, the position map, and what is left alone (methods without counters, the hook's class).
#include "class_bytes.hpp"

#include "ojx/bytecode/class_instrumenter.hpp"
#include "ojx/bytecode/class_reader.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

using namespace ojx::bytecode;
using ojx::bytecode::test::class_bytes;
using ojx::counting::counter_place;
using kind = counter_placement::kind;

namespace {

method_graph graph_of(const code_attribute& code, std::vector<instruction>& decoded) {
    auto d = decode_instructions(code.code);
    REQUIRE(d);
    decoded = std::move(d).value();
    auto built = build_method_graph(code, decoded);
    REQUIRE(built);
    return std::move(built).value();
}

code_attribute code_of(std::vector<std::uint8_t> bytes, std::vector<exception_entry> table = {}) {
    code_attribute code;
    code.max_stack = 2;
    code.max_locals = 2;
    code.code = std::move(bytes);
    code.exception_table = std::move(table);
    return code;
}

// Placements of every edge, keyed by (from block's start, to block's start or -1 for the exit).
std::map<std::pair<std::uint32_t, std::int64_t>, counter_placement> placements(const code_attribute& code) {
    std::vector<instruction> decoded;
    const auto m = graph_of(code, decoded);
    std::map<std::pair<std::uint32_t, std::int64_t>, counter_placement> out;
    for (std::uint32_t e = 0; e < m.graph.edges().size(); ++e) {
        const auto& edge = m.graph.edge(e);
        const std::int64_t to = edge.to == m.graph.exit() ? -1 : std::int64_t{m.blocks[edge.to].start};
        out[{m.blocks[edge.from].start, to}] =
            place_counter(m, decoded, counter_place{counter_place::kind::on_edge, e});
    }
    return out;
}

} // namespace

TEST_CASE("each kind of edge gets its placement", "[bytecode]") {
    // 0 iload_0; 1 ifeq 15; 4 iload_0; 5 ifeq 15; 8 iload_0; 9 ifne 18; 12 goto 19; 15 goto 19; 18 nop; 19 return
    const auto p = placements(code_of({0x1a, 0x99, 0x00, 0x0e, 0x1a, 0x99, 0x00, 0x0a, 0x1a, 0x9a, 0x00, 0x09, 0xa7,
        0x00, 0x07, 0xa7, 0x00, 0x04, 0x00, 0xb1}));
    REQUIRE(p.size() == 10);
    CHECK(p.at({0, 15}) == counter_placement{kind::on_edge, 1, 0});  // critical branch: split
    CHECK(p.at({0, 4}) == counter_placement{kind::after, 1, 0});     // fall-through
    CHECK(p.at({4, 15}) == counter_placement{kind::on_edge, 5, 0});
    CHECK(p.at({4, 8}) == counter_placement{kind::after, 5, 0});
    CHECK(p.at({8, 18}) == counter_placement{kind::before, 18, 0});  // v has one predecessor
    CHECK(p.at({8, 12}) == counter_placement{kind::after, 9, 0});
    CHECK(p.at({12, 19}) == counter_placement{kind::before, 12, 0}); // goto
    CHECK(p.at({15, 19}) == counter_placement{kind::before, 15, 0});
    CHECK(p.at({18, 19}) == counter_placement{kind::after, 18, 0});
    CHECK(p.at({19, -1}) == counter_placement{kind::before, 19, 0}); // return
}

TEST_CASE("edges into the entry or a handler are split even with one predecessor", "[bytecode]") {
    // 0 iload_0; 1 ifne 0; 4 return
    const auto loop = placements(code_of({0x1a, 0x9a, 0xff, 0xff, 0xb1}));
    CHECK(loop.at({0, 0}) == counter_placement{kind::on_edge, 1, 0});
    // 0 iload_0; 1 lookupswitch (pad 2) default -> 20, 1 pair: 7 -> 21; 20 return; 21 return. [0, 1) -> 21.
    std::vector<std::uint8_t> bytes{0x1a, 0xab, 0, 0, 0, 0, 0, 19, 0, 0, 0, 1, 0, 0, 0, 7, 0, 0, 0, 20, 0xb1, 0xb1};
    const auto handled = placements(code_of(bytes, {exception_entry{0, 1, 21, 0}}));
    CHECK(handled.at({1, 20}) == counter_placement{kind::before, 20, 0});
    CHECK(handled.at({1, 21}) == counter_placement{kind::on_edge, 1, 1}); // case 0 is slot 1
}

namespace {

// A class with `static Object make()` (new Object) and `static int none(int)` (no allocation).
std::vector<std::uint8_t> sample_class(std::string_view name = "T") {
    class_bytes klass;
    if (name != "T") {
        klass.this_class = klass.class_named(name);
    }
    const std::uint16_t init = klass.tag_u2_u2(10, class_bytes::object_index, klass.name_and_type("<init>", "()V"));
    klass.method("make", "()Ljava/lang/Object;",
        {0xbb, 0x00, class_bytes::object_index, 0x59, 0xb7, static_cast<std::uint8_t>(init >> 8),
            static_cast<std::uint8_t>(init), 0xb0});
    klass.method("none", "(I)I", {0x1a, 0xac});
    return klass.bytes();
}

} // namespace

TEST_CASE("a counter after a site: sipush, invokestatic of the hook", "[bytecode]") {
    auto done = instrument_class(sample_class(), plan_kind::sites, 5);
    REQUIRE(done);
    REQUIRE(done->methods.size() == 2);
    CHECK(done->counters == 1);
    const auto& make = done->methods[0];
    CHECK(make.name == "make");
    CHECK_FALSE(make.refused);
    CHECK(make.first_counter == 5);
    CHECK(make.site_offsets == std::vector<std::uint32_t>{0});
    REQUIRE(make.graph);
    REQUIRE(make.plan.counters().size() == 1);
    CHECK(done->methods[1].refused);
    CHECK(done->methods[1].site_offsets.empty());

    auto klass = read_class(done->bytes);
    REQUIRE(klass);
    const auto& code = klass->methods[0].code()->code;
    REQUIRE(code.size() == 8 + 6);
    CHECK(code[3] == 0x11); // sipush 5
    CHECK(code[4] == 0);
    CHECK(code[5] == 5);
    CHECK(code[6] == 0xb8); // invokestatic
    const auto hook = klass->constants.member_ref(static_cast<std::uint16_t>(code[7] << 8 | code[8]));
    REQUIRE(hook);
    CHECK(hook->class_name == "ojx/Counts");
    CHECK(hook->name == "hit");
    CHECK(hook->descriptor == "(I)V");
    CHECK(klass->methods[0].code()->max_stack == 4 + 1);
    REQUIRE(make.new_to_original.size() == code.size());
    CHECK(make.new_to_original[0].value == 0);
    CHECK(make.new_to_original[3].in_counter);
    CHECK(make.new_to_original[3].value == 5);
    CHECK(make.new_to_original[6].in_counter);
    CHECK_FALSE(make.new_to_original[9].in_counter);
    CHECK(make.new_to_original[9].value == 3); // dup
    // The method without counters is unchanged.
    CHECK(klass->methods[1].code()->code == std::vector<std::uint8_t>{0x1a, 0xac});
}

TEST_CASE("indices past 32767 are pushed with ldc_w", "[bytecode]") {
    auto done = instrument_class(sample_class(), plan_kind::paths, 40000);
    REQUIRE(done);
    auto klass = read_class(done->bytes);
    REQUIRE(klass);
    const auto& code = klass->methods[0].code()->code;
    const auto at = std::find(code.begin(), code.end(), std::uint8_t{0x13}); // ldc_w
    REQUIRE(at != code.end());
    const auto index = static_cast<std::uint16_t>(*(at + 1) << 8 | *(at + 2));
    const auto* constant = klass->constants.get<constant_integer>(index);
    REQUIRE(constant);
    CHECK(constant->value() == 40000);
}

TEST_CASE("the hook's own class and classes without counters are left alone", "[bytecode]") {
    auto hook = instrument_class(sample_class("ojx/Counts"), plan_kind::sites, 0);
    REQUIRE(hook);
    CHECK(hook->bytes.empty());
    CHECK(hook->counters == 0);
    for (const auto& m : hook->methods) {
        CHECK(m.refused);
    }
    class_bytes plain;
    plain.method("none", "(I)I", {0x1a, 0xac});
    auto none = instrument_class(plain.bytes(), plan_kind::edges, 0);
    REQUIRE(none);
    CHECK(none->bytes.empty());
    REQUIRE(none->methods.size() == 1);
    CHECK(none->methods[0].refused);
    CHECK_FALSE(instrument_class(std::vector<std::uint8_t>{0xca, 0xfe}, plan_kind::paths, 0));
}

TEST_CASE("sites are described by type and original line; the class by name and source file", "[bytecode]") {
    class_bytes klass;
    const std::uint16_t string_class = klass.class_named("java/lang/String");
    const std::uint16_t array_class = klass.class_named("[[I");
    // 0 new String; 3 pop; 4 iconst_1; 5 newarray byte; 7 pop; 8 iconst_1; 9 anewarray String; 12 pop;
    // 13 iconst_1; 14 anewarray [[I; 17 pop; 18 iconst_1; 19 iconst_1; 20 multianewarray [[I 2; 24 pop; 25 return
    auto& m = klass.method("all", "()V",
        {0xbb, 0, static_cast<std::uint8_t>(string_class), 0x57, 0x04, 0xbc, 8, 0x57, 0x04, 0xbd, 0,
            static_cast<std::uint8_t>(string_class), 0x57, 0x04, 0xbd, 0, static_cast<std::uint8_t>(array_class), 0x57,
            0x04, 0x04, 0xc5, 0, static_cast<std::uint8_t>(array_class), 2, 0x57, 0xb1});
    // Lines: 0 -> 10, 8 -> 12, 18 -> 14.
    m.code_attributes.push_back({klass.utf8("LineNumberTable"), {0, 3, 0, 0, 0, 10, 0, 8, 0, 12, 0, 18, 0, 14}});
    const std::uint16_t file = klass.utf8("T.java");
    klass.class_attributes.push_back(
        {klass.utf8("SourceFile"), {static_cast<std::uint8_t>(file >> 8), static_cast<std::uint8_t>(file)}});
    auto done = instrument_class(klass.bytes(), plan_kind::sites, 0);
    REQUIRE(done);
    CHECK(done->name == "T");
    CHECK(done->source_file == "T.java");
    REQUIRE(done->methods.size() == 1);
    const auto& all = done->methods[0];
    CHECK(all.site_offsets == std::vector<std::uint32_t>{0, 5, 9, 14, 20});
    CHECK(all.site_types ==
          std::vector<std::string>{"Ljava/lang/String;", "[B", "[Ljava/lang/String;", "[[[I", "[[I"});
    CHECK(all.site_lines == std::vector<std::int32_t>{10, 10, 12, 12, 14});
}

TEST_CASE("a method whose sites only lead to a throw keeps its graph for the agent", "[bytecode]") {
    class_bytes klass;
    const std::uint16_t init = klass.tag_u2_u2(10, class_bytes::object_index, klass.name_and_type("<init>", "()V"));
    // 0 new Object; 3 dup; 4 invokespecial <init>; 7 athrow (not a Throwable: the graph does not care)
    klass.method("thrower", "()V",
        {0xbb, 0x00, class_bytes::object_index, 0x59, 0xb7, static_cast<std::uint8_t>(init >> 8),
            static_cast<std::uint8_t>(init), 0xbf});
    auto done = instrument_class(klass.bytes(), plan_kind::paths, 0);
    REQUIRE(done);
    CHECK(done->bytes.empty());
    REQUIRE(done->methods.size() == 1);
    const auto& thrower = done->methods[0];
    CHECK(thrower.counted_at_throws_only());
    REQUIRE(thrower.graph);
    CHECK(thrower.plan.counters().empty());
    CHECK(thrower.site_types == std::vector<std::string>{"Ljava/lang/Object;"});
    CHECK(thrower.site_lines == std::vector<std::int32_t>{-1});
}

TEST_CASE("an array site adds its array's length after the plan's counters", "[bytecode]") {
    class_bytes klass;
    // 0 iload_0; 1 newarray int; 3 areturn
    klass.method("ints", "(I)[I", {0x1a, 0xbc, 10, 0xb0});
    auto done = instrument_class(klass.bytes(), plan_kind::sites, 7);
    REQUIRE(done);
    REQUIRE(done->methods.size() == 1);
    const auto& ints = done->methods[0];
    CHECK_FALSE(ints.refused);
    CHECK(ints.site_types == std::vector<std::string>{"[I"});
    REQUIRE(ints.plan.counters().size() == 1);
    CHECK(ints.element_sites == std::vector<std::uint32_t>{0});
    CHECK(ints.counters() == 2);
    CHECK(done->counters == 2);

    auto rewritten = read_class(done->bytes);
    REQUIRE(rewritten);
    const auto& code = rewritten->methods[0].code()->code;
    // iload_0, newarray, [sipush 7, invokestatic hit], [dup, arraylength, sipush 8, invokestatic add], areturn
    REQUIRE(code.size() == 4 + 6 + 8);
    CHECK(code[3] == 0x11);
    CHECK(code[5] == 7);
    CHECK(code[9] == 0x59);  // dup
    CHECK(code[10] == 0xbe); // arraylength
    CHECK(code[11] == 0x11); // sipush 8
    CHECK(code[13] == 8);
    CHECK(code[14] == 0xb8); // invokestatic
    const auto add = rewritten->constants.member_ref(static_cast<std::uint16_t>(code[15] << 8 | code[16]));
    REQUIRE(add);
    CHECK(add->name == "add");
    CHECK(add->descriptor == "(II)V");
    CHECK(code[17] == 0xb0);
    CHECK(rewritten->methods[0].code()->max_stack == 4 + 2);
    REQUIRE(ints.new_to_original.size() == code.size());
    CHECK(ints.new_to_original[9].in_counter);
    CHECK(ints.new_to_original[9].value == 8);
    CHECK(ints.new_to_original[17].value == 3); // areturn

    // A method whose plan has no counter (its site only leads to a throw) is still rewritten for its array site.
    class_bytes thrower;
    thrower.method("fail", "(I)V", {0x1a, 0xbc, 10, 0xbf}); // iload_0; newarray int; athrow
    auto failing = instrument_class(thrower.bytes(), plan_kind::paths, 0);
    REQUIRE(failing);
    REQUIRE(failing->methods.size() == 1);
    CHECK(failing->methods[0].plan.counters().empty());
    CHECK_FALSE(failing->methods[0].refused);
    CHECK(failing->methods[0].element_sites == std::vector<std::uint32_t>{0});
    CHECK(failing->counters == 1);
    CHECK_FALSE(failing->bytes.empty());
}
