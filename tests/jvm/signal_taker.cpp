// A native library that takes ojx's timer signal behind the JVM agent's back, for jvm_signals_suite.py: preloaded
// into a JVM, it waits until a real-time signal in [SIGRTMIN + 2, SIGRTMAX] has a handler (the agent's timer
// signal; HotSpot uses none of them), then installs its own handler for it with the C library's sigaction, which
// the JVM agent does not see. It says which signal it took, and at exit how many signals its handler received.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <ctime>

namespace {

std::atomic<int> taken{0};
std::atomic<long> received{0};

int handled_realtime_signal() {
    for (int signal = SIGRTMIN + 2; signal <= SIGRTMAX; ++signal) {
        struct sigaction current {};
        if (sigaction(signal, nullptr, &current) == 0 && (current.sa_flags & SA_SIGINFO) != 0 &&
            current.sa_sigaction != nullptr)
            return signal;
    }
    return 0;
}

void* take(void*) {
    const timespec tick{0, 50'000'000};
    for (int i = 0; i < 600 && taken.load() == 0; ++i) {
        if (const int signal = handled_realtime_signal()) {
            nanosleep(&tick, nullptr); // the agent is sampling by now
            struct sigaction own {};
            own.sa_handler = [](int) { received.fetch_add(1); };
            sigaction(signal, &own, nullptr);
            taken.store(signal);
            std::fprintf(stderr, "signal_taker: took signal %d\n", signal);
        }
        nanosleep(&tick, nullptr);
    }
    return nullptr;
}

[[gnu::constructor]] void start() {
    pthread_t thread;
    if (pthread_create(&thread, nullptr, take, nullptr) == 0) pthread_detach(thread);
}

[[gnu::destructor]] void report() {
    if (taken.load() != 0) std::fprintf(stderr, "signal_taker: %ld signals received\n", received.load());
}

} // namespace
