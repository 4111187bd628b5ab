// x86-64 instruction decoding for the sample and trap handlers: which data memory access an instruction makes
// (effective address, width, load or store), given the registers of the thread that runs it. The sampler uses it
// on the instruction about to execute (single-stepping to the next access); the watchpoint trap path uses it on
// the instruction that has just executed (data breakpoints trap after the access). Zydis does the decoding; it
// stays in the .cpp.
#pragma once

#include "ojx/sampler.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include <ucontext.h>

namespace ojx::hardware {

// The registers an x86-64 address can use. GPRs are in hardware encoding order (rax, rcx, rdx, rbx, rsp, rbp,
// rsi, rdi, r8..r15), indexed by `gpr`.
//
// FS and GS bases are not in a signal's ucontext and cost a system call or a privileged-looking instruction to
// read, while almost no instruction uses them. So from_ucontext leaves them unknown, and decode_access reads them
// for the current thread, once, the first time an instruction has an FS or GS override, caching them here (which
// is why it takes the register file by non-const reference). That is right whenever the registers belong to the
// thread that is decoding, as in a signal handler: the kernel does not change the bases on signal delivery. For
// another thread's registers, fill the bases and set the *_known flags yourself.
struct register_file {
    enum gpr : std::uint8_t { rax, rcx, rdx, rbx, rsp, rbp, rsi, rdi, r8, r9, r10, r11, r12, r13, r14, r15 };

