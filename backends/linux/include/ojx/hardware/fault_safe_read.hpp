// Reading this process's memory without ever faulting, for the sample and trap handlers: the value at a sampled
// address, the instruction bytes before a trapping pc. The address comes from a decoded instruction or a
// watchpoint and may be unmapped, PROT_NONE or freed by another thread a moment ago, so a plain load could
// raise SIGSEGV inside a signal handler. Two ways to read:
//  * a system call: process_vm_readv(2) on our own pid makes the kernel do the copy and report EFAULT instead.
//    Always safe, and 1.7–3.4 µs on a Firecracker VM: a sample needs about seven reads.
//  * a guarded load (as async-profiler's SafeAccess does): one copy instruction whose fault our SIGSEGV/SIGBUS
//    handler turns into a failed read, ≈ 5 ns (bench/RESULTS.md, 2026-11-23). It needs that handler to be the
//    process's at the moment of the read, and neither signal blocked (the kernel kills a thread that faults with
//    SIGSEGV blocked), so a handler checks both before it reads this way (read_method_for) and falls back to the
//    system call otherwise. Faults that are not ours go on to the handler we displaced, or to the default
//    action, as without us.
#pragma once

#include "ojx/sampler.hpp"

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include <ucontext.h>

namespace ojx::hardware {

enum class read_method : std::uint8_t {
    system_call,  // process_vm_readv
    guarded_load, // only where read_method_for said so, in the same handler invocation
};

// What one thread's debug registers watch right now, kept by that thread's handlers as they point them (a slot
// whose `end` is 0 watches nothing). A guarded load by that thread inside one of these ranges would trap: the
// trap's signal is blocked while our handler runs, so it waits and enters the handler again as soon as it
// returns — which reads the word again, for ever. So guarded reads that overlap a watched range go by system
// call instead: the kernel copies through its own mapping, which no user debug register watches.
// Written only by the owning thread (or, with no sampler, by the thread that arms); relaxed atomics.
struct watched_ranges {
    static constexpr std::size_t capacity = 8;
    std::array<std::atomic<std::uint64_t>, capacity> begin{};
    std::array<std::atomic<std::uint64_t>, capacity> end{};

    watched_ranges() = default;
    // A fresh record (the thread table reuses records by assignment): nothing watched.
    watched_ranges(const watched_ranges&) noexcept {}
    watched_ranges& operator=(const watched_ranges&) noexcept {
        for (auto& stop : end) stop.store(0, std::memory_order_relaxed);
        return *this;
    }

    void watch(std::size_t slot, std::uint64_t from, std::uint64_t length) noexcept {
        end[slot].store(0, std::memory_order_relaxed);
        begin[slot].store(from, std::memory_order_relaxed);
        end[slot].store(from + length, std::memory_order_relaxed);
    }
    void clear(std::size_t slot) noexcept { end[slot].store(0, std::memory_order_relaxed); }
    // Signal-safe.
    bool overlaps(std::uint64_t from, std::size_t size) const noexcept {
        for (std::size_t slot = 0; slot < capacity; ++slot) {
            const std::uint64_t stop = end[slot].load(std::memory_order_relaxed);
            if (stop != 0 && from < stop && begin[slot].load(std::memory_order_relaxed) < from + size) return true;
        }
        return false;
    }
};

// How a handler invocation may read memory: the method read_method_for chose, and the ranges its own thread's
// debug registers watch (null: none), which no guarded load may touch.
struct handler_reads {
    read_method method = read_method::system_call;
    const watched_ranges* watched = nullptr;
};

// Copies the `size` bytes at `from` into `out`. Returns false, leaving `out` unspecified, when any byte of
// [from, from + size) is not readable (unmapped, PROT_NONE, non-canonical, wrapping past 2^64): a read that
// stops part-way is a failure, never a short result. size 0 succeeds.
// Signal-safe: one system call or one guarded copy, no allocation, no lock; errno is preserved.
// The pid is cached at load and refreshed in the child by a pthread_atfork handler, which saves a getpid system
// call (≈ 20 % of the cost) per read. A child made without glibc's fork() (raw clone(2) without CLONE_VM, or
// _Fork()) would read its parent's memory until it calls refresh_cached_pid().
bool read_memory(std::uint64_t from, void* out, std::size_t size,
                 read_method method = read_method::system_call) noexcept;
// The same, as `reads` allows: a guarded load only where it overlaps none of the watched ranges.
bool read_memory(std::uint64_t from, void* out, std::size_t size, const handler_reads& reads) noexcept;

// Installs the SIGSEGV and SIGBUS handlers that make guarded loads fail instead of fault, each chaining to the
// handler it displaces. Not signal-safe. Returns an error message, or nothing on success (also when installed).
// The guard is never removed, not even at exit: a handler on another thread may be in the middle of a guarded
// load at any moment.
std::optional<std::string> install_fault_guard();

// Signal-safe: how a handler that interrupted `interrupted` may read memory until it returns. guarded_load when
// the guard is installed, both of its handlers are still the process's (two sigaction queries: a program may
// install its own at any time) and the interrupted code blocks neither signal (our handlers block neither);
// system_call otherwise.
read_method read_method_for(const ucontext_t& interrupted) noexcept;
// Signal-safe: the same for code outside our handlers, on the calling thread (its own signal mask).
read_method read_method_here() noexcept;

// Re-reads the pid used by read_memory. Only needed after creating a process behind glibc's back (see above).
// Signal-safe.
void refresh_cached_pid() noexcept;

// True when read_memory by system call works in this process. process_vm_readv can be forbidden (seccomp profiles
// of some container runtimes, kernels without CONFIG_CROSS_MEMORY_ATTACH); there every system-call read fails as
// unreadable (counted, never a fault), while guarded loads still work. The backend does not consult it; the tests
// use it to check the machine. Signal-safe.
bool memory_reading_works() noexcept;

// read_memory as an ojx::memory_reader, for the profiler's `memory` policy and decode_previous_access. A handler
// sets `reads` before it reads and puts the default back before it returns.
struct process_memory {
    handler_reads reads{};
    // Code outside the handlers may leave `reads` to be chosen at the first read, by choose(chooser): choosing
    // costs four system calls (hardware_backend::reads_here), and most digests at an object's death read nothing
    // (the digest budgets leave them out). Handlers set `reads` and leave `choose` null.
    handler_reads (*choose)(const void* chooser) noexcept = nullptr;
    const void* chooser = nullptr;
    // Signal-safe (when `choose` is): see read_memory.
    bool read(std::uint64_t where, void* out, std::size_t size) noexcept {
        if (choose != nullptr) {
            reads = choose(chooser);
            choose = nullptr;
        }
        return read_memory(where, out, size, reads);
    }
};

static_assert(ojx::memory_reader<process_memory>);

} // namespace ojx::hardware
