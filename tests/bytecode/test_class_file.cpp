// Class-file reading and writing on hand-built bytes: every constant-pool tag, the two-slot rule, byte-identical
// writing, appending constants, and each malformed case giving an error that names the problem and its offset.
#include "class_bytes.hpp"

#include "ojx/bytecode/class_reader.hpp"
#include "ojx/bytecode/class_writer.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

using namespace ojx::bytecode;
using ojx::bytecode::test::class_bytes;
using ojx::bytecode::test::raw_attribute;

namespace {

// Reads `bytes`, requiring success, and requires writing to give the same bytes back.
class_file read_and_round_trip(const std::vector<std::uint8_t>& bytes) {
    auto parsed = read_class(bytes);
    INFO((parsed ? std::string("ok") : parsed.error().describe()));
    REQUIRE(parsed);
    auto written = write_class(*parsed);
    REQUIRE(written);
    REQUIRE(*written == bytes);
    return std::move(parsed).value();
}

// Reads `bytes`, requiring failure with `fragment` in the message; returns the error.
error read_fails(const std::vector<std::uint8_t>& bytes, const std::string& fragment) {
    auto parsed = read_class(bytes);
    REQUIRE_FALSE(parsed);
    INFO(parsed.error().describe());
    CHECK(parsed.error().message.find(fragment) != std::string::npos);
    REQUIRE(parsed.error().offset.has_value());
    CHECK(*parsed.error().offset <= bytes.size());
    return parsed.error();
}

class_bytes minimal_class() {
    class_bytes klass;
    klass.method("m", "()V", {0xb1});
    return klass;
}

} // namespace

TEST_CASE("a minimal class reads, names itself and writes back byte for byte") {
    const auto bytes = minimal_class().bytes();
    const class_file klass = read_and_round_trip(bytes);
    CHECK(klass.major_version == 61);
    CHECK(klass.minor_version == 0);
    CHECK(klass.access_flags == 0x0021);
    CHECK(klass.name().value() == "T");
    CHECK(klass.constants.class_name(klass.super_class).value() == "java/lang/Object");
    REQUIRE(klass.methods.size() == 1);
    const method_info& method = klass.methods[0];
    CHECK(klass.name_of(method).value() == "m");
    CHECK(klass.descriptor_of(method).value() == "()V");
    REQUIRE(method.code() != nullptr);
    CHECK(method.code()->code == std::vector<std::uint8_t>{0xb1});
    CHECK(method.code()->max_stack == 4);
    CHECK(method.code()->max_locals == 4);
    CHECK(method.code()->name_index == class_bytes::code_name);
}

