// One hardware backend per process (its signal handlers are process-wide): a test scenario that starts one runs
// in a child process. The body returns its number of failed expectations (EXPECT counts them), or child_skipped
// when the machine cannot show what it checks (it prints why first); the child's exit status carries it, and a
// skip is noted (skip.hpp).
#pragma once

#include "skip.hpp"

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

namespace ojx::hardware::testing {

// What a body returns to skip: never a count of failures.
inline constexpr int child_skipped = -1;

template <class Body>
void in_child_process(Body body) {
    std::fflush(nullptr);
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        const int failures = body();
        std::fflush(nullptr);
        _exit(failures == child_skipped ? skip_exit_code : failures == 0 ? 0 : 1);
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    // A child killed by a signal says which: SIGIO (queue overflow), SIGTRAP and SIGSEGV point at different causes.
    INFO("child " << (WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
                                                strsignal(WTERMSIG(status)) + ")"
                                          : "exited with status " + std::to_string(WEXITSTATUS(status))));
    REQUIRE(WIFEXITED(status));
    if (WEXITSTATUS(status) == skip_exit_code) {
        WARN("skipped: the child could not check its subject on this machine (its output above says why)");
        note_skip("a child process could not check its subject on this machine");
        return;
    }
    CHECK(WEXITSTATUS(status) == 0);
}

} // namespace ojx::hardware::testing

// In a child process's body: counts a failed expectation (with where and what) into the body's `failures`.
#define EXPECT(condition)                                                                   \
    do {                                                                                    \
        if (!(condition)) {                                                                 \
            ++failures;                                                                     \
            std::printf("%s:%d: expected %s\n", __FILE__, __LINE__, #condition);            \
        }                                                                                   \
    } while (0)
