// read_memory: process_vm_readv(2) on our own pid, which copies through the kernel and fails with EFAULT where a
// load would fault. Reading one's own thread group needs no ptrace permission (the kernel checks same-thread-group
// first), so Yama and dumpability settings do not matter; only seccomp can forbid the call.
// Guarded loads: one `rep movsb` (below, in assembly, so that its address is known exactly) whose SIGSEGV or
// SIGBUS our handler answers by moving the pc to a landing that returns false. `rep movsb` is restartable: a
// fault leaves the pc on the instruction itself, whatever the byte it stopped at.
#include "ojx/hardware/fault_safe_read.hpp"

#include "ojx/hardware/arch_x86_64.hpp"
#include "ojx/hardware/handler_scope.hpp"

#include "ojx/hardware/signals.hpp"

#include <atomic>
#include <cerrno>
#include <csignal>

#include <pthread.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

// bool ojx_guarded_copy(void* out, const void* from, std::size_t size): out in rdi, from in rsi, size in rdx
// (System V). The direction flag is clear on entry to any function and to a signal handler.
asm(R"(
    .text
    .p2align 4
    .globl ojx_guarded_copy
    .hidden ojx_guarded_copy
    .type ojx_guarded_copy, @function
ojx_guarded_copy:
    movq %rdx, %rcx
    .globl ojx_guarded_copy_load
    .hidden ojx_guarded_copy_load
ojx_guarded_copy_load:
    rep movsb
    movl $1, %eax
    ret
    .globl ojx_guarded_copy_fault
    .hidden ojx_guarded_copy_fault
ojx_guarded_copy_fault:
    xorl %eax, %eax
    ret
    .size ojx_guarded_copy, .-ojx_guarded_copy
)");

extern "C" {
bool ojx_guarded_copy(void* out, const void* from, std::size_t size) noexcept;
extern const char ojx_guarded_copy_load[];
extern const char ojx_guarded_copy_fault[];
}

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

// The guard's handlers, never destroyed (a chained_handler's destructor would put the displaced handler back
// during exit, under a handler that may be reading), and whether they are installed.
template <class T>
union never_destroyed {
    T value;
    never_destroyed() : value() {}
    ~never_destroyed() {}
};
never_destroyed<chained_handler> segv_guard_storage;
never_destroyed<chained_handler> bus_guard_storage;
chained_handler& segv_guard = segv_guard_storage.value;
chained_handler& bus_guard = bus_guard_storage.value;
std::atomic<bool> guard_installed{false};

// Signal-safe: a fault at the guarded copy lands on its failure return; any other is the program's.
void on_fault(int signal, siginfo_t* info, void* raw_context) noexcept {
    {
        const handler_scope ours;
        auto& context = *static_cast<ucontext_t*>(raw_context);
        greg_t& pc = arch::pc_register(context);
        if (pc == reinterpret_cast<greg_t>(ojx_guarded_copy_load)) {
            pc = reinterpret_cast<greg_t>(ojx_guarded_copy_fault);
            return;
        }
    }
    (signal == SIGSEGV ? segv_guard : bus_guard).chain(signal, info, raw_context);
}

// Signal-safe: whether our handler is the process's for `signal` right now.
bool handler_in_place(int signal) noexcept {
    struct sigaction current {};
    return ::sigaction(signal, nullptr, &current) == 0 && (current.sa_flags & SA_SIGINFO) != 0 &&
           current.sa_sigaction == on_fault;
}

} // namespace

std::optional<std::string> install_fault_guard() {
    if (guard_installed.load(std::memory_order_acquire)) return std::nullopt;
    if (auto error = segv_guard.install(SIGSEGV, on_fault)) return error;
    if (auto error = bus_guard.install(SIGBUS, on_fault)) {
        segv_guard.uninstall();
        return error;
    }
    guard_installed.store(true, std::memory_order_release);
    return std::nullopt;
}

read_method read_method_for(const ucontext_t& interrupted) noexcept {
    if (!guard_installed.load(std::memory_order_acquire)) return read_method::system_call;
    if (sigismember(&interrupted.uc_sigmask, SIGSEGV) == 1 || sigismember(&interrupted.uc_sigmask, SIGBUS) == 1)
        return read_method::system_call;
    const errno_preserved keep_errno;
    return handler_in_place(SIGSEGV) && handler_in_place(SIGBUS) ? read_method::guarded_load
                                                                 : read_method::system_call;
}

read_method read_method_here() noexcept {
    if (!guard_installed.load(std::memory_order_acquire)) return read_method::system_call;
    sigset_t blocked;
    if (pthread_sigmask(SIG_BLOCK, nullptr, &blocked) != 0 || sigismember(&blocked, SIGSEGV) == 1 ||
        sigismember(&blocked, SIGBUS) == 1)
        return read_method::system_call;
    const errno_preserved keep_errno;
    return handler_in_place(SIGSEGV) && handler_in_place(SIGBUS) ? read_method::guarded_load
                                                                 : read_method::system_call;
}

bool read_memory(std::uint64_t from, void* out, std::size_t size, read_method method) noexcept {
    if (size == 0) {
        return true;
    }
    if (from + size < from) {
        return false; // wraps past the top of the address space
    }
    if (method == read_method::guarded_load) return ojx_guarded_copy(out, reinterpret_cast<const void*>(from), size);
    const errno_preserved keep_errno;
    const iovec local{out, size};
    const iovec remote{reinterpret_cast<void*>(from), size};
    // The kernel copies page by page and stops at the first unreadable one: a short count is a failure.
    const ssize_t copied = process_vm_readv(own_pid(), &local, 1, &remote, 1, 0);
    return copied >= 0 && static_cast<std::size_t>(copied) == size;
}

bool read_memory(std::uint64_t from, void* out, std::size_t size, const handler_reads& reads) noexcept {
    const bool may_load = reads.method == read_method::guarded_load &&
                          (reads.watched == nullptr || !reads.watched->overlaps(from, size));
    return read_memory(from, out, size, may_load ? read_method::guarded_load : read_method::system_call);
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
