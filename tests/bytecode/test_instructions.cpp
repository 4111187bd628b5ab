// Decoding code arrays: lengths and operands of every opcode, switch padding at each alignment, wide forms, far
// branches, the classification, constant-pool checks, and each malformed case giving an error with its offset.
#include "class_bytes.hpp"

#include "ojx/bytecode/class_reader.hpp"
#include "ojx/bytecode/instructions.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

using namespace ojx::bytecode;
using ojx::bytecode::test::class_bytes;

namespace {

using bytes = std::vector<std::uint8_t>;

std::vector<instruction> decode_ok(const bytes& code, const constant_pool* pool = nullptr) {
    auto decoded = decode_instructions(code, pool);
    INFO((decoded ? std::string("ok") : decoded.error().describe()));
    REQUIRE(decoded);
    return std::move(decoded).value();
}

error decode_fails(const bytes& code, const std::string& fragment, const constant_pool* pool = nullptr) {
    auto decoded = decode_instructions(code, pool);
    REQUIRE_FALSE(decoded);
    INFO(decoded.error().describe());
    CHECK(decoded.error().message.find(fragment) != std::string::npos);
    REQUIRE(decoded.error().offset.has_value());
    return decoded.error();
}

void append_s4(bytes& code, std::int32_t value) {
    const auto bits = static_cast<std::uint32_t>(value);
    for (int shift = 24; shift >= 0; shift -= 8) {
        code.push_back(static_cast<std::uint8_t>(bits >> shift));
    }
}

} // namespace

TEST_CASE("every opcode decodes alone to its table length; the reserved and undefined ones are rejected") {
    int known = 0;
    for (int byte = 0; byte < 256; ++byte) {
        const opcode_info& entry = info(static_cast<std::uint8_t>(byte));
        INFO("opcode " << byte << " " << entry.name);
        if (entry.format == operand_format::unknown) {
            CHECK(entry.name.empty());
            CHECK(decode_fails({static_cast<std::uint8_t>(byte)}, "unknown opcode").offset == 0u);
            continue;
        }
        ++known;
        CHECK_FALSE(entry.name.empty());
        if (entry.length == 0) {
            continue; // switches and wide: tested below
        }
        // Operands of zeros: branches to themselves, constant index 0 (unchecked without a pool).
        bytes code(entry.length, 0);
        code[0] = static_cast<std::uint8_t>(byte);
        const auto decoded = decode_ok(code);
        REQUIRE(decoded.size() == 1);
        CHECK(decoded[0].length == entry.length);
        CHECK(static_cast<int>(decoded[0].op) == byte);
        // One byte short is cut off.
        if (entry.length > 1) {
            code.pop_back();
            decode_fails(code, "cut off by the end of the code");
        }
    }
    CHECK(known == 0xca); // 0x00 (nop) .. 0xc9 (jsr_w)
    CHECK(opcode_name(opcode::invokedynamic) == "invokedynamic");
    CHECK(opcode_name(opcode::new_) == "new");
    CHECK(opcode_name(opcode::goto_) == "goto");
    CHECK(opcode_name(opcode::return_) == "return");
}

TEST_CASE("a straight sequence decodes with offsets, operands and branch targets") {
    // 0 bipush -5; 2 sipush 1000; 5 istore_1; 6 iload 7; 8 iinc 1 -1; 11 ifeq +6 (17); 14 goto -3 (11);
    // 17 ldc #3; 19 return
    const bytes code{0x10, 0xfb, 0x11, 0x03, 0xe8, 0x3c, 0x15, 0x07, 0x84, 0x01, 0xff, 0x99, 0x00, 0x06,
        0xa7, 0xff, 0xfd, 0x12, 0x03, 0xb1};
    const auto decoded = decode_ok(code);
    REQUIRE(decoded.size() == 9);
    CHECK(decoded[0].op == opcode::bipush);
    CHECK(decoded[0].value == -5);
    CHECK(decoded[1].op == opcode::sipush);
    CHECK(decoded[1].value == 1000);
    CHECK(decoded[1].offset == 2);
    CHECK(decoded[2].op == opcode::istore_1);
    CHECK(decoded[3].index == 7);
    CHECK(decoded[4].op == opcode::iinc);
    CHECK(decoded[4].index == 1);
    CHECK(decoded[4].value == -1);
    CHECK(decoded[5].op == opcode::ifeq);
    CHECK(decoded[5].target == 17);
    CHECK(decoded[5].is(instruction_kind::conditional_branch));
    CHECK(decoded[5].falls_through());
    CHECK(decoded[6].target == 11);
    CHECK(decoded[6].is(instruction_kind::unconditional_jump));
    CHECK_FALSE(decoded[6].falls_through());
    CHECK(decoded[6].targets() == std::vector<std::uint32_t>{11});
    CHECK(decoded[7].op == opcode::ldc);
    CHECK(decoded[7].index == 3);
    CHECK(decoded[7].is(instruction_kind::can_throw)); // no pool: every ldc may throw
    CHECK(decoded[7].targets().empty());
    CHECK(find_instruction(decoded, 17) == std::size_t{7});
    CHECK(find_instruction(decoded, 11) == std::size_t{5});
    CHECK_FALSE(find_instruction(decoded, 12));
    CHECK_FALSE(find_instruction(decoded, 100));
}

