// A synthetic heap for the emulation backend: real bytes at made-up addresses, a bump allocator, frees, and a
// sliding (moving) collection, so the profiler can be driven through allocation, access, free and GC moves
// with every byte known. It is also the profiler's memory reader in emulation.
#pragma once

#include "ojx/types.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace ojx::emulation {

class synthetic_heap {
public:
    struct move {
        address from = 0;
        address to = 0;
    };

    // `base` is where the heap pretends to live; `capacity` bytes of real memory back it. The last
    // `static_bytes` of them are the program's static data: read and written as the rest, never allocated.
    static constexpr address default_base = 0x7f0000000000ULL;

    explicit synthetic_heap(std::size_t capacity, address base = default_base, std::size_t static_bytes = 0)
        : base_(base), bytes_(capacity, std::byte{0}), allocatable_(capacity - std::min(static_bytes, capacity)) {}

    address base() const noexcept { return base_; }
    std::size_t capacity() const noexcept { return bytes_.size(); }
    // Where the static data starts: past every object.
    address statics() const noexcept { return base_ + allocatable_; }
    std::size_t used() const noexcept { return top_; }
    std::size_t live_objects() const noexcept { return live_.size(); }
    // The live objects, begin → size: the ground truth a heap rebuilt from a trace is checked against.
    const std::map<address, std::uint64_t>& live() const noexcept { return live_; }

    // Bump allocation, zero-filled, 16-byte aligned. None when the heap is full (collect, then retry).
    std::optional<address> allocate(std::uint64_t size) {
        const std::uint64_t aligned = (size + 15) / 16 * 16;
        if (size == 0 || aligned > allocatable_ - top_) return std::nullopt;
        const address where = base_ + top_;
        std::memset(&bytes_[top_], 0, aligned);
        top_ += aligned;
        live_.emplace(where, size);
        return where;
    }

    bool release(address where) { return live_.erase(where) == 1; }

    // Slides every live object down over the dead ones, in address order, and reports the moves (objects
    // that stay in place are not reported). Afterwards allocation continues after the last live object.
    std::vector<move> compact() {
        std::vector<move> moves;
        std::map<address, std::uint64_t> moved;
        std::size_t next = 0;
        for (const auto& [where, size] : live_) {
            const std::size_t from = static_cast<std::size_t>(where - base_);
            const std::uint64_t aligned = (size + 15) / 16 * 16;
            if (from != next) {
                std::memmove(&bytes_[next], &bytes_[from], size);
                moves.push_back({where, base_ + next});
            }
            moved.emplace(base_ + next, size);
            next += aligned;
        }
        live_ = std::move(moved);
        top_ = next;
        return moves;
    }

    bool contains(address where, std::size_t size) const noexcept {
        return where >= base_ && size <= bytes_.size() && where - base_ <= bytes_.size() - size;
    }

    // The memory_reader contract: never faults, false outside the heap. Signal-safe. Not inlined: inlined into a
    // caller whose buffer bounds the size (the profiler's window digest), GCC expands the copy as `rep movsq`,
    // whose start-up costs more than copying a 64-byte window; the library's memcpy uses vector moves.
    [[gnu::noinline]] bool read(address where, void* out, std::size_t size) const noexcept {
        if (!contains(where, size)) return false;
        std::memcpy(out, &bytes_[where - base_], size);
        return true;
    }

    bool write(address where, const void* in, std::size_t size) noexcept {
        if (!contains(where, size)) return false;
        std::memcpy(&bytes_[where - base_], in, size);
        return true;
    }

    std::uint64_t load(address where, std::uint8_t width) const noexcept {
        std::uint64_t value = 0;
        read(where, &value, width);
        return value;
    }

    void store(address where, std::uint8_t width, std::uint64_t value) noexcept { write(where, &value, width); }

private:
    address base_;
    std::vector<std::byte> bytes_;
    std::size_t allocatable_;
    std::size_t top_ = 0;
    std::map<address, std::uint64_t> live_; // begin → size
};

} // namespace ojx::emulation
