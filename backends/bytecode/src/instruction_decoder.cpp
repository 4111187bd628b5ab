// Decoding code arrays (instructions.hpp): one bounds-checked pass that reads every instruction, then a check
// that every branch target starts an instruction, which is only known once the whole array is decoded.
#include "ojx/bytecode/instructions.hpp"
#include "ojx/bytecode/byte_reader.hpp"

#include <algorithm>
#include <string>
#include <string_view>

namespace ojx::bytecode {

std::vector<std::uint32_t> instruction::targets() const {
    std::vector<std::uint32_t> all;
    if (!has_targets()) {
        return all;
    }
    all.reserve(1 + cases.size());
    all.push_back(target);
    for (const switch_case& entry : cases) {
        all.push_back(entry.target);
    }
    return all;
}

namespace {

std::string byte_hex(std::uint8_t value) {
    static constexpr char digits[] = "0123456789abcdef";
    return std::string("0x") + digits[value >> 4] + digits[value & 0xf];
}

// The opcode's mnemonic, or its byte in hex when it has none.
std::string opcode_text(std::uint8_t byte) {
    const std::string_view mnemonic = info(byte).name;
    return mnemonic.empty() ? "opcode " + byte_hex(byte) : std::string(mnemonic);
}

class decoder : failure_recorder {
public:
    decoder(std::span<const std::uint8_t> code, const constant_pool* pool) : code_(code), in_(code), pool_(pool) {}

    result<std::vector<instruction>> decode() {
        if (code_.empty() || code_.size() > code_attribute::max_code_length) {
            return make_error("code length " + std::to_string(code_.size()) + " is outside 1.." +
                                  std::to_string(code_attribute::max_code_length),
                0);
        }
        // Most instructions take one to three bytes; this avoids most regrowth without over-reserving.
        out_.reserve(code_.size() / 2 + 1);
        while (!in_.at_end()) {
            if (!decode_one()) {
                return take_failure();
            }
        }
        if (!check_targets()) {
            return take_failure();
        }
        return std::move(out_);
    }

private:
    bool truncated(const instruction& current) {
        const bool widened = current.wide && current.op != opcode::wide;
        return fail(opcode_text(static_cast<std::uint8_t>(current.op)) + (widened ? " (wide)" : "") + " at offset " +
                        std::to_string(current.offset) + " is cut off by the end of the code (length " +
                        std::to_string(code_.size()) + ")",
            current.offset);
    }

    // A branch's target as an absolute offset: checked against the code's bounds here, against instruction
    // starts once all are known.
    bool branch(const instruction& current, std::int64_t relative, std::uint32_t& target) {
        const std::int64_t absolute = static_cast<std::int64_t>(current.offset) + relative;
        if (absolute < 0 || absolute >= static_cast<std::int64_t>(code_.size())) {
            return fail(opcode_text(static_cast<std::uint8_t>(current.op)) + " at offset " +
                            std::to_string(current.offset) + " branches to " + std::to_string(absolute) +
                            ", outside the code (length " + std::to_string(code_.size()) + ")",
                current.offset);
        }
        target = static_cast<std::uint32_t>(absolute);
        return true;
    }

    bool decode_one() {
        instruction current;
        current.offset = static_cast<std::uint32_t>(in_.offset());
        std::uint8_t byte = 0;
        in_.read_u1(byte); // not at the end: the caller checked
        const opcode_info* entry = &info(byte);
        if (entry->format == operand_format::unknown) {
            return fail("unknown opcode " + byte_hex(byte) + " at offset " + std::to_string(current.offset),
                current.offset);
        }
        current.op = static_cast<opcode>(byte);
        if (entry->format == operand_format::wide) {
            current.wide = true;
            if (!in_.read_u1(byte)) {
                return truncated(current);
            }
            entry = &info(byte);
            if (entry->format != operand_format::local_u1 && entry->format != operand_format::iinc) {
                return fail("wide at offset " + std::to_string(current.offset) + " precedes " + opcode_text(byte) +
                                ", which it cannot modify",
                    current.offset);
            }
            current.op = static_cast<opcode>(byte);
        }
        current.kinds = entry->kinds;
        if (!decode_operands(current, entry->format)) {
            return false;
        }
        current.length = static_cast<std::uint32_t>(in_.offset() - current.offset);
        out_.push_back(std::move(current));
        return true;
    }

