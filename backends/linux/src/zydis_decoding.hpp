// What the backend's decoding sources share about Zydis, which stays out of the public headers: the decoder
// (set up at load time in instruction_decoder.cpp) and the rule for memory operands that touch no data.
#pragma once

#include <Zydis/Zydis.h>

namespace ojx::hardware::zydis {

// The 64-bit decoder, or nullptr before it is initialised. Signal-safe.
const ZydisDecoder* ready_decoder() noexcept;

// Instructions whose memory operand names a line to act on (prefetch, flush, write back) or nothing (NOP with a
// ModRM operand) rather than data they read or write. Signal-safe.
bool touches_no_data(const ZydisDecodedInstruction& instruction) noexcept;

} // namespace ojx::hardware::zydis