TEST_CASE("every constant-pool tag is read, looked up and written back") {
    class_bytes klass;
    const auto integer = klass.tag_u4(3, 0xFFFFFFFEu);              // -2
    const auto nan_float = klass.tag_u4(4, 0x7FC00001u);           // a NaN with a payload
    const auto long_value = klass.tag_u8(5, 0x8000000000000000ull); // Long.MIN_VALUE, two slots
    const auto double_value = klass.tag_u8(6, 0x400921FB54442D18ull); // pi, two slots
    const auto text = klass.utf8(std::string("nul\xC0\x80 and \xED\xA0\xBD\xED\xB8\x80", 15)); // modified UTF-8
    const auto string = klass.tag_u2(8, text);
    const auto owner = klass.class_named("p/Owner");
    const auto field_nat = klass.name_and_type("count", "J");
    const auto method_nat = klass.name_and_type("run", "(I)V");
    const auto fieldref = klass.tag_u2_u2(9, owner, field_nat);
    const auto methodref = klass.tag_u2_u2(10, owner, method_nat);
    const auto interface_methodref = klass.tag_u2_u2(11, owner, method_nat);
    const auto handle_field = klass.method_handle(1, fieldref);            // getField
    const auto handle_static = klass.method_handle(6, methodref);          // invokeStatic
    const auto handle_interface = klass.method_handle(9, interface_methodref); // invokeInterface
    const auto method_type = klass.tag_u2(16, klass.utf8("()Ljava/lang/Object;"));
    const auto dynamic = klass.tag_u2_u2(17, 0, klass.name_and_type("constant", "Ljava/lang/Object;"));
    const auto invoke_dynamic = klass.tag_u2_u2(18, 1, klass.name_and_type("apply", "()Ljava/lang/Runnable;"));
    const auto module = klass.tag_u2(19, klass.utf8("java.base"));
    const auto package = klass.tag_u2(20, klass.utf8("java/lang"));
    klass.method("m", "()V", {0xb1});
    const auto bytes = klass.bytes();
    const class_file parsed = read_and_round_trip(bytes);
    const constant_pool& pool = parsed.constants;

    CHECK(pool.count() == klass.next_index());
    REQUIRE(pool.get<constant_integer>(integer));
    CHECK(pool.get<constant_integer>(integer)->value() == -2);
    REQUIRE(pool.get<constant_float>(nan_float));
    CHECK(pool.get<constant_float>(nan_float)->bits == 0x7FC00001u);
    CHECK(std::isnan(pool.get<constant_float>(nan_float)->value()));
    REQUIRE(pool.get<constant_long>(long_value));
    CHECK(pool.get<constant_long>(long_value)->value() == INT64_MIN);
    REQUIRE(pool.get<constant_double>(double_value));
    CHECK(pool.get<constant_double>(double_value)->value() == Approx(3.141592653589793));
    CHECK(pool.utf8(text).value() == std::string("nul\xC0\x80 and \xED\xA0\xBD\xED\xB8\x80", 15));
    CHECK(pool.get<constant_string>(string)->string_index == text);
    CHECK(pool.class_name(owner).value() == "p/Owner");
    CHECK(pool.name_and_type(field_nat)->name == "count");
    CHECK(pool.name_and_type(field_nat)->descriptor == "J");

    const auto field = pool.member_ref(fieldref);
    REQUIRE(field);
    CHECK(field->kind == constant_tag::fieldref);
    CHECK(field->class_name == "p/Owner");
    CHECK(field->name == "count");
    CHECK(field->descriptor == "J");
    CHECK(pool.member_ref(methodref)->kind == constant_tag::methodref);
    CHECK(pool.member_ref(interface_methodref)->kind == constant_tag::interface_methodref);
    CHECK(pool.member_ref(interface_methodref)->descriptor == "(I)V");

    CHECK(pool.get<constant_method_handle>(handle_field)->reference_kind == 1);
    CHECK(pool.get<constant_method_handle>(handle_static)->reference_index == methodref);
    CHECK(pool.get<constant_method_handle>(handle_interface)->reference_kind == 9);
    CHECK(pool.utf8(pool.get<constant_method_type>(method_type)->descriptor_index).value() ==
          "()Ljava/lang/Object;");
    CHECK(pool.get<constant_dynamic>(dynamic)->bootstrap_method_attr_index == 0);
    CHECK(pool.get<constant_invoke_dynamic>(invoke_dynamic)->bootstrap_method_attr_index == 1);
    CHECK(pool.name_and_type(pool.get<constant_invoke_dynamic>(invoke_dynamic)->name_and_type_index)->name ==
          "apply");
    CHECK(pool.utf8(pool.get<constant_module>(module)->name_index).value() == "java.base");
    CHECK(pool.utf8(pool.get<constant_package>(package)->name_index).value() == "java/lang");

    // Every tag of the format appears once at least.
    std::vector<bool> seen(21, false);
    for (const constant& entry : pool.entries()) {
        seen[static_cast<std::size_t>(tag_of(entry))] = true;
    }
    for (int tag : {1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 15, 16, 17, 18, 19, 20}) {
        INFO("tag " << tag);
        CHECK(seen[static_cast<std::size_t>(tag)]);
    }
}