    bool decode_operands(instruction& current, operand_format format) {
        std::uint8_t u1 = 0;
        std::int8_t s1 = 0;
        std::int16_t s2 = 0;
        std::int32_t s4 = 0;
        switch (format) {
        case operand_format::none: return true;
        case operand_format::local_u1:
            if (current.wide) {
                return in_.read_u2(current.index) || truncated(current);
            }
            if (!in_.read_u1(u1)) {
                return truncated(current);
            }
            current.index = u1;
            return true;
        case operand_format::iinc:
            if (current.wide) {
                if (!in_.read_u2(current.index) || !in_.read_s2(s2)) {
                    return truncated(current);
                }
                current.value = s2;
                return true;
            }
            if (!in_.read_u1(u1) || !in_.read_s1(s1)) {
                return truncated(current);
            }
            current.index = u1;
            current.value = s1;
            return true;
        case operand_format::byte_s1:
            if (!in_.read_s1(s1)) {
                return truncated(current);
            }
            current.value = s1;
            return true;
        case operand_format::short_s2:
            if (!in_.read_s2(s2)) {
                return truncated(current);
            }
            current.value = s2;
            return true;
        case operand_format::array_type_u1:
            if (!in_.read_u1(u1)) {
                return truncated(current);
            }
            current.value = u1;
            return true;
        case operand_format::constant_u1:
            if (!in_.read_u1(u1)) {
                return truncated(current);
            }
            current.index = u1;
            return check_constant(current);
        case operand_format::constant_u2:
            if (!in_.read_u2(current.index)) {
                return truncated(current);
            }
            return check_constant(current);
        case operand_format::invokeinterface:
        case operand_format::invokedynamic:
            // invokeinterface: a count then a zero byte; invokedynamic: two zero bytes (not checked: the
            // verifier's concern, and irrelevant to layout).
            if (!in_.read_u2(current.index) || !in_.read_u1(u1) || !in_.skip(1)) {
                return truncated(current);
            }
            if (format == operand_format::invokeinterface) {
                current.value = u1;
            }
            return check_constant(current);
        case operand_format::multianewarray:
            if (!in_.read_u2(current.index) || !in_.read_u1(u1)) {
                return truncated(current);
            }
            current.value = u1;
            return check_constant(current);
        case operand_format::branch_s2:
            if (!in_.read_s2(s2)) {
                return truncated(current);
            }
            return branch(current, s2, current.target);
        case operand_format::branch_s4:
            if (!in_.read_s4(s4)) {
                return truncated(current);
            }
            return branch(current, s4, current.target);
        case operand_format::tableswitch:
        case operand_format::lookupswitch: return decode_switch(current, format);
        case operand_format::wide:
        case operand_format::unknown: break;
        }
        // decode_one never passes these: wide is resolved there and unknown opcodes rejected.
        return fail("internal error: no operand layout for " + opcode_text(static_cast<std::uint8_t>(current.op)),
            current.offset);
    }

    // tableswitch and lookupswitch: 0-3 padding bytes so that the operands start at a multiple of 4 from the
    // start of the code array (JVMS 6.5), then the default offset and the cases.
    bool decode_switch(instruction& current, operand_format format) {
        current.padding = static_cast<std::uint8_t>((4 - (current.offset + 1) % 4) % 4);
        std::int32_t default_offset = 0;
        if (!in_.skip(current.padding) || !in_.read_s4(default_offset)) {
            return truncated(current);
        }
        if (!branch(current, default_offset, current.target)) {
            return false;
        }
        if (format == operand_format::tableswitch) {
            std::int32_t low = 0;
            std::int32_t high = 0;
            if (!in_.read_s4(low) || !in_.read_s4(high)) {
                return truncated(current);
            }
            if (low > high) {
                return fail("tableswitch at offset " + std::to_string(current.offset) + " has low " +
                                std::to_string(low) + " above high " + std::to_string(high),
                    current.offset);
            }
            const std::int64_t count = static_cast<std::int64_t>(high) - low + 1;
            // Bounded by the bytes left before anything is allocated: a corrupt count cannot ask for gigabytes.
            if (count > static_cast<std::int64_t>(in_.remaining() / 4)) {
                return truncated(current);
            }
            current.cases.resize(static_cast<std::size_t>(count));
            for (std::int64_t i = 0; i < count; ++i) {
                std::int32_t relative = 0;
                in_.read_s4(relative);
                switch_case& entry = current.cases[static_cast<std::size_t>(i)];
                entry.key = static_cast<std::int32_t>(low + i);
                if (!branch(current, relative, entry.target)) {
                    return false;
                }
            }
            return true;
        }
        std::int32_t pairs = 0;
        if (!in_.read_s4(pairs)) {
            return truncated(current);
        }
        if (pairs < 0) {
            return fail("lookupswitch at offset " + std::to_string(current.offset) + " has a negative pair count " +
                            std::to_string(pairs),
                current.offset);
        }
        if (static_cast<std::size_t>(pairs) > in_.remaining() / 8) {
            return truncated(current);
        }
        current.cases.resize(static_cast<std::size_t>(pairs));
        for (switch_case& entry : current.cases) {
            std::int32_t relative = 0;
            in_.read_s4(entry.key);
            in_.read_s4(relative);
            if (!branch(current, relative, entry.target)) {
                return false;
            }
        }
        return true;
    }

