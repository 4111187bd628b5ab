// The heap rebuilt from a trace (replay/heap_layout.hpp): hand-written traces give the census they must at every
// point; each kind of inconsistency is reported alone, at its event; and recorded emulated runs rebuilt at every
// collection pass every check and hold exactly the synthetic heap's live objects.
#include "ojx/emulation/heap_shapes.hpp"
#include "ojx/emulation/trace_recorder.hpp"
#include "ojx/replay/heap_layout.hpp"

#include <catch2/catch.hpp>

#include <cstdio>
#include <map>
#include <tuple>
#include <vector>

namespace {

using namespace ojx;
using namespace ojx::emulation;
using replay::heap_point;
using replay::heap_problem;

// A trace written event by event, each append returning the event's number as the reader will count it.
struct hand_trace {
    in_memory_trace trace;
    std::uint64_t events = 0;

    std::uint64_t add(const trace_event& event) {
        REQUIRE(trace.writer().append(event));
        return ++events;
    }
    std::span<const std::byte> bytes() { return trace.finish(); }
};

heap_point at_gc(std::uint64_t gc) { return {heap_point::kind::gc_start, gc}; }
heap_point after(std::uint64_t event) { return {heap_point::kind::after_event, event}; }

// begin → (size, context, type) of the live objects.
using object_set = std::map<address, std::tuple<std::uint64_t, context_id, type_id>>;
object_set objects_of(const replay::heap_layout& layout) {
    object_set set;
    for (const auto& [where, object] : layout.live()) set[where] = {object.size, object.context, object.type};
    return set;
}

} // namespace

TEST_CASE("a hand-written trace gives the census it must at each point", "[heap]") {
    hand_trace t;
    t.add(type_symbol{1, "Node"});
    t.add(type_symbol{2, "byte[]"});
    t.add(frame_symbol{10, "main"});
    t.add(frame_symbol{11, "Tree.insert"});
    t.add(frame_symbol{12, "Codec.read"});
    t.add(context_symbol{0, no_context, 0});
    t.add(context_symbol{1, 0, 10});
    t.add(context_symbol{2, 1, 11});
    t.add(context_symbol{3, 1, 12});
    // Three threads bump-allocating in their own buffers.
    t.add(allocation_event{1, 0x1000, 0x40, 2, 1});
    t.add(allocation_event{2, 0x8000, 0x100, 3, 2});
    t.add(allocation_event{1, 0x1040, 0x40, 2, 1});
    t.add(allocation_event{3, 0x9000, 0x200, 3, 2});
    const std::uint64_t fourth = t.add(allocation_event{1, 0x1080, 0x40, 2, 1});
    t.add(free_event{0x1040});
    const std::uint64_t before_gc = t.add(free_event{0x8000});
    t.add(gc_start_event{1});
    t.add(move_event{0x1080, 0x1040}); // slid down over the freed Node
    t.add(region_move_event{0x9000, 0x2000, 0x1000}); // the byte[] region to a new space
    t.add(gc_end_event{1});
    const std::uint64_t late = t.add(allocation_event{2, 0x2200, 0x80, 3, 2});
    t.add(gc_start_event{2});
    const auto file = t.bytes();

    SECTION("after the fourth allocation") {
        const auto heap = replay::reconstruct_heap(file, "hand.ojxt", after(fourth));
        REQUIRE(heap.error.empty());
        REQUIRE(heap.events == fourth);
        REQUIRE(heap.layout.problems() == 0);
        const auto census = replay::census_of(heap.layout);
        REQUIRE(census.objects == 5);
        REQUIRE(census.bytes == 0x40 * 3 + 0x100 + 0x200);
        REQUIRE(census.entries.size() == 2);
        REQUIRE(census.entries[0].type == 2); // byte[]: 0x300 bytes before Node's 0xC0
        REQUIRE(census.entries[0].objects == 2);
        REQUIRE(census.entries[1].bytes == 0xC0);
        REQUIRE(census.lowest == 0x1000);
        REQUIRE(census.highest_end == 0x9200);
        REQUIRE(replay::context_frames(heap, 2) == std::vector<std::string>{"Tree.insert", "main"});
        REQUIRE(replay::type_name(heap, 1) == "Node");
    }
    SECTION("at the start of GC 1: the heap the collector found") {
        const auto heap = replay::reconstruct_heap(file, "hand.ojxt", at_gc(1));
        REQUIRE(heap.error.empty());
        REQUIRE(heap.events == before_gc);
        REQUIRE(heap.layout.problems() == 0);
        REQUIRE(objects_of(heap.layout) == object_set{{0x1000, {0x40, 2, 1}}, {0x1080, {0x40, 2, 1}},
                                                      {0x9000, {0x200, 3, 2}}});
        REQUIRE(heap.layout.totals().freed_bytes == 0x140);
    }
    SECTION("at the start of GC 2: moved, slid, and one more allocation") {
        const auto heap = replay::reconstruct_heap(file, "hand.ojxt", at_gc(2));
        REQUIRE(heap.error.empty());
        REQUIRE(heap.events == late);
        REQUIRE(heap.layout.problems() == 0);
        REQUIRE(objects_of(heap.layout) == object_set{{0x1000, {0x40, 2, 1}}, {0x1040, {0x40, 2, 1}},
                                                      {0x2000, {0x200, 3, 2}}, {0x2200, {0x80, 3, 2}}});
        REQUIRE(heap.layout.totals().moves == 2);
        REQUIRE(heap.layout.totals().gcs == 1);
        REQUIRE(heap.layout.live().at(0x2200).allocated_at == late);
        REQUIRE(heap.layout.live().at(0x2200).thread == 2);
    }
    SECTION("points the trace does not reach") {
        const auto no_gc = replay::reconstruct_heap(file, "hand.ojxt", at_gc(3));
        REQUIRE(no_gc.error == "hand.ojxt: there is no GC 3 (the trace has 2 collections)");
        const auto no_event = replay::reconstruct_heap(file, "hand.ojxt", after(t.events + 1));
        REQUIRE(no_event.error == "hand.ojxt: there is no event " + std::to_string(t.events + 1) + " (the trace has " +
                                      std::to_string(t.events) + " events)");
    }
    SECTION("a damaged trace gives the reader's error") {
        std::vector<std::byte> cut(file.begin(), file.end() - 3);
        const auto heap = replay::reconstruct_heap(cut, "cut.ojxt", at_gc(1));
        REQUIRE(heap.error.starts_with("cut.ojxt: truncated"));
    }
}

