// Big-endian appending of class-file bytes: the inverse of byte_reader, for the class writer and for anything
// that builds attribute payloads or code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace ojx::bytecode {

class byte_writer {
public:
    void u1(std::uint8_t value) { bytes_.push_back(value); }
    void u2(std::uint16_t value) { big_endian(value, 2); }
    void u4(std::uint32_t value) { big_endian(value, 4); }
    void u8(std::uint64_t value) { big_endian(value, 8); }
    void bytes(std::span<const std::uint8_t> data) { bytes_.insert(bytes_.end(), data.begin(), data.end()); }
    void bytes(std::string_view data) { bytes_.insert(bytes_.end(), data.begin(), data.end()); }

    // Overwrites four bytes written earlier: a length written before the structure it measures.
    void patch_u4(std::size_t at, std::uint32_t value) {
        for (std::size_t i = 0; i < 4; ++i) {
            bytes_.at(at + i) = static_cast<std::uint8_t>(value >> (8 * (3 - i)));
        }
    }

    std::size_t size() const noexcept { return bytes_.size(); }
    const std::vector<std::uint8_t>& data() const noexcept { return bytes_; }
    std::vector<std::uint8_t> take() noexcept { return std::move(bytes_); }

private:
    void big_endian(std::uint64_t value, std::size_t width) {
        for (std::size_t i = width; i-- > 0;) {
            bytes_.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
        }
    }

    std::vector<std::uint8_t> bytes_;
};

} // namespace ojx::bytecode
