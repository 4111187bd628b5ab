// One hardware backend per process (its signal handlers are process-wide): a test scenario that starts one runs
// in a child process. The body returns its number of failed expectations; the child's exit status carries it.
#pragma once

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

namespace ojx::hardware::testing {

template <class Body>
void in_child_process(Body body) {
    std::fflush(nullptr);
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        const int failures = body();
        std::fflush(nullptr);
        _exit(failures == 0 ? 0 : 1);
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
}

} // namespace ojx::hardware::testing
