#include "ojx/hardware/signals.hpp"

#include <cerrno>
#include <cstring>
#include <pthread.h>
#include <unistd.h>

namespace ojx::hardware {

std::optional<std::string> chained_handler::install(int signal, handler_function handler,
                                                    const sigset_t* also_block, stack where) {
    if (installed()) return std::string("a handler is already installed by this object");
    struct sigaction action {};
    action.sa_sigaction = handler;
    action.sa_flags = SA_SIGINFO | SA_RESTART | (where == stack::alternate ? SA_ONSTACK : 0);
    if (also_block != nullptr)
        action.sa_mask = *also_block;
    else
        sigemptyset(&action.sa_mask);
    if (::sigaction(signal, &action, &previous_) != 0)
        return std::string("sigaction(") + std::to_string(signal) + "): " + std::strerror(errno);
    signal_ = signal;
    ours_ = handler;
    return std::nullopt;
}

void chained_handler::uninstall() noexcept {
    if (!installed()) return;
    struct sigaction current {};
    // Someone who installed a handler after us may chain to ours: leave theirs (and so ours) in place.
    if (::sigaction(signal_, nullptr, &current) == 0 && (current.sa_flags & SA_SIGINFO) != 0 &&
        current.sa_sigaction == ours_)
        ::sigaction(signal_, &previous_, nullptr);
    signal_ = 0;
}

bool chained_handler::in_place() const noexcept {
    if (!installed()) return false;
    const int saved = errno;
    struct sigaction current {};
    const bool ours = ::sigaction(signal_, nullptr, &current) == 0 && (current.sa_flags & SA_SIGINFO) != 0 &&
                      current.sa_sigaction == ours_;
    errno = saved;
    return ours;
}

// Signal-safe.
void chained_handler::chain(int signal, siginfo_t* info, void* context) const noexcept {
    if ((previous_.sa_flags & SA_SIGINFO) != 0) {
        if (previous_.sa_sigaction != nullptr) previous_.sa_sigaction(signal, info, context);
        return;
    }
    if (previous_.sa_handler == SIG_IGN) return;
    if (previous_.sa_handler == SIG_DFL) {
        // Default actions that do nothing (SIGCHLD, SIGURG, SIGWINCH) stay nothing. For the others, the program
        // would have died: let it, with the default action, as it would without us.
        if (signal == SIGCHLD || signal == SIGURG || signal == SIGWINCH || signal == SIGCONT) return;
        struct sigaction fallback {};
        fallback.sa_handler = SIG_DFL;
        sigemptyset(&fallback.sa_mask);
        ::sigaction(signal, &fallback, nullptr);
        ::raise(signal);
        return;
    }
    previous_.sa_handler(signal);
}

std::optional<int> choose_free_signal() noexcept {
    sigset_t blocked;
    if (pthread_sigmask(SIG_BLOCK, nullptr, &blocked) != 0) sigemptyset(&blocked);
    for (int candidate = SIGRTMIN + 2; candidate <= SIGRTMAX; ++candidate) {
        struct sigaction current {};
        if (::sigaction(candidate, nullptr, &current) != 0) continue;
        const bool default_disposition = (current.sa_flags & SA_SIGINFO) == 0 && current.sa_handler == SIG_DFL;
        if (default_disposition && sigismember(&blocked, candidate) == 0) return candidate;
    }
    return std::nullopt;
}

} // namespace ojx::hardware
