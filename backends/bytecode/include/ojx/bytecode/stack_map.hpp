// A method's StackMapTable (JVMS 4.7.4) as frames: the full locals and operand stack at each offset that has a
// frame, decoded from the compressed deltas and encoded back. Code rewriting moves frames to new offsets and adds
// frames for code it appends, and the verifier of class files of version 50 and later checks code against them.
//
// Locals are kept as the table writes them: one entry per type, a Long or Double entry standing for two local
// slots (its second slot is implicit), so that chop and append frames, which count entries, apply directly.
#pragma once

#include "ojx/bytecode/constant_pool.hpp"
#include "ojx/bytecode/result.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ojx::bytecode {

// JVMS 4.7.4's verification_type_info tags, in their numeric order.
enum class verification_tag : std::uint8_t {
    top = 0,
    integer = 1,
    float_ = 2,
    double_ = 3,
    long_ = 4,
    null = 5,
    uninitialized_this = 6,
    object = 7,
    uninitialized = 8,
};

struct verification_type {
    verification_tag tag = verification_tag::top;
    std::string class_name;   // object: internal name or array descriptor ("java/lang/String", "[I")
    std::uint32_t offset = 0; // uninitialized: offset of the `new` that created the object
    // object: the Class constant it was read from, reused when encoding if it still names class_name. A hint only:
    // types compare by class name, so a pool index never makes two types differ.
    std::uint16_t class_index = 0;

    static verification_type of(verification_tag tag) {
        verification_type type;
        type.tag = tag;
        return type;
    }
    static verification_type object_of(std::string_view name) {
        verification_type type;
        type.tag = verification_tag::object;
        type.class_name = std::string(name);
        return type;
    }
    static verification_type uninitialized_at(std::uint32_t new_offset) {
        verification_type type;
        type.tag = verification_tag::uninitialized;
        type.offset = new_offset;
        return type;
    }

    bool two_slots() const noexcept { return tag == verification_tag::long_ || tag == verification_tag::double_; }

    friend bool operator==(const verification_type& a, const verification_type& b) noexcept {
        if (a.tag != b.tag) {
            return false;
        }
        if (a.tag == verification_tag::object) {
            return a.class_name == b.class_name;
        }
        return a.tag != verification_tag::uninitialized || a.offset == b.offset;
    }
};

struct stack_frame {
    std::uint32_t offset = 0; // absolute offset in the code array (the initial frame's is 0 and is not written)
    std::vector<verification_type> locals; // one entry per type; Long and Double each stand for two slots
    std::vector<verification_type> stack;  // bottom first, one entry per type

    friend bool operator==(const stack_frame&, const stack_frame&) = default;
};

// The implicit frame at offset 0 (JVMS 4.10.1.6): `this` unless the method is static (UninitializedThis in an
// <init> of any class but java/lang/Object), then one entry per parameter of `descriptor`; the stack is empty.
// Fails on a malformed method descriptor.
result<stack_frame> initial_frame(std::string_view class_name, std::string_view method_name,
    std::string_view descriptor, std::uint16_t access_flags);

// Decodes a StackMapTable payload relative to `initial`. Fails, naming the offset in `payload`, on truncation,
// unknown frame or verification tags, a chop of more locals than there are, an Object type whose index is not a
// Class, trailing bytes, and (when code_length is not 0) a frame offset at or past code_length.
result<std::vector<stack_frame>> decode_stack_map(std::span<const std::uint8_t> payload, const stack_frame& initial,
    const constant_pool& pool, std::uint32_t code_length = 0);

// Encodes `frames` (strictly increasing offsets, none before offset 0 after the first) as a StackMapTable payload,
// each in the most compact form relative to the one before (the first relative to `initial`). Object types use
// their class_index hint when it still names their class, else an existing Class constant of that name, else a new
// one appended to `pool`. Fails on offsets out of order, more than 65535 frames, locals or stack entries, or a pool
// that is full.
result<std::vector<std::uint8_t>> encode_stack_map(std::span<const stack_frame> frames, const stack_frame& initial,
    constant_pool& pool);

} // namespace ojx::bytecode
