// The structures the backend's signal handlers share across threads, checked without signals so that
// ThreadSanitizer can watch them: the thread table (lookups racing with additions and removals) and the
// profiler lock (try_lock from "handlers" racing with lock from "hooks").
#include "ojx/hardware/profiling_session.hpp"
#include "ojx/hardware/thread_table.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

using namespace ojx::hardware;

namespace {
struct record {
    std::atomic<std::uint64_t> touched{0};
    record() = default;
    record& operator=(const record&) { return *this; } // table resets records with State{}; nothing to copy
};
} // namespace

TEST_CASE("thread table: add, find, remove, reuse") {
    auto table = std::make_unique<thread_table<record, 64>>();
    for (pid_t tid = 1; tid <= 64; ++tid) REQUIRE(table->add(tid) != nullptr);
    CHECK(table->add(1000) == nullptr); // full
    for (pid_t tid = 1; tid <= 64; ++tid) CHECK(table->find(tid) != nullptr);
    CHECK(table->find(65) == nullptr);
    for (pid_t tid = 1; tid <= 64; tid += 2) table->remove(tid);
    for (pid_t tid = 1; tid <= 64; ++tid) CHECK((table->find(tid) != nullptr) == (tid % 2 == 0));
    for (pid_t tid = 101; tid <= 132; ++tid) REQUIRE(table->add(tid) != nullptr); // tombstones reused
    std::size_t live = 0;
    table->for_each([&](pid_t, record&) { ++live; });
    CHECK(live == 64);
}

TEST_CASE("thread table: lookups race with registration (run under ThreadSanitizer)") {
    auto table = std::make_unique<thread_table<record, 1024>>();
    std::mutex registration; // add/remove are serialized by the caller, as the backend requires
    std::atomic<bool> stop{false};
    std::vector<std::thread> readers;
    std::atomic<std::uint64_t> found{0};
    for (int r = 0; r < 3; ++r) {
        readers.emplace_back([&] {
            while (!stop.load(std::memory_order_relaxed)) {
                for (pid_t tid = 1; tid <= 200; ++tid) {
                    if (record* rec = table->find(tid)) {
                        rec->touched.fetch_add(1, std::memory_order_relaxed);
                        found.fetch_add(1, std::memory_order_relaxed);
                    }
                }
            }
        });
    }
    // Churn until the readers have seen records often (they may start late), within a bound.
    for (int round = 0; round < 2000 || (found.load() < 1000 && round < 20000000); ++round) {
        const std::lock_guard<std::mutex> hold(registration);
        const pid_t tid = 1 + round % 200;
        if (table->find(tid) != nullptr)
            table->remove(tid);
        else
            REQUIRE(table->add(tid) != nullptr);
    }
    stop = true;
    for (auto& reader : readers) reader.join();
    CHECK(found.load() > 0);
}

TEST_CASE("profiler lock: try_lock never waits and never enters twice") {
    profiler_lock lock;
    std::atomic<int> inside{0};
    std::atomic<int> overlaps{0};
    std::atomic<std::uint64_t> tried{0}, refused{0};
    std::uint64_t protected_counter = 0;
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t) {
        threads.emplace_back([&] { // hooks: may wait
            for (int i = 0; i < 20000; ++i) {
                lock.lock();
                overlaps += inside.fetch_add(1) != 0;
                ++protected_counter;
                inside.fetch_sub(1);
                lock.unlock();
            }
        });
        threads.emplace_back([&] { // handlers: only try
            for (int i = 0; i < 20000; ++i) {
                ++tried;
                if (!lock.try_lock()) {
                    ++refused;
                    continue;
                }
                overlaps += inside.fetch_add(1) != 0;
                ++protected_counter;
                inside.fetch_sub(1);
                lock.unlock();
            }
        });
    }
    for (auto& thread : threads) thread.join();
    CHECK(overlaps.load() == 0);
    CHECK(protected_counter == 40000 + tried.load() - refused.load());
}
