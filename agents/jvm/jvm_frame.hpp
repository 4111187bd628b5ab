// A Java frame as the core's calling context tree stores it: one 64-bit word holding the jmethodID and the
// bytecode index, so that a signal handler can record a frame without allocating or interning anything. Names
// and line numbers are looked up only when the profile is written (method_names.hpp).
//
// Layout: bits 0..46 the jmethodID (a C-heap pointer in HotSpot; x86-64 Linux user addresses are below 2^47
// unless a program asks mmap for more), bits 47..63 the bytecode index plus a bias, so that the negative codes
// AsyncGetCallTrace puts in a frame's bci (-3: a native method) fit. A frame with no method stands for a stack
// that could not be walked; its bci field holds the reason (see walk_failure).
#pragma once

#include <cstdint>
#include <string_view>

namespace ojx::jvm {

inline constexpr unsigned method_bits = 47;
inline constexpr std::uint64_t method_mask = (std::uint64_t{1} << method_bits) - 1;
inline constexpr std::int32_t bci_bias = 128;
inline constexpr std::int32_t max_bci = (1 << (64 - method_bits)) - 1 - bci_bias;
inline constexpr std::int32_t native_method_bci = -3; // what AsyncGetCallTrace reports for a native frame

struct java_frame {
    std::uint64_t method = 0; // a jmethodID, or 0 for a walk failure
    std::int32_t bci = 0;     // bytecode index; negative: native method or unknown; for failures, the reason

    friend bool operator==(const java_frame&, const java_frame&) = default;
};

// Signal-safe. A method id that does not fit, or a bci outside the representable range, is stored as "unknown
// bci" (-1) or as a walk failure, never as a different frame.
constexpr std::uint64_t encode_frame(java_frame frame) noexcept {
    if ((frame.method & ~method_mask) != 0) return encode_frame(java_frame{0, -100});
    const std::int32_t bci = frame.bci < -bci_bias || frame.bci > max_bci ? -1 : frame.bci;
    return frame.method | (static_cast<std::uint64_t>(bci + bci_bias) << method_bits);
}

constexpr java_frame decode_frame(std::uint64_t word) noexcept {
    return {word & method_mask, static_cast<std::int32_t>(word >> method_bits) - bci_bias};
}

// Why a stack could not be walked: AsyncGetCallTrace's (negative) codes, and the agent's own.
enum walk_failure : std::int32_t {
    no_java_frame = 0,
    no_class_load = -1,
    gc_active = -2,
    unknown_not_java = -3,
    not_walkable_not_java = -4,
    unknown_java = -5,
    not_walkable_java = -6,
    unknown_state = -7,
    thread_exit = -8,
    deoptimization = -9,
    safepoint = -10,
    not_a_java_thread = -98,    // the agent holds no JNIEnv for the sampled thread
    walker_unavailable = -99,   // AsyncGetCallTrace is not exported by this JVM
    method_id_too_large = -100, // see the layout above
};

constexpr std::uint64_t failure_frame(std::int32_t reason) noexcept { return encode_frame(java_frame{0, reason}); }

constexpr std::string_view failure_name(std::int32_t reason) noexcept {
    switch (reason) {
    case no_java_frame: return "[no Java frame]";
    case no_class_load: return "[no class load]";
    case gc_active: return "[GC active]";
    case unknown_not_java: return "[not Java]";
    case not_walkable_not_java: return "[not walkable, not Java]";
    case unknown_java: return "[unknown Java]";
    case not_walkable_java: return "[not walkable Java]";
    case unknown_state: return "[unknown thread state]";
    case thread_exit: return "[thread exit]";
    case deoptimization: return "[deoptimization]";
    case safepoint: return "[safepoint]";
    case not_a_java_thread: return "[not a Java thread]";
    case walker_unavailable: return "[AsyncGetCallTrace unavailable]";
    case method_id_too_large: return "[method id out of range]";
    default: return "[stack walk failed]";
    }
}

} // namespace ojx::jvm
