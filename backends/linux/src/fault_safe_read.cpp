// read_memory: process_vm_readv(2) on our own pid, which copies through the kernel and fails with EFAULT where a
// load would fault. Reading one's own thread group needs no ptrace permission (the kernel checks same-thread-group
// first), so Yama and dumpability settings do not matter; only seccomp can forbid the call.
#include "ojx/hardware/fault_safe_read.hpp"

#include <atomic>
#include <cerrno>

#include <pthread.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

namespace ojx::hardware {

namespace {

// 0 until the load-time initialiser below has run; read_memory then asks the kernel each time.
std::atomic<pid_t> cached_pid{0};

void refresh_in_fork_child() noexcept { cached_pid.store(getpid(), std::memory_order_relaxed); }

// Runs at load (library or program start), before any handler can read memory, and registers the refresh that
// keeps the cache right in children made by fork().
[[maybe_unused]] const bool pid_cache_ready = [] {
    refresh_in_fork_child();
    pthread_atfork(nullptr, nullptr, refresh_in_fork_child);
    return true;
}();

pid_t own_pid() noexcept {
    const pid_t pid = cached_pid.load(std::memory_order_relaxed);
    return pid != 0 ? pid : getpid();
}

// The errno a handler found is the interrupted code's; put it back whatever the system call did.
class errno_preserved {
public:
    errno_preserved() noexcept : saved_(errno) {}
    ~errno_preserved() { errno = saved_; }
    errno_preserved(const errno_preserved&) = delete;
    errno_preserved& operator=(const errno_preserved&) = delete;

private:
    int saved_;
};

} // namespace

bool read_memory(std::uint64_t from, void* out, std::size_t size) noexcept {
    if (size == 0) {
        return true;
    }
    if (from + size < from) {
        return false; // wraps past the top of the address space
    }
    const errno_preserved keep_errno;
    const iovec local{out, size};
    const iovec remote{reinterpret_cast<void*>(from), size};
    // The kernel copies page by page and stops at the first unreadable one: a short count is a failure.
    const ssize_t copied = process_vm_readv(own_pid(), &local, 1, &remote, 1, 0);
    return copied >= 0 && static_cast<std::size_t>(copied) == size;
}

void refresh_cached_pid() noexcept {
    const errno_preserved keep_errno;
    refresh_in_fork_child();
}

bool memory_reading_works() noexcept {
    static constexpr std::uint64_t probe_value = 0x6f6a782d70726f62; // "ojx-prob"
    std::uint64_t copy = 0;
    return read_memory(reinterpret_cast<std::uint64_t>(&probe_value), &copy, sizeof copy) && copy == probe_value;
}

} // namespace ojx::hardware
