// The Java objects ojx tracks, and how it keeps the object map true while collectors move them.
//
// Every young collection of Serial, Parallel and G1 moves objects, so the addresses in the object map and the
// armed watchpoints are stale from the moment a collection starts. The protocol:
//   1. GarbageCollectionStart (VM thread, at the safepoint; no JNI or JVMTI allowed): fingerprint the tracked
//      objects within the budget and hold the fingerprints (their contents now are the last of those the
//      collection frees), pause the session — samples and traps are dropped until step 3 — and cancel every
//      watchpoint.
//   2. GarbageCollectionFinish: note it; the agent's own thread is woken (no JVMTI calls are allowed here).
//   3. On the agent's thread, a live-phase Java thread that is not the GC: look every tracked object up
//      through its JNI weak global reference — null if it died, else where it is now —, count the dead ones'
//      held fingerprints (profiler::settle_collection_digests) and rebuild the map in one go
//      (profiler::on_collection). If another collection started meanwhile, look again. Then resume.
// Why weak references and not object tags with GetObjectsWithTags: HotSpot's GetObjectsWithTags compares every
// tagged object with every tag asked for (TagObjectCollector::do_entry), quadratic in the objects tracked;
// a weak reference is one JNI call per object.
//
// Objects held without any reference: G1 reclaims a dead humongous object (one of at least half a region) at
// the next young collection only if nothing refers to it, and its young collections treat every weak root — a
// JNI weak reference, a JVMTI tag — as keeping a humongous object alive (G1KeepAliveClosure). Such objects then
// wait for the next concurrent cycle: a program that grows large buffers had 20 collections unprofiled and 166
// with a weak reference or 176 with a tag on each one (HumongousBuffers, JDK 17), and FreeMarker's peak RSS
// tripled. So objects of at least `unreferenced_from` bytes (G1's humongous threshold) get no reference: a
// humongous object never moves, and memory is reclaimed only in a pause whose GarbageCollectionStart comes
// first, so until the next collection's start it is where it was allocated, whole. That start's sweep digests
// it (as every object allocated since the last one), and the relocation after it drops it: the profiler takes it
// as freed by that collection (one allocated after that collection began is kept until the next). What is lost
// is only whether it survived.
//
// Locks: the registry's mutex is held across JNI calls (which may wait for a safepoint). The GC callbacks never
// take it, and no thread holds the profiler's lock while waiting for the registry's, so neither waits on the
// other.
#pragma once

#include "tagged_census.hpp"

#include "ojx/hardware/profiling_session.hpp"

#include <jni.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

namespace ojx::jvm {

struct relocation_counters {
    std::atomic<std::uint64_t> collections{0};  // collections whose survivors were relocated
    std::atomic<std::uint64_t> retries{0};      // looks that a new collection overtook
    std::atomic<std::uint64_t> moved{0};        // objects found elsewhere after a collection
    std::atomic<std::uint64_t> died{0};         // objects a collection freed
    std::atomic<std::uint64_t> untracked_full{0}; // not tracked: the profiler's context table was full
    std::atomic<std::uint64_t> unreferenced{0};   // tracked without a reference, until the next collection
    // Survivors whose relocated address does not hold an array of the length they were allocated with: a bug
    // in relocation (or a JVM this agent does not understand). Checked for primitive arrays at every collection.
    std::atomic<std::uint64_t> check_failures{0};
    std::atomic<std::uint64_t> censuses{0};         // census=: heap walks written into the trace
    std::atomic<std::uint64_t> censuses_skipped{0}; // a collection came between the relocation and the walk, or the walk failed
    // Whole-object sweeps at collections' starts: how many ran, how many of them read only the objects allocated
    // since the previous start (its survivors awaiting relocation), how many were skipped (a collection already
    // running, or at exit one not yet relocated), and what they cost, each a pause the program waits for; and the
    // final sweep's time, at exit.
    std::atomic<std::uint64_t> sweeps{0};
    std::atomic<std::uint64_t> sweeps_partial{0};
    std::atomic<std::uint64_t> sweeps_skipped{0};
    std::atomic<std::uint64_t> sweep_ns_total{0};
    std::atomic<std::uint64_t> sweep_ns_max{0};
    std::atomic<std::uint64_t> exit_sweep_ns{0};
};

class tracked_objects {
public:
    // `array_length_offset`: where an array keeps its length (heap_layout), for the relocation check. `census`:
    // tags the tracked objects and counts them after relocations (census=), or nothing.
    // `unreferenced_from`: objects of at least this many bytes, header included, are tracked without a reference
    // (above); a census tags every tracked object, so with one there are none.
    tracked_objects(hardware::profiling_session& session, std::uint32_t array_length_offset,
                    std::optional<tagged_census> census = std::nullopt,
                    std::uint64_t unreferenced_from = ~std::uint64_t{0})
        : session_(session), length_offset_(array_length_offset), census_(census),
          unreferenced_from_(census ? ~std::uint64_t{0} : unreferenced_from) {}
    tracked_objects(const tracked_objects&) = delete;
    tracked_objects& operator=(const tracked_objects&) = delete;

