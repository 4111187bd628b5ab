// Debug-register watchpoints on this machine: a trap for each access to the watched bytes, with the value now
// there, the access width and kind decoded from the trapping instruction; nothing for other addresses; the
// same after re-arming a slot elsewhere; and on every attached thread, not only the one that armed.
#include "hardware_test_support.hpp"

#include <catch2/catch.hpp>

#include <mutex>
#include <thread>

using namespace ojx;
using namespace ojx::hardware;
using namespace ojx::hardware::testing;

namespace {

// The backend is process-wide: these tests share one, started on first use, with sampling off.
struct shared_backend {
    recorder rec;
    hardware_backend backend;
    std::string error;
    shared_backend() {
        backend_options options;
        options.sampler = sampler_kind::none;
        options.watchpoint_slots = 4;
        if (auto e = backend.start(options, rec.delivery())) error = *e;
        else if (auto a = backend.attach_current_thread()) error = *a;
    }
    void reset() { rec.trap_count = 0; }
};

shared_backend& shared() {
    static shared_backend instance;
    return instance;
}

alignas(64) volatile std::uint64_t watched_words[16];

[[gnu::noinline]] std::uint64_t load_word(std::size_t i) { return watched_words[i]; }
[[gnu::noinline]] void store_word(std::size_t i, std::uint64_t v) { watched_words[i] = v; }
[[gnu::noinline]] std::uint32_t load_half(std::size_t i) {
    return reinterpret_cast<volatile std::uint32_t*>(const_cast<std::uint64_t*>(&watched_words[0]))[i];
}

std::uint64_t address_of(std::size_t i) { return reinterpret_cast<std::uint64_t>(&watched_words[i]); }

} // namespace

TEST_CASE("breakpoints: the machine has debug registers for us") {
    OJX_SKIP_WITHOUT_WATCHPOINTS();
    auto& s = shared();
    INFO(s.error);
    REQUIRE(s.error.empty());
    std::printf("watchpoints: %s\n", s.backend.watchpoint_description().c_str());
    CHECK(s.backend.slot_count() == 4);
}

TEST_CASE("breakpoints: loads and stores trap with the value, width and kind") {
    OJX_SKIP_WITHOUT_WATCHPOINTS();
    auto& s = shared();
    REQUIRE(s.error.empty());
    s.reset();
    store_word(3, 0x1122334455667788ULL);
    REQUIRE(s.backend.arm(0, address_of(3), 8));
    CHECK(load_word(3) == 0x1122334455667788ULL);
    store_word(3, 42);
    s.backend.disarm(0);
    (void)load_word(3); // disarmed: no trap
    const auto traps = s.rec.recorded_traps();
    REQUIRE(traps.size() == 2);
    CHECK(traps[0].slot == 0);
    CHECK(traps[0].watched_address == address_of(3));
    CHECK(traps[0].kind == access_kind::load);
    CHECK(traps[0].value == 0x1122334455667788ULL);
    CHECK(traps[0].width == 8);
    CHECK(traps[1].kind == access_kind::store);
    CHECK(traps[1].value == 42);
    CHECK(s.backend.counters().traps_undecoded.load() == 0);
}

TEST_CASE("breakpoints: re-arming moves the watch; narrow watches and four slots at once") {
    OJX_SKIP_WITHOUT_WATCHPOINTS();
    auto& s = shared();
    REQUIRE(s.error.empty());
    s.reset();
    for (std::size_t i = 0; i < 16; ++i) store_word(i, 1000 + i);
    for (int round = 0; round < 50; ++round) {
        const std::size_t target = static_cast<std::size_t>(round) % 16;
        REQUIRE(s.backend.arm(0, address_of(target), 8));
        for (std::size_t i = 0; i < 16; ++i) (void)load_word(i);
    }
    s.backend.disarm(0);
    auto traps = s.rec.recorded_traps();
    REQUIRE(traps.size() == 50);
    for (int round = 0; round < 50; ++round) {
        CHECK(traps[static_cast<std::size_t>(round)].watched_address == address_of(static_cast<std::size_t>(round) % 16));
        CHECK(traps[static_cast<std::size_t>(round)].value == 1000 + static_cast<std::uint64_t>(round) % 16);
    }

    s.reset();
    // A 4-byte watch on the upper half of word 5: only loads touching those bytes trap.
    REQUIRE(s.backend.arm(1, address_of(5) + 4, 4));
    (void)load_half(10); // lower half of word 5
    (void)load_half(11); // upper half
    s.backend.disarm(1);
    traps = s.rec.recorded_traps();
    REQUIRE(traps.size() == 1);
    CHECK(traps[0].width == 4);
    CHECK(traps[0].value == 0); // upper half of 1005

    s.reset();
    for (std::size_t slot = 0; slot < 4; ++slot) REQUIRE(s.backend.arm(slot, address_of(2 * slot), 8));
    for (std::size_t i = 0; i < 16; ++i) (void)load_word(i);
    for (std::size_t slot = 0; slot < 4; ++slot) s.backend.disarm(slot);
    traps = s.rec.recorded_traps();
    REQUIRE(traps.size() == 4);
    for (std::size_t slot = 0; slot < 4; ++slot) CHECK(traps[slot].slot == slot);
}

