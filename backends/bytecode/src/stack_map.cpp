// StackMapTable decoding and encoding (stack_map.hpp).
#include "ojx/bytecode/stack_map.hpp"
#include "ojx/bytecode/byte_reader.hpp"
#include "ojx/bytecode/byte_writer.hpp"

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

namespace ojx::bytecode {

namespace {

// Frame types (JVMS 4.7.4): the ranges of the first byte.
constexpr std::uint8_t same_last = 63;
constexpr std::uint8_t same_locals_1_last = 127;
constexpr std::uint8_t same_locals_1_extended = 247;
constexpr std::uint8_t chop_first = 248;
constexpr std::uint8_t same_extended = 251;
constexpr std::uint8_t append_first = 252;
constexpr std::uint8_t full = 255;

// One field of a descriptor starting at `at`, advancing it; nullopt when malformed.
std::optional<verification_type> field_type(std::string_view descriptor, std::size_t& at) {
    if (at >= descriptor.size()) {
        return std::nullopt;
    }
    const std::size_t start = at;
    switch (descriptor[at]) {
    case 'B':
    case 'C':
    case 'I':
    case 'S':
    case 'Z':
        ++at;
        return verification_type::of(verification_tag::integer);
    case 'F':
        ++at;
        return verification_type::of(verification_tag::float_);
    case 'J':
        ++at;
        return verification_type::of(verification_tag::long_);
    case 'D':
        ++at;
        return verification_type::of(verification_tag::double_);
    case 'L': {
        const std::size_t end = descriptor.find(';', at);
        if (end == std::string_view::npos || end == at + 1) {
            return std::nullopt;
        }
        at = end + 1;
        return verification_type::object_of(descriptor.substr(start + 1, end - start - 1));
    }
    case '[': {
        while (at < descriptor.size() && descriptor[at] == '[') {
            ++at;
        }
        if (!field_type(descriptor, at)) {
            return std::nullopt;
        }
        return verification_type::object_of(descriptor.substr(start, at - start));
    }
    default:
        return std::nullopt;
    }
}

class map_decoder {
public:
    map_decoder(std::span<const std::uint8_t> payload, const constant_pool& pool) : in_(payload), pool_(pool) {}

    result<std::vector<stack_frame>> decode(const stack_frame& initial, std::uint32_t code_length) {
        std::uint16_t count = 0;
        if (!in_.read_u2(count)) {
            return fail("StackMapTable: truncated number_of_entries");
        }
        std::vector<stack_frame> frames;
        frames.reserve(count);
        stack_frame current = initial;
        for (std::uint16_t i = 0; i < count; ++i) {
            const std::size_t at = in_.offset();
            std::uint8_t type = 0;
            if (!in_.read_u1(type)) {
                return fail("StackMapTable: truncated frame " + std::to_string(i));
            }
            std::uint16_t delta = 0;
            current.stack.clear();
            if (type <= same_last) {
                delta = type;
            } else if (type <= same_locals_1_last) {
                delta = static_cast<std::uint16_t>(type - 64);
                if (auto failed = read_types(1, current.stack)) {
                    return *failed;
                }
            } else if (type < same_locals_1_extended) {
                return fail("StackMapTable: frame type " + std::to_string(type) + " is reserved", at);
            } else {
                if (!in_.read_u2(delta)) {
                    return fail("StackMapTable: truncated offset_delta", at);
                }
                if (type == same_locals_1_extended) {
                    if (auto failed = read_types(1, current.stack)) {
                        return *failed;
                    }
                } else if (type < same_extended) {
                    const std::size_t chop = std::size_t{251} - type;
                    if (chop > current.locals.size()) {
                        return fail("StackMapTable: chop of " + std::to_string(chop) + " locals, only " +
                                        std::to_string(current.locals.size()) + " defined",
                            at);
                    }
                    current.locals.resize(current.locals.size() - chop);
                } else if (type == same_extended) {
                    // nothing more
                } else if (type < full) {
                    if (auto failed = read_types(std::size_t{type} - 251, current.locals)) {
                        return *failed;
                    }
                } else {
                    current.locals.clear();
                    std::uint16_t locals = 0;
                    if (!in_.read_u2(locals)) {
                        return fail("StackMapTable: truncated full frame", at);
                    }
                    if (auto failed = read_types(locals, current.locals)) {
                        return *failed;
                    }
                    std::uint16_t stack = 0;
                    if (!in_.read_u2(stack)) {
                        return fail("StackMapTable: truncated full frame", at);
                    }
                    if (auto failed = read_types(stack, current.stack)) {
                        return *failed;
                    }
                }
            }
            current.offset = frames.empty() ? delta : frames.back().offset + delta + 1;
            if (code_length != 0 && current.offset >= code_length) {
                return fail("StackMapTable: frame " + std::to_string(i) + " at code offset " +
                                std::to_string(current.offset) + " is past the code's end",
                    at);
            }
            frames.push_back(current);
        }
        if (!in_.at_end()) {
            return fail("StackMapTable: " + std::to_string(in_.remaining()) + " bytes after the last frame");
        }
        return frames;
    }

private:
    error fail(std::string message, std::optional<std::size_t> at = std::nullopt) {
        return make_error(std::move(message), at ? at : std::optional<std::size_t>(in_.offset()));
    }

