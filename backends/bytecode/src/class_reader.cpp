// Class-file parsing (class_reader.hpp): a single pass over the bytes with a bounds-checked reader, then the
// constant pool's references checked once the whole pool is known (an entry may refer forward).
#include "ojx/bytecode/class_reader.hpp"
#include "ojx/bytecode/byte_reader.hpp"

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace ojx::bytecode {

namespace {

std::string hex(std::uint64_t value) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string text;
    do {
        text.insert(text.begin(), digits[value & 0xf]);
        value >>= 4;
    } while (value != 0);
    return "0x" + text;
}

class parser : failure_recorder {
public:
    explicit parser(std::span<const std::uint8_t> bytes) : in_(bytes) {}

    result<class_file> parse() {
        if (!parse_header() || !parse_constant_pool() || !check_constant_pool() || !parse_class_header() ||
            !parse_fields() || !parse_methods() || !parse_attributes(in_, klass_.attributes, "class")) {
            return take_failure();
        }
        if (!in_.at_end()) {
            return make_error(std::to_string(in_.remaining()) + " bytes follow the end of the class", in_.offset());
        }
        return std::move(klass_);
    }

private:
    // A read that does not fit: the structure being read, and what it ran past.
    bool truncated(const byte_reader& in, const char* what, std::size_t needed) {
        return fail(std::string("truncated ") + what + ": needs " + std::to_string(needed) + " bytes, " +
                        std::to_string(in.remaining()) + " left in " + container_,
            in.offset());
    }

    bool u1(byte_reader& in, std::uint8_t& out, const char* what) {
        return in.read_u1(out) || truncated(in, what, 1);
    }
    bool u2(byte_reader& in, std::uint16_t& out, const char* what) {
        return in.read_u2(out) || truncated(in, what, 2);
    }
    bool u4(byte_reader& in, std::uint32_t& out, const char* what) {
        return in.read_u4(out) || truncated(in, what, 4);
    }
    bool u8(byte_reader& in, std::uint64_t& out, const char* what) {
        return in.read_u8(out) || truncated(in, what, 8);
    }
    bool bytes(byte_reader& in, std::size_t count, std::span<const std::uint8_t>& out, const char* what) {
        return in.read_bytes(count, out) || truncated(in, what, count);
    }

    // Checks a count just read against the bytes left, each item taking at least `each` bytes, before anything is
    // allocated for it: a corrupt count is reported as the truncation it implies, never as a large allocation.
    bool fits(const byte_reader& in, std::size_t count, std::size_t each, const char* what) {
        if (count <= in.remaining() / each) {
            return true;
        }
        return fail(std::string("truncated ") + what + ": " + std::to_string(count) + " of them need at least " +
                        std::to_string(count * each) + " bytes, " + std::to_string(in.remaining()) + " left in " +
                        container_,
            in.offset());
    }

    std::string describe(std::uint16_t index) const { return describe_entry(klass_.constants, index); }

    // Checks that `index` names an entry with one of the `allowed` tags; `what` names the referring field, and
    // `from_entry`, when not 0, the constant-pool entry holding it (messages are built only on failure).
    bool refers(std::uint16_t index, std::initializer_list<constant_tag> allowed, std::string_view what,
        std::size_t offset, std::size_t from_entry = 0) {
        const constant* entry = klass_.constants.find(index);
        if (entry) {
            const constant_tag tag = tag_of(*entry);
            for (constant_tag wanted : allowed) {
                if (tag == wanted) {
                    return true;
                }
            }
        }
        std::string expected;
        for (constant_tag wanted : allowed) {
            expected += (expected.empty() ? "" : " or ") + std::string(constant_tag_name(wanted));
        }
        std::string message;
        if (from_entry != 0) {
            message = "constant pool entry " + std::to_string(from_entry) + " (" +
                      std::string(constant_tag_name(tag_of(klass_.constants.entries()[from_entry]))) + "): ";
        }
        return fail(message + std::string(what) + " " + std::to_string(index) + " is " + describe(index) +
                        ", expected " + expected,
            offset);
    }

    bool parse_header() {
        std::uint32_t magic = 0;
        if (!u4(in_, magic, "magic")) {
            return false;
        }
        if (magic != 0xCAFEBABE) {
            return fail("not a class file: magic is " + hex(magic) + ", expected 0xcafebabe", 0);
        }
        if (!u2(in_, klass_.minor_version, "minor_version")) {
            return false;
        }
        const std::size_t major_offset = in_.offset();
        if (!u2(in_, klass_.major_version, "major_version")) {
            return false;
        }
        if (klass_.major_version > max_major_version) {
            return fail("class file version " + std::to_string(klass_.major_version) + "." +
                            std::to_string(klass_.minor_version) + " is newer than the newest supported, " +
                            std::to_string(max_major_version) + " (JDK 25)",
                major_offset);
        }
        if (klass_.major_version < min_major_version) {
            return fail("class file version " + std::to_string(klass_.major_version) + "." +
                            std::to_string(klass_.minor_version) + " is older than the oldest defined, " +
                            std::to_string(min_major_version),
                major_offset);
        }
        return true;
    }

    bool parse_constant_pool() {
        std::uint16_t count = 0;
        if (!u2(in_, count, "constant_pool_count")) {
            return false;
        }
        if (count == 0) {
            return fail("constant_pool_count is 0; it counts index 0, so it is at least 1", in_.offset() - 2);
        }
        // Every entry takes 3 bytes at least (a tag and a u2), and a two-slot entry 9.
        if (!fits(in_, count - 1u, 3, "constant pool")) {
            return false;
        }
        constant_pool_builder pool(count);
        entry_offsets_.assign(count, 0);
        while (pool.size() < count) {
            const auto index = static_cast<std::uint16_t>(pool.size());
            entry_offsets_[index] = in_.offset();
            std::uint8_t tag = 0;
            if (!u1(in_, tag, "constant pool tag")) {
                return false;
            }
            std::optional<constant> entry = parse_constant(tag, index);
            if (!entry) {
                return false;
            }
            if (takes_two_slots(tag_of(*entry)) && index + 1u >= count) {
                return fail("constant pool entry " + std::to_string(index) + " is a " +
                                std::string(constant_tag_name(tag_of(*entry))) +
                                ", which takes two slots, but it is the last (constant_pool_count " +
                                std::to_string(count) + ")",
                    entry_offsets_[index]);
            }
            pool.push(std::move(*entry));
        }
        klass_.constants = pool.take();
        return true;
    }

    std::optional<constant> parse_constant(std::uint8_t tag, std::uint16_t index) {
        const char* what = "constant pool entry";
        std::uint16_t first = 0;
        std::uint16_t second = 0;
        switch (static_cast<constant_tag>(tag)) {
        case constant_tag::utf8: {
            std::uint16_t length = 0;
            std::span<const std::uint8_t> text;
            if (!u2(in_, length, "Utf8 length") || !bytes(in_, length, text, "Utf8 bytes")) {
                return std::nullopt;
            }
            return constant_utf8{std::string(text.begin(), text.end())};
        }
        case constant_tag::integer:
        case constant_tag::float_: {
            std::uint32_t bits = 0;
            if (!u4(in_, bits, what)) {
                return std::nullopt;
            }
            if (tag == static_cast<std::uint8_t>(constant_tag::integer)) {
                return constant_integer{bits};
            }
            return constant_float{bits};
        }
        case constant_tag::long_:
        case constant_tag::double_: {
            std::uint64_t bits = 0;
            if (!u8(in_, bits, what)) {
                return std::nullopt;
            }
            if (tag == static_cast<std::uint8_t>(constant_tag::long_)) {
                return constant_long{bits};
            }
            return constant_double{bits};
        }
        case constant_tag::class_:
            if (!u2(in_, first, what)) {
                return std::nullopt;
            }
            return constant_class{first};
        case constant_tag::string:
            if (!u2(in_, first, what)) {
                return std::nullopt;
            }
            return constant_string{first};
        case constant_tag::method_type:
            if (!u2(in_, first, what)) {
                return std::nullopt;
            }
            return constant_method_type{first};
        case constant_tag::module:
            if (!u2(in_, first, what)) {
                return std::nullopt;
            }
            return constant_module{first};
        case constant_tag::package:
            if (!u2(in_, first, what)) {
                return std::nullopt;
            }
            return constant_package{first};
        case constant_tag::method_handle: {
            std::uint8_t kind = 0;
            if (!u1(in_, kind, what) || !u2(in_, first, what)) {
                return std::nullopt;
            }
            return constant_method_handle{kind, first};
        }
        case constant_tag::fieldref:
        case constant_tag::methodref:
        case constant_tag::interface_methodref:
        case constant_tag::name_and_type:
        case constant_tag::dynamic:
        case constant_tag::invoke_dynamic:
            if (!u2(in_, first, what) || !u2(in_, second, what)) {
                return std::nullopt;
            }
            switch (static_cast<constant_tag>(tag)) {
            case constant_tag::fieldref: return constant_fieldref{first, second};
            case constant_tag::methodref: return constant_methodref{first, second};
            case constant_tag::interface_methodref: return constant_interface_methodref{first, second};
            case constant_tag::name_and_type: return constant_name_and_type{first, second};
            case constant_tag::dynamic: return constant_dynamic{first, second};
            default: return constant_invoke_dynamic{first, second};
            }
        case constant_tag::unusable: break;
        }
        fail("constant pool entry " + std::to_string(index) + " has unknown tag " + std::to_string(tag),
            entry_offsets_[index]);
        return std::nullopt;
    }

    // Every reference between entries names an entry of the right tag (JVMS 4.4).
    bool check_constant_pool() {
        const auto& entries = klass_.constants.entries();
        constexpr auto utf8 = constant_tag::utf8;
        for (std::size_t i = 1; i < entries.size(); ++i) {
            const std::size_t at = entry_offsets_[i];
            const constant& entry = entries[i];
            bool ok = true;
            if (const auto* c = std::get_if<constant_class>(&entry)) {
                ok = refers(c->name_index, {utf8}, "name_index", at, i);
            } else if (const auto* s = std::get_if<constant_string>(&entry)) {
                ok = refers(s->string_index, {utf8}, "string_index", at, i);
            } else if (const auto* f = std::get_if<constant_fieldref>(&entry)) {
                ok = check_member_ref(f->class_index, f->name_and_type_index, at, i);
            } else if (const auto* m = std::get_if<constant_methodref>(&entry)) {
                ok = check_member_ref(m->class_index, m->name_and_type_index, at, i);
            } else if (const auto* im = std::get_if<constant_interface_methodref>(&entry)) {
                ok = check_member_ref(im->class_index, im->name_and_type_index, at, i);
            } else if (const auto* nat = std::get_if<constant_name_and_type>(&entry)) {
                ok = refers(nat->name_index, {utf8}, "name_index", at, i) &&
                     refers(nat->descriptor_index, {utf8}, "descriptor_index", at, i);
            } else if (const auto* mh = std::get_if<constant_method_handle>(&entry)) {
                if (mh->reference_kind < 1 || mh->reference_kind > 9) {
                    return fail("constant pool entry " + std::to_string(i) + " (MethodHandle): reference_kind " +
                                    std::to_string(mh->reference_kind) + " is outside 1..9",
                        at);
                }
                // Kinds 1-4 are field accesses (getField .. putStatic), 5-9 method invocations.
                if (mh->reference_kind <= 4) {
                    ok = refers(mh->reference_index, {constant_tag::fieldref}, "reference_index", at, i);
                } else {
                    ok = refers(mh->reference_index, {constant_tag::methodref, constant_tag::interface_methodref},
                        "reference_index", at, i);
                }
            } else if (const auto* mt = std::get_if<constant_method_type>(&entry)) {
                ok = refers(mt->descriptor_index, {utf8}, "descriptor_index", at, i);
            } else if (const auto* d = std::get_if<constant_dynamic>(&entry)) {
                ok = refers(d->name_and_type_index, {constant_tag::name_and_type}, "name_and_type_index", at, i);
            } else if (const auto* id = std::get_if<constant_invoke_dynamic>(&entry)) {
                ok = refers(id->name_and_type_index, {constant_tag::name_and_type}, "name_and_type_index", at, i);
            } else if (const auto* mod = std::get_if<constant_module>(&entry)) {
                ok = refers(mod->name_index, {utf8}, "name_index", at, i);
            } else if (const auto* pkg = std::get_if<constant_package>(&entry)) {
                ok = refers(pkg->name_index, {utf8}, "name_index", at, i);
            }
            if (!ok) {
                return false;
            }
        }
        return true;
    }

    bool check_member_ref(std::uint16_t class_index, std::uint16_t name_and_type_index, std::size_t at,
        std::size_t from_entry) {
        return refers(class_index, {constant_tag::class_}, "class_index", at, from_entry) &&
               refers(name_and_type_index, {constant_tag::name_and_type}, "name_and_type_index", at, from_entry);
    }

    bool parse_class_header() {
        std::size_t offset = in_.offset();
        if (!u2(in_, klass_.access_flags, "access_flags")) {
            return false;
        }
        offset = in_.offset();
        if (!u2(in_, klass_.this_class, "this_class") ||
            !refers(klass_.this_class, {constant_tag::class_}, "this_class", offset)) {
            return false;
        }
        offset = in_.offset();
        if (!u2(in_, klass_.super_class, "super_class")) {
            return false;
        }
        // 0 for java/lang/Object and module-info, which have no superclass.
        if (klass_.super_class != 0 && !refers(klass_.super_class, {constant_tag::class_}, "super_class", offset)) {
            return false;
        }
        std::uint16_t count = 0;
        if (!u2(in_, count, "interfaces_count") || !fits(in_, count, 2, "interfaces")) {
            return false;
        }
        klass_.interfaces.resize(count);
        for (std::uint16_t& interface_index : klass_.interfaces) {
            offset = in_.offset();
            if (!u2(in_, interface_index, "interfaces") ||
                !refers(interface_index, {constant_tag::class_}, "interface", offset)) {
                return false;
            }
        }
        return true;
    }

    // access_flags, name_index, descriptor_index: the head shared by fields and methods.
    template <class Member>
    bool parse_member_head(Member& member, const char* what) {
        if (!u2(in_, member.access_flags, what)) {
            return false;
        }
        constexpr bool is_method = std::is_same_v<Member, method_info>;
        std::size_t offset = in_.offset();
        if (!u2(in_, member.name_index, what) ||
            !refers(member.name_index, {constant_tag::utf8}, is_method ? "method name_index" : "field name_index",
                offset)) {
            return false;
        }
        offset = in_.offset();
        return u2(in_, member.descriptor_index, what) &&
               refers(member.descriptor_index, {constant_tag::utf8},
                   is_method ? "method descriptor_index" : "field descriptor_index", offset);
    }

    bool parse_fields() {
        std::uint16_t count = 0;
        if (!u2(in_, count, "fields_count") || !fits(in_, count, 8, "fields")) {
            return false;
        }
        klass_.fields.resize(count);
        for (field_info& field : klass_.fields) {
            if (!parse_member_head(field, "field") || !parse_attributes(in_, field.attributes, "field")) {
                return false;
            }
        }
        return true;
    }

    bool parse_methods() {
        std::uint16_t count = 0;
        if (!u2(in_, count, "methods_count") || !fits(in_, count, 8, "methods")) {
            return false;
        }
        klass_.methods.resize(count);
        for (method_info& method : klass_.methods) {
            if (!parse_member_head(method, "method") || !parse_method_attributes(method)) {
                return false;
            }
        }
        return true;
    }

    // One attribute's header and payload; `name` is set to its name (a Utf8 entry, checked).
    bool parse_attribute(byte_reader& in, attribute& out, std::string_view& name, const char* owner) {
        const std::size_t offset = in.offset();
        std::uint32_t length = 0;
        if (!u2(in, out.name_index, "attribute_name_index")) {
            return false;
        }
        auto text = klass_.constants.utf8(out.name_index);
        if (!text) {
            return fail(std::string(owner) + " attribute_name_index " + std::to_string(out.name_index) + " is " +
                            describe(out.name_index) + ", expected Utf8",
                offset);
        }
        name = *text;
        std::span<const std::uint8_t> payload;
        if (!u4(in, length, "attribute_length") || !bytes(in, length, payload, "attribute payload")) {
            return false;
        }
        out.info.assign(payload.begin(), payload.end());
        return true;
    }

    bool parse_attributes(byte_reader& in, std::vector<attribute>& out, const char* owner) {
        std::uint16_t count = 0;
        if (!u2(in, count, "attributes_count") || !fits(in, count, 6, "attributes")) {
            return false;
        }
        out.resize(count);
        std::string_view name;
        for (attribute& entry : out) {
            if (!parse_attribute(in, entry, name, owner)) {
                return false;
            }
        }
        return true;
    }

    bool parse_method_attributes(method_info& method) {
        std::uint16_t count = 0;
        if (!u2(in_, count, "attributes_count") || !fits(in_, count, 6, "attributes")) {
            return false;
        }
        method.attributes.reserve(count);
        bool has_code = false;
        for (std::uint16_t i = 0; i < count; ++i) {
            const std::size_t offset = in_.offset();
            attribute raw;
            std::string_view name;
            if (!parse_attribute(in_, raw, name, "method")) {
                return false;
            }
            if (name != "Code") {
                method.attributes.emplace_back(std::move(raw));
                continue;
            }
            if (has_code) {
                return fail("method has more than one Code attribute", offset);
            }
            has_code = true;
            code_attribute code;
            code.name_index = raw.name_index;
            if (!parse_code(raw.info, offset, code)) {
                return false;
            }
            method.attributes.emplace_back(std::move(code));
        }
        return true;
    }

    // The payload of a Code attribute whose header starts at `offset`; its reads are bounded by the payload, so a
    // part that runs past it (or a payload with bytes left over) is an attribute length mismatch.
    bool parse_code(std::span<const std::uint8_t> payload, std::size_t offset, code_attribute& code) {
        byte_reader in(payload, offset + 6);
        container_ = "the Code attribute at offset " + std::to_string(offset) + " (attribute_length " +
                     std::to_string(payload.size()) + ")";
        std::uint32_t code_length = 0;
        if (!u2(in, code.max_stack, "max_stack") || !u2(in, code.max_locals, "max_locals") ||
            !u4(in, code_length, "code_length")) {
            return false;
        }
        if (code_length == 0 || code_length > code_attribute::max_code_length) {
            return fail("Code attribute: code_length " + std::to_string(code_length) + " is outside 1.." +
                            std::to_string(code_attribute::max_code_length),
                in.offset() - 4);
        }
        std::span<const std::uint8_t> code_bytes;
        if (!bytes(in, code_length, code_bytes, "code")) {
            return false;
        }
        code.code.assign(code_bytes.begin(), code_bytes.end());
        std::uint16_t handlers = 0;
        if (!u2(in, handlers, "exception_table_length") || !fits(in, handlers, 8, "exception_table")) {
            return false;
        }
        code.exception_table.resize(handlers);
        for (exception_entry& handler : code.exception_table) {
            const std::size_t entry_offset = in.offset();
            const char* what = "exception_table entry";
            if (!u2(in, handler.start_pc, what) || !u2(in, handler.end_pc, what) || !u2(in, handler.handler_pc, what) ||
                !u2(in, handler.catch_type, what)) {
                return false;
            }
            if (handler.start_pc >= handler.end_pc || handler.end_pc > code_length) {
                return fail("exception_table entry: range [" + std::to_string(handler.start_pc) + ", " +
                                std::to_string(handler.end_pc) + ") is empty or exceeds code_length " +
                                std::to_string(code_length),
                    entry_offset);
            }
            if (handler.handler_pc >= code_length) {
                return fail("exception_table entry: handler_pc " + std::to_string(handler.handler_pc) +
                                " is not below code_length " + std::to_string(code_length),
                    entry_offset);
            }
            if (handler.catch_type != 0 &&
                !refers(handler.catch_type, {constant_tag::class_}, "exception_table entry catch_type",
                    entry_offset + 6)) {
                return false;
            }
        }
        if (!parse_attributes(in, code.attributes, "Code")) {
            return false;
        }
        if (!in.at_end()) {
            return fail("Code attribute: attribute_length " + std::to_string(payload.size()) +
                            " but its contents end " + std::to_string(in.remaining()) + " bytes earlier",
                offset + 2);
        }
        container_ = "the class file";
        return true;
    }

    byte_reader in_;
    class_file klass_;
    std::vector<std::size_t> entry_offsets_; // file offset of each constant-pool entry, for messages
    std::string container_ = "the class file"; // what the current reads are bounded by, for messages
};

} // namespace

result<class_file> read_class(std::span<const std::uint8_t> bytes) { return parser(bytes).parse(); }

} // namespace ojx::bytecode
