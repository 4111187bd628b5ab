// Class-file serialisation (class_writer.hpp): the reader's structures written back in order, with counts and
// lengths computed from the parts and checked against the format's field widths.
#include "ojx/bytecode/class_writer.hpp"
#include "ojx/bytecode/byte_writer.hpp"

#include <cstddef>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>

namespace ojx::bytecode {

namespace {

class writer {
public:
    result<std::vector<std::uint8_t>> write(const class_file& klass) {
        out_.u4(0xCAFEBABE);
        out_.u2(klass.minor_version);
        out_.u2(klass.major_version);
        write_constant_pool(klass.constants);
        out_.u2(klass.access_flags);
        out_.u2(klass.this_class);
        out_.u2(klass.super_class);
        if (count(klass.interfaces.size(), "interfaces")) {
            for (std::uint16_t interface_index : klass.interfaces) {
                out_.u2(interface_index);
            }
        }
        if (count(klass.fields.size(), "fields")) {
            for (const field_info& field : klass.fields) {
                out_.u2(field.access_flags);
                out_.u2(field.name_index);
                out_.u2(field.descriptor_index);
                write_attributes(field.attributes, "field attributes");
            }
        }
        if (count(klass.methods.size(), "methods")) {
            for (const method_info& method : klass.methods) {
                out_.u2(method.access_flags);
                out_.u2(method.name_index);
                out_.u2(method.descriptor_index);
                write_method_attributes(method.attributes);
            }
        }
        write_attributes(klass.attributes, "class attributes");
        if (failure_) {
            return std::move(*failure_);
        }
        return out_.take();
    }

private:
    // Writes `size` as a u2 count, or records that it does not fit (the first problem is the one reported).
    bool count(std::size_t size, const char* what) {
        if (size > std::numeric_limits<std::uint16_t>::max()) {
            fail(std::string(what) + ": " + std::to_string(size) + " do not fit a u2 count");
            out_.u2(0);
            return false;
        }
        out_.u2(static_cast<std::uint16_t>(size));
        return true;
    }

    void fail(std::string message) {
        if (!failure_) {
            failure_ = make_error(std::move(message));
        }
    }

    void write_constant_pool(const constant_pool& pool) {
        out_.u2(pool.count());
        for (const constant& entry : pool.entries()) {
            std::visit([this](const auto& c) { write_constant(c); }, entry);
        }
    }

    // Index 0 and the slots after Long/Double are not in the file.
    void write_constant(const constant_unusable&) {}
    void write_constant(const constant_utf8& c) {
        if (c.bytes.size() > std::numeric_limits<std::uint16_t>::max()) {
            fail("a Utf8 constant of " + std::to_string(c.bytes.size()) + " bytes does not fit its u2 length");
        }
        out_.u1(static_cast<std::uint8_t>(c.tag));
        out_.u2(static_cast<std::uint16_t>(c.bytes.size()));
        out_.bytes(c.bytes);
    }
    template <class C>
        requires std::is_same_v<C, constant_integer> || std::is_same_v<C, constant_float>
    void write_constant(const C& c) {
        out_.u1(static_cast<std::uint8_t>(c.tag));
        out_.u4(c.bits);
    }
    template <class C>
        requires std::is_same_v<C, constant_long> || std::is_same_v<C, constant_double>
    void write_constant(const C& c) {
        out_.u1(static_cast<std::uint8_t>(c.tag));
        out_.u8(c.bits);
    }
    void write_constant(const constant_class& c) { tag_u2(c.tag, c.name_index); }
    void write_constant(const constant_string& c) { tag_u2(c.tag, c.string_index); }
    void write_constant(const constant_method_type& c) { tag_u2(c.tag, c.descriptor_index); }
    template <constant_tag Tag>
    void write_constant(const constant_named<Tag>& c) { tag_u2(c.tag, c.name_index); }
    template <constant_tag Tag>
    void write_constant(const constant_member_ref<Tag>& c) {
        tag_u2(c.tag, c.class_index);
        out_.u2(c.name_and_type_index);
    }
    template <constant_tag Tag>
    void write_constant(const constant_dynamic_ref<Tag>& c) {
        tag_u2(c.tag, c.bootstrap_method_attr_index);
        out_.u2(c.name_and_type_index);
    }
    void write_constant(const constant_name_and_type& c) {
        tag_u2(c.tag, c.name_index);
        out_.u2(c.descriptor_index);
    }
    void write_constant(const constant_method_handle& c) {
        out_.u1(static_cast<std::uint8_t>(c.tag));
        out_.u1(c.reference_kind);
        out_.u2(c.reference_index);
    }
    void tag_u2(constant_tag tag, std::uint16_t value) {
        out_.u1(static_cast<std::uint8_t>(tag));
        out_.u2(value);
    }

    // The 4-byte attribute_length field for a payload of `size` bytes.
    void length(std::size_t size) {
        if (size > std::numeric_limits<std::uint32_t>::max()) {
            fail("an attribute of " + std::to_string(size) + " bytes does not fit its u4 length");
        }
        out_.u4(static_cast<std::uint32_t>(size));
    }

    void write_attribute(const attribute& entry) {
        out_.u2(entry.name_index);
        length(entry.info.size());
        out_.bytes(entry.info);
    }

    void write_attributes(const std::vector<attribute>& attributes, const char* what) {
        if (count(attributes.size(), what)) {
            for (const attribute& entry : attributes) {
                write_attribute(entry);
            }
        }
    }

    void write_method_attributes(const std::vector<method_attribute>& attributes) {
        if (!count(attributes.size(), "method attributes")) {
            return;
        }
        for (const method_attribute& entry : attributes) {
            if (const auto* raw = std::get_if<attribute>(&entry)) {
                write_attribute(*raw);
            } else {
                write_code(std::get<code_attribute>(entry));
            }
        }
    }

    void write_code(const code_attribute& code) {
        out_.u2(code.name_index);
        length(code.payload_size());
        out_.u2(code.max_stack);
        out_.u2(code.max_locals);
        if (code.code.empty() || code.code.size() > code_attribute::max_code_length) {
            fail("a code array of " + std::to_string(code.code.size()) + " bytes is outside 1.." +
                 std::to_string(code_attribute::max_code_length));
        }
        out_.u4(static_cast<std::uint32_t>(code.code.size()));
        out_.bytes(code.code);
        if (count(code.exception_table.size(), "exception table entries")) {
            for (const exception_entry& handler : code.exception_table) {
                out_.u2(handler.start_pc);
                out_.u2(handler.end_pc);
                out_.u2(handler.handler_pc);
                out_.u2(handler.catch_type);
            }
        }
        write_attributes(code.attributes, "Code attributes");
    }

    byte_writer out_;
    std::optional<error> failure_;
};

} // namespace

result<std::vector<std::uint8_t>> write_class(const class_file& klass) { return writer().write(klass); }

} // namespace ojx::bytecode
