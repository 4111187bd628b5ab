// Code insertion on hand-built code: each insertion kind, relocation of branches, switches (re-padded), the exception
// table, line and local variable tables and frames (Uninitialized types included), goto widening, and refusals.
#include "ojx/bytecode/byte_reader.hpp"
#include "ojx/bytecode/byte_writer.hpp"
#include "ojx/bytecode/code_editor.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

using namespace ojx::bytecode;

namespace {

// iconst_0; pop: two bytes, one stack slot.
code_snippet snip(std::uint32_t tag) { return code_snippet{{0x03, 0x57}, 1, tag}; }

code_snippet nops(std::size_t count, std::uint32_t tag) {
    return code_snippet{std::vector<std::uint8_t>(count, 0x00), 0, tag};
}

code_attribute code_of(std::vector<std::uint8_t> bytes) {
    code_attribute code;
    code.max_stack = 2;
    code.max_locals = 2;
    code.code = std::move(bytes);
    return code;
}

std::vector<instruction> decode(const code_attribute& code) {
    auto decoded = decode_instructions(code.code);
    REQUIRE(decoded);
    return std::move(decoded).value();
}

const stack_frame& static_int_frame() {
    static const stack_frame frame = [] {
        stack_frame f;
        f.locals.push_back(verification_type::of(verification_tag::integer));
        return f;
    }();
    return frame;
}

result<edited_code> edit(const code_editor& editor, const code_attribute& code, constant_pool& pool) {
    return editor.apply(code, decode(code), pool, static_int_frame());
}

// Adds a StackMapTable of `frames` to `code`.
void add_frames(code_attribute& code, constant_pool& pool, const std::vector<stack_frame>& frames) {
    auto encoded = encode_stack_map(frames, static_int_frame(), pool);
    REQUIRE(encoded);
    code.attributes.push_back(attribute{*pool.intern_utf8("StackMapTable"), *encoded});
}

std::vector<stack_frame> frames_of(const code_attribute& code, const constant_pool& pool) {
    for (const auto& a : code.attributes) {
        if (pool.utf8(a.name_index) && *pool.utf8(a.name_index) == "StackMapTable") {
            auto decoded = decode_stack_map(a.info, static_int_frame(), pool);
            REQUIRE(decoded);
            return *decoded;
        }
    }
    FAIL("no StackMapTable");
    return {};
}

stack_frame same_frame(std::uint32_t offset, std::vector<verification_type> stack = {}) {
    stack_frame f = static_int_frame();
    f.offset = offset;
    f.stack = std::move(stack);
    return f;
}

std::vector<std::uint16_t> u2s(const std::vector<std::uint8_t>& info) {
    byte_reader r(info);
    std::vector<std::uint16_t> out;
    std::uint16_t v = 0;
    while (r.read_u2(v)) {
        out.push_back(v);
    }
    return out;
}

} // namespace

TEST_CASE("after an instruction: jumps to the next instruction skip the snippet", "[bytecode]") {
    // 0 iload_0; 1 ifeq -> 6; 4 nop; 5 nop; 6 return
    constant_pool pool;
    code_attribute code = code_of({0x1a, 0x99, 0x00, 0x05, 0x00, 0x00, 0xb1});
    code_editor editor;
    editor.insert_after(5, snip(7));
    editor.insert_after(5, snip(8)); // two at one place run in order
    auto out = edit(editor, code, pool);
    REQUIRE(out);
    CHECK(out->code.code == std::vector<std::uint8_t>{0x1a, 0x99, 0x00, 0x09, 0x00, 0x00, 0x03, 0x57, 0x03, 0x57,
                                0xb1});
    CHECK(out->code.max_stack == 3);
    CHECK(out->new_to_original[5] == code_position{false, 5});
    CHECK(out->new_to_original[6] == code_position{true, 7});
    CHECK(out->new_to_original[8] == code_position{true, 8});
    CHECK(out->new_to_original[10] == code_position{false, 6});
    CHECK(out->original_to_new[6] == 10);
}

TEST_CASE("before an instruction: jumps and its frame move to the snippet", "[bytecode]") {
    // 0 iload_0; 1 ifeq -> 5; 4 nop; 5 return (frame at 5)
    constant_pool pool;
    code_attribute code = code_of({0x1a, 0x99, 0x00, 0x04, 0x00, 0xb1});
    add_frames(code, pool, {same_frame(5)});
    code_editor editor;
    editor.insert_after(4, snip(1));
    editor.insert_before(5, snip(2));
    auto out = edit(editor, code, pool);
    REQUIRE(out);
    // 0 iload_0; 1 ifeq -> 7; 4 nop; 5 snippet 1; 7 snippet 2; 9 return
    CHECK(out->code.code ==
          std::vector<std::uint8_t>{0x1a, 0x99, 0x00, 0x06, 0x00, 0x03, 0x57, 0x03, 0x57, 0xb1});
    const auto frames = frames_of(out->code, pool);
    REQUIRE(frames.size() == 1);
    CHECK(frames[0].offset == 7);
    CHECK(out->new_to_original[9] == code_position{false, 5});
}

