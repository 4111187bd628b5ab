// StackMapTable frames: the implicit initial frame from a descriptor, each compressed frame form chosen when it
// applies, Object types by name (reusing or adding Class constants), and malformed tables refused.
#include "ojx/bytecode/stack_map.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

using namespace ojx::bytecode;

namespace {

verification_type tag(verification_tag t) { return verification_type::of(t); }

stack_frame frame_at(std::uint32_t offset, std::vector<verification_type> locals,
    std::vector<verification_type> stack = {}) {
    stack_frame f;
    f.offset = offset;
    f.locals = std::move(locals);
    f.stack = std::move(stack);
    return f;
}

} // namespace

TEST_CASE("the initial frame comes from the descriptor and flags", "[bytecode]") {
    auto statics = initial_frame("T", "f", "(IZ[Ljava/lang/String;JLjava/util/List;D[[F)V", 0x0009);
    REQUIRE(statics);
    const std::vector<verification_type> expected{tag(verification_tag::integer), tag(verification_tag::integer),
        verification_type::object_of("[Ljava/lang/String;"), tag(verification_tag::long_),
        verification_type::object_of("java/util/List"), tag(verification_tag::double_),
        verification_type::object_of("[[F")};
    CHECK(statics->locals == expected);
    CHECK(statics->stack.empty());

    auto constructor = initial_frame("T", "<init>", "()V", 0);
    REQUIRE(constructor);
    CHECK(constructor->locals == std::vector<verification_type>{tag(verification_tag::uninitialized_this)});
    auto object = initial_frame("java/lang/Object", "<init>", "()V", 0);
    REQUIRE(object);
    CHECK(object->locals == std::vector<verification_type>{verification_type::object_of("java/lang/Object")});
    auto method = initial_frame("T", "g", "(J)I", 0);
    REQUIRE(method);
    CHECK(method->locals ==
          std::vector<verification_type>{verification_type::object_of("T"), tag(verification_tag::long_)});

    CHECK_FALSE(initial_frame("T", "f", "(Q)V", 0x0008));
    CHECK_FALSE(initial_frame("T", "f", "(I", 0x0008));
    CHECK_FALSE(initial_frame("T", "f", "I", 0x0008));
    CHECK_FALSE(initial_frame("T", "f", "(L;)V", 0x0008));
}

TEST_CASE("frames are encoded in their most compact form and decode back", "[bytecode]") {
    constant_pool pool;
    const auto string_class = pool.intern_class("java/lang/String");
    REQUIRE(string_class);
    const auto count_before = pool.count();
    const stack_frame initial = frame_at(0, {tag(verification_tag::integer)});
    const auto integer = tag(verification_tag::integer);
    const auto string = verification_type::object_of("java/lang/String");
    const std::vector<stack_frame> frames{
        frame_at(5, {integer}),                                                    // same
        frame_at(106, {integer}),                                                  // same_frame_extended
        frame_at(110, {integer}, {string}),                                        // same_locals_1_stack_item
        frame_at(300, {integer}, {integer}),                                       // ... extended
        frame_at(301, {integer, tag(verification_tag::long_), string}),            // append 2
        frame_at(302, {integer}),                                                  // chop 2
        frame_at(303, {tag(verification_tag::float_)}, {integer, integer}),        // full
        frame_at(304, {tag(verification_tag::float_), verification_type::object_of("Missing")}), // append, new Class
    };
    auto encoded = encode_stack_map(frames, initial, pool);
    REQUIRE(encoded);
    const auto& b = *encoded;
    REQUIRE(b.size() > 2);
    CHECK(b[0] == 0);
    CHECK(b[1] == frames.size());
    std::size_t at = 2;
    CHECK(b[at] == 5); // same, delta 5
    at += 1;
    CHECK(b[at] == 251); // same_frame_extended, delta 100
    CHECK(b[at + 1] == 0);
    CHECK(b[at + 2] == 100);
    at += 3;
    CHECK(b[at] == 64 + 3); // same_locals_1_stack_item, delta 3, Object
    CHECK(b[at + 1] == 7);
    CHECK(b[at + 3] == *string_class); // the existing Class constant
    at += 4;
    CHECK(b[at] == 247); // extended: delta 189
    at += 4;
    CHECK(b[at] == 253); // append 2
    at += 1 + 2 + 1 + 3;
    CHECK(b[at] == 249); // chop 2
    at += 3;
    CHECK(b[at] == 255); // full
    CHECK(pool.count() == count_before + 2); // Utf8 and Class for "Missing"

    auto decoded = decode_stack_map(*encoded, initial, pool);
    REQUIRE(decoded);
    CHECK(*decoded == frames);
}

TEST_CASE("Object types compare by class name, not by pool index", "[bytecode]") {
    auto a = verification_type::object_of("java/lang/String");
    auto b = a;
    b.class_index = 42;
    CHECK(a == b);
    CHECK_FALSE(a == verification_type::object_of("java/lang/Object"));
    CHECK(verification_type::uninitialized_at(3) == verification_type::uninitialized_at(3));
    CHECK_FALSE(verification_type::uninitialized_at(3) == verification_type::uninitialized_at(4));
}

TEST_CASE("malformed StackMapTables are refused", "[bytecode]") {
    constant_pool pool;
    const stack_frame initial = frame_at(0, {tag(verification_tag::integer)});
    CHECK_FALSE(decode_stack_map(std::vector<std::uint8_t>{0x00}, initial, pool));             // truncated count
    CHECK_FALSE(decode_stack_map(std::vector<std::uint8_t>{0x00, 0x01, 200}, initial, pool));  // reserved type
    CHECK_FALSE(decode_stack_map(std::vector<std::uint8_t>{0x00, 0x01, 249, 0, 0}, initial, pool)); // chop 2 of 1
    CHECK_FALSE(decode_stack_map(std::vector<std::uint8_t>{0x00, 0x01, 64, 9}, initial, pool));     // tag 9
    CHECK_FALSE(decode_stack_map(std::vector<std::uint8_t>{0x00, 0x01, 64, 7, 0, 1}, initial, pool)); // not a Class
    CHECK_FALSE(decode_stack_map(std::vector<std::uint8_t>{0x00, 0x01, 10}, initial, pool, 10)); // past the code
    CHECK_FALSE(decode_stack_map(std::vector<std::uint8_t>{0x00, 0x00, 0x00}, initial, pool));     // trailing
    const std::vector<stack_frame> backwards{frame_at(5, {}), frame_at(5, {})};
    CHECK_FALSE(encode_stack_map(backwards, initial, pool));
}
