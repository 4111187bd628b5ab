#include "tracked_objects.hpp"

#include "heap_layout.hpp"

#include <time.h>

#include <cstdio>
#include <cstring>
#include <new>

namespace ojx::jvm {

void tracked_objects::on_allocation(JNIEnv* jni, jobject object, jclass klass, std::uint32_t data_offset,
                                    std::uint8_t element_size, std::uint64_t size,
                                    std::span<const std::uint64_t> frames, type_id type,
                                    std::optional<std::uint64_t> array_length,
                                    std::optional<std::uint64_t> sampling_interval) {
    if (size <= data_offset) return;
    const bool unreferenced = size >= unreferenced_from_;
    const jweak reference = unreferenced ? nullptr : jni->NewWeakGlobalRef(object);
    if (reference == nullptr && !unreferenced) return;
    const std::lock_guard lock(mutex_);
    // If a collection moves the object after this read, the pause it starts covers the stale address until
    // relocate() (which waits for this lock) finds the object where it went.
    const address begin = object_address(object) + data_offset;
    const std::uint64_t contents = size - data_offset;
    // The header is the object's, not its contents': JVMTI sampled the whole object. An instance's fields lie where
    // its class puts them; an array's elements are alike.
    const allocation_shape shape{.header_bytes = data_offset,
                                 .array_length = array_length,
                                 .sampling_interval = sampling_interval,
                                 .typed_layout = !array_length};
    const std::optional<object_info> info = session_.on_allocation(begin, contents, frames, type, shape);
    if (!info) {
        counters_.untracked_full.fetch_add(1, std::memory_order_relaxed);
        if (reference != nullptr) jni->DeleteWeakGlobalRef(reference);
        return;
    }
    if (unreferenced) counters_.unreferenced.fetch_add(1, std::memory_order_relaxed);
    objects_.push_back(entry{reference, begin, contents, data_offset, element_size,
                             starts_.load(std::memory_order_acquire), *info});
    // Under the lock: a census (taken with it held) counts exactly the objects the registry holds.
    if (census_) census_->tag(object, klass, info->type, data_offset);
}

void tracked_objects::on_collection_start(std::uint64_t sweep_budget) noexcept {
    const std::lock_guard sweeping(sweep_mutex_);
    sweep_locked(sweep_budget, true);
    starts_.fetch_add(1, std::memory_order_acq_rel);
    session_.pause();
    session_.on_gc_start();
}

void tracked_objects::sweep(std::uint64_t byte_budget) noexcept {
    const std::lock_guard sweeping(sweep_mutex_);
    sweep_locked(byte_budget, false);
}

void tracked_objects::sweep_locked(std::uint64_t byte_budget, bool collection) noexcept {
    const std::uint64_t finished = finishes_.load(std::memory_order_acquire);
    const bool settled = relocated_.load(std::memory_order_acquire) == finished;
    // A collection that starts before the previous one's survivors were relocated: the map still holds their old
    // addresses, so only the objects allocated since that collection's start are read (where they were
    // allocated); the fingerprints held then stand for the rest. The exit sweep comes after a relocation.
    if (starts_.load(std::memory_order_acquire) != finished || (!settled && !collection)) {
        counters_.sweeps_skipped.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    timespec start{}, end{};
    ::clock_gettime(CLOCK_MONOTONIC, &start);
    try {
        using scope = hardware::profiling_session::profiler_type::hold_scope;
        if (collection)
            session_.hold_collection_digests(byte_budget, settled ? scope::every_object : scope::since_last_hold);
        else
            session_.digest_tracked_objects(byte_budget);
    } catch (const std::bad_alloc&) {
        // The held list grows, and a site's first digest allocates its tables; without memory the sweep stops
        // there, unharmed.
    }
    ::clock_gettime(CLOCK_MONOTONIC, &end);
    const auto ns = static_cast<std::uint64_t>((end.tv_sec - start.tv_sec) * 1'000'000'000LL + (end.tv_nsec - start.tv_nsec));
    if (!collection) {
        counters_.exit_sweep_ns.fetch_add(ns, std::memory_order_relaxed);
        return;
    }
    counters_.sweeps.fetch_add(1, std::memory_order_relaxed);
    if (!settled) counters_.sweeps_partial.fetch_add(1, std::memory_order_relaxed);
    counters_.sweep_ns_total.fetch_add(ns, std::memory_order_relaxed);
    std::uint64_t longest = counters_.sweep_ns_max.load(std::memory_order_relaxed);
    while (ns > longest && !counters_.sweep_ns_max.compare_exchange_weak(longest, ns, std::memory_order_relaxed)) {}
}

bool tracked_objects::relocate(JNIEnv* jni) {
    const std::lock_guard lock(mutex_);
    for (;;) {
        const std::uint64_t finished = finishes_.load(std::memory_order_acquire);
        const std::uint64_t started = starts_.load(std::memory_order_acquire);
        if (started != finished) return false; // a collection is running: its finish brings us back
        const std::uint64_t generation = session_.pause_generation();
        survivors_.clear();
        std::vector<std::size_t> dead;
        std::uint64_t check_failures = 0, dropped = 0;
        for (std::size_t i = 0; i < objects_.size(); ++i) {
            const entry& e = objects_[i];
            if (e.reference == nullptr) {
                if (e.starts_before < started) { // a collection has started since its allocation
                    dead.push_back(i);
                    ++dropped;
                } else {
                    survivors_.push_back({e.begin, e.begin, e.size, e.info});
                }
                continue;
            }
            const jobject strong = jni->NewLocalRef(e.reference);
            if (strong == nullptr) {
                dead.push_back(i);
                continue;
            }
            const address object = object_address(strong);
            if (!holds_allocated_array(e, object)) ++check_failures;
            survivors_.push_back({e.begin, object + e.data_offset, e.size, e.info});
            jni->DeleteLocalRef(strong);
        }
        if (starts_.load(std::memory_order_acquire) != started) {
            counters_.retries.fetch_add(1, std::memory_order_relaxed);
            continue; // a collection moved objects while we looked
        }
        // Commit: the registry follows the survivors (same order, dead ones removed).
        std::size_t survivor = 0, next_dead = 0, kept = 0;
        for (std::size_t i = 0; i < objects_.size(); ++i) {
            if (next_dead < dead.size() && dead[next_dead] == i) {
                if (objects_[i].reference != nullptr) jni->DeleteWeakGlobalRef(objects_[i].reference);
                ++next_dead;
                continue;
            }
            if (survivors_[survivor].to != survivors_[survivor].from)
                counters_.moved.fetch_add(1, std::memory_order_relaxed);
            objects_[i].begin = survivors_[survivor++].to;
            objects_[kept++] = objects_[i];
        }
        objects_.resize(kept);
        counters_.died.fetch_add(dead.size() - dropped, std::memory_order_relaxed);
        counters_.check_failures.fetch_add(check_failures, std::memory_order_relaxed);
        try {
            session_.settle_collection_digests(survivors_); // the objects it freed, with their contents at death
        } catch (const std::bad_alloc&) {
            // A site's first digest allocates its tables: without memory those digests are lost, nothing else.
        }
        session_.on_collection(survivors_);
        const std::uint64_t relocations = counters_.collections.fetch_add(1, std::memory_order_relaxed) + 1;
        relocated_.store(finished, std::memory_order_release);
        // Fails if a collection started after our look: sampling stays paused until the next relocation.
        session_.resume(generation);
        if (census_ && census_->due(relocations)) take_census(started);
        return true;
    }
}

// The registry's lock keeps allocations out (they tag under it) and a later relocation from changing the trace's
// heap: until the census is written, the trace's heap is the one the relocation left. A collection between the
// relocation and the walk would make the walk count a later heap: that census is dropped, and counted.
void tracked_objects::take_census(std::uint64_t gc_starts) {
    const auto walk_error = census_->count(census_event_.types);
    if (walk_error && counters_.censuses_skipped.load() == 0) std::fprintf(stderr, "ojx: census: %s\n", walk_error->c_str());
    if (walk_error || starts_.load(std::memory_order_acquire) != gc_starts) {
        counters_.censuses_skipped.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    census_event_.gc = gc_starts;
    session_.record_census(census_event_);
    counters_.censuses.fetch_add(1, std::memory_order_relaxed);
}

// The object's memory is read directly: a local reference keeps it alive, and it cannot move while this thread
// runs (a collection that moves it first makes relocate() look again, discarding this answer).
bool tracked_objects::holds_allocated_array(const entry& e, address object) const noexcept {
    if (e.element_size == 0) return true;
    std::int32_t length = 0;
    std::memcpy(&length, reinterpret_cast<const void*>(object + length_offset_), sizeof length);
    const std::uint64_t end = e.data_offset + static_cast<std::uint64_t>(length) * e.element_size;
    return length >= 0 && (end + 7) / 8 * 8 == e.data_offset + e.size;
}

void tracked_objects::clear(JNIEnv* jni) {
    const std::lock_guard lock(mutex_);
    for (const entry& e : objects_)
        if (e.reference != nullptr) jni->DeleteWeakGlobalRef(e.reference);
    objects_.clear();
}

std::size_t tracked_objects::size() const {
    const std::lock_guard lock(mutex_);
    return objects_.size();
}

} // namespace ojx::jvm