TEST_CASE("on an edge: the target alone goes to a block appended with the target's frame", "[bytecode]") {
    // 0 iload_0; 1 ifeq -> 8; 4 iload_0; 5 ifne -> 8; 8 return (frame at 8)
    constant_pool pool;
    code_attribute code = code_of({0x1a, 0x99, 0x00, 0x07, 0x1a, 0x9a, 0x00, 0x03, 0xb1});
    add_frames(code, pool, {same_frame(8)});
    code_editor editor;
    editor.insert_on_edge(1, 0, snip(4));
    auto out = edit(editor, code, pool);
    REQUIRE(out);
    // Main code unchanged but for ifeq -> 9; 9 snippet; 11 goto_w -> 8.
    CHECK(out->code.code == std::vector<std::uint8_t>{0x1a, 0x99, 0x00, 0x08, 0x1a, 0x9a, 0x00, 0x03, 0xb1, 0x03,
                                0x57, 0xc8, 0xff, 0xff, 0xff, 0xfd});
    const auto frames = frames_of(out->code, pool);
    REQUIRE(frames.size() == 2);
    CHECK(frames[0] == same_frame(8));
    CHECK(frames[1] == same_frame(9));
    CHECK(out->new_to_original[11] == code_position{true, 4}); // the goto_w belongs to the snippet
    CHECK_FALSE(edit([] {
        code_editor bad;
        bad.insert_on_edge(1, 1, snip(0)); // ifeq has no second target
        return bad;
    }(), code, pool));
}

TEST_CASE("switches are re-padded and their targets relocated", "[bytecode]") {
    // 0 iload_0; 1 tableswitch (pad 2) default -> 24, 0 -> 25, 1 -> 26; 24..26 return
    byte_writer w;
    w.u1(0x1a);
    w.u1(0xaa);
    w.u1(0);
    w.u1(0);
    w.u4(23);
    w.u4(0);
    w.u4(1);
    w.u4(24);
    w.u4(25);
    w.u1(0xb1);
    w.u1(0xb1);
    w.u1(0xb1);
    constant_pool pool;
    code_attribute code = code_of(w.take());
    code_editor editor;
    editor.insert_before(0, nops(1, 0));
    editor.insert_on_edge(1, 2, snip(1)); // case 1
    auto out = edit(editor, code, pool);
    REQUIRE(out);
    auto decoded = decode_instructions(out->code.code);
    REQUIRE(decoded);
    const auto& table = (*decoded)[2];
    REQUIRE(table.op == opcode::tableswitch);
    CHECK(table.offset == 2);
    CHECK(table.padding == 1);
    CHECK(table.target == 24);
    CHECK(table.cases[0].target == 25);
    CHECK(table.cases[1].target == 27); // the appended block
    CHECK(decoded->back().op == opcode::goto_w);
    CHECK(decoded->back().target == 26);
}

TEST_CASE("a goto too far for 16 bits becomes goto_w; a conditional branch is refused", "[bytecode]") {
    constant_pool pool;
    // 0 goto -> 4; 3 nop; 4 return
    code_attribute jump = code_of({0xa7, 0x00, 0x04, 0x00, 0xb1});
    code_editor widen;
    widen.insert_after(3, nops(40000, 9));
    auto out = edit(widen, jump, pool);
    REQUIRE(out);
    REQUIRE(out->code.code.size() == 5 + 1 + 40000 + 1);
    CHECK(out->code.code[0] == 0xc8);
    auto decoded = decode_instructions(out->code.code);
    REQUIRE(decoded);
    CHECK((*decoded)[0].target == out->code.code.size() - 1);
    CHECK(out->new_to_original[0] == code_position{false, 0});
    CHECK(out->new_to_original[5] == code_position{false, 3});

    // 0 iload_0; 1 ifeq -> 5; 4 nop; 5 return
    code_attribute branch = code_of({0x1a, 0x99, 0x00, 0x04, 0x00, 0xb1});
    code_editor far;
    far.insert_after(4, nops(40000, 9));
    auto refused = edit(far, branch, pool);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().message.find("conditional branch") != std::string::npos);
}

