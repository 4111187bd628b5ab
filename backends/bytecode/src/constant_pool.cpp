// Constant-pool lookups and appending (constant_pool.hpp).
#include "ojx/bytecode/constant_pool.hpp"

#include <string>

namespace ojx::bytecode {

std::string_view constant_tag_name(constant_tag tag) noexcept {
    switch (tag) {
    case constant_tag::unusable: return "unusable slot";
    case constant_tag::utf8: return "Utf8";
    case constant_tag::integer: return "Integer";
    case constant_tag::float_: return "Float";
    case constant_tag::long_: return "Long";
    case constant_tag::double_: return "Double";
    case constant_tag::class_: return "Class";
    case constant_tag::string: return "String";
    case constant_tag::fieldref: return "Fieldref";
    case constant_tag::methodref: return "Methodref";
    case constant_tag::interface_methodref: return "InterfaceMethodref";
    case constant_tag::name_and_type: return "NameAndType";
    case constant_tag::method_handle: return "MethodHandle";
    case constant_tag::method_type: return "MethodType";
    case constant_tag::dynamic: return "Dynamic";
    case constant_tag::invoke_dynamic: return "InvokeDynamic";
    case constant_tag::module: return "Module";
    case constant_tag::package: return "Package";
    }
    return "unknown tag";
}

std::string describe_entry(const constant_pool& pool, std::uint16_t index) {
    if (index == 0 || index >= pool.count()) {
        return "out of range (constant pool count " + std::to_string(pool.count()) + ")";
    }
    const std::string_view name = constant_tag_name(tag_of(pool.entries()[index]));
    // "an Integer", "an unusable slot", but "a Utf8" (read "you-tee-eff").
    const bool vowel = std::string_view("AEIOaeiou").find(name.front()) != std::string_view::npos;
    return (vowel ? "an " : "a ") + std::string(name);
}

namespace {

// "constant pool index 7 is a Methodref, expected Utf8".
error wrong_entry(const constant_pool& pool, std::uint16_t index, std::string_view expected) {
    return make_error("constant pool index " + std::to_string(index) + " is " + describe_entry(pool, index) +
                      ", expected " + std::string(expected));
}

} // namespace

const constant* constant_pool::find(std::uint16_t index) const noexcept {
    if (index == 0 || index >= entries_.size() || std::holds_alternative<constant_unusable>(entries_[index])) {
        return nullptr;
    }
    return &entries_[index];
}

result<std::string_view> constant_pool::utf8(std::uint16_t index) const {
    const auto* entry = get<constant_utf8>(index);
    if (!entry) {
        return wrong_entry(*this, index, "Utf8");
    }
    return std::string_view(entry->bytes);
}

result<std::string_view> constant_pool::class_name(std::uint16_t index) const {
    const auto* entry = get<constant_class>(index);
    if (!entry) {
        return wrong_entry(*this, index, "Class");
    }
    return utf8(entry->name_index);
}

result<name_and_type_view> constant_pool::name_and_type(std::uint16_t index) const {
    const auto* entry = get<constant_name_and_type>(index);
    if (!entry) {
        return wrong_entry(*this, index, "NameAndType");
    }
    auto name = utf8(entry->name_index);
    if (!name) {
        return name.error();
    }
    auto descriptor = utf8(entry->descriptor_index);
    if (!descriptor) {
        return descriptor.error();
    }
    return name_and_type_view{*name, *descriptor};
}

result<member_ref_view> constant_pool::member_ref(std::uint16_t index) const {
    const constant* entry = find(index);
    std::uint16_t class_index = 0;
    std::uint16_t name_and_type_index = 0;
    constant_tag kind = entry ? tag_of(*entry) : constant_tag::unusable;
    if (const auto* field = get<constant_fieldref>(index)) {
        class_index = field->class_index;
        name_and_type_index = field->name_and_type_index;
    } else if (const auto* method = get<constant_methodref>(index)) {
        class_index = method->class_index;
        name_and_type_index = method->name_and_type_index;
    } else if (const auto* interface_method = get<constant_interface_methodref>(index)) {
        class_index = interface_method->class_index;
        name_and_type_index = interface_method->name_and_type_index;
    } else {
        return wrong_entry(*this, index, "Fieldref, Methodref or InterfaceMethodref");
    }
    auto owner = class_name(class_index);
    if (!owner) {
        return owner.error();
    }
    auto name_and_descriptor = name_and_type(name_and_type_index);
    if (!name_and_descriptor) {
        return name_and_descriptor.error();
    }
    return member_ref_view{kind, *owner, name_and_descriptor->name, name_and_descriptor->descriptor};
}

result<std::uint16_t> constant_pool::add(constant entry) {
    const constant_tag tag = tag_of(entry);
    if (tag == constant_tag::unusable) {
        return make_error("an unusable slot cannot be added to the constant pool");
    }
    const std::size_t slots = takes_two_slots(tag) ? 2 : 1;
    if (entries_.size() + slots > max_count) {
        return make_error("constant pool is full: adding a " + std::string(constant_tag_name(tag)) +
                          " would exceed " + std::to_string(max_count) + " slots");
    }
    const auto index = static_cast<std::uint16_t>(entries_.size());
    entries_.push_back(std::move(entry));
    if (slots == 2) {
        entries_.push_back(constant_unusable{});
    }
    return index;
}

result<std::uint16_t> constant_pool::intern(const constant& entry) {
    for (std::size_t index = 1; index < entries_.size(); ++index) {
        if (entries_[index] == entry && !std::holds_alternative<constant_unusable>(entry)) {
            return static_cast<std::uint16_t>(index);
        }
    }
    return add(entry);
}

result<std::uint16_t> constant_pool::intern_utf8(std::string_view bytes) {
    return intern(constant_utf8{std::string(bytes)});
}

result<std::uint16_t> constant_pool::intern_class(std::string_view class_name) {
    auto name = intern_utf8(class_name);
    if (!name) {
        return name;
    }
    return intern(constant_class{*name});
}

result<std::uint16_t> constant_pool::intern_string(std::string_view bytes) {
    auto text = intern_utf8(bytes);
    if (!text) {
        return text;
    }
    return intern(constant_string{*text});
}

result<std::uint16_t> constant_pool::intern_name_and_type(std::string_view name, std::string_view descriptor) {
    auto name_index = intern_utf8(name);
    if (!name_index) {
        return name_index;
    }
    auto descriptor_index = intern_utf8(descriptor);
    if (!descriptor_index) {
        return descriptor_index;
    }
    return intern(constant_name_and_type{*name_index, *descriptor_index});
}

result<std::uint16_t> constant_pool::intern_member_ref(constant_tag kind, std::string_view class_name,
    std::string_view name, std::string_view descriptor) {
    if (kind != constant_tag::fieldref && kind != constant_tag::methodref &&
        kind != constant_tag::interface_methodref) {
        return make_error("a member reference is a Fieldref, Methodref or InterfaceMethodref, not a " +
                          std::string(constant_tag_name(kind)));
    }
    auto owner = intern_class(class_name);
    if (!owner) {
        return owner;
    }
    auto name_and_type_index = intern_name_and_type(name, descriptor);
    if (!name_and_type_index) {
        return name_and_type_index;
    }
    switch (kind) {
    case constant_tag::fieldref: return intern(constant_fieldref{*owner, *name_and_type_index});
    case constant_tag::methodref: return intern(constant_methodref{*owner, *name_and_type_index});
    default: return intern(constant_interface_methodref{*owner, *name_and_type_index});
    }
}

void constant_pool_builder::push(constant entry) {
    const bool two_slots = takes_two_slots(tag_of(entry));
    pool_.entries_.push_back(std::move(entry));
    if (two_slots) {
        pool_.entries_.push_back(constant_unusable{});
    }
}

} // namespace ojx::bytecode