TEST_CASE("Long and Double take two slots; the second is unusable") {
    class_bytes klass;
    const auto first = klass.tag_u8(5, 42);
    const auto second = klass.tag_u8(6, 0x3FF0000000000000ull);
    const auto after = klass.utf8("after");
    CHECK(second == first + 2);
    CHECK(after == second + 2);
    klass.method("m", "()V", {0xb1});
    const class_file parsed = read_and_round_trip(klass.bytes());
    const constant_pool& pool = parsed.constants;
    CHECK(pool.get<constant_long>(first)->value() == 42);
    CHECK(pool.find(first + 1) == nullptr);
    CHECK(std::holds_alternative<constant_unusable>(pool.entries()[first + 1]));
    CHECK(pool.get<constant_double>(second)->value() == 1.0);
    CHECK(pool.find(second + 1) == nullptr);
    CHECK(pool.utf8(after).value() == "after");
    const auto wrong = pool.utf8(first + 1);
    REQUIRE_FALSE(wrong);
    CHECK(wrong.error().message.find("unusable") != std::string::npos);

    SECTION("a reference to the unusable slot is an error") {
        class_bytes bad;
        const auto long_index = bad.tag_u8(5, 1);
        bad.tag_u2(8, long_index + 1); // String naming the second slot
        bad.method("m", "()V", {0xb1});
        read_fails(bad.bytes(), "unusable");
    }
    SECTION("a Long as the last entry, with no room for its second slot, is an error") {
        class_bytes bad;
        bad.method("m", "()V", {0xb1});
        bad.tag_u8(5, 1);
        bad.pool_count_override = bad.next_index() - 1;
        read_fails(bad.bytes(), "two slots");
    }
}

TEST_CASE("attributes keep their order and bytes; Code keeps its nested attributes") {
    class_bytes klass;
    const auto line_numbers = klass.utf8("LineNumberTable");
    const auto stack_map = klass.utf8("StackMapTable");
    const auto signature = klass.utf8("Signature");
    const auto deprecated = klass.utf8("Deprecated");
    const auto source_file = klass.utf8("SourceFile");
    auto& method = klass.method("m", "()V", {0x03, 0x3b, 0xb1}); // iconst_0 istore_0 return
    method.code_attributes = {{line_numbers, {0, 1, 0, 0, 0, 7}}, {stack_map, {0, 0}}};
    method.before_code = {{signature, {0, 1}}};
    method.after_code = {{deprecated, {}}};
    klass.fields = {{klass.utf8("f"), klass.utf8("I")}};
    klass.class_attributes = {{source_file, {0, 1}}};
    const class_file parsed = read_and_round_trip(klass.bytes());
    const method_info& m = parsed.methods.at(0);
    REQUIRE(m.attributes.size() == 3);
    CHECK(std::get<attribute>(m.attributes[0]).name_index == signature);
    CHECK(std::holds_alternative<code_attribute>(m.attributes[1]));
    CHECK(std::get<attribute>(m.attributes[2]).name_index == deprecated);
    const code_attribute& code = *m.code();
    REQUIRE(code.attributes.size() == 2);
    CHECK(code.attributes[0].name_index == line_numbers);
    CHECK(code.attributes[0].info == std::vector<std::uint8_t>{0, 1, 0, 0, 0, 7});
    CHECK(code.attributes[1].name_index == stack_map);
    CHECK(parsed.fields.size() == 1);
    CHECK(parsed.attributes.size() == 1);
}

TEST_CASE("abstract methods have no Code; exception tables are read") {
    class_bytes klass;
    auto& abstract_method = klass.method("a", "()V", {});
    abstract_method.has_code = false;
    abstract_method.access_flags = 0x0401;
    const auto throwable = klass.class_named("java/lang/Throwable");
    // 0: nop, 1: return, 2: astore_0, 3: return; [0, 1) handled at 2, catching Throwable, and a finally.
    auto& method = klass.method("m", "()V", {0x00, 0xb1, 0x4b, 0xb1});
    method.handlers = {{0, 1, 2, throwable}, {0, 2, 2, 0}};
    const class_file parsed = read_and_round_trip(klass.bytes());
    CHECK(parsed.methods[0].code() == nullptr);
    const code_attribute* code = parsed.methods[1].code();
    REQUIRE(code);
    REQUIRE(code->exception_table.size() == 2);
    CHECK(code->exception_table[0].catch_type == throwable);
    CHECK(code->exception_table[0].handler_pc == 2);
    CHECK(code->exception_table[1].catch_type == 0);
    CHECK(code->exception_table[1].end_pc == 2);
}

