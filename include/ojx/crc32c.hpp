// CRC-32C (Castagnoli), the checksum of every trace block: detects any burst of up to 32 flipped bits and every
// single- or double-bit error in the block sizes ojx writes. Table-driven, one byte per step; the table is built
// at compile time, so computing a checksum allocates nothing and touches only its input and a constant table
// (signal-safe).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace ojx {

namespace crc32c_detail {

// The reflected Castagnoli polynomial 0x1EDC6F41.
inline constexpr std::uint32_t reflected_polynomial = 0x82F63B78u;

consteval std::array<std::uint32_t, 256> make_table() {
    std::array<std::uint32_t, 256> table{};
    for (std::uint32_t byte = 0; byte < 256; ++byte) {
        std::uint32_t crc = byte;
        for (int bit = 0; bit < 8; ++bit) {
            crc = (crc & 1u) != 0 ? (crc >> 1) ^ reflected_polynomial : crc >> 1;
        }
        table[byte] = crc;
    }
    return table;
}

inline constexpr std::array<std::uint32_t, 256> table = make_table();

} // namespace crc32c_detail

// Continues a checksum: crc32c(b, crc32c(a)) == crc32c(a followed by b). Start from 0.
// Signal-safe: allocates nothing, takes no lock.
constexpr std::uint32_t crc32c(std::span<const std::byte> data, std::uint32_t previous = 0) noexcept {
    std::uint32_t crc = ~previous;
    for (const std::byte b : data) {
        crc = crc32c_detail::table[(crc ^ static_cast<std::uint32_t>(b)) & 0xFFu] ^ (crc >> 8);
    }
    return ~crc;
}

} // namespace ojx
