// The native agent's filter in front of its tracked addresses (agents/native/address_filter.hpp): it never says
// "certainly not" for an address in the set, whatever other threads insert and erase meanwhile, including an
// address freed on another thread than the one that inserted it and counters driven past saturation; and once the
// set no longer holds an address whose counter never saturated, it says "certainly not" again. Built under
// ThreadSanitizer too (label concurrent).
#include "../../agents/native/allocation_sampling.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

using ojx::preload::address_filter;
using ojx::preload::tracked_addresses;

namespace {

// Addresses that differ only in bits 30 and above share a slot (the slot is built from bits 10 to 29).
std::uintptr_t in_slot_of(std::uintptr_t base, std::uintptr_t k) {
    return base + (k << (address_filter::granule_bits + address_filter::slot_bits));
}

} // namespace

TEST_CASE("the filter says certainly not exactly when no address of the slot is counted") {
    auto filter = std::make_unique<address_filter>();
    const std::uintptr_t base = 0x5555'1234'5670;
    CHECK_FALSE(filter->may_contain(base));
    for (std::uintptr_t k = 0; k < 200; ++k) filter->add(in_slot_of(base, k));
    REQUIRE(address_filter::slot_of(in_slot_of(base, 199)) == address_filter::slot_of(base));
    // A neighbouring block's slot is its own.
    CHECK_FALSE(filter->may_contain(base + 1024));
    for (std::uintptr_t k = 0; k < 199; ++k) {
        filter->remove(in_slot_of(base, k));
        REQUIRE(filter->may_contain(in_slot_of(base, 199)));
    }
    filter->remove(in_slot_of(base, 199));
    CHECK_FALSE(filter->may_contain(base));
}

TEST_CASE("a saturated counter never wraps to certainly not while addresses remain") {
    auto filter = std::make_unique<address_filter>();
    const std::uintptr_t base = 0x7f00'0000'1010;
    constexpr std::uintptr_t count = 600; // more than twice the counter's range
    for (std::uintptr_t k = 0; k < count; ++k) filter->add(in_slot_of(base, k));
    for (std::uintptr_t k = 0; k + 1 < count; ++k) {
        filter->remove(in_slot_of(base, k));
        REQUIRE(filter->may_contain(in_slot_of(base, count - 1))); // one address is still counted
    }
    // Saturated for good: a permanent "maybe", sending this slot's frees to the set, which answers exactly.
    filter->remove(in_slot_of(base, count - 1));
    CHECK(filter->may_contain(base));
}

TEST_CASE("no false negative while threads insert, hand over and erase addresses that share slots") {
    // Each thread inserts addresses into few slots shared with the other threads, checks them, and hands them to
    // the next thread through a locked mailbox (the program's own synchronization between malloc and a free on
    // another thread), which checks and erases them: the counters move under every thread at once.
    constexpr int thread_count = 4;
    constexpr std::uintptr_t per_thread = 20000;
    constexpr std::uintptr_t slots = 8;
    static address_filter filter; // 1 MiB: not on the stack
    tracked_addresses set(filter);
    struct mailbox {
        std::mutex lock;
        std::deque<std::uintptr_t> addresses;
    };
    mailbox mailboxes[thread_count];
    std::atomic<std::uint64_t> false_negatives{0}, erase_misses{0}, received{0};
    std::atomic<int> producing{thread_count};
    const auto address = [](int thread, std::uintptr_t i) {
        return in_slot_of(0x6000'0000'0000 + (i % slots) * 4096 + 16, static_cast<std::uintptr_t>(thread) << 20 | i);
    };
    std::vector<std::thread> threads;
    for (int t = 0; t < thread_count; ++t)
        threads.emplace_back([&, t] {
            std::uint64_t own_false = 0, own_misses = 0, own_received = 0;
            const auto drain = [&] {
                std::deque<std::uintptr_t> taken;
                {
                    const std::lock_guard hold(mailboxes[t].lock);
                    taken.swap(mailboxes[t].addresses);
                }
                for (const std::uintptr_t a : taken) {
                    own_false += set.may_contain(a) ? 0 : 1;
                    own_misses += set.erase(a) ? 0 : 1;
                    ++own_received;
                }
            };
            for (std::uintptr_t i = 0; i < per_thread; ++i) {
                const std::uintptr_t a = address(t, i);
                set.insert(a);
                own_false += set.may_contain(a) ? 0 : 1;
                {
                    mailbox& next = mailboxes[(t + 1) % thread_count];
                    const std::lock_guard hold(next.lock);
                    next.addresses.push_back(a);
                }
                if (i % 64 == 0) drain();
            }
            producing.fetch_sub(1);
            while (producing.load() != 0) {
                drain();
                std::this_thread::yield();
            }
            drain();
            false_negatives += own_false;
            erase_misses += own_misses;
            received += own_received;
        });
    for (std::thread& thread : threads) thread.join();
    CHECK(false_negatives.load() == 0);
    CHECK(erase_misses.load() == 0);
    CHECK(received.load() == thread_count * per_thread);
    CHECK_FALSE(set.erase(address(0, 0)));
}

