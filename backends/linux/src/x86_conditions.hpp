// x86's status flags and its sixteen conditions (jcc, setcc, cmovcc), and how rflags decide them: shared by the
// access look-ahead, which follows conditional jumps and moves on flags it computes, and the value flow of a
// cmov, decided on the thread's flags. Signal-safe.
#pragma once

#include <Zydis/Zydis.h>

#include <array>
#include <cstdint>

namespace ojx::hardware::zydis {

// Zydis numbers its flag masks by RFLAGS bit, so they apply to rflags as they are.
static_assert(ZYDIS_CPUFLAG_CF == 1u << 0 && ZYDIS_CPUFLAG_PF == 1u << 2 && ZYDIS_CPUFLAG_ZF == 1u << 6 &&
              ZYDIS_CPUFLAG_SF == 1u << 7 && ZYDIS_CPUFLAG_OF == 1u << 11);
inline constexpr std::uint64_t carry = ZYDIS_CPUFLAG_CF;
inline constexpr std::uint64_t parity = ZYDIS_CPUFLAG_PF;
inline constexpr std::uint64_t zero = ZYDIS_CPUFLAG_ZF;
inline constexpr std::uint64_t sign = ZYDIS_CPUFLAG_SF;
inline constexpr std::uint64_t overflow = ZYDIS_CPUFLAG_OF;
inline constexpr std::uint64_t status_flags = carry | parity | zero | sign | overflow; // what conditions test
inline constexpr std::uint64_t direction = ZYDIS_CPUFLAG_DF; // string instructions go backwards when set
static_assert(ZYDIS_CPUFLAG_DF == 1u << 10);

// The sixteen conditions, in encoding order (the low nibble of the jcc, setcc and cmovcc opcodes): each odd one
// is the negation of the even one before it.
inline constexpr std::array<ZydisMnemonic, 16> jumps = {
    ZYDIS_MNEMONIC_JO,  ZYDIS_MNEMONIC_JNO,  ZYDIS_MNEMONIC_JB, ZYDIS_MNEMONIC_JNB, ZYDIS_MNEMONIC_JZ,
    ZYDIS_MNEMONIC_JNZ, ZYDIS_MNEMONIC_JBE,  ZYDIS_MNEMONIC_JNBE, ZYDIS_MNEMONIC_JS, ZYDIS_MNEMONIC_JNS,
    ZYDIS_MNEMONIC_JP,  ZYDIS_MNEMONIC_JNP,  ZYDIS_MNEMONIC_JL, ZYDIS_MNEMONIC_JNL, ZYDIS_MNEMONIC_JLE,
    ZYDIS_MNEMONIC_JNLE};
inline constexpr std::array<ZydisMnemonic, 16> sets = {
    ZYDIS_MNEMONIC_SETO,  ZYDIS_MNEMONIC_SETNO,  ZYDIS_MNEMONIC_SETB, ZYDIS_MNEMONIC_SETNB, ZYDIS_MNEMONIC_SETZ,
    ZYDIS_MNEMONIC_SETNZ, ZYDIS_MNEMONIC_SETBE,  ZYDIS_MNEMONIC_SETNBE, ZYDIS_MNEMONIC_SETS, ZYDIS_MNEMONIC_SETNS,
    ZYDIS_MNEMONIC_SETP,  ZYDIS_MNEMONIC_SETNP,  ZYDIS_MNEMONIC_SETL, ZYDIS_MNEMONIC_SETNL, ZYDIS_MNEMONIC_SETLE,
    ZYDIS_MNEMONIC_SETNLE};
inline constexpr std::array<ZydisMnemonic, 16> conditional_moves = {
    ZYDIS_MNEMONIC_CMOVO,  ZYDIS_MNEMONIC_CMOVNO,  ZYDIS_MNEMONIC_CMOVB, ZYDIS_MNEMONIC_CMOVNB, ZYDIS_MNEMONIC_CMOVZ,
    ZYDIS_MNEMONIC_CMOVNZ, ZYDIS_MNEMONIC_CMOVBE,  ZYDIS_MNEMONIC_CMOVNBE, ZYDIS_MNEMONIC_CMOVS, ZYDIS_MNEMONIC_CMOVNS,
    ZYDIS_MNEMONIC_CMOVP,  ZYDIS_MNEMONIC_CMOVNP,  ZYDIS_MNEMONIC_CMOVL, ZYDIS_MNEMONIC_CMOVNL, ZYDIS_MNEMONIC_CMOVLE,
    ZYDIS_MNEMONIC_CMOVNLE};

// Which of the sixteen conditions `mnemonic` of `family` tests; false if it is not in the family.
inline bool condition_of(ZydisMnemonic mnemonic, const std::array<ZydisMnemonic, 16>& family,
                         unsigned& condition) noexcept {
    for (unsigned i = 0; i < family.size(); ++i) {
        if (family[i] == mnemonic) {
            condition = i;
            return true;
        }
    }
    return false;
}

// The flags condition `condition` (0..15) tests.
inline std::uint64_t tested_flags(unsigned condition) noexcept {
    static constexpr std::array<std::uint64_t, 8> tested = {overflow, carry,  zero,            carry | zero,
                                                            sign,     parity, sign | overflow, zero | sign | overflow};
    return tested[condition / 2];
}

// Whether condition `condition` (0..15) holds on `flags`.
inline bool condition_holds(unsigned condition, std::uint64_t flags) noexcept {
    const bool cf = (flags & carry) != 0;
    const bool zf = (flags & zero) != 0;
    const bool sf = (flags & sign) != 0;
    const bool of = (flags & overflow) != 0;
    const std::array<bool, 8> even = {of, cf, zf, cf || zf, sf, (flags & parity) != 0, sf != of, zf || sf != of};
    return even[condition / 2] != ((condition & 1) != 0);
}

} // namespace ojx::hardware::zydis
