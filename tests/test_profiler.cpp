// The profiler, driven event by event on the emulation backend's heap and debug registers, so every step of
// OJXPerf's algorithm (and every reason to drop a sample or a trap) is checked directly.
#include "ojx/emulation/emulated_watchpoints.hpp"
#include "ojx/emulation/heap_shapes.hpp"
#include "ojx/emulation/session.hpp"
#include "ojx/emulation/synthetic_heap.hpp"
#include "ojx/profiler.hpp"
#include "ojx/report.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <sstream>

using namespace ojx;
using namespace ojx::emulation;

namespace {

using test_profiler = profiler<policies<>>;

struct fixture {
    explicit fixture(profiler_config config = small_config()) : prof(config, watchpoints, heap) {
        const std::uint64_t path[] = {1, 2};
        const std::uint64_t other[] = {1, 3};
        const std::uint64_t use[] = {1, 4};
        context = prof.contexts().insert_path(path);
        other_context = prof.contexts().insert_path(other);
        use_context = prof.contexts().insert_path(use);
    }

    static profiler_config small_config() {
        profiler_config config;
        config.context_tree_capacity = 64;
        config.min_object_size = 64;
        config.compare_window = 0;
        config.probes_per_pair = 1;
        config.estimator.min_comparisons = 1;
        return config;
    }

    address allocate(std::uint64_t size, context_id in, std::uint64_t fill) {
        const address where = *heap.allocate(size);
        for (std::uint64_t off = 0; off + 8 <= size; off += 8) heap.store(where + off, 8, fill + off);
        prof.on_allocation(where, size, in, 0);
        return where;
    }

    void sample(address where, access_kind kind = access_kind::load) {
        prof.on_sample(access_sample{0x400000, where, heap.load(where, 8), 8, kind, 1, use_context});
    }

    // Two objects of `context` of 256 bytes, filled from `fill_first` and `fill_second`.
    std::pair<address, address> two_objects(std::uint64_t fill_first, std::uint64_t fill_second) {
        const address first = allocate(256, context, fill_first);
        return {first, allocate(256, context, fill_second)};
    }

    // A sample on `earlier` at +64 is remembered; a sample on `later` pairs with it and watches later + 64.
    void remember_then_pair(address earlier, address later) {
        sample(earlier + 64);
        sample(later + 8);
    }

    void trap_at(address where, access_kind kind = access_kind::load) {
        const auto hit = watchpoints.check(where, 8, kind == access_kind::store);
        REQUIRE(hit);
        prof.on_trap(watchpoint_trap{hit->slot, hit->watched, heap.load(hit->watched, 8), 8, kind, 0x400010, 1,
                                     use_context});
    }

    // A load traps every armed watchpoint, in slot order.
    void trap_every_armed() {
        for (std::size_t slot = 0; slot < watchpoints.slot_count(); ++slot)
            if (const auto watched = watchpoints.watched(slot)) trap_at(watched->watched);
    }

    synthetic_heap heap{1 << 20};
    emulated_watchpoints watchpoints{4};
    test_profiler prof;
    context_id context = no_context, other_context = no_context, use_context = no_context;
};

} // namespace

TEST_CASE("a later object of the same context is watched at the remembered offset and compared") {
    fixture f;
    const address a = f.allocate(256, f.context, 1000);
    const address b = f.allocate(256, f.context, 1000); // identical contents
    f.sample(a + 64);
    REQUIRE(f.watchpoints.armed_count() == 0); // nothing earlier to pair with
    f.sample(b + 128);
    REQUIRE(f.watchpoints.armed_count() == 1);
    REQUIRE(f.watchpoints.check(b + 64, 8, false)); // the offset remembered from a, in b
    f.trap_at(b + 64);
    REQUIRE(f.watchpoints.armed_count() == 0); // one trap per watchpoint
    const auto* evidence = f.prof.evidence(f.context);
    REQUIRE(evidence);
    REQUIRE(evidence->summary().equal == 1);
    REQUIRE(f.prof.stats().comparisons == 1);
}

TEST_CASE("different contents compare different") {
    fixture f;
    const auto [a, b] = f.two_objects(1000, 5000);
    f.remember_then_pair(a, b);
    f.trap_at(b + 64);
    REQUIRE(f.prof.evidence(f.context)->summary().different == 1);
}

