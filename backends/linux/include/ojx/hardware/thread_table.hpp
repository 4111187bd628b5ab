// Per-thread records of the hardware backend, found by thread id from inside a signal handler.
// Signal handlers can neither allocate nor lock, and thread_local storage in a shared object may allocate on
// first touch, so per-thread state lives in one preallocated table keyed by the kernel thread id.
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
            entry& e = entries_[(home(tid) + probe) & (Capacity - 1)];
            const pid_t current = e.tid.load(std::memory_order_relaxed);
            if (current == tid) return &e.state;
            if (current == empty || current == removed) {
                e.state = State{};
                e.tid.store(tid, std::memory_order_release);
                return &e.state;
            }
        }
        return nullptr;
    }

    // Signal-safe: the record of `tid`, or nullptr.
    State* find(pid_t tid) noexcept {
        for (std::size_t probe = 0; probe < Capacity; ++probe) {
            entry& e = entries_[(home(tid) + probe) & (Capacity - 1)];
            const pid_t current = e.tid.load(std::memory_order_acquire);
            if (current == tid) return &e.state;
            if (current == empty) return nullptr;
        }
        return nullptr;
    }

    // The record stays readable (a handler may hold it) until a later `add` reuses it.
    void remove(pid_t tid) noexcept {
        for (std::size_t probe = 0; probe < Capacity; ++probe) {
            entry& e = entries_[(home(tid) + probe) & (Capacity - 1)];
            const pid_t current = e.tid.load(std::memory_order_relaxed);
            if (current == tid) {
                e.tid.store(removed, std::memory_order_release);
                return;
            }
            if (current == empty) return;
        }
    }

    // Visits every live record (serialized with add/remove by the caller).
    template <class F>
    void for_each(F&& visit) noexcept {
        for (entry& e : entries_) {
            const pid_t tid = e.tid.load(std::memory_order_acquire);
            if (tid != empty && tid != removed) visit(tid, e.state);
        }
    }

private:
    static constexpr pid_t empty = 0;
    static constexpr pid_t removed = -1;
    static std::size_t home(pid_t tid) noexcept {
        return (static_cast<std::size_t>(tid) * 0x9E3779B97F4A7C15ULL) >> 40;
    }
    struct entry {
        std::atomic<pid_t> tid{empty};
        State state{};
    };
    std::array<entry, Capacity> entries_{};
};

} // namespace ojx::hardware