TEST_CASE("class-file versions 45 to 69 are read; others are rejected with the version named") {
    for (std::uint16_t major : {45, 50, 52, 61, 65, 69}) {
        class_bytes klass = minimal_class();
        klass.major_version = major;
        klass.minor_version = major >= 56 ? 0xFFFF : 3;
        read_and_round_trip(klass.bytes());
    }
    class_bytes newer = minimal_class();
    newer.major_version = 70;
    const error too_new = read_fails(newer.bytes(), "70.0 is newer than the newest supported, 69");
    CHECK(*too_new.offset == 6);
    class_bytes older = minimal_class();
    older.major_version = 44;
    read_fails(older.bytes(), "older");
}

TEST_CASE("bad magic, empty input and every truncation are errors, never crashes") {
    const auto bytes = minimal_class().bytes();
    auto bad_magic = bytes;
    bad_magic[3] = 0xBF;
    CHECK(*read_fails(bad_magic, "magic is 0xcafebabf").offset == 0);
    read_fails({}, "truncated magic");
    for (std::size_t size = 0; size < bytes.size(); ++size) {
        INFO("prefix of " << size << " bytes");
        const std::vector<std::uint8_t> prefix(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(size));
        read_fails(prefix, "truncated");
    }
    auto extra = bytes;
    extra.push_back(0);
    CHECK(*read_fails(extra, "1 bytes follow the end of the class").offset == bytes.size());
}

TEST_CASE("counts larger than the bytes left are truncations, found before allocating") {
    class_bytes pool = minimal_class();
    pool.pool_count_override = 60000;
    read_fails(pool.bytes(), "truncated constant pool: 59999 of them need at least 179997 bytes");
    // The minimal class ends with methods_count, one method (8 bytes, then a Code attribute of 6 + 13 bytes) and
    // attributes_count.
    auto bytes = minimal_class().bytes();
    const std::size_t methods_count = bytes.size() - 2 - 27 - 2;
    REQUIRE(bytes[methods_count + 1] == 1);
    bytes[methods_count] = 0xff;
    bytes[methods_count + 1] = 0xff;
    const error methods = read_fails(bytes, "truncated methods: 65535 of them need at least 524280 bytes, 29 left");
    CHECK(*methods.offset == methods_count + 2);
}

TEST_CASE("unknown constant-pool tags are errors naming the entry and its offset") {
    for (std::uint8_t tag : {0, 2, 13, 14, 21, 255}) {
        class_bytes klass = minimal_class();
        const auto index = klass.raw({tag, 0, 0});
        const auto bytes = klass.bytes();
        const error failure = read_fails(bytes, "constant pool entry " + std::to_string(index) + " has unknown tag " +
                                                    std::to_string(tag));
        // The entry's tag byte: 10 header bytes, then the fixed entries and the method's name and descriptor.
        CHECK(bytes.at(*failure.offset) == tag);
    }
    class_bytes zero_count = minimal_class();
    zero_count.pool_count_override = 0;
    read_fails(zero_count.bytes(), "constant_pool_count is 0");
}