TEST_CASE("the value captured at sample time is compared, not the source's memory at trap time") {
    fixture f;
    const auto [a, b] = f.two_objects(1000, 1000);
    f.sample(a + 64);
    f.heap.store(a + 64, 8, 0xdead); // a changes after its sample; b still holds what a held
    f.sample(b + 8);
    f.trap_at(b + 64);
    REQUIRE(f.prof.evidence(f.context)->summary().equal == 1);
}

TEST_CASE("the window digest catches a difference next to the compared word") {
    auto config = fixture::small_config();
    config.compare_window = 64;
    fixture f(config);
    const auto [a, b] = f.two_objects(1000, 1000);
    f.heap.store(b + 72, 8, 0xbad); // same word at +64, different word in the same 64-byte window
    f.remember_then_pair(a, b);
    f.trap_at(b + 64);
    REQUIRE(f.prof.evidence(f.context)->summary().different == 1);
}

TEST_CASE("objects of another context, or below the size threshold, are not paired") {
    fixture f;
    const address a = f.allocate(256, f.context, 1000);
    const address c = f.allocate(256, f.other_context, 1000);
    const address small = f.allocate(32, f.context, 1000);
    f.sample(a + 64);
    f.sample(c + 64);
    REQUIRE(f.watchpoints.armed_count() == 0);
    f.sample(small + 8);
    REQUIRE(f.prof.stats().allocations_ignored_small == 1);
    REQUIRE(f.prof.stats().samples_untracked == 1);
    f.sample(a + 72); // the same object again: still nothing to compare
    REQUIRE(f.watchpoints.armed_count() == 0);
}

TEST_CASE("sampled stores are not remembered, and a store trap keeps the watchpoint armed") {
    fixture f;
    const address a = f.allocate(256, f.context, 1000);
    const address b = f.allocate(256, f.context, 1000);
    f.sample(a + 64, access_kind::store);
    REQUIRE(f.prof.stats().samples_stores_ignored == 1);
    f.sample(a + 64);
    f.sample(b + 8);
    f.trap_at(b + 64, access_kind::store);
    REQUIRE(f.prof.stats().traps_stores_ignored == 1);
    REQUIRE(f.watchpoints.armed_count() == 1);
    f.trap_at(b + 64);
    REQUIRE(f.prof.evidence(f.context)->summary().equal == 1);
}

TEST_CASE("with probe_stores, a sampled store is remembered and paired, and a store trap is compared") {
    auto config = fixture::small_config();
    config.probe_stores = true;
    fixture f(config);
    const address a = f.allocate(256, f.context, 1000);
    const address b = f.allocate(256, f.context, 1000);
    const address c = f.allocate(256, f.context, 5000);
    f.sample(a + 64, access_kind::store); // remembered: a + 64 held 1064
    f.sample(b + 8, access_kind::store);  // pairs b with a: b + 64 watched
    REQUIRE(f.prof.stats().samples_stores_ignored == 0);
    REQUIRE(f.watchpoints.check(b + 64, 8, true));
    f.trap_at(b + 64, access_kind::store); // compared at once, and the slot freed
    REQUIRE(f.prof.stats().traps_stores_ignored == 0);
    REQUIRE(f.watchpoints.armed_count() == 0);
    REQUIRE(f.prof.evidence(f.context)->summary().equal == 1);
    f.sample(c + 8, access_kind::store); // pairs c with a remembered object: different contents
    REQUIRE(f.watchpoints.armed_count() == 1);
    for (std::size_t slot = 0; slot < f.watchpoints.slot_count(); ++slot)
        if (const auto watched = f.watchpoints.watched(slot)) f.trap_at(watched->watched, access_kind::store);
    REQUIRE(f.prof.evidence(f.context)->summary().different == 1);
    REQUIRE(f.prof.stats().comparisons == 2);
}

