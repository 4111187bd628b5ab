// Ending by SIGTERM, SIGINT or SIGHUP with a profile (exit_signals.hpp).
//
// The catcher only records the signal and posts a semaphore (async-signal-safe), then returns: writing the profile
// takes locks and allocates, and the interrupted code may hold malloc's lock or the profiler's, so the handler
// never writes it. The agent's thread, waiting on that semaphore with every signal blocked, has a writer thread
// write the profile, waits at most writing_bound for it, puts the default action back and sends the signal again:
// the process ends by it whether or not the profile is done. The program keeps running while the profile is
// written, some milliseconds; an asynchronous signal that takes effect that much later cannot be told from one
// sent that much later, so nothing the program observes is changed. Two things would be observable, and are not
// caught: a signal the process sends itself (raise, kill(getpid()), from a handler that cleans up and re-raises),
// after which the program relies on not running on — the catcher then acts as the default at once, with no
// profile; and a signal in a child made by fork without exec, which has no agent thread — the same.
//
// The catcher is installed with SA_RESTART, so the program's system calls resume after it as they would have if
// the signal had not come yet (those Linux never restarts — poll, epoll_wait, nanosleep — return EINTR; a program
// that exits then still ends by the signal, see await_exit_signal).
#include "exit_signals.hpp"

#include "ojx/hardware/handler_scope.hpp"

#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

namespace ojx::preload {
namespace {

constexpr int caught_signals[] = {SIGTERM, SIGINT, SIGHUP};
constexpr int signal_count = static_cast<int>(std::size(caught_signals));

// The longest the profile may take to write once a signal came: the process ends by the signal then, profile or
// not. await_exit_signal waits a little longer than this.
constexpr long writing_bound_seconds = 10;

using sigaction_function = int (*)(int, const struct sigaction*, struct sigaction*);
using create_function = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);

// The C library's, resolved when catching starts (never from a handler, where dlsym could wait for a lock the
// interrupted code holds).
sigaction_function real_sigaction = nullptr;
int (*real_raise)(int) = nullptr;
int (*real_pthread_kill)(pthread_t, int) = nullptr;

// One caught signal's state. Invariant: while `catching`, the process's action for the signal is ojx's catcher and
// the program believes it is `program` (the default, with the flags and mask it was last given).
struct signal_view {
    std::atomic<bool> catching{false};
    struct sigaction program {};
};
signal_view views[signal_count];

// Serializes changes to views (and the sigaction calls that go with them) between threads; taken with every
// signal blocked, so that a handler calling sigaction never finds it held by the code it interrupted.
std::atomic<bool> views_locked{false};

pid_t served_pid = 0;              // the process whose agent thread writes the profile (fixed before catching)
std::atomic<bool> started{false};  // catching started: the interposer handles the caught signals
std::atomic<int> caught{0};        // the first caught signal from outside; 0 while none came
std::atomic<bool> ended{false};    // the agent's thread sent the caught signal again (or could do nothing more)
void (*writer_function)() = nullptr;
sem_t wake;    // posted by the catcher
sem_t written; // posted by the writer thread

int index_of(int signal) noexcept {
    for (int i = 0; i < signal_count; ++i)
        if (caught_signals[i] == signal) return i;
    return -1;
}

// Async-signal-safe: every signal blocked for the caller's thread while it holds the views' lock.
struct views_lock {
    sigset_t saved{};
    views_lock() noexcept {
        sigset_t all;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &saved);
        while (views_locked.exchange(true, std::memory_order_acquire)) sched_yield();
    }
    ~views_lock() {
        views_locked.store(false, std::memory_order_release);
        pthread_sigmask(SIG_SETMASK, &saved, nullptr);
    }
    views_lock(const views_lock&) = delete;
    views_lock& operator=(const views_lock&) = delete;
};

// Async-signal-safe: the default action for `signal` on this thread, as if ojx had never caught it. The signal is
// blocked while its handler runs, so it is delivered, with the default action, when the catcher returns. The views
// are left as they are: a child made by vfork shares them with its parent.
void act_as_default(int signal) noexcept {
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    real_sigaction(signal, &default_action, nullptr);
    syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), signal);
}

// The exit signal a thread of this process sent itself through raise or pthread_kill and that has not reached a
// handler yet; 0: none. A signal sent by tgkill carries its sender only where the user's signal queue has room
// (RLIMIT_SIGPENDING): with the queue full it arrives as SI_USER from pid 0, as one from another pid namespace
// does. raise delivers before it returns, unless the thread blocks the signal (a handler raising its own signal
// again): it then stays pending on that thread, and this stays set until the catcher takes it.
std::atomic<int> sending_itself{0};

