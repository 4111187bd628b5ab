// The fingerprint of one whole object's contents: a 64-bit digest of every byte (two objects are identical iff
// their digests are equal, up to a collision chance of 2^-64 per pair), a digest per block of a fixed number of
// equal blocks (objects that differ in a few words still agree in most blocks: near-replicas), and whether every
// byte is zero. Read through a memory policy in fixed-size pieces, so that it allocates nothing and is safe
// wherever the policy's read is (fault-safe in the Linux backend; usable under a lock at a collection or in free).
//
// Reference fields. Contents are the object's bytes at the moment they are read, references included: a
// reference array, or an object with reference fields, is identical to another when both refer to the same
// objects — the same addresses — at the moments they are digested (Java's `==` on every element, never
// `equals`: two arrays of distinct but equal strings are not replicas). This survives moving collections because
// digests are taken only where no collection is moving objects (at a collection's start, in free(), at exit),
// and all objects digested at one collection's start see one heap state. Digests taken at different collections
// see a moved referent at different addresses, so reference-holding objects compared across collections err
// towards "different" (never a false replica, except where a referent died and another object came to sit at
// its address and in the same slot — a chance too small to matter).
#pragma once

#include "ojx/content_digest.hpp"
#include "ojx/sampler.hpp"
#include "ojx/types.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ojx {

// An object is divided into this many equal blocks for near-replica detection (a power of two, so that a block
// of a 1 KiB object is 32 bytes: four words).
inline constexpr std::size_t fingerprint_blocks = 32;

struct object_fingerprint {
    std::uint64_t digest = 0;  // of all the object's bytes and its size
    std::uint64_t size = 0;
    std::array<std::uint32_t, fingerprint_blocks> blocks{}; // low 32 bits of each block's digest
    bool all_zero = false;

    friend bool operator==(const object_fingerprint&, const object_fingerprint&) = default;
};

// Bytes of each block of an object of `size` bytes: a multiple of 8 (so that a block's digest does not depend on
// how it is read), the last blocks possibly shorter or empty.
inline std::uint64_t fingerprint_block_bytes(std::uint64_t size) noexcept {
    const std::uint64_t per_block = (size + fingerprint_blocks - 1) / fingerprint_blocks;
    return std::max<std::uint64_t>(8, (per_block + 7) / 8 * 8);
}

// How many blocks two fingerprints share (equal block digests at the same place). Only objects of the same size
// are divided alike; others share none.
inline std::size_t shared_blocks(const object_fingerprint& a, const object_fingerprint& b) noexcept {
    if (a.size != b.size) return 0;
    std::size_t shared = 0;
    for (std::size_t i = 0; i < fingerprint_blocks; ++i) shared += a.blocks[i] == b.blocks[i] ? 1 : 0;
    return shared;
}

// Reads [begin, begin + size) through `memory` and fingerprints it. False when a read failed (the fingerprint is
// then meaningless). No allocation: the bytes pass through a 4 KiB buffer on the stack, read whole (one read
// per 4 KiB: a read may be a system call) and split at block boundaries as they are digested.
template <memory_reader Memory>
bool fingerprint_object(Memory& memory, address begin, std::uint64_t size, object_fingerprint& out) noexcept {
    out = object_fingerprint{};
    out.size = size;
    const std::uint64_t block_bytes = fingerprint_block_bytes(size);
    alignas(8) unsigned char buffer[4096];
    // Each byte is digested once, into its block; the whole digest is the digest of the blocks' full 64-bit
    // digests and the size (two objects agree on it iff every block agrees, up to the digest's collision chance).
    // Digesting every byte a second time for the whole made a fingerprint cost twice as much (0.9 against
    // 1.9 GB/s for 4 KiB objects), and fingerprints are taken while a collection waits.
    content_digest whole;
    content_digest block;
    std::size_t block_index = 0;
    std::uint64_t block_end = std::min(block_bytes, size);
    std::uint64_t nonzero = 0;
    for (std::uint64_t at = 0; at < size;) {
        const auto piece = static_cast<std::size_t>(std::min<std::uint64_t>(sizeof buffer, size - at));
        if (!memory.read(begin + at, buffer, piece)) return false;
        std::size_t i = 0;
        for (; i + 8 <= piece; i += 8) {
            std::uint64_t word;
            std::memcpy(&word, buffer + i, 8);
            nonzero |= word;
        }
        for (; i < piece; ++i) nonzero |= buffer[i];
        // Block boundaries are multiples of 8 bytes, as are pieces but the last: digests do not depend on the split.
        for (std::size_t used = 0; used < piece;) {
            const auto part = static_cast<std::size_t>(std::min<std::uint64_t>(piece - used, block_end - (at + used)));
            block.update(buffer + used, part);
            used += part;
            if (at + used == block_end) {
                const std::uint64_t digest = block.value();
                out.blocks[block_index++] = static_cast<std::uint32_t>(digest);
                whole.update(&digest, sizeof digest);
                block = content_digest{};
                block_end = std::min(block_end + block_bytes, size);
            }
        }
        at += piece;
    }
    // Blocks past the end (a small object) are empty, and equal in every object of the size.
    whole.update(&size, sizeof size);
    out.digest = whole.value();
    out.all_zero = nonzero == 0;
    return true;
}

} // namespace ojx