TEST_CASE("freeing or moving the watched object cancels its watchpoint; lookups follow the move") {
    fixture f;
    const auto [a, b] = f.two_objects(1000, 1000);
    f.remember_then_pair(a, b);
    REQUIRE(f.watchpoints.armed_count() == 1);
    const address moved_to = *f.heap.allocate(256);
    f.prof.on_move(b, moved_to);
    REQUIRE(f.watchpoints.armed_count() == 0);
    REQUIRE(f.prof.stats().watch_cancelled == 1);
    f.sample(b + 8); // the old address no longer belongs to a tracked object
    REQUIRE(f.prof.stats().samples_untracked == 1);
    f.sample(moved_to + 16); // the moved object is found, and paired again
    REQUIRE(f.watchpoints.armed_count() == 1);
    f.prof.on_free(moved_to);
    REQUIRE(f.watchpoints.armed_count() == 0);
    REQUIRE(f.prof.tracked_objects() == 1);
}

TEST_CASE("a GC start disarms everything; a trap on a freed slot is stale") {
    fixture f;
    const auto [a, b] = f.two_objects(1000, 1000);
    f.remember_then_pair(a, b);
    const auto hit = f.watchpoints.check(b + 64, 8, false);
    REQUIRE(hit);
    f.prof.on_gc_start();
    REQUIRE(f.watchpoints.armed_count() == 0);
    f.prof.on_trap(watchpoint_trap{hit->slot, b + 64, 0, 8, access_kind::load, 0, 1, f.use_context});
    REQUIRE(f.prof.stats().traps_stale == 1);
    REQUIRE(f.prof.stats().comparisons == 0);
}

TEST_CASE("forgetting all objects (a collection whose moves were not seen) disarms and untracks everything") {
    fixture f;
    const auto [a, b] = f.two_objects(1000, 1000);
    f.remember_then_pair(a, b);
    REQUIRE(f.watchpoints.armed_count() == 1);
    f.prof.forget_all_objects();
    REQUIRE(f.watchpoints.armed_count() == 0);
    REQUIRE(f.prof.tracked_objects() == 0);
    f.sample(a + 8);
    REQUIRE(f.prof.stats().samples_untracked == 1);
}

TEST_CASE("a collection with known survivors rebuilds the map: objects swap places, keep their serials, the dead go") {
    fixture f;
    const address a = *f.heap.allocate(256);
    const address b = *f.heap.allocate(256);
    const address dead = *f.heap.allocate(256);
    const auto info_a = f.prof.on_allocation(a, 256, f.context, 0);
    const auto info_b = f.prof.on_allocation(b, 256, f.other_context, 0);
    REQUIRE(f.prof.on_allocation(dead, 256, f.context, 0));
    REQUIRE(info_a);
    REQUIRE(info_b);
    REQUIRE(info_a->serial != info_b->serial);
    REQUIRE_FALSE(f.prof.on_allocation(a, 8, f.context, 0)); // below the size threshold: not tracked
    f.remember_then_pair(a, dead);
    REQUIRE(f.watchpoints.armed_count() == 1);
    const test_profiler::relocated_object survivors[] = {{a, b, 256, *info_a}, {b, a, 256, *info_b}};
    f.prof.on_collection(survivors);
    REQUIRE(f.watchpoints.armed_count() == 0);
    REQUIRE(f.prof.tracked_objects() == 2);
    REQUIRE_FALSE(f.prof.tracks(dead));
    REQUIRE(f.prof.stats().moves == 2);
    REQUIRE(f.prof.stats().frees == 1);
    // Object a now lives at b: two samples in it must not pair it with itself (same serial after the move).
    f.sample(b + 8);
    f.sample(b + 64);
    REQUIRE(f.watchpoints.armed_count() == 0);
    // Object b now lives at a, in the other context: not paired with a either.
    f.sample(a + 8);
    REQUIRE(f.watchpoints.armed_count() == 0);
    REQUIRE(f.prof.stats().samples_untracked == 0);
}

namespace {

profiler_config companion_config(std::uint64_t seed) {
    auto config = fixture::small_config();
    config.compare_window = 64;
    config.probes_per_pair = 2;
    config.companion_probe = true;
    config.seed = seed;
    return config;
}

} // namespace