// Around the C library's raise or pthread_kill of `signal` to the calling thread.
template <class Send>
int send_to_this_thread(int signal, Send send) {
    sending_itself.store(signal);
    const int result = send();
    sigset_t pending;
    if (result != 0 || sigpending(&pending) != 0 || !sigismember(&pending, signal)) sending_itself.store(0);
    return result;
}

// Whether this process sent `info`'s signal to itself (raise, kill, sigqueue). A sender in another pid namespace
// (a container being stopped from outside) shows as pid 0, so it is never mistaken for this process.
bool sent_by_this_process(int signal, const siginfo_t* info, pid_t pid) noexcept {
    int sent = signal;
    if (sending_itself.compare_exchange_strong(sent, 0)) return true;
    return info != nullptr && (info->si_code == SI_USER || info->si_code == SI_TKILL || info->si_code == SI_QUEUE) &&
           info->si_pid == pid;
}

void on_exit_signal(int signal, siginfo_t* info, void*) noexcept {
    const hardware::handler_scope ours;
    const int saved_errno = errno;
    const pid_t pid = getpid();
    if (pid != served_pid || sent_by_this_process(signal, info, pid)) {
        act_as_default(signal);
    } else {
        // The first signal ends the process; one more while the profile is written changes nothing.
        int none = 0;
        if (caught.compare_exchange_strong(none, signal)) sem_post(&wake);
    }
    errno = saved_errno;
}

struct sigaction catcher() noexcept {
    struct sigaction action {};
    action.sa_sigaction = on_exit_signal;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    return action;
}

void* write_then_post(void*) {
    writer_function();
    sem_post(&written);
    return nullptr;
}

// The default action back (with the flags and mask the program last gave it), and the signal sent again to the
// process: it ends by it, or, where the program now blocks it on every thread, it stays pending, as it would
// have. Where the program installed a handler after the signal came, the signal still ends the process: it came
// while the default was in place.
void end_by(int signal) noexcept {
    const int i = index_of(signal);
    {
        const views_lock lock;
        struct sigaction default_action {};
        default_action.sa_handler = SIG_DFL;
        if (views[i].catching.load(std::memory_order_relaxed)) default_action = views[i].program;
        views[i].catching.store(false, std::memory_order_relaxed);
        real_sigaction(signal, &default_action, nullptr);
    }
    ::kill(served_pid, signal);
}

// The agent's thread: every signal blocked, waiting for the catcher.
void* watch(void*) {
    while (sem_wait(&wake) != 0) {
    }
    const int signal = caught.load();
    static const auto real_create = reinterpret_cast<create_function>(dlsym(RTLD_NEXT, "pthread_create"));
    pthread_t writer{};
    const int error = real_create != nullptr ? real_create(&writer, nullptr, write_then_post, nullptr) : EAGAIN;
    if (error == 0) {
        pthread_detach(writer);
        timespec deadline{};
        clock_gettime(CLOCK_MONOTONIC, &deadline);
        deadline.tv_sec += writing_bound_seconds;
        int waited = 0;
        while ((waited = sem_clockwait(&written, CLOCK_MONOTONIC, &deadline)) != 0 && errno == EINTR) {
        }
        if (waited != 0)
            std::fprintf(stderr, "ojx: the profile was not written within %ld s of signal %d (%s); the process ends "
                                 "by it without one\n",
                         writing_bound_seconds, signal, strsignal(signal));
    } else {
        std::fprintf(stderr, "ojx: no profile: cannot start a thread to write it on signal %d (%s): %s\n", signal,
                     strsignal(signal), std::strerror(error));
    }
    end_by(signal);
    ended.store(true, std::memory_order_release);
    return nullptr;
}

} // namespace