TEST_CASE("code past 65535 bytes is refused", "[bytecode]") {
    constant_pool pool;
    code_attribute code = code_of({0x00, 0x00, 0xb1});
    code_editor editor;
    editor.insert_after(0, nops(40000, 0));
    editor.insert_after(1, nops(40000, 1));
    auto refused = edit(editor, code, pool);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().message.find("65535") != std::string::npos);
    code_editor after_return;
    after_return.insert_after(2, snip(0)); // return does not fall through
    CHECK_FALSE(edit(after_return, code, pool));
    code_editor outside;
    outside.insert_before(3, snip(0)); // no instruction starts at the code's end
    CHECK_FALSE(edit(outside, code, pool));
}

TEST_CASE("the exception table and line and local variable tables move with their instructions", "[bytecode]") {
    // 0 iconst_0; 1 istore_1; 2 iload_1; 3 ifeq -> 7; 6 nop; 7 return. Handler range [2, 7) -> 7.
    constant_pool pool;
    code_attribute code = code_of({0x03, 0x3c, 0x1b, 0x99, 0x00, 0x04, 0x00, 0xb1});
    code.exception_table.push_back(exception_entry{2, 7, 7, 0});
    byte_writer lines;
    lines.u2(3);
    for (const std::uint16_t v : {0, 10, 2, 11, 7, 12}) {
        lines.u2(v);
    }
    code.attributes.push_back(attribute{*pool.intern_utf8("LineNumberTable"), lines.take()});
    byte_writer locals;
    locals.u2(1);
    for (const std::uint16_t v : {2, 6, 1, 1, 1}) {
        locals.u2(v);
    }
    code.attributes.push_back(attribute{*pool.intern_utf8("LocalVariableTable"), locals.data()});
    code.attributes.push_back(attribute{*pool.intern_utf8("LocalVariableTypeTable"), locals.take()});
    code.attributes.push_back(attribute{*pool.intern_utf8("RuntimeVisibleTypeAnnotations"), {0, 0}});
    code_editor editor;
    editor.insert_before(2, snip(0));
    editor.insert_after(6, snip(1));
    auto out = edit(editor, code, pool);
    REQUIRE(out);
    // 0 iconst_0; 1 istore_1; 2 snippet; 4 iload_1; 5 ifeq -> 11; 8 nop; 9 snippet; 11 return
    REQUIRE(out->code.code.size() == 12);
    CHECK(out->code.code[5] == 0x99);
    CHECK(out->code.code[7] == 6);
    REQUIRE(out->code.exception_table.size() == 1);
    CHECK(out->code.exception_table[0].start_pc == 2);
    CHECK(out->code.exception_table[0].end_pc == 11);
    CHECK(out->code.exception_table[0].handler_pc == 11);
    REQUIRE(out->code.attributes.size() == 3); // the type annotations, whose offsets are not parsed, are dropped
    CHECK(u2s(out->code.attributes[0].info) == std::vector<std::uint16_t>{3, 0, 10, 2, 11, 11, 12});
    CHECK(u2s(out->code.attributes[1].info) == std::vector<std::uint16_t>{1, 2, 10, 1, 1, 1}); // to the code's end
    CHECK(u2s(out->code.attributes[2].info) == std::vector<std::uint16_t>{1, 2, 10, 1, 1, 1});
}

TEST_CASE("Uninitialized types follow their new; a split edge may not carry one", "[bytecode]") {
    // 0 nop; 1 new #1; 4 iload_0; 5 ifeq -> 8; 8 pop; 9 return. Frame at 8: stack [Uninitialized(1)].
    constant_pool pool;
    REQUIRE(pool.intern_class("T"));
    code_attribute code = code_of({0x00, 0xbb, 0x00, 0x02, 0x1a, 0x99, 0x00, 0x03, 0x57, 0xb1});
    add_frames(code, pool, {same_frame(8, {verification_type::uninitialized_at(1)})});
    code_editor editor;
    editor.insert_before(1, snip(0));
    auto out = edit(editor, code, pool);
    REQUIRE(out);
    const auto frames = frames_of(out->code, pool);
    REQUIRE(frames.size() == 1);
    CHECK(frames[0] == same_frame(10, {verification_type::uninitialized_at(3)}));

    code_editor split;
    split.insert_on_edge(5, 0, snip(0));
    auto refused = edit(split, code, pool);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().message.find("uninitialized") != std::string::npos);
}

TEST_CASE("jsr is refused", "[bytecode]") {
    constant_pool pool;
    // 0 jsr -> 4; 3 return; 4 astore_1; 5 ret 1
    code_attribute code = code_of({0xa8, 0x00, 0x04, 0xb1, 0x4c, 0xa9, 0x01});
    code_editor editor;
    editor.insert_before(3, snip(0));
    CHECK_FALSE(edit(editor, code, pool));
}