TEST_CASE("each kind of inconsistency is reported alone, at its event", "[heap]") {
    struct expectation {
        heap_problem problem;
        std::uint64_t event = 0;
        std::size_t live = 0;
        std::uint64_t evicted = 0;
    };
    const auto check = [](hand_trace& t, const expectation& expected) {
        const auto heap = replay::reconstruct_heap(t.bytes(), "bad.ojxt", after(t.events));
        INFO(replay::heap_problem_name(expected.problem));
        REQUIRE(heap.error.empty());
        REQUIRE(heap.layout.problems() == 1);
        REQUIRE(heap.layout.count(expected.problem) == 1);
        REQUIRE(heap.layout.findings().size() == 1);
        REQUIRE(heap.layout.findings()[0].problem == expected.problem);
        REQUIRE(heap.layout.findings()[0].event == expected.event);
        REQUIRE(heap.layout.live().size() == expected.live);
        REQUIRE(heap.layout.totals().evicted_objects == expected.evicted);
        REQUIRE(heap.layout.count(heap_problem::totals_mismatch) == 0);
    };
    SECTION("an allocation over a live object evicts it") {
        hand_trace t;
        t.add(allocation_event{1, 0x1000, 0x100, 0, 0});
        const std::uint64_t e = t.add(allocation_event{2, 0x1080, 0x100, 0, 0});
        check(t, {heap_problem::overlapping_allocation, e, 1, 1});
    }
    SECTION("an allocation at a live object's address evicts it") {
        hand_trace t;
        t.add(allocation_event{1, 0x1000, 0x100, 0, 0});
        const std::uint64_t e = t.add(allocation_event{1, 0x1000, 0x10, 0, 0});
        check(t, {heap_problem::overlapping_allocation, e, 1, 1});
    }
    SECTION("a free of an address where no object starts") {
        hand_trace t;
        t.add(allocation_event{1, 0x1000, 0x100, 0, 0});
        const std::uint64_t e = t.add(free_event{0x1008});
        check(t, {heap_problem::free_of_unknown, e, 1, 0});
    }
    SECTION("a move of a freed object") {
        hand_trace t;
        t.add(allocation_event{1, 0x1000, 0x100, 0, 0});
        t.add(free_event{0x1000});
        const std::uint64_t e = t.add(move_event{0x1000, 0x4000});
        check(t, {heap_problem::move_of_unknown, e, 0, 0});
    }
    SECTION("a move onto a live object") {
        hand_trace t;
        t.add(allocation_event{1, 0x1000, 0x100, 0, 0});
        t.add(allocation_event{1, 0x2000, 0x100, 0, 0});
        const std::uint64_t e = t.add(move_event{0x1000, 0x2080});
        check(t, {heap_problem::move_onto_live, e, 1, 1});
    }
    SECTION("a region move onto a live object") {
        hand_trace t;
        t.add(allocation_event{1, 0x1000, 0x100, 0, 0});
        t.add(allocation_event{1, 0x5000, 0x100, 0, 0});
        const std::uint64_t e = t.add(region_move_event{0x1000, 0x5000, 0x1000});
        check(t, {heap_problem::move_onto_live, e, 1, 1});
    }
    SECTION("a region move that ends inside an object") {
        hand_trace t;
        t.add(allocation_event{1, 0x1000, 0x100, 0, 0});
        const std::uint64_t e = t.add(region_move_event{0x1000, 0x8000, 0x80});
        check(t, {heap_problem::region_misfit, e, 1, 0});
    }
    SECTION("a region move that starts inside an object") {
        hand_trace t;
        t.add(allocation_event{1, 0x1000, 0x100, 0, 0});
        const std::uint64_t e = t.add(region_move_event{0x1080, 0x8000, 0x1000});
        check(t, {heap_problem::region_misfit, e, 1, 0});
    }
}

