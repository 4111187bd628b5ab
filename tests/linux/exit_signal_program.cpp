// A program that meets SIGTERM, SIGINT and SIGHUP in the ways programs do, for exit_signals_suite.py: it keeps
// allocating (objects the native agent tracks) while it waits for a signal from outside, handles it, ignores it,
// blocks it, asks what its action is, or sends it to itself. It prints what it observed; the suite runs it with
// and without the agent and requires the same output and wait status.
//
// usage: exit_signal_program MODE [SIGNAL]   (SIGNAL: a number, 15 by default)
//   wait      print "ready", then allocate until a signal ends it (exit 5 after 60 s)
//   handler   a sigaction handler for SIGNAL; "ready"; on the signal print "handled N" and exit(0)
//   signal    the same, installed by signal()
//   ignore    SIG_IGN for SIGNAL; "ready"; allocate until a line arrives on stdin, print "still here", exit 0
//   blocked   SIGNAL blocked; "ready"; wait for a line on stdin, then sigwait: print "sigwait N", exit 0
//   query     print each of SIGTERM, SIGINT and SIGHUP's action as sigaction and signal report it, across a
//             handler installed and the default put back; exit 0
//   raise     raise(SIGNAL) at its default; print "raise returned" and _exit(9) if it does
//   reraise   a handler that puts the default back and raises SIGNAL again (clean-up, then die by it); "ready";
//             on the signal from outside print "cleaning up"; _exit(9) if the second raise returns
//   fork      fork a child that prints "child ready PID" and allocates until a signal ends it; the parent reports
//             how the child ended ("child: signal N" or "child: exit N") and exits 0
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <initializer_list>

namespace {

std::atomic<int> received{0};

// Allocates, touches and frees one 2 KiB object: the agent tracks it.
void churn_once() {
    auto* block = static_cast<volatile char*>(std::malloc(2048));
    if (block == nullptr) return;
    block[0] = 1;
    block[2047] = 2;
    std::free(const_cast<char*>(block));
}

double now() {
    timespec t{};
    clock_gettime(CLOCK_MONOTONIC, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

void say(const char* line) {
    std::printf("%s\n", line);
    std::fflush(stdout);
}

// Allocates until `stop` says so or `seconds` passed; false when the time ran out.
template <class Stop>
bool churn_until(Stop stop, double seconds) {
    const double until = now() + seconds;
    while (!stop()) {
        for (int i = 0; i < 1000; ++i) churn_once();
        if (now() > until) return false;
    }
    return true;
}

void record(int signal) { received.store(signal); }

int wait_for_signal() {
    say("ready");
    churn_until([] { return false; }, 60);
    return 5;
}

int handled(int signal, bool by_signal_function) {
    if (by_signal_function) {
        if (::signal(signal, record) == SIG_ERR) return 2;
    } else {
        struct sigaction action {};
        action.sa_handler = record;
        if (sigaction(signal, &action, nullptr) != 0) return 2;
    }
    say("ready");
    if (!churn_until([] { return received.load() != 0; }, 60)) return 5;
    std::printf("handled %d\n", received.load());
    std::exit(0);
}

// Waits for a line on stdin while allocating (the suite writes it after sending the signal).
bool line_arrives() {
    char line[64];
    return std::fgets(line, sizeof line, stdin) != nullptr;
}

int ignored(int signal) {
    if (::signal(signal, SIG_IGN) == SIG_ERR) return 2;
    say("ready");
    if (!line_arrives()) return 3;
    churn_until([] { return false; }, 0.2);
    say("still here");
    return 0;
}

int blocked(int signal) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, signal);
    if (sigprocmask(SIG_BLOCK, &set, nullptr) != 0) return 2;
    say("ready");
    if (!line_arrives()) return 3;
    int got = 0;
    if (sigwait(&set, &got) != 0) return 4;
    std::printf("sigwait %d\n", got);
    return 0;
}

const char* name_of(void (*handler)(int)) {
    if (handler == SIG_DFL) return "default";
    if (handler == SIG_IGN) return "ignored";
    if (handler == record) return "handler";
    return "something else";
}

int query() {
    for (const int signal : {SIGTERM, SIGINT, SIGHUP}) {
        struct sigaction current {};
        sigaction(signal, nullptr, &current);
        std::printf("%d: at start %s (flags %#x)", signal, name_of(current.sa_handler),
                    static_cast<unsigned>(current.sa_flags & ~0x04000000)); // SA_RESTORER is the C library's
        struct sigaction own {};
        own.sa_handler = record;
        struct sigaction before {};
        sigaction(signal, &own, &before);
        std::printf(", replaced %s", name_of(before.sa_handler));
        std::printf(", then signal() replaces %s", name_of(::signal(signal, SIG_DFL)));
        std::printf(", then %s", name_of(::signal(signal, SIG_IGN)));
        std::printf(", then %s", name_of(::signal(signal, SIG_DFL)));
        sigaction(signal, nullptr, &current);
        std::printf(", now %s\n", name_of(current.sa_handler));
    }
    return 0;
}

int raise_itself(int signal) {
    churn_until([] { return false; }, 0.2);
    raise(signal);
    say("raise returned");
    _exit(9);
}

void clean_up_and_reraise(int signal) {
    static const char words[] = "cleaning up\n";
    if (write(STDOUT_FILENO, words, sizeof words - 1) < 0) _exit(8);
    ::signal(signal, SIG_DFL);
    raise(signal);
}

int reraise(int signal) {
    struct sigaction action {};
    action.sa_handler = clean_up_and_reraise;
    if (sigaction(signal, &action, nullptr) != 0) return 2;
    say("ready");
    if (!churn_until([] { return false; }, 60)) return 5;
    return 0;
}

int forked() {
    std::fflush(stdout);
    const pid_t child = fork();
    if (child < 0) return 2;
    if (child == 0) {
        std::printf("child ready %d\n", static_cast<int>(getpid()));
        std::fflush(stdout);
        churn_until([] { return false; }, 60);
        _exit(5);
    }
    int status = 0;
    if (waitpid(child, &status, 0) != child) return 3;
    if (WIFSIGNALED(status))
        std::printf("child: signal %d\n", WTERMSIG(status));
    else
        std::printf("child: exit %d\n", WEXITSTATUS(status));
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: exit_signal_program MODE [SIGNAL]\n");
        return 2;
    }
    const char* mode = argv[1];
    const int signal = argc > 2 ? std::atoi(argv[2]) : SIGTERM;
    if (std::strcmp(mode, "wait") == 0) return wait_for_signal();
    if (std::strcmp(mode, "handler") == 0) return handled(signal, false);
    if (std::strcmp(mode, "signal") == 0) return handled(signal, true);
    if (std::strcmp(mode, "ignore") == 0) return ignored(signal);
    if (std::strcmp(mode, "blocked") == 0) return blocked(signal);
    if (std::strcmp(mode, "query") == 0) return query();
    if (std::strcmp(mode, "raise") == 0) return raise_itself(signal);
    if (std::strcmp(mode, "reraise") == 0) return reraise(signal);
    if (std::strcmp(mode, "fork") == 0) return forked();
    std::fprintf(stderr, "exit_signal_program: unknown mode %s\n", mode);
    return 2;
}