TEST_CASE("constant-pool references out of range or of the wrong tag are errors") {
    SECTION("Class naming an Integer") {
        class_bytes klass = minimal_class();
        const auto number = klass.tag_u4(3, 7);
        const auto bad = klass.class_ref(number);
        read_fails(klass.bytes(), "constant pool entry " + std::to_string(bad) + " (Class): name_index " +
                                      std::to_string(number) + " is an Integer, expected Utf8");
    }
    SECTION("String naming index 0 and an index past the pool") {
        class_bytes klass = minimal_class();
        klass.tag_u2(8, 0);
        read_fails(klass.bytes(), "string_index 0 is out of range");
        class_bytes past = minimal_class();
        past.tag_u2(8, 999);
        read_fails(past.bytes(), "string_index 999 is out of range");
    }
    SECTION("Methodref whose class is a Utf8, and whose NameAndType is a Class") {
        class_bytes klass = minimal_class();
        klass.tag_u2_u2(10, 1, klass.name_and_type("x", "()V"));
        read_fails(klass.bytes(), "(Methodref): class_index 1 is a Utf8, expected Class");
        class_bytes other = minimal_class();
        other.tag_u2_u2(9, class_bytes::this_index, class_bytes::object_index);
        read_fails(other.bytes(), "(Fieldref): name_and_type_index 4 is a Class, expected NameAndType");
    }
    SECTION("MethodHandle with a bad kind or the wrong kind of reference") {
        class_bytes klass = minimal_class();
        const auto nat = klass.name_and_type("x", "()V");
        const auto methodref = klass.tag_u2_u2(10, class_bytes::this_index, nat);
        klass.method_handle(0, methodref);
        read_fails(klass.bytes(), "reference_kind 0 is outside 1..9");
        class_bytes ten = minimal_class();
        ten.method_handle(10, 1);
        read_fails(ten.bytes(), "reference_kind 10");
        class_bytes field_kind = minimal_class();
        const auto nat2 = field_kind.name_and_type("x", "()V");
        const auto methodref2 = field_kind.tag_u2_u2(10, class_bytes::this_index, nat2);
        field_kind.method_handle(2, methodref2); // getStatic needs a Fieldref
        read_fails(field_kind.bytes(), "reference_index " + std::to_string(methodref2) + " is a Methodref");
    }
    SECTION("NameAndType, MethodType, Dynamic, Module and Package references") {
        class_bytes nat = minimal_class();
        nat.tag_u2_u2(12, class_bytes::this_index, 1);
        read_fails(nat.bytes(), "(NameAndType): name_index 2 is a Class");
        class_bytes type = minimal_class();
        type.tag_u2(16, class_bytes::this_index);
        read_fails(type.bytes(), "(MethodType): descriptor_index 2 is a Class");
        class_bytes indy = minimal_class();
        indy.tag_u2_u2(18, 0, 1);
        read_fails(indy.bytes(), "(InvokeDynamic): name_and_type_index 1 is a Utf8");
        class_bytes condy = minimal_class();
        condy.tag_u2_u2(17, 0, 40000);
        read_fails(condy.bytes(), "(Dynamic): name_and_type_index 40000 is out of range");
        class_bytes module = minimal_class();
        module.tag_u2(19, class_bytes::this_index);
        read_fails(module.bytes(), "(Module): name_index 2 is a Class");
        class_bytes package = minimal_class();
        package.tag_u2(20, 0);
        read_fails(package.bytes(), "(Package): name_index 0 is out of range");
    }
    SECTION("this_class, super_class, interfaces, member names and attribute names") {
        class_bytes this_utf8 = minimal_class();
        this_utf8.this_class = 1;
        read_fails(this_utf8.bytes(), "this_class 1 is a Utf8, expected Class");
        class_bytes super_zero = minimal_class();
        super_zero.super_class = 0; // java/lang/Object and module-info have none
        read_and_round_trip(super_zero.bytes());
        class_bytes super_bad = minimal_class();
        super_bad.super_class = 3;
        read_fails(super_bad.bytes(), "super_class 3 is a Utf8");
        class_bytes interface_bad = minimal_class();
        interface_bad.interfaces = {class_bytes::object_index, 5};
        read_fails(interface_bad.bytes(), "interface 5 is a Utf8");
        class_bytes name_bad = minimal_class();
        name_bad.methods[0].name_index = class_bytes::this_index;
        read_fails(name_bad.bytes(), "method name_index 2 is a Class");
        class_bytes field_bad = minimal_class();
        field_bad.fields = {{1, 60000}};
        read_fails(field_bad.bytes(), "field descriptor_index 60000 is out of range");
        class_bytes attribute_bad = minimal_class();
        attribute_bad.class_attributes = {{class_bytes::this_index, {}}};
        read_fails(attribute_bad.bytes(), "class attribute_name_index 2 is a Class, expected Utf8");
    }
}

