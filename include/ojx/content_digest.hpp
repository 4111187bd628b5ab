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
    // Signal-safe. The digest depends on the bytes only, not on how they are split across calls, as long as
    // every call but the last passes a multiple of 8 bytes.
    void update(const void* data, std::size_t size) noexcept {
        const auto* bytes = static_cast<const unsigned char*>(data);
        length_ += size;
        // Consecutive words go to four independent lanes, so their multiplies overlap instead of forming one
        // dependency chain: a 64-byte window costs two rounds of latency, not eight. The lanes are taken into
        // locals in the order the next words reach them: indexed by next_lane_ inside the loop, they stay in
        // memory, and every multiply waits for a store and a reload.
        if (size >= 32) {
            std::uint64_t lane[4];
            for (std::size_t i = 0; i < 4; ++i) lane[i] = lanes_[(next_lane_ + i) % 4];
            do {
                std::uint64_t words[4];
                std::memcpy(words, bytes, 32);
                for (std::size_t i = 0; i < 4; ++i) mix(lane[i], words[i]);
                bytes += 32;
                size -= 32;
            } while (size >= 32);
            for (std::size_t i = 0; i < 4; ++i) lanes_[(next_lane_ + i) % 4] = lane[i];
        }
        while (size >= 8) {
            std::uint64_t word;
            std::memcpy(&word, bytes, 8);
            mix_next(word);
            bytes += 8;
            size -= 8;
        }
        if (size > 0) {
            std::uint64_t word = 0;
            std::memcpy(&word, bytes, size);
            mix_next(word ^ (static_cast<std::uint64_t>(size) << 56));
        }
    }

    std::uint64_t value() const noexcept {
        std::uint64_t h = lanes_[0];
        for (std::size_t i = 1; i < 4; ++i) mix(h, lanes_[i]);
        h ^= length_;
        h ^= h >> 33;
        h *= 0xff51afd7ed558ccdULL;
        h ^= h >> 33;
        h *= 0xc4ceb9fe1a85ec53ULL;
        return h ^ (h >> 33);
    }

private:
    static void mix(std::uint64_t& lane, std::uint64_t word) noexcept {
        lane ^= word * 0x9e3779b97f4a7c15ULL;
        lane = ((lane << 31) | (lane >> 33)) * 0xbf58476d1ce4e5b9ULL;
    }

    void mix_next(std::uint64_t word) noexcept {
        mix(lanes_[next_lane_], word);
        next_lane_ = (next_lane_ + 1) % 4;
    }

    // Distinct seeds, so that the same words in other lanes give another digest.
    std::uint64_t lanes_[4] = {0x243f6a8885a308d3ULL, 0x13198a2e03707344ULL, 0xa4093822299f31d0ULL,
                               0x082efa98ec4e6c89ULL};
    std::size_t next_lane_ = 0;
    std::uint64_t length_ = 0;
};

} // namespace ojx