TEST_CASE("a companion probe: a second place in another window, read when the object is first remembered") {
    // 256-byte objects: windows 0..3; the sample falls in window 1 (+64). Over seeds the companion lands in each
    // of the other windows, word-aligned, and never in the sampled one.
    std::array<int, 4> per_window{};
    for (std::uint64_t seed = 1; seed <= 60; ++seed) {
        fixture f(companion_config(seed));
        const auto [a, b] = f.two_objects(1000, 1000);
        f.sample(a + 64);
        REQUIRE(f.prof.stats().companion_probes == 1);
        REQUIRE(f.watchpoints.armed_count() == 0);
        f.sample(b + 8);
        REQUIRE(f.watchpoints.armed_count() == 2);
        REQUIRE(f.watchpoints.check(b + 64, 8, false)); // the sampled place
        REQUIRE(f.prof.stats().companion_probes == 2);  // b was remembered too (it may pair with a later object)
        for (std::size_t slot = 0; slot < f.watchpoints.slot_count(); ++slot) {
            const auto watched = f.watchpoints.watched(slot);
            if (!watched || watched->watched == b + 64) continue;
            const address offset = watched->watched - b;
            REQUIRE(offset % 8 == 0);
            REQUIRE(offset + watched->width <= 256);
            REQUIRE(watched->width == 8);
            REQUIRE(offset / 64 != 1);
            ++per_window[offset / 64];
        }
    }
    CHECK(per_window[1] == 0);
    CHECK(per_window[0] + per_window[2] + per_window[3] == 60);
    for (const std::size_t w : {0, 2, 3}) CHECK(per_window[w] >= 8); // uniform: 20 expected each
}

TEST_CASE("the companion probe keeps what the object held when it was remembered, and both places compare") {
    fixture f(companion_config(3));
    const auto [a, b] = f.two_objects(1000, 1000);
    f.sample(a + 64);
    // a changes everywhere after it was remembered; b still holds what a held, so both places compare equal.
    for (address off = 0; off < 256; off += 8) f.heap.store(a + off, 8, 0xdead);
    f.sample(b + 8);
    f.trap_every_armed();
    const auto summary = f.prof.evidence(f.context)->summary();
    REQUIRE(summary.equal == 2);
    REQUIRE(summary.different == 0);
}

TEST_CASE("a pair that differs at one place and is compared at another gives alpha its evidence") {
    fixture f(companion_config(5));
    const auto [a, b] = f.two_objects(1000, 1000);
    f.sample(a + 64);
    f.heap.store(b + 64, 8, 0xbad); // the sampled place differs, the companion's window does not
    f.sample(b + 8);
    // The sampled place first: the comparison after the first difference is α's.
    f.trap_at(b + 64);
    f.trap_every_armed();
    const auto summary = f.prof.evidence(f.context)->summary();
    REQUIRE(summary.different == 1);
    REQUIRE(summary.equal == 1);
    REQUIRE(summary.alpha_comparisons == 1);
    REQUIRE(summary.alpha_equal == 1);
}

TEST_CASE("no companion probe without the option, nor for an object of one compared window") {
    auto config = companion_config(1);
    config.companion_probe = false;
    fixture off(config);
    const auto [a, b] = off.two_objects(1000, 1000);
    off.sample(a + 64);
    off.sample(b + 8);
    REQUIRE(off.watchpoints.armed_count() == 1);
    REQUIRE(off.prof.stats().companion_probes == 0);

    fixture one_window(companion_config(1));
    const address c = one_window.allocate(64, one_window.context, 1000);
    const address d = one_window.allocate(64, one_window.context, 1000);
    one_window.sample(c + 16);
    one_window.sample(d + 8);
    REQUIRE(one_window.watchpoints.armed_count() == 1);
    REQUIRE(one_window.prof.stats().companion_probes == 0);
}

TEST_CASE("an emulated session turns the companion probe on where pairs are compared at the sample") {
    for (const auto trigger : {watch_trigger::at_sample, watch_trigger::loads_and_stores}) {
        session_config config;
        config.heap_bytes = 1 << 20;
        config.trigger = trigger;
        session<> s(config);
        REQUIRE(s.prof.config().companion_probe == (trigger == watch_trigger::at_sample));
        config.profiler.companion_probe = false;
        session<> off(config);
        REQUIRE(off.prof.config().companion_probe == false);
    }
}

TEST_CASE("objects of different sizes count as different without a watchpoint") {
    fixture f;
    const address a = f.allocate(256, f.context, 1000);
    const address b = f.allocate(512, f.context, 1000);
    f.remember_then_pair(a, b);
    REQUIRE(f.watchpoints.armed_count() == 0);
    REQUIRE(f.prof.stats().size_mismatches == 1);
    REQUIRE(f.prof.evidence(f.context)->summary().different == 1);
}