    std::array<std::uint64_t, 16> gprs{};
    std::uint64_t rip = 0;
    std::uint64_t rflags = 0; // only find_access_ahead uses it (for conditional branches)
    std::uint64_t fs_base = 0;
    std::uint64_t gs_base = 0;
    bool fs_base_known = false;
    bool gs_base_known = false;
};

// The interrupted thread's registers, from the ucontext a SA_SIGINFO handler receives. Signal-safe.
register_file from_ucontext(const ucontext_t& context) noexcept;

// The current thread's FS / GS base: rdfsbase/rdgsbase when the kernel enabled FSGSBASE (AT_HWCAP2), otherwise
// arch_prctl(ARCH_GET_FS/GS). Signal-safe (at most one system call; errno preserved).
std::uint64_t current_fs_base() noexcept;
std::uint64_t current_gs_base() noexcept;

enum class decode_status : std::uint8_t {
    memory_access,    // the instruction reads or writes data memory: address, width and kind are set
    no_memory_access, // it decodes and makes no data access (only `length` is set)
    undecodable,      // invalid or truncated bytes (length 0), or an access whose address the general registers
                      // cannot give: gathers and scatters (VSIB), whose addresses live in a vector register; those
                      // keep their `length`, so a caller stepping through code can tell them apart and skip them
};

struct decoded_instruction {
    decode_status status = decode_status::undecodable;
    std::uint8_t length = 0; // bytes, 1..15 when decoded
    // Bytes accessed: the operand size, the whole vector for vector accesses (16/32/64), one element for an
    // embedded broadcast, one iteration for rep-prefixed string instructions, the architectural area for the
    // xsave/fxsave family.
    std::uint16_t width = 0;
    ojx::access_kind kind = ojx::access_kind::load;
    // decode_previous_access only: the effective address, recomputed with the registers after the instruction
    // ran, overlaps the watched range. decode_access leaves it false.
    bool address_verified = false;
    std::uint64_t effective_address = 0;
};

inline constexpr std::size_t max_instruction_length = 15;

// Prepares the decoder. It already runs at load time (a static initialiser in instruction_decoder.cpp), so an
// explicit call is only needed from other static initialisers; it is idempotent and thread-safe. Until it has
// run, decode_access answers `undecodable`. Returns false if Zydis refused (it does not on x86-64).
bool initialize_instruction_decoder() noexcept;

// Decodes the instruction at `code` (at most `available` bytes readable there, 15 suffice) and describes its data
// memory access, computing the effective address from `regs`, where regs.rip is the address of this instruction.
// Signal-safe: no allocation, no lock, no system call except reading the FS/GS base on first use (see
// register_file). Rules:
//  * The access is what the instruction does to the operand: a read or a read-modify-write (add [m], r; xchg;
//    cmpxchg; conditional reads such as cmov) is a load, since the value it sees is the one before it executes;
//    a write-only operand (mov [m], r; stos; conditional writes) is a store.
//  * Not data accesses: LEA and other address-generation operands (AGEN, MPX MIB), NOP with a memory operand,
//    prefetch*, clflush, clflushopt, clwb, cldemote; and the implicit stack references of push, pop, call, ret,
//    enter, leave (hidden operands through SS), so a single-stepping sampler moves on to the next real data
//    access. push [m], pop [m] and call [m] do access data through their explicit operand.
//  * Hidden operands outside the stack are accesses: [rsi]/[rdi] of movs, stos, lods, cmps, scas (one iteration),
//    [rdi] of maskmovdqu, [rbx + al] of xlat. With two memory operands (movs, cmps) the one read is reported.
//  * Addresses: base + index * scale + displacement, RIP-relative from the next instruction (regs.rip + length),
//    FS/GS segment base added, truncated to 32 bits with an address-size (0x67) prefix before the segment base.
decoded_instruction decode_access(const std::uint8_t* code, std::size_t available, register_file& regs) noexcept;

// The data access of the instruction that ends exactly at `next_pc`, for watchpoint traps: x86 data breakpoints
// trap after the access, with rip at the next instruction, and x86 cannot be decoded backwards unambiguously.
// `bytes_before` holds the bytes just before next_pc (its last byte is at next_pc - 1; up to 15 are used), `regs`
// the registers after the instruction ran (regs.rip is left unchanged on return).
//
// Heuristic: every start s in [next_pc - 15, next_pc - 1] whose bytes decode to an instruction of length exactly
// next_pc - s that makes a data access (decode_access's rules) is a candidate; its effective address is computed
// with the current registers and rip = s.
//  1. Candidates whose access [address, address + width) overlaps [watched_address, watched_address +
//     watched_length) are verified; the longest verified one wins, with address_verified = true. Several verify
//     mostly when a shorter one is the same instruction without a prefix byte (48 8b 07 "mov rax, [rdi]" ends
//     with 8b 07 "mov eax, [rdi]"); longest reads the prefix as part of the instruction, which is right unless
//     the previous instruction happens to end in a prefix-valued byte.
//  2. If none verifies, the longest candidate wins, with address_verified = false and its effective address as
//     computed (probably not the watched one). This happens when the instruction changed a register of its own
//     address (mov rax, [rax]; string instructions advance rsi/rdi), and for candidates decoded from the middle of
//     a longer instruction; the caller should trust the watched address, not this one.
//  3. No candidate: the longest exact-length decode with status no_memory_access (e.g. the trap came from a
//     push or call, whose stack accesses are not data accesses), else `undecodable`.
// A rep-prefixed string instruction trapping between iterations has rip still at itself and is not found.
// Signal-safe, as decode_access (at most 15 decodes, a few microseconds).
decoded_instruction decode_access_ending_at(std::span<const std::uint8_t> bytes_before, std::uint64_t next_pc,
                                            std::uint64_t watched_address, std::size_t watched_length,
                                            register_file& regs) noexcept;

// decode_access_ending_at on the bytes before `next_pc`, read with `memory` (normally process_memory, which
// never faults). When the 15 bytes cross into an unreadable page (code at the start of a mapping), only the bytes
// in next_pc - 1's own 4 KiB page are used: they were just executed, so they are mapped.
// Signal-safe if memory.read is.
template <ojx::memory_reader Memory>
decoded_instruction decode_previous_access(std::uint64_t next_pc, std::uint64_t watched_address,
                                           std::size_t watched_length, register_file& regs, Memory& memory) noexcept {
    constexpr std::uint64_t page_size = 4096;
    std::array<std::uint8_t, max_instruction_length> bytes{};
    if (next_pc == 0) {
        return {};
    }
    std::size_t count = next_pc < bytes.size() ? static_cast<std::size_t>(next_pc) : bytes.size();
    if (!memory.read(next_pc - count, bytes.data(), count)) {
        const std::uint64_t page_start = (next_pc - 1) & ~(page_size - 1);
        count = static_cast<std::size_t>(next_pc - page_start);
        if (count >= bytes.size() || !memory.read(page_start, bytes.data(), count)) {
            return {}; // the short read would have been the full one: next_pc - 1 itself is unreadable
        }
    }
    return decode_access_ending_at(std::span<const std::uint8_t>(bytes.data(), count), next_pc, watched_address,
                                   watched_length, regs);
}

} // namespace ojx::hardware
