// Hand-built class files for the bytecode backend's tests: bytes assembled field by field (with the library's
// byte_writer, the one piece of it trusted here), so that every test states exactly what the reader is given.
#pragma once

#include "ojx/bytecode/byte_writer.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ojx::bytecode::test {

struct raw_attribute {
    std::uint16_t name_index = 0;
    std::vector<std::uint8_t> info;
};

struct handler_bytes {
    std::uint16_t start_pc = 0;
    std::uint16_t end_pc = 0;
    std::uint16_t handler_pc = 0;
    std::uint16_t catch_type = 0;
};

struct method_bytes {
    std::uint16_t access_flags = 0x0009; // public static
    std::uint16_t name_index = 0;
    std::uint16_t descriptor_index = 0;
    bool has_code = true;
    std::uint16_t max_stack = 4;
    std::uint16_t max_locals = 4;
    std::vector<std::uint8_t> code{0xb1}; // return
    std::vector<handler_bytes> handlers;
    std::vector<raw_attribute> code_attributes;
    std::vector<raw_attribute> before_code; // attributes written before Code, then after it
    std::vector<raw_attribute> after_code;
    // When set, the Code attribute's attribute_length is written as this instead of the true length.
    std::int64_t code_length_override = -1;
};

// A class "T" extending java/lang/Object. Pool indices 1..5 are fixed: Utf8 "T", Class T, Utf8
// "java/lang/Object", Class java/lang/Object, Utf8 "Code".
class class_bytes {
public:
    static constexpr std::uint16_t this_index = 2;
    static constexpr std::uint16_t object_index = 4;
    static constexpr std::uint16_t code_name = 5;

    class_bytes() {
        utf8("T");
        class_ref(1);
        utf8("java/lang/Object");
        class_ref(3);
        utf8("Code");
    }

    std::uint16_t major_version = 61;
    std::uint16_t minor_version = 0;
    std::uint16_t access_flags = 0x0021;
    std::uint16_t this_class = this_index;
    std::uint16_t super_class = object_index;
    std::vector<std::uint16_t> interfaces;
    std::vector<method_bytes> methods;
    std::vector<std::pair<std::uint16_t, std::uint16_t>> fields; // name, descriptor; no attributes
    std::vector<raw_attribute> class_attributes;
    // When set, written as constant_pool_count instead of the true count.
    std::int32_t pool_count_override = -1;

    std::uint16_t next_index() const noexcept { return next_; }

    // Appends one entry given as its tag and contents; `slots` is 2 for Long and Double.
    std::uint16_t raw(std::vector<std::uint8_t> entry, std::uint16_t slots = 1) {
        const std::uint16_t index = next_;
        pool_.bytes(entry);
        next_ = static_cast<std::uint16_t>(next_ + slots);
        return index;
    }
    std::uint16_t utf8(std::string_view text) {
        byte_writer entry;
        entry.u1(1);
        entry.u2(static_cast<std::uint16_t>(text.size()));
        entry.bytes(text);
        return raw(entry.take());
    }
    std::uint16_t tag_u2(std::uint8_t tag, std::uint16_t value) {
        byte_writer entry;
        entry.u1(tag);
        entry.u2(value);
        return raw(entry.take());
    }
    std::uint16_t tag_u2_u2(std::uint8_t tag, std::uint16_t first, std::uint16_t second) {
        byte_writer entry;
        entry.u1(tag);
        entry.u2(first);
        entry.u2(second);
        return raw(entry.take());
    }
    std::uint16_t tag_u4(std::uint8_t tag, std::uint32_t bits) {
        byte_writer entry;
        entry.u1(tag);
        entry.u4(bits);
        return raw(entry.take());
    }
    std::uint16_t tag_u8(std::uint8_t tag, std::uint64_t bits) {
        byte_writer entry;
        entry.u1(tag);
        entry.u8(bits);
        return raw(entry.take(), 2);
    }
    std::uint16_t class_ref(std::uint16_t name) { return tag_u2(7, name); }
    std::uint16_t class_named(std::string_view name) { return class_ref(utf8(name)); }
    std::uint16_t name_and_type(std::string_view name, std::string_view descriptor) {
        const std::uint16_t name_index = utf8(name);
        return tag_u2_u2(12, name_index, utf8(descriptor));
    }
    std::uint16_t method_handle(std::uint8_t kind, std::uint16_t reference) {
        byte_writer entry;
        entry.u1(15);
        entry.u1(kind);
        entry.u2(reference);
        return raw(entry.take());
    }

    // A method named `name` with descriptor `descriptor` running `code`; returns it for further settings.
    method_bytes& method(std::string_view name, std::string_view descriptor, std::vector<std::uint8_t> code) {
        method_bytes added;
        added.name_index = utf8(name);
        added.descriptor_index = utf8(descriptor);
        added.code = std::move(code);
        methods.push_back(std::move(added));
        return methods.back();
    }

    std::vector<std::uint8_t> bytes() const {
        byte_writer out;
        out.u4(0xCAFEBABE);
        out.u2(minor_version);
        out.u2(major_version);
        out.u2(static_cast<std::uint16_t>(pool_count_override >= 0 ? pool_count_override : next_));
        out.bytes(pool_.data());
        out.u2(access_flags);
        out.u2(this_class);
        out.u2(super_class);
        out.u2(static_cast<std::uint16_t>(interfaces.size()));
        for (std::uint16_t index : interfaces) {
            out.u2(index);
        }
        out.u2(static_cast<std::uint16_t>(fields.size()));
        for (const auto& [name, descriptor] : fields) {
            out.u2(0x0002);
            out.u2(name);
            out.u2(descriptor);
            out.u2(0);
        }
        out.u2(static_cast<std::uint16_t>(methods.size()));
        for (const method_bytes& m : methods) {
            out.u2(m.access_flags);
            out.u2(m.name_index);
            out.u2(m.descriptor_index);
            out.u2(static_cast<std::uint16_t>(m.before_code.size() + (m.has_code ? 1 : 0) + m.after_code.size()));
            write_attributes(out, m.before_code, false);
            if (m.has_code) {
                write_code(out, m);
            }
            write_attributes(out, m.after_code, false);
        }
        write_attributes(out, class_attributes, true);
        return out.take();
    }

private:
    static void write_attributes(byte_writer& out, const std::vector<raw_attribute>& attributes, bool counted) {
        if (counted) {
            out.u2(static_cast<std::uint16_t>(attributes.size()));
        }
        for (const raw_attribute& a : attributes) {
            out.u2(a.name_index);
            out.u4(static_cast<std::uint32_t>(a.info.size()));
            out.bytes(a.info);
        }
    }

    static void write_code(byte_writer& out, const method_bytes& m) {
        byte_writer payload;
        payload.u2(m.max_stack);
        payload.u2(m.max_locals);
        payload.u4(static_cast<std::uint32_t>(m.code.size()));
        payload.bytes(m.code);
        payload.u2(static_cast<std::uint16_t>(m.handlers.size()));
        for (const handler_bytes& h : m.handlers) {
            payload.u2(h.start_pc);
            payload.u2(h.end_pc);
            payload.u2(h.handler_pc);
            payload.u2(h.catch_type);
        }
        write_attributes(payload, m.code_attributes, true);
        out.u2(code_name);
        out.u4(static_cast<std::uint32_t>(m.code_length_override >= 0 ? m.code_length_override : payload.size()));
        out.bytes(payload.data());
    }

    byte_writer pool_;
    std::uint16_t next_ = 1;
};

} // namespace ojx::bytecode::test