TEST_CASE("memory stays bounded: one object under a sample storm, and samples that outpace traps") {
    fixture f;
    const address only = f.allocate(4096, f.context, 1);
    for (int i = 0; i < 100000; ++i) f.sample(only + 8 * static_cast<address>(i % 512));
    REQUIRE(f.watchpoints.armed_count() == 0);
    REQUIRE(f.prof.stats().pairs == 0);
    // Many objects sampled, no access ever reaches a watched offset: the pool stays at its slot count and the
    // policy's decisions are all accounted for.
    std::vector<address> objects;
    for (int i = 0; i < 200; ++i) objects.push_back(f.allocate(256, f.context, 7));
    for (int round = 0; round < 5; ++round)
        for (const address o : objects) f.sample(o + 8 * static_cast<address>(round));
    const auto& s = f.prof.stats();
    REQUIRE(f.watchpoints.armed_count() <= 4);
    REQUIRE(s.watch_requests > 100);
    REQUIRE(s.watch_armed - s.watch_evicted - s.watch_cancelled == f.watchpoints.armed_count());
    REQUIRE(s.watch_requests >= s.watch_armed + s.watch_declined);
}

TEST_CASE("contexts beyond the configured maximum are counted, not tracked") {
    auto config = fixture::small_config();
    config.max_contexts = 1;
    fixture f(config);
    f.allocate(256, f.context, 1);
    f.allocate(256, f.other_context, 1);
    REQUIRE(f.prof.stats().allocations_ignored_contexts_full == 1);
    REQUIRE(f.prof.tracked_objects() == 1);
}

TEST_CASE("the report ranks a replicated context above a random one, and runs are reproducible") {
    const std::vector<context_shape> shapes{
        {.name = "Random.site", .group_sizes = std::vector<std::uint32_t>(150, 1)},
        {.name = "Replica.site", .group_sizes = {150}},
    };
    const auto run = [&](std::uint64_t seed) {
        session_config config;
        config.sampler.seed = seed;
        config.profiler.seed = seed;
        config.profiler.context_tree_capacity = 256;
        session<> s(config);
        const auto result = run_workload(s.machine, s.prof.contexts(), shapes, {.seed = seed});
        const auto report = s.prof.report();
        REQUIRE(report.contexts.size() == 2);
        REQUIRE(report.contexts[0].context == result.allocation_contexts[1]);
        REQUIRE(report.contexts[0].estimate.theta > 0.95);
        REQUIRE(report.contexts[1].estimate.theta < 0.05);
        std::ostringstream json;
        write_json(json, report, s.prof.contexts(), {}, s.facts());
        return json.str();
    };
    REQUIRE(run(11) == run(11));
    REQUIRE(run(11) != run(12));
}

TEST_CASE("tracks: inside a tracked object until it is freed; never in small objects or between objects") {
    fixture f;
    const address big = f.allocate(2048, 1, 100);
    const address small = f.allocate(32, 1, 200); // below the fixture's min_object_size (64)
    CHECK(f.prof.tracks(big));
    CHECK(f.prof.tracks(big + 2047));
    CHECK_FALSE(f.prof.tracks(big + 2048));
    CHECK_FALSE(f.prof.tracks(small));
    f.prof.on_free(big);
    CHECK_FALSE(f.prof.tracks(big));
}

namespace {
std::size_t advised_tables = 0;
std::size_t advised_bytes = 0;
void count_advice(void*, std::size_t bytes) {
    ++advised_tables;
    advised_bytes += bytes;
}
} // namespace

TEST_CASE("the object map's large tables are offered to the configured huge-page hook") {
    profiler_config config = fixture::small_config();
    config.object_map_capacity = std::size_t{1} << 17; // a table of 4 MiB: the smallest the map offers
    config.advise_large_table = count_advice;
    advised_tables = 0;
    advised_bytes = 0;
    fixture f(config);
    REQUIRE(advised_tables == 1);
    REQUIRE(advised_bytes >= (std::size_t{4} << 20));
    // And a small map offers nothing.
    advised_tables = 0;
    fixture small;
    REQUIRE(advised_tables == 0);
}