    // Appends `count` verification types to `out`; the failure, if any.
    std::optional<error> read_types(std::size_t count, std::vector<verification_type>& out) {
        for (std::size_t i = 0; i < count; ++i) {
            const std::size_t at = in_.offset();
            std::uint8_t tag = 0;
            if (!in_.read_u1(tag)) {
                return fail("StackMapTable: truncated verification type");
            }
            if (tag > static_cast<std::uint8_t>(verification_tag::uninitialized)) {
                return fail("StackMapTable: unknown verification type tag " + std::to_string(tag), at);
            }
            verification_type type = verification_type::of(static_cast<verification_tag>(tag));
            if (type.tag == verification_tag::object || type.tag == verification_tag::uninitialized) {
                std::uint16_t operand = 0;
                if (!in_.read_u2(operand)) {
                    return fail("StackMapTable: truncated verification type", at);
                }
                if (type.tag == verification_tag::uninitialized) {
                    type.offset = operand;
                } else {
                    auto name = pool_.class_name(operand);
                    if (!name) {
                        return fail("StackMapTable: Object type: " + name.error().message, at);
                    }
                    type.class_name = std::string(*name);
                    type.class_index = operand;
                }
            }
            out.push_back(std::move(type));
        }
        return std::nullopt;
    }

    byte_reader in_;
    const constant_pool& pool_;
};

class map_encoder {
public:
    explicit map_encoder(constant_pool& pool) : pool_(pool) {}

    result<std::vector<std::uint8_t>> encode(std::span<const stack_frame> frames, const stack_frame& initial) {
        if (frames.size() > 0xffff) {
            return make_error("StackMapTable: " + std::to_string(frames.size()) + " frames, at most 65535");
        }
        out_.u2(static_cast<std::uint16_t>(frames.size()));
        const stack_frame* previous = &initial;
        for (std::size_t i = 0; i < frames.size(); ++i) {
            const stack_frame& frame = frames[i];
            std::uint32_t delta = frame.offset;
            if (i > 0) {
                if (frame.offset <= previous->offset) {
                    return make_error("StackMapTable: frame " + std::to_string(i) + " at offset " +
                                      std::to_string(frame.offset) + " does not follow the one at " +
                                      std::to_string(previous->offset));
                }
                delta = frame.offset - previous->offset - 1;
            }
            if (delta > 0xffff || frame.locals.size() > 0xffff || frame.stack.size() > 0xffff) {
                return make_error("StackMapTable: frame " + std::to_string(i) + " does not fit the format");
            }
            if (auto failed = encode_one(*previous, frame, static_cast<std::uint16_t>(delta))) {
                return *failed;
            }
            previous = &frame;
        }
        return out_.take();
    }

private:
    std::optional<error> encode_one(const stack_frame& previous, const stack_frame& frame, std::uint16_t delta) {
        const auto& before = previous.locals;
        const auto& now = frame.locals;
        const bool same_locals = before == now;
        if (same_locals && frame.stack.empty()) {
            if (delta <= same_last) {
                out_.u1(static_cast<std::uint8_t>(delta));
            } else {
                out_.u1(same_extended);
                out_.u2(delta);
            }
            return std::nullopt;
        }
        if (same_locals && frame.stack.size() == 1) {
            if (delta <= same_locals_1_last - 64) {
                out_.u1(static_cast<std::uint8_t>(64 + delta));
            } else {
                out_.u1(same_locals_1_extended);
                out_.u2(delta);
            }
            return write_type(frame.stack[0]);
        }
        if (frame.stack.empty() && now.size() < before.size() && before.size() - now.size() <= 3 &&
            std::equal(now.begin(), now.end(), before.begin())) {
            out_.u1(static_cast<std::uint8_t>(251 - (before.size() - now.size())));
            out_.u2(delta);
            return std::nullopt;
        }
        if (frame.stack.empty() && now.size() > before.size() && now.size() - before.size() <= 3 &&
            std::equal(before.begin(), before.end(), now.begin())) {
            out_.u1(static_cast<std::uint8_t>(251 + (now.size() - before.size())));
            out_.u2(delta);
            for (std::size_t i = before.size(); i < now.size(); ++i) {
                if (auto failed = write_type(now[i])) {
                    return failed;
                }
            }
            return std::nullopt;
        }
        out_.u1(full);
        out_.u2(delta);
        out_.u2(static_cast<std::uint16_t>(now.size()));
        for (const auto& type : now) {
            if (auto failed = write_type(type)) {
                return failed;
            }
        }
        out_.u2(static_cast<std::uint16_t>(frame.stack.size()));
        for (const auto& type : frame.stack) {
            if (auto failed = write_type(type)) {
                return failed;
            }
        }
        return std::nullopt;
    }

