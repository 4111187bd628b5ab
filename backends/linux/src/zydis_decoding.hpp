// What the backend's decoding sources share about Zydis, which stays out of the public headers: the decoder
// (set up at load time in instruction_decoder.cpp), the rule for memory operands that touch no data, and the
// effective address of a memory operand.
#pragma once

#include "ojx/hardware/instruction_decoder.hpp"

#include <Zydis/Zydis.h>

#include <cstdint>

namespace ojx::hardware::zydis {

// The 64-bit decoder, or nullptr before it is initialised. Signal-safe.
const ZydisDecoder* ready_decoder() noexcept;

// Instructions whose memory operand names a line to act on (prefetch, flush, write back) or nothing (NOP with a
// ModRM operand) rather than data they read or write. Signal-safe.
bool touches_no_data(const ZydisDecodedInstruction& instruction) noexcept;

// The address a memory operand of `instruction` (at regs.rip) names, as decode_access computes it: base + index *
// scale + displacement, RIP-relative from the next instruction, cut to the address size, plus the FS/GS base
// (read and cached in `regs` on first use). False when the general registers cannot give it (a vector index).
// Signal-safe.
bool effective_address(const ZydisDecodedInstruction& instruction, const ZydisDecodedOperand& operand,
                       register_file& regs, std::uint64_t& address) noexcept;

} // namespace ojx::hardware::zydis