TEST_CASE("tableswitch and lookupswitch are padded to 4 bytes from the code start, at every alignment") {
    for (std::uint32_t nops = 0; nops < 4; ++nops) {
        INFO("switch at offset " << nops);
        const std::uint32_t padding = (4 - (nops + 1) % 4) % 4;
        SECTION("tableswitch " + std::to_string(nops)) {
            bytes code(nops, 0x00);
            code.push_back(0xaa);
            code.insert(code.end(), padding, 0);
            const std::uint32_t length = 1 + padding + 12 + 3 * 4;
            const std::uint32_t end = nops + length; // a return here
            append_s4(code, static_cast<std::int32_t>(end - nops)); // default
            append_s4(code, -1);                                    // low
            append_s4(code, 1);                                     // high
            append_s4(code, static_cast<std::int32_t>(end - nops));
            append_s4(code, -static_cast<std::int32_t>(nops)); // to offset 0
            append_s4(code, static_cast<std::int32_t>(end - nops));
            code.push_back(0xb1);
            const auto decoded = decode_ok(code);
            REQUIRE(decoded.size() == nops + 2);
            const instruction& sw = decoded[nops];
            CHECK(sw.offset == nops);
            CHECK(sw.padding == padding);
            CHECK(sw.length == length);
            CHECK(sw.op == opcode::tableswitch);
            CHECK(sw.target == end);
            REQUIRE(sw.cases.size() == 3);
            CHECK(sw.cases[0].key == -1);
            CHECK(sw.cases[1].key == 0);
            CHECK(sw.cases[1].target == 0);
            CHECK(sw.cases[2].key == 1);
            CHECK(sw.is(instruction_kind::switch_));
            CHECK_FALSE(sw.falls_through());
            CHECK(sw.targets() == std::vector<std::uint32_t>{end, end, 0, end});
            CHECK(decoded.back().offset == end);
        }
        SECTION("lookupswitch " + std::to_string(nops)) {
            bytes code(nops, 0x00);
            code.push_back(0xab);
            code.insert(code.end(), padding, 0);
            const std::uint32_t length = 1 + padding + 8 + 2 * 8;
            const std::uint32_t end = nops + length;
            append_s4(code, static_cast<std::int32_t>(end - nops));
            append_s4(code, 2);
            append_s4(code, -100);
            append_s4(code, static_cast<std::int32_t>(end - nops));
            append_s4(code, 1 << 30);
            append_s4(code, static_cast<std::int32_t>(end + 1 - nops));
            code.push_back(0x00);
            code.push_back(0xb1);
            const auto decoded = decode_ok(code);
            const instruction& sw = decoded[nops];
            CHECK(sw.padding == padding);
            CHECK(sw.length == length);
            REQUIRE(sw.cases.size() == 2);
            CHECK(sw.cases[0].key == -100);
            CHECK(sw.cases[1].key == 1 << 30);
            CHECK(sw.cases[1].target == end + 1);
        }
    }
}