    std::optional<error> write_type(const verification_type& type) {
        out_.u1(static_cast<std::uint8_t>(type.tag));
        if (type.tag == verification_tag::uninitialized) {
            if (type.offset > 0xffff) {
                return make_error("StackMapTable: Uninitialized offset " + std::to_string(type.offset) +
                                  " does not fit");
            }
            out_.u2(static_cast<std::uint16_t>(type.offset));
        } else if (type.tag == verification_tag::object) {
            auto index = class_index(type);
            if (!index) {
                return index.error();
            }
            out_.u2(*index);
        }
        return std::nullopt;
    }

    result<std::uint16_t> class_index(const verification_type& type) {
        if (type.class_index != 0) {
            const auto name = pool_.class_name(type.class_index);
            if (name && *name == type.class_name) {
                return type.class_index;
            }
        }
        if (!indexed_) {
            // The first Class constant of each name, as javac would have referred to it.
            const auto& entries = pool_.entries();
            for (std::size_t i = 1; i < entries.size(); ++i) {
                if (std::holds_alternative<constant_class>(entries[i])) {
                    const auto index = static_cast<std::uint16_t>(i);
                    if (auto name = pool_.class_name(index)) {
                        by_name_.emplace(std::string(*name), index);
                    }
                }
            }
            indexed_ = true;
        }
        if (const auto found = by_name_.find(type.class_name); found != by_name_.end()) {
            return found->second;
        }
        auto added = pool_.intern_class(type.class_name);
        if (!added) {
            return make_error("StackMapTable: cannot add a Class constant for " + type.class_name + ": " +
                              added.error().message);
        }
        by_name_.emplace(type.class_name, *added);
        return *added;
    }

    constant_pool& pool_;
    byte_writer out_;
    bool indexed_ = false;
    std::unordered_map<std::string, std::uint16_t> by_name_;
};

} // namespace

result<stack_frame> initial_frame(std::string_view class_name, std::string_view method_name,
    std::string_view descriptor, std::uint16_t access_flags) {
    stack_frame frame;
    if ((access_flags & 0x0008) == 0) {
        if (method_name == "<init>" && class_name != "java/lang/Object") {
            frame.locals.push_back(verification_type::of(verification_tag::uninitialized_this));
        } else {
            frame.locals.push_back(verification_type::object_of(class_name));
        }
    }
    if (descriptor.empty() || descriptor[0] != '(') {
        return make_error("method descriptor " + std::string(descriptor) + " does not start with (");
    }
    std::size_t at = 1;
    while (at < descriptor.size() && descriptor[at] != ')') {
        auto type = field_type(descriptor, at);
        if (!type) {
            return make_error("malformed method descriptor " + std::string(descriptor));
        }
        frame.locals.push_back(std::move(*type));
    }
    if (at >= descriptor.size()) {
        return make_error("method descriptor " + std::string(descriptor) + " has no )");
    }
    return frame;
}

result<std::vector<stack_frame>> decode_stack_map(std::span<const std::uint8_t> payload, const stack_frame& initial,
    const constant_pool& pool, std::uint32_t code_length) {
    return map_decoder(payload, pool).decode(initial, code_length);
}

result<std::vector<std::uint8_t>> encode_stack_map(std::span<const stack_frame> frames, const stack_frame& initial,
    constant_pool& pool) {
    return map_encoder(pool).encode(frames, initial);
}

} // namespace ojx::bytecode