    // With a pool: the operand names an entry of a tag the opcode accepts, and ldc's can_throw is made exact.
    bool check_constant(instruction& current) {
        if (!pool_) {
            return true;
        }
        using enum constant_tag;
        const auto bit = [](constant_tag tag) { return std::uint32_t{1} << static_cast<unsigned>(tag); };
        std::uint32_t allowed = 0; // a set of tags, one bit each
        switch (current.op) {
        case opcode::ldc:
        case opcode::ldc_w:
            allowed = bit(integer) | bit(float_) | bit(string) | bit(class_) | bit(method_handle) |
                      bit(method_type) | bit(dynamic);
            break;
        case opcode::ldc2_w: allowed = bit(long_) | bit(double_) | bit(dynamic); break;
        case opcode::getstatic:
        case opcode::putstatic:
        case opcode::getfield:
        case opcode::putfield: allowed = bit(fieldref); break;
        // Which of the two an invoke may name depends on the class version and the invoke; a mismatch is a
        // linkage error at run time, not a malformed file.
        case opcode::invokevirtual:
        case opcode::invokespecial:
        case opcode::invokestatic:
        case opcode::invokeinterface: allowed = bit(methodref) | bit(interface_methodref); break;
        case opcode::invokedynamic: allowed = bit(invoke_dynamic); break;
        default: allowed = bit(class_); break; // new, anewarray, checkcast, instanceof, multianewarray
        }
        const constant* entry = pool_->find(current.index);
        const constant_tag tag = entry ? tag_of(*entry) : unusable;
        if (!entry || (allowed & bit(tag)) == 0) {
            std::string expected;
            for (unsigned candidate = 1; candidate < 32; ++candidate) {
                if (allowed & (std::uint32_t{1} << candidate)) {
                    expected += (expected.empty() ? "" : ", ") +
                                std::string(constant_tag_name(static_cast<constant_tag>(candidate)));
                }
            }
            return fail(opcode_text(static_cast<std::uint8_t>(current.op)) + " at offset " +
                            std::to_string(current.offset) + ": constant pool index " +
                            std::to_string(current.index) + " is " + describe_entry(*pool_, current.index) +
                            ", expected one of " + expected,
                current.offset);
        }
        if (current.op == opcode::ldc || current.op == opcode::ldc_w || current.op == opcode::ldc2_w) {
            // Resolving a Class, MethodHandle, MethodType or Dynamic may fail with a linkage error or run
            // arbitrary bootstrap code; numbers and strings cannot fail (short of running out of memory).
            const bool resolves = tag == class_ || tag == method_handle || tag == method_type || tag == dynamic;
            current.kinds = resolves ? (current.kinds | instruction_kind::can_throw)
                                     : (current.kinds & ~instruction_kind::can_throw);
        }
        return true;
    }

    bool check_targets() {
        std::vector<bool> starts(code_.size(), false);
        for (const instruction& decoded : out_) {
            starts[decoded.offset] = true;
        }
        for (const instruction& decoded : out_) {
            if (!decoded.has_targets()) {
                continue;
            }
            const auto check = [&](std::uint32_t target) {
                return starts[target] ||
                       fail(opcode_text(static_cast<std::uint8_t>(decoded.op)) + " at offset " +
                                std::to_string(decoded.offset) + " branches to " + std::to_string(target) +
                                ", which is inside an instruction",
                           decoded.offset);
            };
            if (!check(decoded.target)) {
                return false;
            }
            for (const switch_case& entry : decoded.cases) {
                if (!check(entry.target)) {
                    return false;
                }
            }
        }
        return true;
    }

    std::span<const std::uint8_t> code_;
    byte_reader in_;
    const constant_pool* pool_ = nullptr;
    std::vector<instruction> out_;
};

} // namespace

result<std::vector<instruction>> decode_instructions(std::span<const std::uint8_t> code, const constant_pool* pool) {
    return decoder(code, pool).decode();
}

result<std::vector<instruction>> decode_instructions(const code_attribute& code, const constant_pool& pool) {
    auto decoded = decode_instructions(code.code, &pool);
    if (!decoded) {
        return decoded;
    }
    const auto starts_instruction = [&](std::uint32_t offset) {
        return find_instruction(*decoded, offset).has_value();
    };
    for (std::size_t i = 0; i < code.exception_table.size(); ++i) {
        const exception_entry& handler = code.exception_table[i];
        const char* wrong = nullptr;
        std::uint32_t offset = 0;
        if (!starts_instruction(handler.start_pc)) {
            wrong = "start_pc";
            offset = handler.start_pc;
        } else if (handler.end_pc != code.code.size() && !starts_instruction(handler.end_pc)) {
            wrong = "end_pc";
            offset = handler.end_pc;
        } else if (!starts_instruction(handler.handler_pc)) {
            wrong = "handler_pc";
            offset = handler.handler_pc;
        }
        if (wrong) {
            return make_error("exception_table entry " + std::to_string(i) + ": " + wrong + " " +
                                  std::to_string(offset) + " is not the start of an instruction",
                offset);
        }
    }
    return decoded;
}

std::optional<std::size_t> find_instruction(std::span<const instruction> instructions, std::uint32_t offset) noexcept {
    const auto found = std::lower_bound(instructions.begin(), instructions.end(), offset,
        [](const instruction& decoded, std::uint32_t wanted) { return decoded.offset < wanted; });
    if (found == instructions.end() || found->offset != offset) {
        return std::nullopt;
    }
    return static_cast<std::size_t>(found - instructions.begin());
}

} // namespace ojx::bytecode
