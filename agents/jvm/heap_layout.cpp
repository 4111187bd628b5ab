#include "heap_layout.hpp"

#include <algorithm>
#include <cstring>

namespace ojx::jvm {

namespace {

constexpr std::string_view primitive_letters = "ZBCSIJFD";
constexpr jsize calibration_length = 1237; // odd and distinctive, to find the length field

int element_slot(char letter) noexcept {
    const auto at = primitive_letters.find(letter);
    return at == std::string_view::npos ? -1 : static_cast<int>(at);
}

jarray new_array(JNIEnv* jni, char letter, jsize length) {
    switch (letter) {
    case 'Z': return jni->NewBooleanArray(length);
    case 'B': return jni->NewByteArray(length);
    case 'C': return jni->NewCharArray(length);
    case 'S': return jni->NewShortArray(length);
    case 'I': return jni->NewIntArray(length);
    case 'J': return jni->NewLongArray(length);
    case 'F': return jni->NewFloatArray(length);
    default: return jni->NewDoubleArray(length);
    }
}

} // namespace

std::uint32_t heap_layout::data_offset(std::string_view class_signature) const noexcept {
    if (class_signature.size() >= 2 && class_signature[0] == '[') {
        const int slot = element_slot(class_signature[1]);
        return slot < 0 ? reference_array_base : primitive_array_base[static_cast<std::size_t>(slot)];
    }
    return instance_header;
}

std::uint8_t heap_layout::primitive_element_size(std::string_view class_signature) noexcept {
    if (class_signature.size() != 2 || class_signature[0] != '[') return 0;
    constexpr std::uint8_t sizes[] = {1, 1, 2, 2, 4, 8, 4, 8}; // in the order of primitive_letters
    const int slot = element_slot(class_signature[1]);
    return slot < 0 ? 0 : sizes[slot];
}

std::string heap_layout::describe() const {
    return "array length at +" + std::to_string(array_length_offset) + ", byte[] data at +" +
           std::to_string(primitive_array_base[1]) + ", long[] data at +" + std::to_string(primitive_array_base[5]) +
           ", fields from +" + std::to_string(instance_header);
}

std::optional<std::string> calibrate_heap_layout(JNIEnv* jni, heap_layout& layout) {
    if (jni->PushLocalFrame(16) != JNI_OK) return std::string("no room for JNI local references");
    std::optional<std::string> error;
    std::uint32_t length_offset = 0;
    for (const char letter : primitive_letters) {
        const jarray array = new_array(jni, letter, calibration_length);
        if (array == nullptr) {
            jni->ExceptionClear();
            error = std::string("cannot allocate a calibration array");
            break;
        }
        void* elements = jni->GetPrimitiveArrayCritical(array, nullptr);
        if (elements == nullptr) {
            error = std::string("GetPrimitiveArrayCritical failed");
            break;
        }
        // Inside the critical region the array cannot move: its address and its elements' agree.
        const std::uintptr_t base = object_address(array);
        const auto elements_at = reinterpret_cast<std::uintptr_t>(elements);
        std::uint32_t found_length_at = 0;
        if (elements_at > base && elements_at - base <= 64) {
            for (std::uintptr_t at = base + 4; at + 4 <= elements_at; at += 4) {
                std::int32_t value = 0;
                std::memcpy(&value, reinterpret_cast<const void*>(at), sizeof value);
                if (value == calibration_length) found_length_at = static_cast<std::uint32_t>(at - base);
            }
        }
        jni->ReleasePrimitiveArrayCritical(array, elements, JNI_ABORT);
        if (elements_at <= base || elements_at - base > 64 || found_length_at == 0) {
            error = std::string("unexpected array layout (") + letter + "[] elements at +" +
                    std::to_string(static_cast<std::intptr_t>(elements_at - base)) + "): not a HotSpot JVM?";
            break;
        }
        if (length_offset != 0 && length_offset != found_length_at) {
            error = std::string("array length offsets differ between element types");
            break;
        }
        length_offset = found_length_at;
        layout.primitive_array_base[static_cast<std::size_t>(element_slot(letter))] =
            static_cast<std::uint32_t>(elements_at - base);
    }
    jni->PopLocalFrame(nullptr);
    if (error) return error;
    layout.array_length_offset = length_offset;
    layout.instance_header = length_offset; // header = mark word + class word; arrays add the length after it
    layout.reference_array_base = 0;
    for (const std::uint32_t base : layout.primitive_array_base)
        layout.reference_array_base = std::max(layout.reference_array_base, base);
    return std::nullopt;
}

} // namespace ojx::jvm
