#include "child_process.hpp"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iterator>

extern char** environ;

namespace ojx::tool {

namespace {

constexpr int forwarded_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

volatile sig_atomic_t child_pid = 0;

// A signal from the terminal (si_code SI_KERNEL) went to the whole foreground process group, child included;
// one sent to ojx alone (kill, timeout, a supervisor) is passed on.
void forward(int signal, siginfo_t* info, void*) {
    const int saved_errno = errno;
    if (child_pid > 0 && info != nullptr && info->si_code != SI_KERNEL) kill(child_pid, signal);
    errno = saved_errno;
}

} // namespace

child_exit run_child(const std::vector<std::string>& command) {
    child_exit result;
    std::vector<char*> argv;
    for (const std::string& word : command) argv.push_back(const_cast<char*>(word.c_str()));
    argv.push_back(nullptr);

    // Blocked until the child's pid is known, so that none is lost; the child starts with ojx's original mask
    // and the default actions.
    sigset_t forwarded, original;
    sigemptyset(&forwarded);
    for (const int signal : forwarded_signals) sigaddset(&forwarded, signal);
    sigprocmask(SIG_BLOCK, &forwarded, &original);
    struct sigaction action {};
    action.sa_sigaction = forward;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    struct sigaction previous[std::size(forwarded_signals)];
    for (std::size_t i = 0; i < std::size(forwarded_signals); ++i)
        sigaction(forwarded_signals[i], &action, &previous[i]);

    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    posix_spawnattr_setsigmask(&attributes, &original);
    posix_spawnattr_setsigdefault(&attributes, &forwarded);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    const int spawned = posix_spawnp(&result.pid, argv[0], nullptr, &attributes, argv.data(), environ);
    posix_spawnattr_destroy(&attributes);

    if (spawned != 0) {
        result.error = "cannot run '" + command.front() + "': " + std::strerror(spawned);
    } else {
        child_pid = result.pid;
        sigprocmask(SIG_SETMASK, &original, nullptr); // signals that came meanwhile are forwarded now
        int status = 0;
        while (waitpid(result.pid, &status, 0) < 0 && errno == EINTR) {
        }
        if (WIFSIGNALED(status)) {
            result.signal = WTERMSIG(status);
            result.exit_code = 128 + result.signal;
        } else {
            result.exit_code = WEXITSTATUS(status);
        }
        sigprocmask(SIG_BLOCK, &forwarded, nullptr);
        child_pid = 0;
    }
    for (std::size_t i = 0; i < std::size(forwarded_signals); ++i)
        sigaction(forwarded_signals[i], &previous[i], nullptr);
    sigprocmask(SIG_SETMASK, &original, nullptr);
    return result;
}

} // namespace ojx::tool