TEST_CASE("breakpoints: a slot armed on one thread traps on every attached thread") {
    OJX_SKIP_WITHOUT_WATCHPOINTS();
    auto& s = shared();
    REQUIRE(s.error.empty());
    s.reset();
    std::mutex serialize; // attach/detach/arm are serialized by the caller
    std::atomic<int> phase{0};
    std::atomic<std::uint32_t> worker_tid{0};
    std::thread worker([&] {
        {
            const std::lock_guard<std::mutex> hold(serialize);
            REQUIRE(!s.backend.attach_current_thread());
        }
        worker_tid = static_cast<std::uint32_t>(current_tid());
        phase = 1;
        while (phase.load() != 2) std::this_thread::yield();
        (void)load_word(9);
        const std::lock_guard<std::mutex> hold(serialize);
        s.backend.detach_current_thread();
    });
    while (phase.load() != 1) std::this_thread::yield();
    {
        const std::lock_guard<std::mutex> hold(serialize);
        REQUIRE(s.backend.arm(2, address_of(9), 8));
    }
    phase = 2;
    worker.join();
    s.backend.disarm(2);
    const auto traps = s.rec.recorded_traps();
    REQUIRE(traps.size() == 1);
    CHECK(traps[0].thread == worker_tid.load());
    CHECK(traps[0].watched_address == address_of(9));
}

TEST_CASE("breakpoints: an unaligned watch that no debug register can cover is refused, not armed") {
    OJX_SKIP_WITHOUT_WATCHPOINTS();
    auto& s = shared();
    REQUIRE(s.error.empty());
    const auto failures = s.backend.counters().arm_failures.load();
    CHECK_FALSE(s.backend.arm(0, address_of(1) + 6, 4)); // crosses an 8-byte boundary
    CHECK(s.backend.counters().arm_failures.load() == failures + 1);
    CHECK(s.backend.arm(0, address_of(1) + 2, 4)); // inside one aligned 8-byte block: covered by an 8-byte watch
    s.backend.disarm(0);
}

TEST_CASE("breakpoints: a disarmed slot delivers nothing more; another thread's copy goes off at its first trap") {
    OJX_SKIP_WITHOUT_WATCHPOINTS();
    auto& s = shared();
    REQUIRE(s.error.empty());
    s.reset();
    std::mutex serialize;
    std::atomic<int> phase{0};
    std::thread worker([&] {
        {
            const std::lock_guard<std::mutex> hold(serialize);
            REQUIRE(!s.backend.attach_current_thread());
        }
        phase = 1;
        while (phase.load() != 2) std::this_thread::yield();
        (void)load_word(12); // armed: delivered
        phase = 3;
        while (phase.load() != 4) std::this_thread::yield();
        for (int i = 0; i < 3; ++i) (void)load_word(12); // disarmed by the main thread: at most one stale trap
        const std::lock_guard<std::mutex> hold(serialize);
        s.backend.detach_current_thread();
    });
    while (phase.load() != 1) std::this_thread::yield();
    {
        const std::lock_guard<std::mutex> hold(serialize);
        REQUIRE(s.backend.arm(3, address_of(12), 8));
    }
    phase = 2;
    while (phase.load() != 3) std::this_thread::yield();
    const auto stale_before = s.backend.counters().traps_unknown.load();
    {
        const std::lock_guard<std::mutex> hold(serialize);
        s.backend.disarm(3);
    }
    (void)load_word(12); // the disarming thread's own copy is off at once
    phase = 4;
    worker.join();
    CHECK(s.rec.recorded_traps().size() == 1);
    CHECK(s.backend.counters().traps_unknown.load() - stale_before == 1);
}