std::optional<std::string> catch_exit_signals(void (*write_profile)()) {
    real_sigaction = reinterpret_cast<sigaction_function>(dlsym(RTLD_NEXT, "sigaction"));
    real_raise = reinterpret_cast<int (*)(int)>(dlsym(RTLD_NEXT, "raise"));
    real_pthread_kill = reinterpret_cast<int (*)(pthread_t, int)>(dlsym(RTLD_NEXT, "pthread_kill"));
    static const auto real_create = reinterpret_cast<create_function>(dlsym(RTLD_NEXT, "pthread_create"));
    if (real_sigaction == nullptr || real_create == nullptr)
        return std::string("the C library's sigaction or pthread_create cannot be found");
    writer_function = write_profile;
    served_pid = getpid();
    sem_init(&wake, 0, 0);
    sem_init(&written, 0, 0);
    // The agent's threads take none of the program's signals: they inherit this mask.
    sigset_t all, saved;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &saved);
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setstacksize(&attributes, 64 * 1024); // it waits, creates the writer and sends one signal
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    pthread_t thread{};
    const int error = real_create(&thread, &attributes, watch, nullptr);
    pthread_attr_destroy(&attributes);
    pthread_sigmask(SIG_SETMASK, &saved, nullptr);
    if (error != 0) return std::string("cannot start the agent's thread: ") + std::strerror(error);
    pthread_setname_np(thread, "ojx-exit");
    {
        const views_lock lock;
        const struct sigaction ours = catcher();
        for (int i = 0; i < signal_count; ++i) {
            struct sigaction current {};
            if (real_sigaction(caught_signals[i], nullptr, &current) != 0 || current.sa_handler != SIG_DFL) continue;
            if (real_sigaction(caught_signals[i], &ours, nullptr) != 0) continue;
            views[i].program = current;
            views[i].catching.store(true, std::memory_order_relaxed);
        }
    }
    started.store(true, std::memory_order_release);
    return std::nullopt;
}

bool exit_signal_action(int signal, const struct sigaction* action, struct sigaction* previous, int& result) noexcept {
    const int i = index_of(signal);
    if (i < 0 || !started.load(std::memory_order_acquire)) return false;
    const bool to_default = action != nullptr && action->sa_handler == SIG_DFL;
    int error = errno;
    const views_lock lock;
    signal_view& view = views[i];
    if (view.catching.load(std::memory_order_relaxed)) {
        if (action == nullptr || to_default) {
            // The catcher stays: it is the default action, as far as the program can tell.
            if (previous != nullptr) *previous = view.program;
            if (to_default) view.program = *action;
            result = 0;
        } else {
            result = real_sigaction(signal, action, nullptr);
            if (result != 0) {
                error = errno;
            } else {
                if (previous != nullptr) *previous = view.program;
                view.catching.store(false, std::memory_order_relaxed);
            }
        }
    } else if (to_default && caught.load() == 0 && getpid() == served_pid) {
        // The program puts the default back (after a handler of its own, or SIG_IGN): the catcher takes its place.
        const struct sigaction ours = catcher();
        result = real_sigaction(signal, &ours, previous);
        if (result != 0) {
            error = errno;
        } else {
            view.program = *action;
            view.catching.store(true, std::memory_order_relaxed);
        }
    } else {
        result = real_sigaction(signal, action, previous);
        if (result != 0) error = errno;
    }
    errno = error;
    return true;
}

void await_exit_signal() noexcept {
    if (caught.load() == 0 || getpid() != served_pid) return;
    timespec millisecond{0, 1000000};
    for (long waited = 0; !ended.load(std::memory_order_acquire) && waited < (writing_bound_seconds + 2) * 1000;
         ++waited)
        ::nanosleep(&millisecond, nullptr);
}

} // namespace ojx::preload

// raise and pthread_kill, interposed only to tell the catcher that the process sent an exit signal to itself
// (sending_itself); the call is passed on unchanged.
extern "C" {

int raise(int signal) {
    auto* real = ojx::preload::real_raise;
    if (real == nullptr) real = reinterpret_cast<int (*)(int)>(dlsym(RTLD_NEXT, "raise")); // before the agent started
    if (ojx::preload::index_of(signal) < 0) return real(signal);
    return ojx::preload::send_to_this_thread(signal, [&] { return real(signal); });
}

int pthread_kill(pthread_t thread, int signal) {
    auto* real = ojx::preload::real_pthread_kill;
    if (real == nullptr) real = reinterpret_cast<int (*)(pthread_t, int)>(dlsym(RTLD_NEXT, "pthread_kill"));
    // To another thread: its signal carries this process as its sender, where the queue has room.
    if (ojx::preload::index_of(signal) < 0 || pthread_equal(thread, pthread_self()) == 0) return real(thread, signal);
    return ojx::preload::send_to_this_thread(signal, [&] { return real(thread, signal); });
}

} // extern "C"
