// A lock-free "certainly not" in front of the native agent's set of tracked addresses (allocation_sampling.hpp):
// nearly every free the agent sees is of an object it never tracked, and this answers such a free with one hash
// and one relaxed load, without a lock, so that frees on many threads share only cache lines that are written
// when a tracked object comes or goes.
//
// A counting filter: an array of one-byte counters, each counting the addresses in the set that hash to it. An
// address's counter is incremented before the address reaches the program and decremented after the address left
// the set, so a counter is never below the number of set members that hash to it: 0 means "not in the set", any
// other value "maybe" (the set answers exactly).
//
// Memory order. A free of address a reads a's counter with a relaxed load, and must not read 0 while a is in the
// set. a's increment is sequenced before malloc returned a; the program frees a only after that return (on the same
// thread, or on another one that the program's own synchronization orders after it: otherwise its free would race
// with the allocator's own writes to the block), so the increment happens before the load, and by write-read
// coherence the load reads the increment or a later value of the counter. a's decrement is sequenced after the
// load, in the same free, so the load cannot read it or anything after it. Every other address b's increment and
// decrement are read-modify-writes, ordered in the counter's modification order as they happen (increment before
// decrement: b's free is ordered after b's malloc too) and never lost, so each value between a's increment and a's
// decrement counts a and is at least 1. No stronger order than relaxed is needed, on any architecture.
//
// Saturation: a counter that reaches 255 stays there (neither incremented nor decremented again), a permanent
// "maybe" for its slot, so it never wraps to 0 while addresses are in the set. It takes 255 live tracked blocks
// whose granules (below) are equal modulo 2^20: with the default threshold, at least 255 GiB of heap, every block of
// it tracked. A saturated slot only sends its frees to the set's lock, where every free went without this filter.
//
// Size: 2^20 counters, 1 MiB, static and zero-initialized, so a page is only backed once a free lands in it. The
// slot is the address's 1 KiB granule, modulo 2^20 (1 GiB of address space). Every free asks the filter, so its
// slots follow the heap's layout: a heap of N MiB reads N KiB of the filter, which stays in cache while the
// program's own objects stream through it (a hash scattering neighbouring blocks over the filter makes that load a
// cache miss on nearly every free: bench/RESULTS.md, 2026-11-26). Blocks at or above the default 1 KiB threshold never start in one granule,
// so tracked blocks share a counter only 1 GiB apart (or with a lower threshold=); a small block freed from a
// granule where a tracked one starts gets a "maybe", which the set answers.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace ojx::preload {

class address_filter {
public:
    static constexpr unsigned granule_bits = 10;
    static constexpr unsigned slot_bits = 20;
    static constexpr std::size_t slot_count = std::size_t{1} << slot_bits;
    static constexpr std::uint8_t saturated = 255;

    // False when `address` is certainly not counted; async-signal-safe, lock-free, one relaxed load.
    bool may_contain(std::uintptr_t address) const noexcept {
        return slots_[slot_of(address)].load(std::memory_order_relaxed) != 0;
    }
    // Counts `address` (once per time it enters the set).
    void add(std::uintptr_t address) noexcept {
        std::atomic<std::uint8_t>& slot = slots_[slot_of(address)];
        std::uint8_t count = slot.load(std::memory_order_relaxed);
        while (count != saturated &&
               !slot.compare_exchange_weak(count, static_cast<std::uint8_t>(count + 1), std::memory_order_relaxed)) {
        }
    }
    // Uncounts `address`, which was counted by add and not uncounted since: its counter is at least 1.
    void remove(std::uintptr_t address) noexcept {
        std::atomic<std::uint8_t>& slot = slots_[slot_of(address)];
        std::uint8_t count = slot.load(std::memory_order_relaxed);
        while (count != saturated && count != 0 &&
               !slot.compare_exchange_weak(count, static_cast<std::uint8_t>(count - 1), std::memory_order_relaxed)) {
        }
    }

    static std::size_t slot_of(std::uintptr_t address) noexcept {
        return static_cast<std::size_t>((address >> granule_bits) & (slot_count - 1));
    }

private:
    std::atomic<std::uint8_t> slots_[slot_count]{};
};

} // namespace ojx::preload