namespace {

// Forwards the machine's events to the recorder and notes, at each collection's start, what the synthetic heap
// holds (begin → size from the heap itself; context and type as allocated, following moves).
struct snapshotting_sink {
    trace_recorder<recording_session<>::profiler_type>& recorder;
    const synthetic_heap& heap;
    std::map<address, std::pair<context_id, type_id>> allocated_as;
    std::vector<object_set> at_gc_start;

    void on_allocation(address where, std::uint64_t size, context_id context, type_id type,
                       const allocation_shape& shape) {
        allocated_as[where] = {context, type};
        recorder.on_allocation(where, size, context, type, shape);
    }
    void on_free(address where) {
        allocated_as.erase(where);
        recorder.on_free(where);
    }
    void on_move(address from, address to) {
        const auto node = allocated_as.extract(from);
        if (!node.empty()) allocated_as[to] = node.mapped();
        recorder.on_move(from, to);
    }
    void on_gc_start() {
        object_set live;
        for (const auto& [where, size] : heap.live()) {
            const auto& [context, type] = allocated_as.at(where);
            live[where] = {size, context, type};
        }
        at_gc_start.push_back(std::move(live));
        recorder.on_gc_start();
    }
    void on_sample(const access_sample& sample) { recorder.on_sample(sample); }
    void on_trap(const watchpoint_trap& trap) { recorder.on_trap(trap); }
};

} // namespace

TEST_CASE("recorded emulated runs rebuilt at every collection hold the synthetic heap's live objects", "[heap]") {
    const std::vector<context_shape> shapes{
        {.name = "moved", .object_size = 1024, .group_sizes = {60, 60}, .order = ordering::runs},
        {.name = "big", .object_size = 24576, .group_sizes = {30, 30}},
        {.name = "control", .object_size = 1000, .group_sizes = std::vector<std::uint32_t>(80, 1)}};
    const report_naming naming{[](std::uint64_t frame) { return "frame " + std::to_string(frame); },
                               [](type_id type) { return "type " + std::to_string(type); }};
    std::uint64_t collections = 0;
    std::uint64_t objects_checked = 0;
    std::uint64_t moves = 0;
    for (std::uint64_t seed = 1; seed <= 4; ++seed) {
        INFO("seed " << seed);
        session_config config;
        config.profiler.seed = seed;
        config.profiler.context_tree_capacity = 1024;
        config.sampler = {.period = 61, .randomized = true, .seed = seed * 31 + 7};
        config.heap_bytes = std::size_t{1} << 20; // small: collections also come from a full heap
        recording_session<> r(config, naming);
        snapshotting_sink sink{r.recorder, r.heap, {}, {}};
        emulated_machine<snapshotting_sink> machine(r.heap, r.sampler, r.watchpoints, sink);
        run_workload(machine, r.prof.contexts(), shapes,
                     {.seed = seed, .live_objects = 24 + static_cast<std::uint32_t>(seed) * 8, .collect_every = 37});
        const auto file = r.trace.finish();
        REQUIRE(r.trace.writer().events_dropped() == 0);
        REQUIRE(sink.at_gc_start.size() >= 5);

        for (std::size_t gc = 1; gc <= sink.at_gc_start.size(); ++gc) {
            INFO("GC " << gc);
            const auto heap = replay::reconstruct_heap(file, "run.ojxt", at_gc(gc));
            REQUIRE(heap.error.empty());
            for (const auto& finding : heap.layout.findings()) UNSCOPED_INFO(finding.event << ": " << finding.detail);
            REQUIRE(heap.layout.problems() == 0);
            REQUIRE(objects_of(heap.layout) == sink.at_gc_start[gc - 1]);
            const auto census = replay::census_of(heap.layout);
            std::uint64_t bytes = 0;
            for (const auto& [where, object] : sink.at_gc_start[gc - 1]) bytes += std::get<0>(object);
            REQUIRE(census.bytes == bytes);
            REQUIRE(census.objects == sink.at_gc_start[gc - 1].size());
            ++collections;
            objects_checked += census.objects;
            moves = std::max(moves, heap.layout.totals().moves);
        }
        // After the last event: the heap as the run left it.
        trace_reader counter(file, "run.ojxt");
        while (counter.next()) {}
        const auto end = replay::reconstruct_heap(file, "run.ojxt", after(counter.events_read()));
        REQUIRE(end.error.empty());
        REQUIRE(end.layout.problems() == 0);
        REQUIRE(end.layout.live().size() == r.heap.live_objects());
        for (const auto& [where, size] : r.heap.live()) REQUIRE(end.layout.live().at(where).size == size);
    }
    REQUIRE(moves > 0);
    std::printf("heap layout: %llu collections of 4 recorded runs rebuilt, %llu live objects matched the synthetic "
                "heap's, no finding\n",
                static_cast<unsigned long long>(collections), static_cast<unsigned long long>(objects_checked));
}

