// The decode sampler's question, answered without executing: which data access would single-stepping from the
// interrupted pc reach? Each single step is a trap (through the hypervisor on a virtual machine, ~10 µs), so the
// sampler first looks ahead in the code, following the thread's registers through simple integer instructions
// and direct branches, and steps only when the answer depends on something it cannot follow.
#pragma once

#include "ojx/hardware/instruction_decoder.hpp"

#include <cstddef>
#include <cstdint>

namespace ojx::hardware {

// Copies up to `size` bytes at `address` to `out` and returns how many it could (0: unreadable). Called for code
// when a followed jump leaves the bytes find_access_ahead was given, and for the value of a followed load; must
// be signal-safe where find_access_ahead runs in a handler (the backend passes a fault-safe read). `state` is the
// reader's own (the backend's: which words the thread's debug registers watch, so that no read traps).
struct code_reader {
    std::size_t (*read)(const void* state, std::uint64_t address, std::uint8_t* out, std::size_t size) noexcept =
        nullptr;
    const void* state = nullptr;

    explicit operator bool() const noexcept { return read != nullptr; }
    std::size_t operator()(std::uint64_t address, std::uint8_t* out, std::size_t size) const noexcept {
        return read(state, address, out, size);
    }
};

struct lookahead_limits {
    std::uint32_t max_instructions = 32; // instructions followed, a taken jump counting as one
    std::uint32_t max_code_reads = 2;    // reads of code (each a system call in the backend, ~1 µs)
    std::uint32_t max_data_reads = 4;    // reads of loaded values (likewise)
};

struct access_ahead {
    bool found = false;
    decoded_instruction access;        // decode_access at `pc`, with the registers the thread will have there
    std::uint64_t pc = 0;              // the accessing instruction
    std::uint32_t instructions_ahead = 0; // how many instructions execute before it
};

// The data access a single-stepping sampler would reach from regs.rip after stepping over `skip` instructions:
// the first data access of instruction number `skip` or later. `code` holds `available` bytes at regs.rip;
// `read_more` (may be null) supplies code elsewhere. regs.rflags must hold the thread's flags.
//
// The instructions before the access are followed, not executed, and the answer is given only when following
// them is exact:
//  * Register values: mov, movzx, movsx, movsxd, lea, add, sub, and, or, xor, inc, dec, neg, not, imul,
//    shl/shr/sar by an immediate, and setcc and cmovcc on known flags, on registers and immediates of any width,
//    are computed (a 32-bit result zero-extends, an 8- or 16-bit one merges, as the CPU does). A load into a
//    register (mov, movzx, movsx, movsxd from memory at a known address, not FS/GS-relative) reads the value
//    with `read_more`, up to max_data_reads times: pointer and index loads come before most accesses. Any other
//    write to a general register makes that register unknown; an access whose address uses an unknown register
//    ends the search.
//  * Flags: the same instructions, and cmp and test, compute CF, PF, ZF, SF and OF (inc and dec keep CF; not
//    changes none); what shifts and imul leave undefined becomes unknown, as does every flag any other
//    instruction changes.
//  * Control: a direct jmp is followed; a conditional jump (jcc) is followed while the flags are known. Any other
//    transfer (call, ret, indirect jump, loop, jrcxz), a system call, an instruction that can trap without a
//    memory operand (div, ud2, int, privileged and system instructions, transactional memory), a write to
//    memory (store, push) or a rep-prefixed string instruction (stepped once per iteration) ends the search.
//  * Loads before the access change no memory; they are followed as above.
// `found` is false when the search ends, when no access comes within the limits, or when code cannot be read;
// the caller then single-steps. A found answer is the one stepping would give, apart from other threads writing
// the accessed memory in between (a race the stepping sampler has too). Signal-safe as decode_access is, plus
// the code reader.
access_ahead find_access_ahead(const std::uint8_t* code, std::size_t available, const register_file& regs,
                               std::uint32_t skip, code_reader read_more = {},
                               const lookahead_limits& limits = {}) noexcept;

} // namespace ojx::hardware