TEST_CASE("malformed switches are errors") {
    bytes low_above_high{0xaa, 0, 0, 0};
    append_s4(low_above_high, 0);
    append_s4(low_above_high, 2);
    append_s4(low_above_high, 1);
    decode_fails(low_above_high, "low 2 above high 1");

    bytes negative_pairs{0xab, 0, 0, 0};
    append_s4(negative_pairs, 0);
    append_s4(negative_pairs, -1);
    decode_fails(negative_pairs, "negative pair count -1");

    // A huge range is a truncation, found before anything is allocated for it.
    bytes huge{0xaa, 0, 0, 0};
    append_s4(huge, 0);
    append_s4(huge, INT32_MIN);
    append_s4(huge, INT32_MAX);
    decode_fails(huge, "cut off");

    bytes huge_pairs{0xab, 0, 0, 0};
    append_s4(huge_pairs, 0);
    append_s4(huge_pairs, INT32_MAX);
    decode_fails(huge_pairs, "cut off");

    bytes padding_cut{0x00, 0xaa, 0};
    decode_fails(padding_cut, "tableswitch at offset 1 is cut off");

    bytes case_outside{0xaa, 0, 0, 0};
    append_s4(case_outside, 0);
    append_s4(case_outside, 5);
    append_s4(case_outside, 5);
    append_s4(case_outside, 1000);
    decode_fails(case_outside, "branches to 1000, outside the code");
}

TEST_CASE("wide forms of loads, stores, ret and iinc") {
    // 0 wide iload 300; 4 wide astore 65535; 8 wide iinc 258 -2; 14 wide ret 1
    const bytes code{0xc4, 0x15, 0x01, 0x2c, 0xc4, 0x3a, 0xff, 0xff, 0xc4, 0x84, 0x01, 0x02, 0xff, 0xfe, 0xc4,
        0xa9, 0x00, 0x01};
    const auto decoded = decode_ok(code);
    REQUIRE(decoded.size() == 4);
    CHECK(decoded[0].wide);
    CHECK(decoded[0].op == opcode::iload);
    CHECK(decoded[0].index == 300);
    CHECK(decoded[0].length == 4);
    CHECK(decoded[1].op == opcode::astore);
    CHECK(decoded[1].index == 65535);
    CHECK(decoded[2].op == opcode::iinc);
    CHECK(decoded[2].offset == 8);
    CHECK(decoded[2].length == 6);
    CHECK(decoded[2].index == 258);
    CHECK(decoded[2].value == -2);
    CHECK(decoded[3].op == opcode::ret);
    CHECK(decoded[3].is(instruction_kind::subroutine));
    CHECK_FALSE(decoded[3].has_targets());
    CHECK_FALSE(decoded[3].falls_through());

    decode_fails({0xc4, 0x00}, "wide at offset 0 precedes nop, which it cannot modify");
    decode_fails({0xc4, 0xc4, 0x15, 0, 0}, "precedes wide");
    decode_fails({0xc4, 0xcb}, "precedes opcode 0xcb");
    decode_fails({0xc4}, "wide at offset 0 is cut off");
    decode_fails({0xc4, 0x84, 0x00, 0x01, 0x00}, "iinc (wide) at offset 0 is cut off");
}

TEST_CASE("goto_w and jsr_w reach far targets in both directions") {
    bytes code{0xc8};
    append_s4(code, 40000); // goto_w +40000
    code.resize(40000, 0x00);
    code.push_back(0xc9); // jsr_w at 40000 back to 5
    append_s4(code, 5 - 40000);
    code.push_back(0xb1);
    const auto decoded = decode_ok(code);
    CHECK(decoded[0].op == opcode::goto_w);
    CHECK(decoded[0].length == 5);
    CHECK(decoded[0].target == 40000);
    CHECK(decoded[0].is(instruction_kind::unconditional_jump));
    const instruction& jsr = decoded[decoded.size() - 2];
    CHECK(jsr.op == opcode::jsr_w);
    CHECK(jsr.target == 5);
    CHECK(jsr.has_targets());
    CHECK_FALSE(jsr.falls_through());
}

TEST_CASE("branch targets outside the code or inside an instruction are errors") {
    decode_fails({0xa7, 0xff, 0xff}, "goto at offset 0 branches to -1, outside the code (length 3)");
    decode_fails({0x00, 0x99, 0x00, 0x03}, "ifeq at offset 1 branches to 4, outside the code");
    const error inside = decode_fails({0x10, 0x01, 0xa7, 0xff, 0xff}, "branches to 1, which is inside an instruction");
    CHECK(*inside.offset == 2);
    bytes into_operands{0xc8};
    append_s4(into_operands, 2);
    decode_fails(into_operands, "goto_w at offset 0 branches to 2, which is inside");
    decode_fails({0xa8, 0x00, 0x04, 0xb1}, "jsr at offset 0 branches to 4, outside");
}

