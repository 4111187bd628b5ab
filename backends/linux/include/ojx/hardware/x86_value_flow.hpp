// What one executed x86-64 instruction does to values (docs/copy-profiling.md, "Following a value on x86-64"): its
// value flow events (ojx/value_flow.hpp), given its bytes and the registers of the thread before it runs. The
// architecture half of following a sampled load forward on Linux; the stepper that runs the thread instruction by
// instruction supplies the registers. Signal-safe: Zydis decodes into local structures, the events go to the
// caller's span, the stack slots to the caller's table.
#pragma once

#include "ojx/hardware/instruction_decoder.hpp"
#include "ojx/value_flow.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace ojx::hardware {

// Value registers on x86-64. A general-purpose register is its 64-bit number (rax 0 … r15 15, register_file::gpr
// order); a write to a 32-, 16- or 8-bit part (eax, ax, al, ah) counts as overwriting the whole register, since
// what remains of the old value is not the value followed. xmm/ymm/zmm k is 16 + k, again one register for all
// widths. Stack slots are 48 + the slot's index in a stack_slot_table. The scratch registers hold, within one
// instruction, a value that instruction reads from memory or writes to memory (add rax, [rbx]: load(255), then
// compute({rax, 255}, rax)); no instruction leaves anything in them that a later one reads, so a consumer may
// treat them as dead after each instruction. Other registers (flags, rip, segment, mask, x87 and MMX registers)
// hold no value that is followed.
inline constexpr value_register first_vector_register = 16;
inline constexpr value_register first_stack_slot_register = 48;
inline constexpr value_register scratch_register = 255;
inline constexpr value_register second_scratch_register = 254; // the second memory operand of cmps and the like

// The window around rsp (before the instruction) in which a memory operand is a stack slot rather than memory:
// [rsp - 128, rsp + 64 KiB), the red zone below rsp and the frames of the code being followed above it. An address
// rule rather than "the base register is rsp or rbp": HotSpot's C2 uses rbp as a general register, and
// frame-pointer code addresses its frame through rbp. Stack-allocated data whose address escapes (a local struct
// passed by pointer) is in the window too, and is followed as slots.
inline constexpr std::uint64_t stack_window_below = 128;
inline constexpr std::uint64_t stack_window_above = 64 * 1024;

// The stack addresses given slots so far in one following, which the caller owns and passes to every instruction
// of it (start each following with an empty table). A slot is keyed by its exact address: an access of a
// different width at the same address is the same slot, one that overlaps it at another address another slot.
// When the table is full, a new stack address is treated as memory (loads and stores) and counted.
struct stack_slot_table {
    static constexpr std::size_t capacity = 16;
    std::array<std::uint64_t, capacity> addresses{};
    std::uint8_t used = 0;
    std::uint32_t treated_as_memory = 0; // accesses of a new stack address while the table was full
};

// At most this many events per instruction (two loads into the scratch registers, one computation, three
// further results — cpuid writes four registers — and two stores).
inline constexpr std::size_t max_x86_value_flow_events = 8;

struct instruction_value_flow {
    bool decoded = false;    // false: invalid or truncated bytes, or the decoder is not ready (no events)
    std::uint8_t length = 0; // bytes of the instruction, when decoded
    std::uint8_t count = 0;  // events written to the span
    bool complete = true;    // false if the instruction needed more than the span holds (none Zydis decodes does:
                             // a caller should end the following rather than trust the rest)
};

// The value flow events of the instruction at `code` (`available` bytes readable there, 15 suffice) executed once
// by a thread whose registers before it are `regs` (regs.rip its address, regs.rflags its flags; FS/GS bases as
// decode_access reads and caches them). Rules:
//  * mov, movzx, movsx, movsxd and the SSE/AVX moves (movd, movq, movss, movsd, movdqu, movdqa, movups, movaps,
//    their v-forms, non-temporal ones; not the AVX-512 masked ones, which merge): register ← register is a
//    register move, ← memory a load of the memory operand's width, memory ← register a store, ← immediate a
//    constant (an immediate stored to memory is no event: no register's value moves). Stack slots are registers
//    (a spill is a move), memory to memory (push [m], pop [m]) goes through the scratch register.
//  * push, pop, leave: moves between the register or memory operand and the slot at rsp - width (push) or rsp
//    (pop, leave: rbp); pushf is a computation of the slot from nothing. rsp's own adjustment is no event.
//  * call, ret, jumps, nop, prefetch, flushes, fences: no events (but loop's count, rcx, computed from itself).
//    A return address is not a followed value; call only resets a slot already in the table at the address it
//    pushes to, so that no stale value is read there.
//  * cmovcc: its condition evaluated on regs.rflags; taken it is a move as mov, not taken no event.
//  * xchg: a swap through the scratch register (three moves, or a load, a store and a move with memory).
//  * xor, sub, pxor, xorps, xorpd (and v-forms) of a register with itself: a constant.
//  * movs with or without rep: one string move of element width × (rep ? rcx : 1) bytes (nothing when that is 0),
//    from rsi to rdi, both ranges starting at the lowest element: with the direction flag set the elements run
//    downwards, so the ranges are [rsi - (n - 1) × width, rsi + width) and likewise for rdi. stos: a store of
//    rax of the element width to the first element written (a rep stos stores the same value n times; one store
//    stands for them). lods: a load into rax of the last element read. cmps, scas: the first elements compared
//    loaded into the scratch registers, and a computation of them (scas: and rax) with no result. Then rcx (with
//    rep) and each pointer the instruction advances (rsi, rdi) computed from itself. A rep instruction is
//    described whole, as though it ran at once: a single-stepper, which traps after each iteration, reports it
//    at its first step.
//  * Anything else — the integer ALU (add, sub, and, or, xor, adc, sbb, inc, dec, neg, not, imul, mul, div,
//    shifts, rotates), lea, setcc, cmp, test, the vector computations, and every instruction not named here —
//    by its operands' metadata, hidden operands included: each memory operand read is loaded into a scratch
//    register; one computation from every value register read (an address's base and index are not read as
//    values, except by lea and other address computations) and the scratch registers, to the first register
//    written (none for cmp and test: they write only flags); a computation from nothing to each further register
//    written; the scratch register of each memory operand written is then stored. syscall also overwrites rax,
//    which Zydis does not name. No register a recognised
//    instruction writes keeps a followed value unless the rules above say it moves there.
// Not modelled: vzeroall (Zydis names no operands), gathers' and scatters' addresses (a vector index: their data
// access gives no load or store event, the vector written is a computation), stack slots of string moves (ranges
// in the stack window are memory).
// Signal-safe: no allocation, no lock, no system call but the FS/GS base's first read (decode_access's rules).
instruction_value_flow x86_value_flow(const std::uint8_t* code, std::size_t available, register_file& regs,
                                      stack_slot_table& slots,
                                      std::span<value_flow_event, max_x86_value_flow_events> events) noexcept;

} // namespace ojx::hardware
