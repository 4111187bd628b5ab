// Skipping honestly. Catch2 v2 has no skip, and a test case that returns early passes. A test case that cannot
// check what it is about on this machine (no working debug registers, no precise sampling) calls OJX_SKIP with the
// reason instead: the reason is printed, and when the run ends with no failure the executable exits with
// skip_exit_code, which the suite's CMake declares as SKIP_RETURN_CODE, so that ctest reports the test as skipped,
// never as passed. A run with a failure keeps its failing status.
//
// Invariant: an executable that skipped anything never exits 0; one that failed never exits skip_exit_code (a run
// whose failure count happens to be 77 exits 1 instead).
#pragma once

#include <catch2/catch.hpp>

#include <string>

namespace ojx::hardware::testing {

inline constexpr int skip_exit_code = 77;

// Notes that the running test case skipped what it is about, and why. Call from the test process (not from a
// forked child: its exit status is its own).
void note_skip(const std::string& why);

} // namespace ojx::hardware::testing

// Ends the running test case as skipped, saying why.
#define OJX_SKIP(why)                                                                                              \
    do {                                                                                                           \
        const std::string ojx_skip_reason = (why);                                                                 \
        WARN("skipped: " << ojx_skip_reason);                                                                      \
        ::ojx::hardware::testing::note_skip(ojx_skip_reason);                                                      \
        return;                                                                                                    \
    } while (false)