TEST_CASE("empty, over-long, unknown and truncated code are errors") {
    CHECK(decode_fails({}, "code length 0 is outside 1..65535").offset == 0u);
    decode_fails(bytes(65536, 0x00), "code length 65536");
    const error reserved = decode_fails({0x00, 0xca}, "unknown opcode 0xca at offset 1");
    CHECK(*reserved.offset == 1);
    decode_fails({0xfe}, "unknown opcode 0xfe");
    decode_fails({0xff}, "unknown opcode 0xff");
    decode_fails({0x00, 0x11, 0x01}, "sipush at offset 1 is cut off");
    decode_fails({0xb9, 0x00, 0x01, 0x01}, "invokeinterface at offset 0 is cut off");
}

TEST_CASE("instructions are classified") {
    struct expectation {
        std::uint8_t byte;
        instruction_kind kinds;
    };
    using k = instruction_kind;
    const expectation cases[] = {
        {0x60, k::none},                              // iadd
        {0x6e, k::none},                              // fdiv: no exception
        {0x6c, k::can_throw},                         // idiv
        {0x71, k::can_throw},                         // lrem
        {0x2e, k::can_throw},                         // iaload
        {0x53, k::can_throw},                         // aastore
        {0xbe, k::can_throw},                         // arraylength
        {0xbf, k::athrow | k::can_throw},             // athrow
        {0xc2, k::can_throw},                         // monitorenter
        {0xc3, k::can_throw},                         // monitorexit
        {0xac, k::return_ | k::can_throw},            // ireturn
        {0xb1, k::return_ | k::can_throw},            // return
        {0xb6, k::invoke | k::can_throw},             // invokevirtual
        {0xb9, k::invoke | k::can_throw},             // invokeinterface
        {0xba, k::invoke | k::can_throw},             // invokedynamic
        {0xbb, k::allocation | k::can_throw},         // new
        {0xbc, k::allocation | k::can_throw},         // newarray
        {0xbd, k::allocation | k::can_throw},         // anewarray
        {0xc5, k::allocation | k::can_throw},         // multianewarray
        {0xc0, k::can_throw},                         // checkcast
        {0xc1, k::can_throw},                         // instanceof
        {0xb4, k::can_throw},                         // getfield
        {0xb3, k::can_throw},                         // putstatic
        {0x99, k::conditional_branch},                // ifeq
        {0xc6, k::conditional_branch},                // ifnull
        {0xa5, k::conditional_branch},                // if_acmpeq
        {0xa7, k::unconditional_jump},                // goto
        {0xc8, k::unconditional_jump},                // goto_w
        {0xa8, k::subroutine},                        // jsr
        {0xa9, k::subroutine},                        // ret
        {0xaa, k::switch_},                           // tableswitch
        {0xab, k::switch_},                           // lookupswitch
        {0x84, k::none},                              // iinc
        {0x12, k::can_throw},                         // ldc, without a pool
    };
    for (const expectation& e : cases) {
        INFO("opcode " << opcode_name(static_cast<opcode>(e.byte)));
        CHECK(info(e.byte).kinds == e.kinds);
    }
}

