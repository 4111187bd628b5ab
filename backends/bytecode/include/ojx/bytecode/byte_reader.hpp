// Bounds-checked big-endian reading of class-file bytes. Every read either succeeds whole or fails without
// moving, so that a parser reports where a structure starts rather than some point inside it; nothing here reads
// outside the span it was given.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace ojx::bytecode {

class byte_reader {
public:
    // `base` is the offset of bytes[0] in some larger input, so that offsets reported by a reader over one
    // attribute's payload still name positions in the whole class file.
    explicit byte_reader(std::span<const std::uint8_t> bytes, std::size_t base = 0) noexcept
        : bytes_(bytes), base_(base) {}

    // Offset of the next byte, counted from the start of the larger input (see the constructor).
    std::size_t offset() const noexcept { return base_ + position_; }
    std::size_t remaining() const noexcept { return bytes_.size() - position_; }
    bool at_end() const noexcept { return position_ == bytes_.size(); }

    bool read_u1(std::uint8_t& out) noexcept {
        if (remaining() < 1) {
            return false;
        }
        out = bytes_[position_++];
        return true;
    }
    bool read_u2(std::uint16_t& out) noexcept {
        std::uint64_t value = 0;
        if (!read_big_endian(2, value)) {
            return false;
        }
        out = static_cast<std::uint16_t>(value);
        return true;
    }
    bool read_u4(std::uint32_t& out) noexcept {
        std::uint64_t value = 0;
        if (!read_big_endian(4, value)) {
            return false;
        }
        out = static_cast<std::uint32_t>(value);
        return true;
    }
    bool read_u8(std::uint64_t& out) noexcept { return read_big_endian(8, out); }

    // Signed forms: two's complement, as the JVM's branch offsets and immediates are.
    bool read_s1(std::int8_t& out) noexcept {
        std::uint8_t value = 0;
        if (!read_u1(value)) {
            return false;
        }
        out = static_cast<std::int8_t>(value);
        return true;
    }
    bool read_s2(std::int16_t& out) noexcept {
        std::uint16_t value = 0;
        if (!read_u2(value)) {
            return false;
        }
        out = static_cast<std::int16_t>(value);
        return true;
    }
    bool read_s4(std::int32_t& out) noexcept {
        std::uint32_t value = 0;
        if (!read_u4(value)) {
            return false;
        }
        out = static_cast<std::int32_t>(value);
        return true;
    }

    // The next `count` bytes as a view into the input (no copy).
    bool read_bytes(std::size_t count, std::span<const std::uint8_t>& out) noexcept {
        if (remaining() < count) {
            return false;
        }
        out = bytes_.subspan(position_, count);
        position_ += count;
        return true;
    }

    bool skip(std::size_t count) noexcept {
        if (remaining() < count) {
            return false;
        }
        position_ += count;
        return true;
    }

private:
    bool read_big_endian(std::size_t width, std::uint64_t& out) noexcept {
        if (remaining() < width) {
            return false;
        }
        std::uint64_t value = 0;
        for (std::size_t i = 0; i < width; ++i) {
            value = (value << 8) | bytes_[position_ + i];
        }
        position_ += width;
        out = value;
        return true;
    }

    std::span<const std::uint8_t> bytes_;
    std::size_t base_ = 0;
    std::size_t position_ = 0; // invariant: position_ <= bytes_.size()
};

} // namespace ojx::bytecode
