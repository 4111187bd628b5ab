// See skip.hpp. The run's outcome is taken from Catch's own totals (a listener), and the exit status is replaced
// at exit, after Catch's main has returned and its reporter has written everything.
#define CATCH_CONFIG_EXTERNAL_INTERFACES
#include "skip.hpp"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

namespace ojx::hardware::testing {
namespace {

std::atomic<bool> skipped{false};
std::atomic<bool> run_ended{false};
std::atomic<std::uint64_t> failed_assertions{0};
std::atomic<std::uint64_t> failed_cases{0};

void exit_honestly() {
    if (!run_ended.load()) return; // Catch did not finish a run (it listed tests, say): its status stands
    if (failed_assertions.load() == 0 && failed_cases.load() == 0) {
        if (!skipped.load()) return;
        std::fflush(nullptr);
        _exit(skip_exit_code);
    }
    // Catch exits with the number of failed assertions (at most 255): 77 of them would read as a skip.
    if (failed_assertions.load() == static_cast<std::uint64_t>(skip_exit_code)) {
        std::fflush(nullptr);
        _exit(1);
    }
}

struct skip_listener : Catch::TestEventListenerBase {
    explicit skip_listener(const Catch::ReporterConfig& config) : TestEventListenerBase(config) {
        static const bool registered = std::atexit(exit_honestly) == 0;
        (void)registered;
    }
    void testRunEnded(const Catch::TestRunStats& stats) override {
        failed_assertions = stats.totals.assertions.failed;
        failed_cases = stats.totals.testCases.failed;
        run_ended = true;
    }
};

CATCH_REGISTER_LISTENER(skip_listener)

} // namespace

void note_skip(const std::string& why) {
    skipped = true;
    std::printf("SKIPPED: %s\n", why.c_str());
}

} // namespace ojx::hardware::testing
