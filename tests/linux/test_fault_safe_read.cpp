// read_memory, by system call and by guarded load: readable ranges copy exactly; unreadable ones (address 0,
// PROT_NONE, unmapped, crossing into either, wrapping, non-canonical) return false without a fault; errno survives;
// the pid cache follows fork(). The fault guard: guarded loads only while its handlers are the process's and the
// interrupted code blocks neither signal; the program's own faults still reach the program's handler, or kill it
// as they would without us. Prints the cost of one read (not asserted: it depends on the machine).
#include "ojx/hardware/fault_safe_read.hpp"

#include <catch2/catch.hpp>

#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <utility>

using ojx::hardware::read_memory;
using ojx::hardware::read_method;

namespace {

std::uint64_t address_of(const void* pointer) { return reinterpret_cast<std::uint64_t>(pointer); }

std::size_t page_size() { return static_cast<std::size_t>(sysconf(_SC_PAGESIZE)); }

// Installs the fault guard once, and puts its handlers back on top for the current test: Catch2 installs its
// own SIGSEGV handler for the duration of each test case and then restores what it found, which removes ours.
void guard_on_top() {
    static const std::pair<struct sigaction, struct sigaction> ours = [] {
        REQUIRE_FALSE(ojx::hardware::install_fault_guard());
        std::pair<struct sigaction, struct sigaction> installed{};
        REQUIRE(sigaction(SIGSEGV, nullptr, &installed.first) == 0);
        REQUIRE(sigaction(SIGBUS, nullptr, &installed.second) == 0);
        return installed;
    }();
    REQUIRE(sigaction(SIGSEGV, &ours.first, nullptr) == 0);
    REQUIRE(sigaction(SIGBUS, &ours.second, nullptr) == 0);
}

// Either way of reading, the guard on top for the guarded one.
read_method a_read_method() {
    const read_method method = GENERATE(read_method::system_call, read_method::guarded_load);
    if (method == read_method::guarded_load) guard_on_top();
    return method;
}

// read_memory with one method, under read_memory's name, so that the tests below read the same either way.
struct reader {
    read_method method;
    bool operator()(std::uint64_t from, void* out, std::size_t size) const {
        return ojx::hardware::read_memory(from, out, size, method);
    }
};

// Two adjacent pages, the first readable and filled with a pattern, the second as `second_protection` (or
// unmapped when `unmap_second`).
class two_pages {
public:
    explicit two_pages(int second_protection, bool unmap_second = false) {
        mapping_ = mmap(nullptr, 2 * page_size(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        REQUIRE(mapping_ != MAP_FAILED);
        std::memset(mapping_, 0x5a, page_size());
        if (unmap_second) {
            REQUIRE(munmap(second(), page_size()) == 0);
            second_mapped_ = false;
        } else {
            REQUIRE(mprotect(second(), page_size(), second_protection) == 0);
        }
    }
    ~two_pages() { munmap(mapping_, second_mapped_ ? 2 * page_size() : page_size()); }
    two_pages(const two_pages&) = delete;
    two_pages& operator=(const two_pages&) = delete;

    std::uint8_t* first() const { return static_cast<std::uint8_t*>(mapping_); }
    std::uint8_t* second() const { return first() + page_size(); }

private:
    void* mapping_ = nullptr;
    bool second_mapped_ = true;
};

} // namespace

TEST_CASE("readable memory is copied exactly", "[fault_safe_read]") {
    const reader read_memory{a_read_method()};
    alignas(64) std::array<std::uint8_t, 64> source{};
    for (std::size_t i = 0; i < source.size(); ++i) {
        source[i] = static_cast<std::uint8_t>(i * 7 + 1);
    }
    std::array<std::uint8_t, 64> copy{};
    REQUIRE(read_memory(address_of(source.data()), copy.data(), copy.size()));
    CHECK(copy == source);

    std::uint64_t word = 0;
    REQUIRE(read_memory(address_of(source.data() + 3), &word, sizeof word)); // unaligned
    std::uint64_t expected = 0;
    std::memcpy(&expected, source.data() + 3, sizeof expected);
    CHECK(word == expected);

    // Read-only and executable memory: a string literal and this function's code.
    const char* const literal = "ojx";
    char text[4] = {};
    REQUIRE(read_memory(address_of(literal), text, sizeof text));
    CHECK(std::strcmp(text, "ojx") == 0);
    std::uint8_t code_byte = 0;
    CHECK(read_memory(reinterpret_cast<std::uint64_t>(&a_read_method), &code_byte, 1));

    // Nothing to read always succeeds, wherever it is.
    CHECK(read_memory(0, nullptr, 0));
    CHECK(ojx::hardware::memory_reading_works());
}

TEST_CASE("a whole multi-page range is read", "[fault_safe_read]") {
    const reader read_memory{a_read_method()};
    two_pages pages(PROT_READ | PROT_WRITE);
    std::memset(pages.second(), 0xa5, page_size());
    std::array<std::uint8_t, 32> copy{};
    REQUIRE(read_memory(address_of(pages.second() - 16), copy.data(), copy.size()));
    CHECK(copy[0] == 0x5a);
    CHECK(copy[15] == 0x5a);
    CHECK(copy[16] == 0xa5);
    CHECK(copy[31] == 0xa5);
}

TEST_CASE("unreadable memory is refused without a fault", "[fault_safe_read]") {
    const reader read_memory{a_read_method()};
    std::uint64_t word = 0;
    CHECK_FALSE(read_memory(0, &word, sizeof word));
    CHECK_FALSE(read_memory(8, &word, 1));
    CHECK_FALSE(read_memory(0x8000'0000'0000'0000, &word, sizeof word)); // non-canonical
    CHECK_FALSE(read_memory(0xffff'ffff'ffff'fffc, &word, sizeof word)); // wraps past 2^64

    two_pages guarded(PROT_NONE);
    CHECK_FALSE(read_memory(address_of(guarded.second()), &word, sizeof word));
    CHECK_FALSE(read_memory(address_of(guarded.second() + 100), &word, 1));
    // A range that starts readable and runs into the PROT_NONE page is a failure, not a short read.
    CHECK(read_memory(address_of(guarded.second() - 8), &word, 8));
    CHECK_FALSE(read_memory(address_of(guarded.second() - 4), &word, 8));
    std::array<std::uint8_t, 64> line{};
    CHECK_FALSE(read_memory(address_of(guarded.second() - 32), line.data(), line.size()));

    two_pages unmapped(PROT_NONE, true);
    CHECK_FALSE(read_memory(address_of(unmapped.second()), &word, sizeof word));
    CHECK_FALSE(read_memory(address_of(unmapped.second() - 1), &word, 2));
    CHECK(read_memory(address_of(unmapped.second() - 1), &word, 1));
}

TEST_CASE("errno is preserved", "[fault_safe_read]") {
    const reader read_memory{a_read_method()};
    std::uint64_t word = 0;
    errno = EILSEQ;
    CHECK_FALSE(read_memory(0, &word, sizeof word)); // the system call fails with EFAULT
    CHECK(errno == EILSEQ);
    errno = ENOTTY;
    CHECK(read_memory(address_of(&word), &word, sizeof word));
    CHECK(errno == ENOTTY);
    errno = EAGAIN;
    ojx::hardware::refresh_cached_pid();
    CHECK(errno == EAGAIN);
}

TEST_CASE("process_memory is a memory_reader", "[fault_safe_read]") {
    static_assert(ojx::memory_reader<ojx::hardware::process_memory>);
    ojx::hardware::process_memory memory;
    const std::uint32_t value = 0xfeedbeef;
    std::uint32_t copy = 0;
    CHECK(memory.read(address_of(&value), &copy, sizeof copy));
    CHECK(copy == value);
    CHECK_FALSE(memory.read(0, &copy, sizeof copy));
}

TEST_CASE("process_memory chooses deferred reads once, at its first read", "[fault_safe_read]") {
    struct chooser_calls {
        mutable int count = 0;
    } calls;
    ojx::hardware::process_memory memory;
    memory.choose = [](const void* chooser) noexcept {
        ++static_cast<const chooser_calls*>(chooser)->count;
        return ojx::hardware::handler_reads{};
    };
    memory.chooser = &calls;
    CHECK(calls.count == 0); // nothing read, nothing chosen
    const std::uint64_t value = 0x0123456789abcdef;
    std::uint64_t copy = 0;
    CHECK(memory.read(address_of(&value), &copy, sizeof copy));
    CHECK(copy == value);
    CHECK(memory.read(address_of(&value), &copy, sizeof copy));
    CHECK(calls.count == 1);
    CHECK(memory.choose == nullptr);
    CHECK(memory.reads.method == ojx::hardware::read_method::system_call); // what the chooser said
}

namespace {

void ignore_signal(int) {}

// The mask the calling code runs with, as a handler that interrupted it would see it in its context.
ucontext_t current_context() {
    ucontext_t context{};
    REQUIRE(getcontext(&context) == 0);
    return context;
}

// Runs this test program again, fresh (no guard installed), with only the hidden test `name`; its exit status.
int run_hidden_test(const char* name) {
    std::fflush(nullptr);
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        // Under AddressSanitizer its own SIGSEGV handler would stand where the default disposition should.
        setenv("ASAN_OPTIONS", "handle_segv=0:handle_sigbus=0", 1);
        char self[] = "/proc/self/exe";
        char* const argv[] = {self, const_cast<char*>(name), nullptr};
        execv(self, argv);
        _exit(127);
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    return status;
}

sigjmp_buf program_recovery;
volatile sig_atomic_t program_handler_ran = 0;

void program_fault_handler(int) {
    program_handler_ran = 1;
    siglongjmp(program_recovery, 1);
}

// A fault of the program's own code (not a guarded load) on the PROT_NONE page of `pages`.
[[gnu::noinline]] void fault_on(two_pages& pages) { *static_cast<volatile std::uint8_t*>(pages.second()) = 1; }

} // namespace

TEST_CASE("guarded loads only while the guard is the process's and no fault signal is blocked",
          "[fault_safe_read][fault_guard]") {
    guard_on_top();
    REQUIRE_FALSE(ojx::hardware::install_fault_guard()); // again: nothing to do
    ucontext_t here = current_context();
    sigdelset(&here.uc_sigmask, SIGSEGV);
    sigdelset(&here.uc_sigmask, SIGBUS);
    CHECK(ojx::hardware::read_method_for(here) == read_method::guarded_load);

    for (const int signal : {SIGSEGV, SIGBUS}) {
        INFO("signal " << signal);
        ucontext_t blocking = here;
        sigaddset(&blocking.uc_sigmask, signal);
        CHECK(ojx::hardware::read_method_for(blocking) == read_method::system_call);

        // The program puts its own handler over ours: no guarded load until ours is back.
        struct sigaction theirs {};
        struct sigaction ours {};
        theirs.sa_handler = ignore_signal;
        REQUIRE(sigaction(signal, &theirs, &ours) == 0);
        CHECK(ojx::hardware::read_method_for(here) == read_method::system_call);
        REQUIRE(sigaction(signal, &ours, nullptr) == 0);
        CHECK(ojx::hardware::read_method_for(here) == read_method::guarded_load);
    }
}

namespace {

struct handler_reads {
    std::uint64_t readable_address = 0;
    std::uint64_t unreadable_address = 0;
    read_method method = read_method::system_call;
    bool read_readable = false;
    bool read_unreadable = true;
    std::uint64_t value = 0;
};
handler_reads* in_handler = nullptr;

// Signal-safe: what a sampling handler does.
void read_in_handler(int, siginfo_t*, void* raw_context) {
    handler_reads& r = *in_handler;
    r.method = ojx::hardware::read_method_for(*static_cast<ucontext_t*>(raw_context));
    r.read_readable = read_memory(r.readable_address, &r.value, sizeof r.value, r.method);
    std::uint64_t ignored = 0;
    r.read_unreadable = read_memory(r.unreadable_address, &ignored, sizeof ignored, r.method);
}

} // namespace

TEST_CASE("a signal handler reads by guarded loads, and a fault there is a failed read",
          "[fault_safe_read][fault_guard]") {
    guard_on_top();
    two_pages pages(PROT_NONE);
    const std::uint64_t expected = 0x0123456789abcdef;
    std::memcpy(pages.first() + 64, &expected, sizeof expected);
    handler_reads reads;
    reads.readable_address = address_of(pages.first() + 64);
    reads.unreadable_address = address_of(pages.second() + 8);
    in_handler = &reads;
    struct sigaction action {};
    struct sigaction previous {};
    action.sa_sigaction = read_in_handler;
    action.sa_flags = SA_SIGINFO;
    REQUIRE(sigaction(SIGUSR2, &action, &previous) == 0);
    REQUIRE(raise(SIGUSR2) == 0);
    REQUIRE(sigaction(SIGUSR2, &previous, nullptr) == 0);
    in_handler = nullptr;
    CHECK(reads.method == read_method::guarded_load);
    CHECK(reads.read_readable);
    CHECK(reads.value == expected);
    CHECK_FALSE(reads.read_unreadable);
}

// Hidden: run by the next test in a fresh process. The program's handler was there first; the guard chains to it.
TEST_CASE("hidden: a fault of the program reaches the program's handler", "[.fault_guard_child]") {
    two_pages pages(PROT_NONE);
    struct sigaction program {};
    program.sa_handler = program_fault_handler;
    REQUIRE(sigaction(SIGSEGV, &program, nullptr) == 0);
    REQUIRE_FALSE(ojx::hardware::install_fault_guard());
    if (sigsetjmp(program_recovery, 1) == 0) fault_on(pages);
    CHECK(program_handler_ran == 1);
    // And a guarded load still fails quietly, without the program's handler seeing it.
    program_handler_ran = 0;
    std::uint64_t word = 0;
    CHECK_FALSE(read_memory(address_of(pages.second()), &word, sizeof word, read_method::guarded_load));
    CHECK(program_handler_ran == 0);
}

// Hidden: with no handler of the program's, its fault kills it with SIGSEGV, as without us.
TEST_CASE("hidden: a fault of the program kills it as it would without the guard", "[.fault_guard_child]") {
    two_pages pages(PROT_NONE);
    REQUIRE_FALSE(ojx::hardware::install_fault_guard());
    fault_on(pages);
    FAIL("the fault did not kill the process");
}

TEST_CASE("the program's own faults are the program's", "[fault_safe_read][fault_guard]") {
    const int chained = run_hidden_test("hidden: a fault of the program reaches the program's handler");
    CHECK(WIFEXITED(chained));
    CHECK(WEXITSTATUS(chained) == 0);
    const int killed = run_hidden_test("hidden: a fault of the program kills it as it would without the guard");
    CHECK(WIFSIGNALED(killed));
    CHECK(WTERMSIG(killed) == SIGSEGV);
}

TEST_CASE("a forked child reads its own memory, not its parent's", "[fault_safe_read]") {
    static std::uint64_t diverging = 1;
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        diverging = 2; // copy-on-write: the parent still holds 1
        std::uint64_t seen = 0;
        const bool read = read_memory(address_of(&diverging), &seen, sizeof seen);
        _exit(read && seen == 2 ? 0 : 1);
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    CHECK(diverging == 1);
}

TEST_CASE("cost of a read (printed, not asserted)", "[fault_safe_read][cost]") {
    alignas(64) static std::array<std::uint8_t, 64> source{};
    std::array<std::uint8_t, 64> copy{};
    constexpr int reads = 100'000;
    guard_on_top();
    const auto nanoseconds_per_read = [&](std::size_t size, read_method method = read_method::system_call) {
        const auto start = std::chrono::steady_clock::now();
        int failures = 0;
        for (int i = 0; i < reads; ++i) {
            failures += read_memory(address_of(source.data()), copy.data(), size, method) ? 0 : 1;
        }
        const std::chrono::duration<double, std::nano> elapsed = std::chrono::steady_clock::now() - start;
        CHECK(failures == 0);
        return elapsed.count() / reads;
    };
    const auto nanoseconds_per_failed_read = [&](read_method method = read_method::system_call) {
        const auto start = std::chrono::steady_clock::now();
        int successes = 0;
        for (int i = 0; i < reads; ++i) {
            successes += read_memory(0, copy.data(), 8, method) ? 1 : 0;
        }
        const std::chrono::duration<double, std::nano> elapsed = std::chrono::steady_clock::now() - start;
        CHECK(successes == 0);
        return elapsed.count() / reads;
    };
    const auto nanoseconds_per_getpid = [&] {
        long sum = 0;
        const auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < reads; ++i) {
            sum += syscall(SYS_getpid);
        }
        const std::chrono::duration<double, std::nano> elapsed = std::chrono::steady_clock::now() - start;
        CHECK(sum != 0);
        return elapsed.count() / reads;
    };
    nanoseconds_per_read(8); // warm up
    const double read_8 = nanoseconds_per_read(8);
    const double read_64 = nanoseconds_per_read(64);
    const double failed_read = nanoseconds_per_failed_read();
    const double getpid_call = nanoseconds_per_getpid();
    const double guarded_8 = nanoseconds_per_read(8, read_method::guarded_load);
    const double guarded_64 = nanoseconds_per_read(64, read_method::guarded_load);
    const double guarded_failed = nanoseconds_per_failed_read(read_method::guarded_load);
    ucontext_t here{};
    REQUIRE(getcontext(&here) == 0);
    const auto start = std::chrono::steady_clock::now();
    int guarded = 0;
    for (int i = 0; i < reads / 10; ++i)
        guarded += ojx::hardware::read_method_for(here) == read_method::guarded_load ? 1 : 0;
    const std::chrono::duration<double, std::nano> asking = std::chrono::steady_clock::now() - start;
    std::printf("read_memory: %.0f ns per 8-byte read, %.0f ns per 64-byte read, %.0f ns per refused read "
                "(a getpid system call, saved by the pid cache: %.0f ns)\n",
                read_8, read_64, failed_read, getpid_call);
    std::printf("guarded loads: %.0f ns per 8-byte read, %.0f ns per 64-byte read, %.0f ns per refused read (a "
                "fault); read_method_for: %.0f ns (two sigaction queries)\n",
                guarded_8, guarded_64, guarded_failed, asking.count() / (reads / 10));
    CHECK(guarded == reads / 10);
}