TEST_CASE("Code attributes: length mismatches, bad code lengths, bad handlers and duplicates are errors") {
    SECTION("attribute_length longer than the contents") {
        class_bytes klass;
        auto& m = klass.method("m", "()V", {0xb1});
        m.code_length_override = 13 + 1; // 12 fixed bytes, 1 of code, 1 too many
        m.after_code = {{1, {}}};        // so that the extra byte is still inside the file
        read_fails(klass.bytes(), "attribute_length 14 but its contents end 1 bytes earlier");
    }
    SECTION("attribute_length shorter than the contents") {
        class_bytes klass;
        auto& m = klass.method("m", "()V", {0xb1});
        m.code_length_override = 12; // the attributes_count no longer fits
        m.after_code = {{1, {0, 0}}};
        read_fails(klass.bytes(), "truncated attributes_count: needs 2 bytes, 1 left in the Code attribute");
    }
    SECTION("attribute_length past the end of the file") {
        class_bytes klass;
        auto& m = klass.method("m", "()V", {0xb1});
        m.code_length_override = 1000;
        read_fails(klass.bytes(), "truncated attribute payload");
        class_bytes raw = minimal_class();
        raw.class_attributes = {{1, {1, 2, 3}}};
        auto bytes = raw.bytes();
        bytes.resize(bytes.size() - 1);
        read_fails(bytes, "truncated attribute payload: needs 3 bytes, 2 left in the class file");
    }
    SECTION("a nested attribute longer than its Code attribute") {
        class_bytes klass;
        auto& m = klass.method("m", "()V", {0xb1});
        m.code_attributes = {{1, {1, 2, 3, 4}}};
        m.code_length_override = 12 + 1 + 6 + 2; // the nested payload cut to 2 of its 4 bytes
        m.after_code = {{1, {9, 9, 9, 9, 9, 9}}};
        read_fails(klass.bytes(), "left in the Code attribute");
    }
    SECTION("code_length 0 and 65536") {
        class_bytes empty;
        empty.method("m", "()V", {});
        read_fails(empty.bytes(), "code_length 0 is outside 1..65535");
        class_bytes huge;
        huge.method("m", "()V", std::vector<std::uint8_t>(65536, 0x00));
        read_fails(huge.bytes(), "code_length 65536 is outside 1..65535");
        class_bytes largest;
        largest.method("m", "()V", std::vector<std::uint8_t>(65535, 0x00));
        read_and_round_trip(largest.bytes());
    }
    SECTION("exception ranges and handlers outside the code, and catch types that are no Class") {
        class_bytes range;
        range.method("m", "()V", {0x00, 0xb1}).handlers = {{1, 1, 0, 0}};
        read_fails(range.bytes(), "range [1, 1) is empty or exceeds code_length 2");
        class_bytes end;
        end.method("m", "()V", {0x00, 0xb1}).handlers = {{0, 3, 0, 0}};
        read_fails(end.bytes(), "range [0, 3)");
        class_bytes handler;
        handler.method("m", "()V", {0x00, 0xb1}).handlers = {{0, 1, 2, 0}};
        read_fails(handler.bytes(), "handler_pc 2 is not below code_length 2");
        class_bytes catch_type;
        catch_type.method("m", "()V", {0x00, 0xb1}).handlers = {{0, 1, 1, 1}};
        read_fails(catch_type.bytes(), "catch_type 1 is a Utf8, expected Class");
    }
    SECTION("two Code attributes") {
        class_bytes klass;
        auto& m = klass.method("m", "()V", {0xb1});
        m.after_code = {{class_bytes::code_name, {0, 1, 0, 1, 0, 0, 0, 1, 0xb1, 0, 0, 0, 0}}};
        read_fails(klass.bytes(), "more than one Code attribute");
    }
}

