// A class file's constant pool: every JVMS 4.4 tag, kept exactly as read so that writing it back reproduces the
// file's bytes, with typed lookups for the entries code refers to and appending (interning) of new entries.
#pragma once

#include "ojx/bytecode/result.hpp"

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace ojx::bytecode {

// JVMS 4.4 tags. `unusable` is no tag of the format: it marks index 0 and the slot after a Long or Double.
enum class constant_tag : std::uint8_t {
    unusable = 0,
    utf8 = 1,
    integer = 3,
    float_ = 4,
    long_ = 5,
    double_ = 6,
    class_ = 7,
    string = 8,
    fieldref = 9,
    methodref = 10,
    interface_methodref = 11,
    name_and_type = 12,
    method_handle = 15,
    method_type = 16,
    dynamic = 17,
    invoke_dynamic = 18,
    module = 19,
    package = 20,
};

// The JVMS name of a tag ("Utf8", "Methodref", ...), for messages.
std::string_view constant_tag_name(constant_tag tag) noexcept;

class constant_pool;

// What `index` names in `pool`, for messages: "an Integer", "a Class", "an unusable slot", or "out of range
// (constant pool count 12)".
std::string describe_entry(const constant_pool& pool, std::uint16_t index);

struct constant_unusable {
    static constexpr constant_tag tag = constant_tag::unusable;
    bool operator==(const constant_unusable&) const = default;
};

// Modified UTF-8 (JVMS 4.4.7) exactly as in the file, never converted: it differs from UTF-8 for U+0000 and
// for characters outside the BMP, and keeping the bytes is what makes writing reproduce them.
struct constant_utf8 {
    static constexpr constant_tag tag = constant_tag::utf8;
    std::string bytes;
    bool operator==(const constant_utf8&) const = default;
};

// Numeric constants keep their bit patterns (a float NaN's payload survives a round trip).
struct constant_integer {
    static constexpr constant_tag tag = constant_tag::integer;
    std::uint32_t bits = 0;
    std::int32_t value() const noexcept { return static_cast<std::int32_t>(bits); }
    bool operator==(const constant_integer&) const = default;
};
struct constant_float {
    static constexpr constant_tag tag = constant_tag::float_;
    std::uint32_t bits = 0;
    float value() const noexcept { return std::bit_cast<float>(bits); }
    bool operator==(const constant_float&) const = default;
};
struct constant_long {
    static constexpr constant_tag tag = constant_tag::long_;
    std::uint64_t bits = 0;
    std::int64_t value() const noexcept { return static_cast<std::int64_t>(bits); }
    bool operator==(const constant_long&) const = default;
};
struct constant_double {
    static constexpr constant_tag tag = constant_tag::double_;
    std::uint64_t bits = 0;
    double value() const noexcept { return std::bit_cast<double>(bits); }
    bool operator==(const constant_double&) const = default;
};

struct constant_class {
    static constexpr constant_tag tag = constant_tag::class_;
    std::uint16_t name_index = 0; // Utf8: internal binary name ("java/lang/Object") or array descriptor
    bool operator==(const constant_class&) const = default;
};
struct constant_string {
    static constexpr constant_tag tag = constant_tag::string;
    std::uint16_t string_index = 0; // Utf8
    bool operator==(const constant_string&) const = default;
};

// Fieldref, Methodref and InterfaceMethodref share their layout; the tag tells them apart.
template <constant_tag Tag>
struct constant_member_ref {
    static constexpr constant_tag tag = Tag;
    std::uint16_t class_index = 0;         // Class
    std::uint16_t name_and_type_index = 0; // NameAndType
    bool operator==(const constant_member_ref&) const = default;
};
using constant_fieldref = constant_member_ref<constant_tag::fieldref>;
using constant_methodref = constant_member_ref<constant_tag::methodref>;
using constant_interface_methodref = constant_member_ref<constant_tag::interface_methodref>;

struct constant_name_and_type {
    static constexpr constant_tag tag = constant_tag::name_and_type;
    std::uint16_t name_index = 0;       // Utf8
    std::uint16_t descriptor_index = 0; // Utf8
    bool operator==(const constant_name_and_type&) const = default;
};
struct constant_method_handle {
    static constexpr constant_tag tag = constant_tag::method_handle;
    std::uint8_t reference_kind = 0;  // 1..9 (JVMS 5.4.3.5): 1-4 name a Fieldref, 5-9 a (Interface)Methodref
    std::uint16_t reference_index = 0;
    bool operator==(const constant_method_handle&) const = default;
};
struct constant_method_type {
    static constexpr constant_tag tag = constant_tag::method_type;
    std::uint16_t descriptor_index = 0; // Utf8
    bool operator==(const constant_method_type&) const = default;
};

// Dynamic and InvokeDynamic share their layout. The bootstrap index points into the BootstrapMethods attribute,
// which this library keeps raw, so it is not checked.
template <constant_tag Tag>
struct constant_dynamic_ref {
    static constexpr constant_tag tag = Tag;
    std::uint16_t bootstrap_method_attr_index = 0;
    std::uint16_t name_and_type_index = 0; // NameAndType
    bool operator==(const constant_dynamic_ref&) const = default;
};
using constant_dynamic = constant_dynamic_ref<constant_tag::dynamic>;
using constant_invoke_dynamic = constant_dynamic_ref<constant_tag::invoke_dynamic>;

// Module and Package (module-info classes only) share their layout.
template <constant_tag Tag>
struct constant_named {
    static constexpr constant_tag tag = Tag;
    std::uint16_t name_index = 0; // Utf8
    bool operator==(const constant_named&) const = default;
};
using constant_module = constant_named<constant_tag::module>;
using constant_package = constant_named<constant_tag::package>;

using constant = std::variant<constant_unusable, constant_utf8, constant_integer, constant_float, constant_long,
    constant_double, constant_class, constant_string, constant_fieldref, constant_methodref,
    constant_interface_methodref, constant_name_and_type, constant_method_handle, constant_method_type,
    constant_dynamic, constant_invoke_dynamic, constant_module, constant_package>;

inline constant_tag tag_of(const constant& entry) noexcept {
    return std::visit([](const auto& alternative) { return alternative.tag; }, entry);
}

// Long and Double take two indices (JVMS 4.4.5); the second is unusable.
inline bool takes_two_slots(constant_tag tag) noexcept {
    return tag == constant_tag::long_ || tag == constant_tag::double_;
}

// Views into the pool's Utf8 entries; valid until the pool is next modified.
struct name_and_type_view {
    std::string_view name;
    std::string_view descriptor;
};
struct member_ref_view {
    constant_tag kind = constant_tag::methodref; // fieldref, methodref or interface_methodref
    std::string_view class_name;
    std::string_view name;
    std::string_view descriptor;
};

class constant_pool {
public:
    // The largest constant_pool_count a class file can state; indices run from 1 to count() - 1.
    static constexpr std::size_t max_count = 65535;

    constant_pool() : entries_(1, constant_unusable{}) {}

    // constant_pool_count as the file states it: one more than the highest index.
    std::uint16_t count() const noexcept { return static_cast<std::uint16_t>(entries_.size()); }

    // Every slot, index 0 and the second slots of Long/Double included (as constant_unusable).
    const std::vector<constant>& entries() const noexcept { return entries_; }

    // The entry at `index`, or nullptr when the index is out of range or names an unusable slot.
    const constant* find(std::uint16_t index) const noexcept;

    // The entry at `index` as alternative T, or nullptr when it is absent or of another tag.
    template <class T>
    const T* get(std::uint16_t index) const noexcept {
        const constant* entry = find(index);
        return entry ? std::get_if<T>(entry) : nullptr;
    }

    // Typed lookups; each fails naming the index and the tag found when the entry is absent or of another tag.
    result<std::string_view> utf8(std::uint16_t index) const;
    result<std::string_view> class_name(std::uint16_t index) const;       // Class -> its Utf8 name
    result<name_and_type_view> name_and_type(std::uint16_t index) const; // NameAndType -> name, descriptor
    result<member_ref_view> member_ref(std::uint16_t index) const;       // Field/Method/InterfaceMethodref

    // Appends `entry` (a Long or Double takes two slots) and returns its index. Fails for constant_unusable and
    // when the pool would exceed max_count slots. References inside `entry` are not checked here.
    result<std::uint16_t> add(constant entry);

    // The index of an existing equal entry, or of `entry` appended (add's failures apply).
    result<std::uint16_t> intern(const constant& entry);

    // Interning of the entries a call to a new method needs, creating their Utf8, Class and NameAndType entries
    // as required. `class_name` is an internal name ("ojx/Counters"); names and descriptors are given as they are
    // stored (modified UTF-8, identical to UTF-8 for text without U+0000 or characters beyond the BMP).
    result<std::uint16_t> intern_utf8(std::string_view bytes);
    result<std::uint16_t> intern_class(std::string_view class_name);
    result<std::uint16_t> intern_string(std::string_view bytes);
    result<std::uint16_t> intern_name_and_type(std::string_view name, std::string_view descriptor);
    // `kind` is fieldref, methodref or interface_methodref.
    result<std::uint16_t> intern_member_ref(constant_tag kind, std::string_view class_name, std::string_view name,
        std::string_view descriptor);

private:
    // Invariant: entries_[0] is unusable, and a slot is unusable exactly when it is 0 or follows a Long/Double.
    std::vector<constant> entries_;

    friend class constant_pool_builder;
};

// Fills a pool slot by slot while reading a class file, where the invariant holds only once the whole pool is
// read (references may point forward); the reader checks every reference before it hands the pool out.
class constant_pool_builder {
public:
    explicit constant_pool_builder(std::size_t count) { pool_.entries_.reserve(count); }
    // Appends `entry` and, for a Long or Double, its unusable second slot.
    void push(constant entry);
    std::size_t size() const noexcept { return pool_.entries_.size(); }
    const constant_pool& pool() const noexcept { return pool_; }
    constant_pool take() noexcept { return std::move(pool_); }

private:
    constant_pool pool_;
};

} // namespace ojx::bytecode
