// A 64-bit digest of a byte range, so that a comparison can look at a window of an object instead of one word.
// Objects that agree at one word but differ nearby (partial replicas: a sparse row differing in a few
// elements) then compare different. Not cryptographic; collisions only make two windows look equal.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ojx {

class content_digest {
public:
    // Signal-safe.
    void update(const void* data, std::size_t size) noexcept {
        const auto* bytes = static_cast<const unsigned char*>(data);
        length_ += size;
        while (size >= 8) {
            std::uint64_t word;
            std::memcpy(&word, bytes, 8);
            mix(word);
            bytes += 8;
            size -= 8;
        }
        if (size > 0) {
            std::uint64_t word = 0;
            std::memcpy(&word, bytes, size);
            mix(word ^ (static_cast<std::uint64_t>(size) << 56));
        }
    }

    std::uint64_t value() const noexcept {
        std::uint64_t h = state_ ^ length_;
        h ^= h >> 33;
        h *= 0xff51afd7ed558ccdULL;
        h ^= h >> 33;
        h *= 0xc4ceb9fe1a85ec53ULL;
        return h ^ (h >> 33);
    }

private:
    void mix(std::uint64_t word) noexcept {
        state_ ^= word * 0x9e3779b97f4a7c15ULL;
        state_ = ((state_ << 31) | (state_ >> 33)) * 0xbf58476d1ce4e5b9ULL;
    }

    std::uint64_t state_ = 0x243f6a8885a308d3ULL;
    std::uint64_t length_ = 0;
};

} // namespace ojx