TEST_CASE("no false negative while threads drive one counter past saturation and back") {
    // Every thread keeps its own window of live addresses in one shared slot, 4 × 96 of them at the peak (above
    // the counter's 255), inserting and erasing at once: an address still in a window is never "certainly not".
    constexpr int thread_count = 4;
    constexpr std::uintptr_t window = 96;
    constexpr std::uintptr_t rounds = 40;
    static address_filter filter;
    tracked_addresses set(filter);
    std::atomic<std::uint64_t> false_negatives{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < thread_count; ++t)
        threads.emplace_back([&, t] {
            std::uint64_t own = 0;
            const auto address = [t](std::uintptr_t k) {
                return in_slot_of(0x4000'0000'0040, static_cast<std::uintptr_t>(t) << 24 | k);
            };
            for (std::uintptr_t round = 0; round < rounds; ++round) {
                const std::uintptr_t first = round * window;
                for (std::uintptr_t k = first; k < first + window; ++k) set.insert(address(k));
                for (std::uintptr_t k = first; k < first + window; ++k) {
                    for (std::uintptr_t j = k; j < first + window; j += 16) own += set.may_contain(address(j)) ? 0 : 1;
                    set.erase(address(k));
                }
            }
            false_negatives += own;
        });
    for (std::thread& thread : threads) thread.join();
    CHECK(false_negatives.load() == 0);
}

TEST_CASE("concurrent adds and removes on shared counters lose no count") {
    // The filter directly, without the set's shard locks: every thread counts and uncounts its own addresses in 4
    // slots shared by all, never more than 4 × 4 × 8 live in a slot, far from saturation; a lost update would
    // leave a counter at 0 under a live address, or above 0 once all are uncounted.
    constexpr int thread_count = 4;
    constexpr std::uintptr_t slots = 4, window = 32, rounds = 20000;
    static address_filter filter;
    std::atomic<std::uint64_t> false_negatives{0};
    const auto address = [](int thread, std::uintptr_t k) {
        return in_slot_of(0x3000'0000'0000 + (k % slots) * 4096 + 32, static_cast<std::uintptr_t>(thread) << 24 | k);
    };
    std::vector<std::thread> threads;
    for (int t = 0; t < thread_count; ++t)
        threads.emplace_back([&, t] {
            std::uint64_t own = 0;
            for (std::uintptr_t round = 0; round < rounds; ++round) {
                const std::uintptr_t first = round * window;
                for (std::uintptr_t k = first; k < first + window; ++k) filter.add(address(t, k));
                for (std::uintptr_t k = first; k < first + window; ++k) {
                    own += filter.may_contain(address(t, k)) ? 0 : 1;
                    filter.remove(address(t, k));
                }
            }
            false_negatives += own;
        });
    for (std::thread& thread : threads) thread.join();
    CHECK(false_negatives.load() == 0);
    std::uint64_t maybe = 0;
    for (std::uintptr_t s = 0; s < slots; ++s) maybe += filter.may_contain(address(0, s)) ? 1 : 0;
    CHECK(maybe == 0);
}
