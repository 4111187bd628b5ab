// Robustness on corrupted input: thousands of seeded mutations of a hand-built class that uses every constant
// tag, switches, wide forms, exception handlers and nested attributes. The reader must return an error or a class
// that writes back byte for byte; the decoder must return. Run under ASan/UBSan, this is the library's fuzz test
// that needs no JDK (bytecode_mutations_real does the same on real class files).
#include "class_bytes.hpp"
#include "mutations.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

using namespace ojx::bytecode;
using namespace ojx::bytecode::test;

namespace {

void append_s4(std::vector<std::uint8_t>& code, std::int32_t value) {
    const auto bits = static_cast<std::uint32_t>(value);
    for (int shift = 24; shift >= 0; shift -= 8) {
        code.push_back(static_cast<std::uint8_t>(bits >> shift));
    }
}

std::vector<std::uint8_t> rich_class() {
    class_bytes klass;
    klass.tag_u4(3, 7);
    klass.tag_u4(4, 0x3f800000);
    klass.tag_u8(5, 1);
    klass.tag_u8(6, 0x4000000000000000ull);
    const auto string = klass.tag_u2(8, klass.utf8("text"));
    const auto nat = klass.name_and_type("f", "I");
    const auto fieldref = klass.tag_u2_u2(9, class_bytes::this_index, nat);
    const auto methodref = klass.tag_u2_u2(10, class_bytes::this_index, klass.name_and_type("g", "()V"));
    const auto interface_methodref = klass.tag_u2_u2(11, class_bytes::object_index, klass.name_and_type("h", "()V"));
    klass.method_handle(5, methodref);
    klass.tag_u2(16, klass.utf8("()V"));
    klass.tag_u2_u2(17, 0, nat);
    const auto indy = klass.tag_u2_u2(18, 0, klass.name_and_type("run", "()Ljava/lang/Runnable;"));
    klass.tag_u2(19, klass.utf8("m.x"));
    klass.tag_u2(20, klass.utf8("p/q"));
    const auto line_numbers = klass.utf8("LineNumberTable");
    const auto u8 = [](std::uint16_t index) { return static_cast<std::uint8_t>(index); };

    // 0 iload_0; 1 tableswitch (padding 2), every target 28; 28 ldc; 30 getfield; 33 invokevirtual;
    // 36 invokeinterface; 41 invokedynamic; 46 wide iinc; 52 iload_0; 53 lookupswitch (padding 2); 72 return
    std::vector<std::uint8_t> code{0x1a, 0xaa, 0, 0};
    append_s4(code, 27);
    append_s4(code, 0);
    append_s4(code, 2);
    append_s4(code, 27);
    append_s4(code, 27);
    append_s4(code, 27);
    code.insert(code.end(), {0x12, u8(string), 0xb4, 0, u8(fieldref), 0xb6, 0, u8(methodref), 0xb9, 0,
                                u8(interface_methodref), 1, 0, 0xba, 0, u8(indy), 0, 0, 0xc4, 0x84, 0x01, 0x00, 0xff,
                                0xff, 0x1a, 0xab});
    const auto lookup_at = static_cast<std::int32_t>(code.size() - 1);
    const auto padding = (4 - (lookup_at + 1) % 4) % 4;
    code.insert(code.end(), static_cast<std::size_t>(padding), 0);
    const auto end = lookup_at + 1 + padding + 8 + 8;
    append_s4(code, end - lookup_at);
    append_s4(code, 1);
    append_s4(code, 5);
    append_s4(code, end - lookup_at);
    code.push_back(0xb1);
    auto& method = klass.method("m", "(I)V", code);
    method.handlers = {{0, 28, static_cast<std::uint16_t>(end), 0}};
    method.code_attributes = {{line_numbers, {0, 1, 0, 0, 0, 3}}};
    klass.method("n", "()V", {0xb1});
    klass.fields = {{klass.utf8("f"), klass.utf8("I")}};
    klass.class_attributes = {{klass.utf8("SourceFile"), {0, 1}}};
    return klass.bytes();
}

} // namespace

TEST_CASE("the rich class is valid and its code decodes") {
    const auto bytes = rich_class();
    const mutation_outcome outcome = check_mutated(bytes);
    CHECK(outcome.violation.empty());
    REQUIRE(outcome.parsed);
    auto parsed = read_class(bytes);
    REQUIRE(parsed);
    auto decoded = decode_instructions(*parsed->methods[0].code(), parsed->constants);
    INFO((decoded ? std::string() : decoded.error().describe()));
    REQUIRE(decoded);
    CHECK(decoded->size() == 11);
    CHECK(decoded->back().offset == 72);
}

TEST_CASE("seeded mutations of a class give errors or classes that write back identically") {
    const auto original = rich_class();
    std::size_t accepted = 0;
    constexpr std::uint64_t seeds = 20000;
    for (std::uint64_t seed = 0; seed < seeds; ++seed) {
        const auto bytes = mutate(original, seed);
        const mutation_outcome outcome = check_mutated(bytes);
        INFO("seed " << seed << ": " << outcome.violation);
        REQUIRE(outcome.violation.empty());
        accepted += outcome.parsed ? 1 : 0;
    }
    // Most corruptions are caught, some (a flipped access flag, a changed constant's value) are valid classes.
    CHECK(accepted > 0);
    CHECK(accepted < seeds);
}

TEST_CASE("seeded mutations of code arrays give errors or instructions, never a crash") {
    auto parsed = read_class(rich_class());
    REQUIRE(parsed);
    const std::vector<std::uint8_t> code = parsed->methods[0].code()->code;
    std::size_t decoded_ok = 0;
    for (std::uint64_t seed = 0; seed < 20000; ++seed) {
        const auto mutated = mutate(code, seed);
        const auto decoded = decode_instructions(mutated, seed % 2 == 0 ? &parsed->constants : nullptr);
        if (decoded) {
            ++decoded_ok;
            // Decoded instructions tile the code exactly.
            std::uint32_t next = 0;
            for (const instruction& each : *decoded) {
                REQUIRE(each.offset == next);
                REQUIRE(each.length > 0);
                next += each.length;
            }
            REQUIRE(next == mutated.size());
        } else {
            REQUIRE_FALSE(decoded.error().message.empty());
            REQUIRE(decoded.error().offset.has_value());
            REQUIRE(*decoded.error().offset <= mutated.size());
        }
    }
    CHECK(decoded_ok > 0);
}
