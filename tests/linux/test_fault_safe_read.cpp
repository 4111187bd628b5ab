// read_memory: readable ranges copy exactly; unreadable ones (address 0, PROT_NONE, unmapped, crossing into
// either, wrapping, non-canonical) return false without a fault; errno survives; the pid cache follows fork().
// Prints the cost of one read (not asserted: it depends on the machine).
#include "ojx/hardware/fault_safe_read.hpp"

#include <catch2/catch.hpp>

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

using ojx::hardware::read_memory;

namespace {

std::uint64_t address_of(const void* pointer) { return reinterpret_cast<std::uint64_t>(pointer); }

std::size_t page_size() { return static_cast<std::size_t>(sysconf(_SC_PAGESIZE)); }

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
    CHECK(read_memory(reinterpret_cast<std::uint64_t>(&read_memory), &code_byte, 1));

    // Nothing to read always succeeds, wherever it is.
    CHECK(read_memory(0, nullptr, 0));
    CHECK(ojx::hardware::memory_reading_works());
}

TEST_CASE("a whole multi-page range is read", "[fault_safe_read]") {
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
    const auto nanoseconds_per_read = [&](std::size_t size) {
        const auto start = std::chrono::steady_clock::now();
        int failures = 0;
        for (int i = 0; i < reads; ++i) {
            failures += read_memory(address_of(source.data()), copy.data(), size) ? 0 : 1;
        }
        const std::chrono::duration<double, std::nano> elapsed = std::chrono::steady_clock::now() - start;
        CHECK(failures == 0);
        return elapsed.count() / reads;
    };
    const auto nanoseconds_per_failed_read = [&] {
        const auto start = std::chrono::steady_clock::now();
        int successes = 0;
        for (int i = 0; i < reads; ++i) {
            successes += read_memory(0, copy.data(), 8) ? 1 : 0;
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
    std::printf("read_memory: %.0f ns per 8-byte read, %.0f ns per 64-byte read, %.0f ns per refused read "
                "(a getpid system call, saved by the pid cache: %.0f ns)\n",
                read_8, read_64, failed_read, getpid_call);
}