TEST_CASE("constants are appended with the two-slot rule, interned, and written") {
    class_file klass = read_and_round_trip(minimal_class().bytes());
    constant_pool& pool = klass.constants;
    const std::uint16_t before = pool.count();

    const auto method = pool.intern_member_ref(constant_tag::methodref, "ojx/Counters", "hit", "(I)V");
    REQUIRE(method);
    CHECK(*method >= before);
    const auto again = pool.intern_member_ref(constant_tag::methodref, "ojx/Counters", "hit", "(I)V");
    CHECK(*again == *method);
    const auto view = pool.member_ref(*method);
    REQUIRE(view);
    CHECK(view->class_name == "ojx/Counters");
    CHECK(view->name == "hit");
    CHECK(view->descriptor == "(I)V");
    // The existing Utf8 "T" and Class T are found, not duplicated.
    CHECK(pool.intern_class("T").value() == class_bytes::this_index);
    CHECK(pool.intern_utf8("Code").value() == class_bytes::code_name);

    const std::uint16_t count_before_long = pool.count();
    const auto long_index = pool.add(constant_long{5});
    REQUIRE(long_index);
    CHECK(*long_index == count_before_long);
    CHECK(pool.count() == count_before_long + 2);
    const auto next = pool.intern_string("after the long");
    CHECK(pool.get<constant_string>(*next));
    CHECK(pool.find(*long_index + 1) == nullptr);
    CHECK_FALSE(pool.add(constant_unusable{}));
    CHECK_FALSE(pool.intern_member_ref(constant_tag::class_, "a", "b", "c"));

    const auto written = write_class(klass);
    REQUIRE(written);
    const class_file reread = read_and_round_trip(*written);
    CHECK(reread.constants.count() == pool.count());
    CHECK(reread.constants.member_ref(*method)->name == "hit");
    CHECK(reread.constants.get<constant_long>(*long_index)->value() == 5);
}

TEST_CASE("the constant pool refuses to grow past 65535 slots, a Long needing two") {
    constant_pool pool;
    for (std::uint32_t i = 1; i < 65534; ++i) {
        REQUIRE(pool.add(constant_integer{i}));
    }
    CHECK(pool.count() == 65534);
    const auto full_for_long = pool.add(constant_long{1});
    REQUIRE_FALSE(full_for_long);
    CHECK(full_for_long.error().message.find("constant pool is full") != std::string::npos);
    CHECK(pool.add(constant_integer{0}).value() == 65534);
    CHECK_FALSE(pool.add(constant_integer{0}));
    CHECK(pool.count() == 65535);
}

TEST_CASE("the writer refuses what the format cannot express") {
    class_file klass = read_and_round_trip(minimal_class().bytes());
    klass.methods[0].code()->code.clear();
    const auto empty = write_class(klass);
    REQUIRE_FALSE(empty);
    CHECK(empty.error().message.find("outside 1..65535") != std::string::npos);
    klass.methods[0].code()->code.assign(65536, 0);
    CHECK_FALSE(write_class(klass));
    klass.methods[0].code()->code.assign(1, 0xb1);
    klass.interfaces.assign(65536, class_bytes::object_index);
    const auto many = write_class(klass);
    REQUIRE_FALSE(many);
    CHECK(many.error().message.find("interfaces") != std::string::npos);
}

TEST_CASE("lookups name the index and what is there") {
    const class_file klass = read_and_round_trip(minimal_class().bytes());
    const auto wrong_tag = klass.constants.class_name(1);
    REQUIRE_FALSE(wrong_tag);
    CHECK(wrong_tag.error().message == "constant pool index 1 is a Utf8, expected Class");
    CHECK_FALSE(wrong_tag.error().offset);
    const auto out_of_range = klass.constants.utf8(500);
    REQUIRE_FALSE(out_of_range);
    CHECK(out_of_range.error().message.find("out of range") != std::string::npos);
    CHECK_FALSE(klass.constants.utf8(0));
    CHECK_FALSE(klass.constants.member_ref(class_bytes::this_index));
    CHECK_FALSE(klass.constants.name_and_type(class_bytes::code_name));
}