TEST_CASE("a relocation keeps exactly its survivors, where they went, and frees the rest", "[heap]") {
    hand_trace t;
    t.add(allocation_event{1, 0x1000, 0x40, 2, 1});
    t.add(allocation_event{1, 0x1040, 0x40, 2, 1});
    t.add(allocation_event{1, 0x1080, 0x80, 3, 2});
    t.add(gc_start_event{1});
    // The first object stays, the third moves onto where the dead second one was; 0x5000 was never allocated.
    t.add(relocated_object_event{0x1000, 0x1000, 0x40, {2, 1, 1}});
    t.add(relocated_object_event{0x1080, 0x1040, 0x80, {3, 2, 3}});
    t.add(relocated_object_event{0x5000, 0x6000, 0x40, {2, 1, 9}});
    const std::uint64_t relocated = t.add(relocation_event{3});
    const auto file = t.bytes();

    const auto heap = replay::reconstruct_heap(file, "relocation.ojxt", after(relocated));
    REQUIRE(heap.error.empty());
    CHECK(objects_of(heap.layout) == object_set{{0x1000, {0x40, 2, 1}}, {0x1040, {0x80, 3, 2}}});
    CHECK(heap.layout.totals().freed_objects == 1);
    CHECK(heap.layout.totals().freed_bytes == 0x40);
    CHECK(heap.layout.totals().moves == 1);
    CHECK(heap.layout.count(heap_problem::move_of_unknown) == 1);
    CHECK(heap.layout.count(heap_problem::move_onto_live) == 0);
}

