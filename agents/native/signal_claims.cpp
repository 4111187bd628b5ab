// The native agent's view of the program's signal handlers: sigaction and signal are interposed so that, when the
// program installs its own handler for a signal ojx samples or traps with (SIGTRAP, ojx's real-time signal), ojx
// goes quiet on every thread before the handler is in place, instead of the program receiving ojx's signals
// (hardware_backend::before_program_handler); that call is passed on unchanged. SIGTERM, SIGINT and SIGHUP go to
// exit_signals.hpp, where ojx's catcher may stand in for the default action.
#include "exit_signals.hpp"

#include "ojx/hardware/hardware_backend.hpp"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>

extern "C" {

int sigaction(int signal, const struct sigaction* action, struct sigaction* previous) {
    using sigaction_function = int (*)(int, const struct sigaction*, struct sigaction*);
    static const auto real = reinterpret_cast<sigaction_function>(dlsym(RTLD_NEXT, "sigaction"));
    if (int result = 0; ojx::preload::exit_signal_action(signal, action, previous, result)) return result;
    if (action != nullptr) ojx::hardware::hardware_backend::before_program_handler(signal, *action);
    return real(signal, action, previous);
}

// glibc's signal() installs through its internal sigaction, which the interposition above does not see.
sighandler_t signal(int signal, sighandler_t handler) {
    using signal_function = sighandler_t (*)(int, sighandler_t);
    static const auto real = reinterpret_cast<signal_function>(dlsym(RTLD_NEXT, "signal"));
    struct sigaction action {};
    action.sa_handler = handler;
    // glibc's signal(): BSD semantics, the signal blocked while its handler runs, system calls restarted.
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    sigaddset(&action.sa_mask, signal);
    struct sigaction previous {};
    if (handler == SIG_ERR) {
        errno = EINVAL;
        return SIG_ERR;
    }
    if (int result = 0; ojx::preload::exit_signal_action(signal, &action, &previous, result))
        return result == 0 ? previous.sa_handler : SIG_ERR;
    ojx::hardware::hardware_backend::before_program_handler(signal, action);
    return real(signal, handler);
}

} // extern "C"