    // On the allocating thread (SampledObjectAlloc): tracks the object's contents, `data_offset` bytes past
    // its address up to `size`, allocated at `frames` (leaf first). `element_size`: of a primitive array's
    // elements (0 for other objects), for the relocation check. `klass`: the object's class, for the census.
    // `array_length`: an array's, for the allocation metrics. `sampling_interval`: the heap sampling interval the
    // object was sampled at, where it moves (allocation_shape::sampling_interval).
    void on_allocation(JNIEnv* jni, jobject object, jclass klass, std::uint32_t data_offset, std::uint8_t element_size,
                       std::uint64_t size, std::span<const std::uint64_t> frames, type_id type,
                       std::optional<std::uint64_t> array_length, std::optional<std::uint64_t> sampling_interval);

    // GarbageCollectionStart / Finish callbacks (VM thread): no JNI, no JVMTI, no lock the agent may hold
    // while waiting for the VM. A collection's start first fingerprints, within `sweep_budget` bytes, the tracked
    // objects before anything moves (profiler::hold_collection_digests): relocate() counts the ones the collection
    // freed with those contents, their last, and drops the survivors', which the next start takes again.
    void on_collection_start(std::uint64_t sweep_budget) noexcept;
    // Whole-object evidence (docs/design.md) before the final profile: digests the tracked objects alive now,
    // within about `byte_budget` bytes, if the object map is true now (no collection's survivors await
    // relocation; otherwise nothing is digested). Objects are digested from their data offset: the header is not
    // contents, and references are compared as the addresses they hold now (object_contents.hpp). No JNI. A sweep
    // and a collection's start exclude each other (sweep_mutex_, held by nothing that waits for the VM): the final
    // sweep, on a thread a collection does not stop, either ends before a collection's start lets anything move,
    // or finds that collection started and digests nothing.
    void sweep(std::uint64_t byte_budget) noexcept;
    void on_collection_finish() noexcept { finishes_.fetch_add(1, std::memory_order_release); }
    // Whether a finished collection's survivors still have to be relocated.
    bool relocation_due() const noexcept {
        return relocated_.load(std::memory_order_acquire) != finishes_.load(std::memory_order_acquire);
    }

    // Step 3 above, on a live-phase thread that is not in a JVMTI callback of the GC. Returns false when a
    // collection is running right now (a later call will do it).
    bool relocate(JNIEnv* jni);

    // Drops every object (profiling stops): releases the weak references.
    void clear(JNIEnv* jni);

    std::size_t size() const;
    // The size from which objects are tracked without a reference; none when every object has one (not G1, or a
    // census).
    std::optional<std::uint64_t> unreferenced_from() const noexcept {
        return unreferenced_from_ == ~std::uint64_t{0} ? std::nullopt : std::optional(unreferenced_from_);
    }
    const relocation_counters& counters() const noexcept { return counters_; }

private:
    struct entry {
        jweak reference; // null: held without one, dropped at the next relocation
        address begin; // of the contents, where the object map has it
        std::uint64_t size;
        std::uint32_t data_offset;
        std::uint8_t element_size;
        // Collections started before its allocation was registered: one held without a reference is dropped by
        // the relocation of a collection that started after it (it was in the heap when that one began).
        std::uint64_t starts_before;
        object_info info;
    };

    bool holds_allocated_array(const entry& e, address object) const noexcept;
    // sweep (`collection` false) or a collection's start (true: the fingerprints are held until relocate() knows
    // which objects died), with sweep_mutex_ held.
    void sweep_locked(std::uint64_t byte_budget, bool collection) noexcept;
    // With the registry's lock held, right after the relocation of the collections up to `gc_starts`.
    void take_census(std::uint64_t gc_starts);

    hardware::profiling_session& session_;
    std::uint32_t length_offset_;
    mutable std::mutex mutex_;
    std::mutex sweep_mutex_; // a sweep, or a collection's start, at a time
    std::vector<entry> objects_;
    std::optional<tagged_census> census_;
    std::uint64_t unreferenced_from_;
    heap_census_event census_event_; // reused by take_census
    std::vector<hardware::profiling_session::profiler_type::relocated_object> survivors_; // reused by relocate
    std::atomic<std::uint64_t> starts_{0};
    std::atomic<std::uint64_t> finishes_{0};
    std::atomic<std::uint64_t> relocated_{0}; // the finish count the map is true for
    relocation_counters counters_;
};

} // namespace ojx::jvm
