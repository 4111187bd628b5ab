// Per-thread records of the hardware backend, found by thread id from inside a signal handler.
// Signal handlers can neither allocate nor lock, and thread_local storage in a shared object may allocate on
// first touch, so per-thread state lives in one preallocated table keyed by the kernel thread id.
//
// The thread ids are an array of their own, apart from the records: probing and for_each read only that array
// (16 KiB at the default capacity), so a record's pages are touched only once a thread uses it. With the ids
// inside the records, every for_each read a word on every page of the whole table (3 MiB of the backend's), and
// those pages then counted in the profiled process's resident memory.
#pragma once

#include <sys/types.h>

#include <array>
#include <atomic>
#include <cstddef>

namespace ojx::hardware {

template <class State, std::size_t Capacity = 4096>
class thread_table {
    static_assert((Capacity & (Capacity - 1)) == 0, "capacity must be a power of two");

public:
    // Claims a record for `tid`; nullptr when the table is full. Registration and removal must be serialized by
    // the caller (they run outside signal handlers); lookups may run concurrently from any signal handler.
    State* add(pid_t tid) noexcept {
        for (std::size_t probe = 0; probe < Capacity; ++probe) {
            const std::size_t i = (home(tid) + probe) & (Capacity - 1);
            const pid_t current = tids_[i].load(std::memory_order_relaxed);
            if (current == tid) return &states_[i];
            if (current == empty || current == removed) {
                states_[i] = State{};
                tids_[i].store(tid, std::memory_order_release);
                return &states_[i];
            }
        }
        return nullptr;
    }

    // Signal-safe: the record of `tid`, or nullptr.
    State* find(pid_t tid) noexcept {
        for (std::size_t probe = 0; probe < Capacity; ++probe) {
            const std::size_t i = (home(tid) + probe) & (Capacity - 1);
            const pid_t current = tids_[i].load(std::memory_order_acquire);
            if (current == tid) return &states_[i];
            if (current == empty) return nullptr;
        }
        return nullptr;
    }

    // The record stays readable (a handler may hold it) until a later `add` reuses it.
    void remove(pid_t tid) noexcept {
        for (std::size_t probe = 0; probe < Capacity; ++probe) {
            const std::size_t i = (home(tid) + probe) & (Capacity - 1);
            const pid_t current = tids_[i].load(std::memory_order_relaxed);
            if (current == tid) {
                tids_[i].store(removed, std::memory_order_release);
                return;
            }
            if (current == empty) return;
        }
    }

    // Visits every live record (serialized with add/remove by the caller).
    template <class F>
    void for_each(F&& visit) noexcept {
        for (std::size_t i = 0; i < Capacity; ++i) {
            const pid_t tid = tids_[i].load(std::memory_order_acquire);
            if (tid != empty && tid != removed) visit(tid, states_[i]);
        }
    }

private:
    static constexpr pid_t empty = 0;
    static constexpr pid_t removed = -1;
    static std::size_t home(pid_t tid) noexcept {
        return (static_cast<std::size_t>(tid) * 0x9E3779B97F4A7C15ULL) >> 40;
    }
    std::array<std::atomic<pid_t>, Capacity> tids_{}; // empty (0) until added
    std::array<State, Capacity> states_{};
};

} // namespace ojx::hardware