TEST_CASE("a census is compared with the heap at its event, type by type", "[heap]") {
    hand_trace t;
    t.add(allocation_event{1, 0x1000, 0x40, 2, 1});
    t.add(allocation_event{1, 0x1040, 0x40, 2, 1});
    t.add(allocation_event{1, 0x1080, 0x80, 3, 2});
    const std::uint64_t first = t.add(heap_census_event{1, {{1, 2, 0x80}, {2, 1, 0x80}}});
    t.add(gc_start_event{2});
    // During the collection, an allocation where the second object was: set aside, not evicted; the relocation
    // finds the second object there all the same.
    t.add(allocation_event{1, 0x1040, 0x10, 4, 3});
    t.add(relocated_object_event{0x1000, 0x2000, 0x40, {2, 1, 1}});
    t.add(relocated_object_event{0x1040, 0x2040, 0x40, {2, 1, 2}});
    t.add(relocated_object_event{0x1040, 0x1040, 0x10, {4, 3, 4}});
    t.add(relocation_event{3});
    // The runtime counts one type-1 object fewer and a type-5 object the trace does not have.
    const std::uint64_t second = t.add(heap_census_event{2, {{1, 1, 0x40}, {3, 1, 0x10}, {5, 1, 0x20}}});
    const auto file = t.bytes();

    const replay::census_check check = replay::check_censuses(file, "census.ojxt");
    REQUIRE(check.error.empty());
    CHECK(check.layout.problems() == 0);
    REQUIRE(check.comparisons.size() == 2);
    const replay::census_comparison& agree = check.comparisons[0];
    CHECK(agree.event == first);
    CHECK(agree.gc == 1);
    CHECK(agree.differences.empty());
    CHECK((agree.census_objects == 3 && agree.heap_objects == 3 && agree.census_bytes == 0x100 && agree.heap_bytes == 0x100));
    const replay::census_comparison& differ = check.comparisons[1];
    CHECK(differ.event == second);
    CHECK(differ.gc == 2);
    CHECK((differ.census_objects == 3 && differ.heap_objects == 3));
    REQUIRE(differ.differences.size() == 2);
    CHECK((differ.differences[0].type == 1 && differ.differences[0].census_objects == 1 &&
           differ.differences[0].heap_objects == 2 && differ.differences[0].heap_bytes == 0x80));
    CHECK((differ.differences[1].type == 5 && differ.differences[1].census_objects == 1 &&
           differ.differences[1].heap_objects == 0));
    CHECK(differ.objects_differing() == 2);
}

TEST_CASE("an allocation over objects a collection has not relocated yet is no inconsistency unless it ends", "[heap]") {
    for (const bool relocated : {true, false}) {
        hand_trace t;
        t.add(allocation_event{1, 0x1000, 0x40, 2, 1});
        t.add(gc_start_event{1});
        t.add(allocation_event{1, 0x1020, 0x40, 2, 1}); // over the first object's old place
        if (relocated) {
            t.add(relocated_object_event{0x1000, 0x3000, 0x40, {2, 1, 1}});
            t.add(relocated_object_event{0x1020, 0x1020, 0x40, {2, 1, 2}});
            t.add(relocation_event{2});
        } else {
            t.add(gc_end_event{1}); // a collection that moves objects one by one: the overlap evicted the first
        }
        const auto file = t.bytes();
        const auto heap = replay::reconstruct_heap(file, "overlap.ojxt", after(t.events));
        REQUIRE(heap.error.empty());
        CHECK(heap.layout.count(heap_problem::overlapping_allocation) == (relocated ? 0 : 1));
        CHECK(heap.layout.count(heap_problem::totals_mismatch) == 0);
        CHECK(objects_of(heap.layout) == (relocated ? object_set{{0x1020, {0x40, 2, 1}}, {0x3000, {0x40, 2, 1}}}
                                                    : object_set{{0x1020, {0x40, 2, 1}}}));
        CHECK(heap.layout.totals().evicted_objects == (relocated ? 0 : 1));
    }
}

TEST_CASE("two collections before their relocations: allocations after the first relocation wait for the second",
          "[heap]") {
    // The JVM census suite's case (Serial, two collections starting before the agent relocated the first): the
    // first relocation puts the objects where the first collection left them; the second collection has moved one
    // of them already, and new objects are allocated where it was; the second relocation brings it back.
    hand_trace t;
    t.add(allocation_event{1, 0x1000, 0x40, 2, 1});
    t.add(allocation_event{1, 0x1040, 0x40, 2, 1});
    t.add(gc_start_event{1});
    t.add(gc_start_event{2});
    t.add(relocated_object_event{0x1000, 0x2000, 0x40, {2, 1, 1}});
    t.add(relocated_object_event{0x1040, 0x2040, 0x40, {2, 1, 2}});
    t.add(relocation_event{2});
    t.add(allocation_event{1, 0x2000, 0x40, 2, 1}); // where the second collection moved the first object from
    t.add(relocated_object_event{0x2000, 0x3000, 0x40, {2, 1, 1}});
    t.add(relocated_object_event{0x2040, 0x2040, 0x40, {2, 1, 2}});
    t.add(relocated_object_event{0x2000, 0x2000, 0x40, {2, 1, 3}});
    t.add(relocation_event{3});
    const auto file = t.bytes();
    const auto heap = replay::reconstruct_heap(file, "two.ojxt", after(t.events));
    REQUIRE(heap.error.empty());
    CHECK(heap.layout.problems() == 0);
    CHECK(objects_of(heap.layout) ==
          object_set{{0x2000, {0x40, 2, 1}}, {0x2040, {0x40, 2, 1}}, {0x3000, {0x40, 2, 1}}});
    CHECK(heap.layout.totals().evicted_objects == 0);
}
