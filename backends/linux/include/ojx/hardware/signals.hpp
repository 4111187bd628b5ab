// Signal plumbing for the hardware backend: pick a real-time signal nobody in the process uses, install a handler
// that remembers the handler it displaced, and hand signals that are not ours on to that earlier handler.
// The profiled program (or its runtime: a JVM installs many handlers) must keep working exactly as before.
#pragma once

#include <csignal>
#include <optional>
#include <string>

namespace ojx::hardware {

// A handler installed over whatever was there before, which it can chain to.
class chained_handler {
public:
    using handler_function = void (*)(int, siginfo_t*, void*);

    chained_handler() = default;
    chained_handler(const chained_handler&) = delete;
    chained_handler& operator=(const chained_handler&) = delete;
    ~chained_handler() { uninstall(); }

    // Where the handler runs: on the thread's alternate signal stack where it has one (SA_ONSTACK: for faults,
    // which may come from a stack overflow), or always on the interrupted code's stack.
    enum class stack { alternate, interrupted };

    // Installs `handler` for `signal` (SA_SIGINFO | SA_RESTART, and SA_ONSTACK for stack::alternate),
    // remembering the previous action; `also_block` are held off while it runs (our handlers block each other,
    // so none re-enters another). Returns an error message, or nothing on success.
    std::optional<std::string> install(int signal, handler_function handler, const sigset_t* also_block = nullptr,
                                       stack where = stack::alternate);
    // Restores the previous action, if this object installed one and nobody replaced ours since.
    void uninstall() noexcept;

    // Signal-safe: passes a signal that is not ours to the handler that was installed before ours. A default
    // or ignored disposition is honoured as the kernel would (default: re-raised with the default action for
    // signals whose default is to terminate or dump core; ignored: dropped).
    void chain(int signal, siginfo_t* info, void* context) const noexcept;

    int signal() const noexcept { return signal_; }
    // Whether the displaced disposition is the default one (nobody else handles this signal).
    bool displaced_default() const noexcept {
        return (previous_.sa_flags & SA_SIGINFO) == 0 && previous_.sa_handler == SIG_DFL;
    }
    bool installed() const noexcept { return signal_ != 0; }
    // Signal-safe (one sigaction query; errno preserved): whether ours is still the process's handler. A program
    // may install its own at any time.
    bool in_place() const noexcept;

private:
    int signal_ = 0;
    handler_function ours_ = nullptr;
    struct sigaction previous_ {};
};

// The first real-time signal in [SIGRTMIN + 2, SIGRTMAX] whose disposition is the default and that is not
// blocked in the calling thread (glibc keeps SIGRTMIN and SIGRTMIN + 1 for itself). None: nothing.
std::optional<int> choose_free_signal() noexcept;

} // namespace ojx::hardware
