// Reading this process's memory without ever faulting, for the sample and trap handlers: the value at a sampled
// address, the instruction bytes before a trapping pc. The address comes from a decoded instruction or a
// watchpoint and may be unmapped, PROT_NONE or freed by another thread a moment ago, so a plain load could
// raise SIGSEGV inside a signal handler. process_vm_readv(2) on our own pid makes the kernel do the copy and
// report EFAULT instead.
#pragma once

#include "ojx/sampler.hpp"

#include <cstddef>
#include <cstdint>

namespace ojx::hardware {

// Copies the `size` bytes at `from` into `out`. Returns false, leaving `out` unspecified, when any byte of
// [from, from + size) is not readable (unmapped, PROT_NONE, non-canonical, wrapping past 2^64): a read that
// stops part-way is a failure, never a short result. size 0 succeeds.
// Signal-safe: one system call, no allocation, no lock; errno is preserved.
// Cost: one process_vm_readv, 0.6–1 µs for 8 or 64 bytes on a Firecracker VM (test_fault_safe_read prints it).
// The pid is cached at load and refreshed in the child by a pthread_atfork handler, which saves a getpid system
// call (≈ 20 % of the cost) per read. A child made without glibc's fork() (raw clone(2) without CLONE_VM, or
// _Fork()) would read its parent's memory until it calls refresh_cached_pid().
bool read_memory(std::uint64_t from, void* out, std::size_t size) noexcept;

// Re-reads the pid used by read_memory. Only needed after creating a process behind glibc's back (see above).
// Signal-safe.
void refresh_cached_pid() noexcept;

// True when read_memory works in this process. process_vm_readv can be forbidden (seccomp profiles of some
// container runtimes, kernels without CONFIG_CROSS_MEMORY_ATTACH); the backend calls this at start-up and, if it
// fails, does without reading memory in handlers. Signal-safe.
bool memory_reading_works() noexcept;

// read_memory as an ojx::memory_reader, for the profiler's `memory` policy and decode_previous_access.
struct process_memory {
    // Signal-safe: see read_memory.
    bool read(std::uint64_t where, void* out, std::size_t size) noexcept { return read_memory(where, out, size); }
};

static_assert(ojx::memory_reader<process_memory>);

} // namespace ojx::hardware
