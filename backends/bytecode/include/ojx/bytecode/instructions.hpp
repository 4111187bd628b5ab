// Decoding a method's code array into instructions: where each starts, how long it is, its operands, where it
// may branch, and what kind of instruction it is. The first layer of code rewriting: offsets and targets here are
// what an instrumenter relocates when it inserts code.
#pragma once

#include "ojx/bytecode/code_attribute.hpp"
#include "ojx/bytecode/constant_pool.hpp"
#include "ojx/bytecode/opcodes.hpp"
#include "ojx/bytecode/result.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace ojx::bytecode {

struct switch_case {
    std::int32_t key = 0;
    std::uint32_t target = 0; // absolute offset in the code array
};

struct instruction {
    std::uint32_t offset = 0; // of the opcode, or of the wide prefix for a widened instruction
    std::uint32_t length = 0; // in bytes: prefix, opcode, operands and switch padding
    opcode op = opcode::nop;  // a widened instruction has the opcode it modifies here, never opcode::wide
    bool wide = false;        // prefixed by wide
    instruction_kind kinds = instruction_kind::none;

    // Operands, by the opcode's operand_format (unused ones stay 0):
    std::uint16_t index = 0;  // constant-pool index (constant_u1/u2, invoke*, multianewarray), or local variable
                              // index (local_u1, iinc); implicit ones (iload_0 ...) are not filled in
    std::int32_t value = 0;   // bipush/sipush value, iinc increment, newarray element type, invokeinterface
                              // count, multianewarray dimensions
    std::uint32_t target = 0; // branch target of branch_s2/branch_s4 forms; a switch's default target
    std::uint8_t padding = 0; // switch: bytes between the opcode and the 4-byte-aligned operands
    std::vector<switch_case> cases; // tableswitch: keys low..high in order; lookupswitch: pairs in file order

    bool is(instruction_kind kind) const noexcept { return has_any(kinds, kind); }

    // Whether this instruction names branch targets (if*, goto*, jsr*, switches; not ret, whose target is in a
    // local variable).
    bool has_targets() const noexcept {
        return is(instruction_kind::conditional_branch | instruction_kind::unconditional_jump |
                  instruction_kind::switch_) ||
               op == opcode::jsr || op == opcode::jsr_w;
    }

    // Whether execution can continue directly with the next instruction. False for goto*, switches, returns,
    // athrow, ret, and jsr* (the instruction after a jsr is reached only through the subroutine's ret).
    bool falls_through() const noexcept {
        return !is(instruction_kind::unconditional_jump | instruction_kind::switch_ | instruction_kind::return_ |
                   instruction_kind::athrow | instruction_kind::subroutine);
    }

    // Every branch target: `target` for branches, the default then each case's target for switches (in order,
    // duplicates kept).
    std::vector<std::uint32_t> targets() const;
};

// Decodes `code` whole. With `pool`, constant-pool operands are checked (in range, and of a tag the opcode
// accepts) and ldc's can_throw is exact; without, ldc is taken to throw. Fails, naming the offset in `code`, on an
// empty or over-long code array, an unknown or reserved opcode, an instruction cut off by the end of the code, wide
// before an opcode it cannot modify, a tableswitch with low > high, a lookupswitch with a negative pair count,
// and a branch target outside the code or not at the start of an instruction.
result<std::vector<instruction>> decode_instructions(std::span<const std::uint8_t> code,
    const constant_pool* pool = nullptr);

// As above for a Code attribute, also checking that every exception handler's start, end (unless it is the code
// length) and handler offsets start instructions.
result<std::vector<instruction>> decode_instructions(const code_attribute& code, const constant_pool& pool);

// The position in `instructions` (sorted by offset, as decoded) of the instruction starting at `offset`.
std::optional<std::size_t> find_instruction(std::span<const instruction> instructions, std::uint32_t offset) noexcept;

} // namespace ojx::bytecode
