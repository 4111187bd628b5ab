// Where a Java object's contents begin, measured in the running JVM rather than assumed: the object header's
// size depends on compressed class pointers, compact headers and the JDK version. Replica comparisons must
// skip the header (its mark word changes with locking, hashing and GC age; its class word is the same for
// every object of a type), so a tracked object is [address + data offset, address + size).
#pragma once

#include <jni.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ojx::jvm {

struct heap_layout {
    // Byte offset of element 0 for arrays of each primitive type, indexed by its signature letter's slot
    // (see element_slot), and for arrays of references (the largest primitive offset: never inside the header).
    std::array<std::uint32_t, 8> primitive_array_base{};
    std::uint32_t reference_array_base = 0;
    std::uint32_t array_length_offset = 0; // where an array keeps its length
    std::uint32_t instance_header = 0;     // fields of an ordinary object start here at the earliest

    // Offset of an object's contents, from its class signature ("[B", "Ljava/lang/String;").
    std::uint32_t data_offset(std::string_view class_signature) const noexcept;
    // Bytes per element of a primitive array ("[I": 4); 0 for anything else.
    static std::uint8_t primitive_element_size(std::string_view class_signature) noexcept;
    std::string describe() const;
};

// Calibrates with the JNI of a live-phase thread: fills arrays of each primitive type and finds, through
// GetPrimitiveArrayCritical, where their elements lie relative to the object's address (the oop a JNI handle
// holds), and the array length before them. An error message if the JVM does not look like HotSpot.
std::optional<std::string> calibrate_heap_layout(JNIEnv* jni, heap_layout& layout);

// The address of the object a JNI reference (local or global) denotes right now. Valid until the next
// safepoint: a collection may move the object.
inline std::uintptr_t object_address(jobject reference) noexcept {
    return reference == nullptr ? 0 : *reinterpret_cast<const std::uintptr_t*>(reference);
}

} // namespace ojx::jvm
