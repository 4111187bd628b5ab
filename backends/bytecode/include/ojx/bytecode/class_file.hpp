// The in-memory form of one class file: what the reader produces and the writer consumes. Everything is kept in
// file order with constant-pool indices as they were, so an unmodified class writes back byte for byte; a
// method's Code attribute is parsed (code_attribute) so that its code can later be edited.
#pragma once

#include "ojx/bytecode/attribute.hpp"
#include "ojx/bytecode/code_attribute.hpp"
#include "ojx/bytecode/constant_pool.hpp"
#include "ojx/bytecode/result.hpp"

#include <cstdint>
#include <string_view>
#include <variant>
#include <vector>

namespace ojx::bytecode {

// Class-file versions this library reads: 45 (JDK 1.0.2) to 69 (JDK 25). A newer one may have constants,
// attributes or opcodes it does not know, so it is rejected rather than guessed at.
inline constexpr std::uint16_t min_major_version = 45;
inline constexpr std::uint16_t max_major_version = 69;

// Access flags (JVMS tables 4.1-B, 4.5-A, 4.6-A) that code here looks at.
namespace access {
inline constexpr std::uint16_t public_ = 0x0001;
inline constexpr std::uint16_t private_ = 0x0002;
inline constexpr std::uint16_t protected_ = 0x0004;
inline constexpr std::uint16_t static_ = 0x0008;
inline constexpr std::uint16_t final_ = 0x0010;
inline constexpr std::uint16_t synchronized_ = 0x0020;
inline constexpr std::uint16_t bridge = 0x0040;
inline constexpr std::uint16_t varargs = 0x0080;
inline constexpr std::uint16_t native = 0x0100;
inline constexpr std::uint16_t interface = 0x0200;
inline constexpr std::uint16_t abstract = 0x0400;
inline constexpr std::uint16_t strict = 0x0800;
inline constexpr std::uint16_t synthetic = 0x1000;
inline constexpr std::uint16_t annotation = 0x2000;
inline constexpr std::uint16_t enum_ = 0x4000;
inline constexpr std::uint16_t module = 0x8000;
} // namespace access

struct field_info {
    std::uint16_t access_flags = 0;
    std::uint16_t name_index = 0;       // Utf8
    std::uint16_t descriptor_index = 0; // Utf8
    std::vector<attribute> attributes;
};

// A method's attributes in file order: Code parsed, every other attribute raw. A method has at most one Code
// attribute (the reader rejects a second, as the JVM does).
using method_attribute = std::variant<attribute, code_attribute>;

struct method_info {
    std::uint16_t access_flags = 0;
    std::uint16_t name_index = 0;       // Utf8
    std::uint16_t descriptor_index = 0; // Utf8
    std::vector<method_attribute> attributes;

    // The method's Code, or nullptr (abstract and native methods have none).
    code_attribute* code() noexcept {
        for (method_attribute& entry : attributes) {
            if (auto* found = std::get_if<code_attribute>(&entry)) {
                return found;
            }
        }
        return nullptr;
    }
    const code_attribute* code() const noexcept {
        for (const method_attribute& entry : attributes) {
            if (const auto* found = std::get_if<code_attribute>(&entry)) {
                return found;
            }
        }
        return nullptr;
    }
};

struct class_file {
    std::uint16_t minor_version = 0;
    std::uint16_t major_version = 0;
    constant_pool constants;
    std::uint16_t access_flags = 0;
    std::uint16_t this_class = 0;  // Class
    std::uint16_t super_class = 0; // Class, or 0 for java/lang/Object and module-info
    std::vector<std::uint16_t> interfaces; // Class indices
    std::vector<field_info> fields;
    std::vector<method_info> methods;
    std::vector<attribute> attributes;

    result<std::string_view> name() const { return constants.class_name(this_class); }
    result<std::string_view> name_of(const method_info& method) const { return constants.utf8(method.name_index); }
    result<std::string_view> descriptor_of(const method_info& method) const {
        return constants.utf8(method.descriptor_index);
    }
    result<std::string_view> name_of(const field_info& field) const { return constants.utf8(field.name_index); }
};

} // namespace ojx::bytecode
