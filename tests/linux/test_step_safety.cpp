// Single-stepping must never take the process down. Stepping must never carry the trap flag over a system call
// that blocks SIGTRAP or creates a thread: the single-step trap would then arrive blocked, and the kernel kills
// the process with it. (Found by the JVM stress test: thousands of pthread_create calls under sampling.)
#include "ojx/hardware/profiling_session.hpp"

#include "hardware_test_support.hpp"

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <thread>

using namespace ojx;
using namespace ojx::hardware;
using namespace ojx::hardware::testing;

// This loop does little else than block every signal and create threads (what glibc's pthread_create does),
// under a sample storm; the child process must end normally, not by SIGTRAP.
TEST_CASE("a sample storm over code that blocks every signal and creates threads does not kill the process") {
    std::fflush(nullptr);
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        profiling_session session;
        session_options options;
        options.backend.sampler = sampler_kind::decode;
        options.backend.samples_per_second = 5000;
        options.backend.watchpoint_slots = 0;
        auto error = session.start(options);
        if (!error) error = session.attach_current_thread();
        if (error) {
            std::printf("cannot profile: %s\n", error->c_str());
            std::fflush(nullptr);
            _exit(3);
        }
        sigset_t all, previous;
        sigfillset(&all);
        // At least one CPU second, and on until a step has been refused (the path this test exists for), within
        // five: how often an interrupt lands next to a system call depends on the machine and its load.
        const double start = thread_cpu_seconds();
        const auto refused_so_far = [&] { return session.backend().counters().steps_refused.load(); };
        while (thread_cpu_seconds() < start + 1.0 || (refused_so_far() == 0 && thread_cpu_seconds() < start + 5.0)) {
            for (int i = 0; i < 50; ++i) {
                pthread_sigmask(SIG_BLOCK, &all, &previous);
                pthread_sigmask(SIG_SETMASK, &previous, nullptr);
            }
            std::thread([] {}).join();
        }
        const std::uint64_t refused = refused_so_far();
        session.stop();
        std::printf("steps stopped before a system call or with SIGTRAP blocked: %llu\n",
                    static_cast<unsigned long long>(refused));
        std::fflush(nullptr);
        _exit(refused > 0 ? 0 : 4);
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    INFO("child status " << status << (WIFSIGNALED(status) ? " (killed by a signal)" : ""));
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
}
