// The serviceability tables: arrays of entries whose layout (stride and field offsets) libjvm.so exports too,
// so nothing here depends on a JDK version's struct layout. A flag is a JVMFlag record (JDK 11+; "Flag" before)
// with a name and the address of its value; JVMFlag::flags is the array of all of them.
#include "hotspot_flags.hpp"

#include <dlfcn.h>

#include <array>
#include <cstdint>
#include <cstring>

namespace ojx::jvm {

namespace {

template <class T>
T read_at(const char* base, std::uint64_t offset) noexcept {
    T value;
    std::memcpy(&value, base + offset, sizeof value);
    return value;
}

// An exported symbol's value: the tables and their layout are globals of libjvm.so.
template <class T>
std::optional<T> exported(const char* symbol) noexcept {
    const void* address = dlsym(RTLD_DEFAULT, symbol);
    if (address == nullptr) return std::nullopt;
    return read_at<T>(static_cast<const char*>(address), 0);
}

struct flag_table {
    const char* records = nullptr;
    std::uint64_t count = 0;
    std::uint64_t record_size = 0;
    std::uint64_t name_offset = 0;
    std::uint64_t value_address_offset = 0;
};

bool named(const char* text, std::string_view name) noexcept { return text != nullptr && name == text; }

// The flag type's size, from the type table.
std::optional<std::uint64_t> type_size(std::string_view type) noexcept {
    const auto entries = exported<const char*>("gHotSpotVMTypes");
    const auto stride = exported<std::uint64_t>("gHotSpotVMTypeEntryArrayStride");
    const auto name_at = exported<std::uint64_t>("gHotSpotVMTypeEntryTypeNameOffset");
    const auto size_at = exported<std::uint64_t>("gHotSpotVMTypeEntrySizeOffset");
    if (!entries || !*entries || !stride || !name_at || !size_at) return std::nullopt;
    for (const char* entry = *entries;; entry += *stride) {
        const auto name = read_at<const char*>(entry, *name_at);
        if (name == nullptr) return std::nullopt; // the table ends with an empty entry
        if (type == name) return read_at<std::uint64_t>(entry, *size_at);
    }
}

std::optional<flag_table> find_flag_table() noexcept {
    const auto entries = exported<const char*>("gHotSpotVMStructs");
    const auto stride = exported<std::uint64_t>("gHotSpotVMStructEntryArrayStride");
    const auto type_at = exported<std::uint64_t>("gHotSpotVMStructEntryTypeNameOffset");
    const auto field_at = exported<std::uint64_t>("gHotSpotVMStructEntryFieldNameOffset");
    const auto offset_at = exported<std::uint64_t>("gHotSpotVMStructEntryOffsetOffset");
    const auto address_at = exported<std::uint64_t>("gHotSpotVMStructEntryAddressOffset");
    if (!entries || !*entries || !stride || !type_at || !field_at || !offset_at || !address_at) return std::nullopt;

    for (const std::string_view type : std::array<std::string_view, 2>{"JVMFlag", "Flag"}) {
        flag_table table;
        const void* records_address = nullptr;
        const void* count_address = nullptr;
        bool has_name = false, has_value_address = false;
        for (const char* entry = *entries;; entry += *stride) {
            const auto type_name = read_at<const char*>(entry, *type_at);
            const auto field_name = read_at<const char*>(entry, *field_at);
            if (type_name == nullptr) break; // the table ends with an empty entry
            if (!named(type_name, type)) continue;
            if (named(field_name, "flags")) {
                records_address = read_at<const void*>(entry, *address_at);
            } else if (named(field_name, "numFlags")) {
                count_address = read_at<const void*>(entry, *address_at);
            } else if (named(field_name, "_name")) {
                table.name_offset = read_at<std::uint64_t>(entry, *offset_at);
                has_name = true;
            } else if (named(field_name, "_addr")) {
                table.value_address_offset = read_at<std::uint64_t>(entry, *offset_at);
                has_value_address = true;
            }
        }
        const auto size = type_size(type);
        if (records_address == nullptr || count_address == nullptr || !has_name || !has_value_address || !size)
            continue;
        table.records = read_at<const char*>(static_cast<const char*>(records_address), 0);
        table.count = read_at<std::uint64_t>(static_cast<const char*>(count_address), 0);
        table.record_size = *size;
        if (table.records != nullptr && table.record_size > 0) return table;
    }
    return std::nullopt;
}

const std::optional<flag_table>& the_flag_table() {
    static const std::optional<flag_table> table = find_flag_table();
    return table;
}

// The flag's value, read as a T where the record says it lives.
template <class T>
std::optional<T> flag_value(std::string_view name) {
    const std::optional<flag_table>& table = the_flag_table();
    if (!table) return std::nullopt;
    for (std::uint64_t i = 0; i < table->count; ++i) {
        const char* record = table->records + i * table->record_size;
        if (!named(read_at<const char*>(record, table->name_offset), name)) continue;
        const auto value = read_at<const char*>(record, table->value_address_offset);
        if (value == nullptr) return std::nullopt;
        return read_at<T>(value, 0);
    }
    return std::nullopt;
}

} // namespace

std::optional<bool> hotspot_bool_flag(std::string_view name) { return flag_value<bool>(name); }

std::optional<std::uint64_t> hotspot_size_flag(std::string_view name) { return flag_value<std::uint64_t>(name); }

std::optional<std::string> hotspot_collector() {
    static constexpr std::array<std::pair<std::string_view, std::string_view>, 6> collectors{{
        {"UseSerialGC", "Serial"},
        {"UseParallelGC", "Parallel"},
        {"UseG1GC", "G1"},
        {"UseZGC", "ZGC"},
        {"UseShenandoahGC", "Shenandoah"},
        {"UseEpsilonGC", "Epsilon"},
    }};
    for (const auto& [flag, collector] : collectors)
        if (hotspot_bool_flag(flag) == true) return std::string(collector);
    return std::nullopt;
}

} // namespace ojx::jvm