TEST_CASE("with a constant pool, operands are checked and ldc's can_throw is exact") {
    class_bytes klass;
    const auto integer = klass.tag_u4(3, 1);
    const auto string = klass.tag_u2(8, klass.utf8("s"));
    const auto long_value = klass.tag_u8(5, 1);
    const auto method_type = klass.tag_u2(16, klass.utf8("()V"));
    const auto nat = klass.name_and_type("f", "I");
    const auto fieldref = klass.tag_u2_u2(9, class_bytes::this_index, nat);
    const auto methodref = klass.tag_u2_u2(10, class_bytes::this_index, klass.name_and_type("g", "()V"));
    const auto handle = klass.method_handle(6, methodref);
    const auto condy = klass.tag_u2_u2(17, 0, nat);
    const auto indy = klass.tag_u2_u2(18, 0, klass.name_and_type("h", "()Ljava/lang/Runnable;"));
    klass.method("m", "()V", {0xb1});
    auto parsed = read_class(klass.bytes());
    REQUIRE(parsed);
    const constant_pool& pool = parsed->constants;
    const auto u8 = [](std::uint16_t index) { return static_cast<std::uint8_t>(index); };
    const auto hi = [](std::uint16_t index) { return static_cast<std::uint8_t>(index >> 8); };

    const bytes code{0x12, u8(integer), 0x12, u8(string), 0x12, u8(class_bytes::this_index), 0x12, u8(method_type),
        0x12, u8(handle), 0x12, u8(condy), 0x14, hi(long_value), u8(long_value), 0xb4, hi(fieldref), u8(fieldref),
        0xb8, hi(methodref), u8(methodref), 0xba, hi(indy), u8(indy), 0, 0, 0xbb, 0, class_bytes::this_index, 0xb1};
    const auto decoded = decode_ok(code, &pool);
    CHECK_FALSE(decoded[0].is(instruction_kind::can_throw)); // Integer
    CHECK_FALSE(decoded[1].is(instruction_kind::can_throw)); // String
    CHECK(decoded[2].is(instruction_kind::can_throw));       // Class
    CHECK(decoded[3].is(instruction_kind::can_throw));       // MethodType
    CHECK(decoded[4].is(instruction_kind::can_throw));       // MethodHandle
    CHECK(decoded[5].is(instruction_kind::can_throw));       // Dynamic
    CHECK_FALSE(decoded[6].is(instruction_kind::can_throw)); // ldc2_w Long
    CHECK(decoded[7].index == fieldref);
    CHECK(decoded[9].index == indy);

    decode_fails({0x12, u8(long_value)}, "ldc at offset 0: constant pool index " + std::to_string(long_value) +
                                             " is a Long, expected one of Integer, Float, Class, String", &pool);
    decode_fails({0x14, hi(integer), u8(integer)}, "ldc2_w at offset 0: constant pool index", &pool);
    decode_fails({0xb4, hi(methodref), u8(methodref)}, "is a Methodref, expected one of Fieldref", &pool);
    decode_fails({0xb6, hi(fieldref), u8(fieldref)}, "expected one of Methodref, InterfaceMethodref", &pool);
    decode_fails({0xba, hi(methodref), u8(methodref), 0, 0}, "expected one of InvokeDynamic", &pool);
    decode_fails({0xbb, 0, 1}, "new at offset 0: constant pool index 1 is a Utf8, expected one of Class", &pool);
    decode_fails({0xbd, 0xff, 0xff}, "out of range", &pool);
    decode_fails({0x12, u8(long_value + 1)}, "is an unusable slot", &pool);
}

TEST_CASE("a Code attribute's exception handlers must start instructions") {
    class_bytes klass;
    // 0 sipush 1; 3 pop; 4 return; 5 astore_0; 6 return
    auto& method = klass.method("m", "()V", {0x11, 0x00, 0x01, 0x57, 0xb1, 0x4b, 0xb1});
    method.handlers = {{0, 4, 5, 0}, {3, 7, 5, 0}};
    auto parsed = read_class(klass.bytes());
    REQUIRE(parsed);
    code_attribute code = *parsed->methods[0].code();
    REQUIRE(decode_instructions(code, parsed->constants)); // end_pc 7 is the code length: allowed

    code.exception_table[0].start_pc = 1;
    auto start = decode_instructions(code, parsed->constants);
    REQUIRE_FALSE(start);
    CHECK(start.error().message == "exception_table entry 0: start_pc 1 is not the start of an instruction");
    CHECK(*start.error().offset == 1);
    code.exception_table[0].start_pc = 0;
    code.exception_table[1].end_pc = 2;
    code.exception_table[1].start_pc = 0;
    CHECK(decode_instructions(code, parsed->constants).error().message.find("end_pc 2") != std::string::npos);
    code.exception_table[1].end_pc = 4;
    code.exception_table[1].handler_pc = 6;
    REQUIRE(decode_instructions(code, parsed->constants));
    code.exception_table[1].handler_pc = 2;
    CHECK(decode_instructions(code, parsed->constants).error().message.find("handler_pc 2") != std::string::npos);
}
