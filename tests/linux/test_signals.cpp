// Signal plumbing: the sampling signal is one nobody uses, and signals that are not ours reach the handler the
// program installed before us — the profiled program must not notice the profiler.
#include "ojx/hardware/signals.hpp"

#include "hardware_test_support.hpp"

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <memory>

using namespace ojx::hardware;
using namespace ojx::hardware::testing;

namespace {
volatile sig_atomic_t program_handler_calls = 0;
volatile sig_atomic_t our_handler_calls = 0;
chained_handler* current_chain = nullptr;

void program_handler(int) { program_handler_calls = program_handler_calls + 1; }
void our_handler(int signal, siginfo_t* info, void* context) {
    our_handler_calls = our_handler_calls + 1;
    current_chain->chain(signal, info, context);
}
} // namespace

TEST_CASE("the sampling signal is one the program does not use") {
    const std::optional<int> first = choose_free_signal();
    REQUIRE(first);
    CHECK(*first >= SIGRTMIN + 2);
    struct sigaction taken {}, previous{};
    taken.sa_handler = program_handler;
    REQUIRE(sigaction(*first, &taken, &previous) == 0);
    const std::optional<int> next = choose_free_signal();
    REQUIRE(next);
    CHECK(*next != *first);
    REQUIRE(sigaction(*first, &previous, nullptr) == 0);
}

TEST_CASE("signals that are not ours reach the program's own handler") {
    struct sigaction program {}, original{};
    program.sa_handler = program_handler;
    REQUIRE(sigaction(SIGUSR1, &program, &original) == 0);
    {
        chained_handler ours;
        current_chain = &ours;
        REQUIRE(!ours.install(SIGUSR1, our_handler));
        program_handler_calls = 0;
        our_handler_calls = 0;
        raise(SIGUSR1);
        CHECK(our_handler_calls == 1);
        CHECK(program_handler_calls == 1);
    } // uninstalled: the program's handler is back
    raise(SIGUSR1);
    CHECK(our_handler_calls == 1);
    CHECK(program_handler_calls == 2);
    REQUIRE(sigaction(SIGUSR1, &original, nullptr) == 0);
}

TEST_CASE("with the backend sampling, the program's SIGTRAP handler still gets its traps") {
    std::fflush(nullptr);
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        program_handler_calls = 0;
        struct sigaction program {};
        program.sa_handler = program_handler;
        sigaction(SIGTRAP, &program, nullptr);
        auto rec = std::make_unique<recorder>();
        hardware_backend backend;
        backend_options options;
        options.samples_per_second = 2000;
        options.watchpoint_slots = 0;
        if (backend.start(options, rec->delivery()) || backend.attach_current_thread()) _exit(3);
        std::uint64_t words[1024] = {};
        for (int i = 0; i < 20; ++i) {
            read_loop(words, 1024, 0.02); // stepping happens around these traps
            raise(SIGTRAP);
        }
        backend.detach_current_thread();
        backend.stop();
        std::printf("program's SIGTRAP handler: %d calls; %zu samples\n", static_cast<int>(program_handler_calls),
                    rec->sample_count.load());
        std::fflush(stdout);
        _exit(program_handler_calls == 20 && rec->sample_count.load() > 0 ? 0 : 1);
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
}
