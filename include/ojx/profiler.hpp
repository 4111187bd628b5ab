// The replica profiler: OJXPerf's algorithm as a policy-based type. It composes the interval object map
// (address → object), the watchpoint pool with its replacement policy, a pairing policy, the replica
// estimator and a calling context tree, and is driven by events from any backend:
//
//   allocation / free / move / GC   keep the object map true (objects below a size threshold are ignored);
//   access sample                   the sampled object, found once (resolve) and handed along with the sample;
//                                   remember ⟨offset, value, digest⟩ for its context;
//                                   if it is a later, different object than a remembered one of the same
//                                   context, watch it at the remembered offsets;
//   watchpoint trap                 compare the remembered value (and the digest of the window around it) with
//                                   what is there now, and count the comparison for the context;
//   whole-object digest             at a moment no sample has to land on it (free(), exit, a collection's start),
//                                   digest a tracked object whole into its context's identical groups and
//                                   near-replica families (whole_object_evidence.hpp).
//
// Memory is bounded: per context a fixed number of remembered objects and probes (allocated when the context
// is first seen), a fixed pool of watchpoints, a fixed table of access contexts. Nothing on the sample or trap
// path allocates. Events must be delivered one at a time (the emulation and replay backends do so; the
// hardware backend serializes per thread).
#pragma once

#include "ojx/allocation_metrics.hpp"
#include "ojx/analysis_sink.hpp"
#include "ojx/calling_context_tree.hpp"
#include "ojx/content_digest.hpp"
#include "ojx/digest_budget.hpp"
#include "ojx/interval_map.hpp"
#include "ojx/live_heap.hpp"
#include "ojx/pairing_policy.hpp"
#include "ojx/random.hpp"
#include "ojx/replica_estimator.hpp"
#include "ojx/sampler.hpp"
#include "ojx/site_estimate.hpp"
#include "ojx/types.hpp"
#include "ojx/watchpoint_pool.hpp"
#include "ojx/whole_object_digest.hpp"
#include "ojx/whole_object_evidence.hpp"
#include "ojx/zeroed_storage.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace ojx {

// What the profiler's calling context tree counts per node. For allocation contexts: objects and bytes
// allocated there; for access contexts: samples taken there.
struct context_metrics {
    std::uint64_t allocations = 0;
    std::uint64_t allocated_bytes = 0;
    std::uint64_t samples = 0;

    context_metrics& operator+=(const context_metrics& other) noexcept {
        allocations += other.allocations;
        allocated_bytes += other.allocated_bytes;
        samples += other.samples;
        return *this;
    }
};

using context_tree = calling_context_tree<context_metrics>;

struct profiler_config {
    std::uint64_t min_object_size = 1024;       // smaller objects are not tracked (the paper: 1 KiB)
    std::size_t remembered_objects = 16;        // per context: earlier sampled objects kept for pairing
    std::size_t probes_per_object = 2;          // per remembered object: ⟨offset, value⟩ probes kept
    std::size_t probes_per_pair = 2;            // watchpoints armed for one pair (≥ 2 lets α be estimated)
    std::size_t compare_window = 64;            // bytes around the probed word compared by digest; 0: word only
    bool probe_stores = false;                  // remember values of sampled stores, and compare at store traps
    // When an object is first remembered, also read a second probe at another compared window of it (see
    // take_companion_probe), so that every pair is compared at two places and α has evidence. Unset: the backend
    // decides (resolved_for_backend): on where pairs are compared at the sample, off where a watchpoint waits for
    // the program's next access (a word the program never touches would hold its slot until evicted). Needs
    // probes_per_object ≥ 2. The profiler takes unset as off.
    std::optional<bool> companion_probe;
    std::size_t max_contexts = 1 << 16;         // allocation contexts with state; further ones are counted
    std::size_t context_tree_capacity = 1 << 16; // nodes, preallocated (≈ 60 bytes each)
    std::size_t object_map_capacity = 1 << 12;  // initial cells of the object map (it grows)
    // Given to the object map (interval_map_config::advise_large_table): where an OS backend asks for huge pages
    // for the map's large tables, whose random probes otherwise pay a TLB miss each.
    void (*advise_large_table)(void* memory, std::size_t bytes) = nullptr;
    std::size_t access_contexts_per_context = 8; // heavy-hitter table of access contexts per allocation context
    // Mean bytes between sampled allocations when the allocation hook sees only a sample (JVMTI heap sampling);
    // 0: every allocation is seen. Allocation metrics are then scaled estimates (allocation_metrics.hpp).
    std::uint64_t allocation_sampling_interval = 0;
    // Tracked allocations per second the agent aimed at by moving the interval at run time (adaptive tracking,
    // allocation_rate_target.hpp); each object then says its own interval (allocation_shape::sampling_interval).
    // 0: not adaptive. Only described in the report; the weights come from the objects.
    std::uint64_t allocation_tracking_target = 0;
    // Set by the backend (resolved_for_backend) where no watchpoint traps: a pair's word is compared at once, by
    // the sample that armed its watchpoint, reading the word through the memory policy. The watchpoint policy's
    // slots then only hold the pairs (the pool's replacement policy still chooses among them).
    bool compare_at_sample = false;
    std::uint64_t seed = 1;
    estimator_config estimator{};
    // Whole-object evidence: the tables each context gets when its first object is digested, and the bytes per
    // second digest_at_death may read (0: no limit; digest_tracked_objects takes its budget per call).
    whole_object_config whole_objects{};
    std::uint64_t death_digest_bytes_per_second = 0;
    // Whether the objects tracked at digest_tracked_objects are the live heap (native free() tells every death),
    // so that its sweep is a moment of the heap view (live_heap.hpp). A runtime whose deaths only collections
    // tell (a JVM) holds garbage there that no collection has found yet: its moments are collections'.
    bool sweep_sees_live_heap = true;
    // Where every death is seen: the bytes a census of the live heap may read during the run (census_live_heap,
    // whose caller asks live_census_due after allocations; 0: no limit). None: the heap view's moments are the
    // exit sweep's and collections' only.
    std::optional<std::uint64_t> live_census_bytes;
};

// `config` as a backend runs it: pairs compared at the sample or not, and an unset companion_probe on exactly
// where they are.
inline profiler_config resolved_for_backend(profiler_config config, bool compares_at_sample) {
    config.compare_at_sample = compares_at_sample;
    if (!config.companion_probe) config.companion_probe = compares_at_sample;
    return config;
}

// Counters of everything that happened, including every reason a sample or trap was not used.
struct profiler_stats {
    std::uint64_t allocations = 0;
    std::uint64_t allocations_ignored_small = 0;
    std::uint64_t allocations_ignored_contexts_full = 0;
    std::uint64_t objects_evicted_by_overlap = 0;
    std::uint64_t frees = 0;
    std::uint64_t moves = 0;
    std::uint64_t samples = 0;
    std::uint64_t samples_untracked = 0;  // address in no tracked object
    std::uint64_t samples_busy = 0;       // object map was being updated by the interrupted thread
    std::uint64_t samples_stores_ignored = 0;
    std::uint64_t samples_unreadable = 0; // the object's memory could not be read for the digest
    std::uint64_t companion_probes = 0;   // second probes kept when an object was first remembered
    std::uint64_t pairs = 0;
    std::uint64_t size_mismatches = 0;
    std::uint64_t watch_requests = 0;
    std::uint64_t watch_armed = 0;
    std::uint64_t watch_evicted = 0;
    std::uint64_t watch_declined = 0;     // the replacement policy kept the armed ones
    std::uint64_t watch_arm_failures = 0;
    std::uint64_t watch_cancelled = 0;    // target died or moved before the trap
    std::uint64_t traps = 0;
    std::uint64_t traps_stale = 0;        // no watch in that slot, or its object is no longer there
    std::uint64_t traps_stores_ignored = 0;
    std::uint64_t comparisons = 0;
    // Whole-object digests (digest_at_death, digest_tracked_objects).
    std::uint64_t objects_digested = 0;
    std::uint64_t bytes_digested = 0;
    std::uint64_t digests_skipped_budget = 0; // offered, not drawn by the budget's subsampling (or past its cap)
    std::uint64_t digests_unreadable = 0;     // the object's memory could not be read
};

// One allocation context's part of the report.
struct context_report {
    context_id context = no_context;
    type_id type = no_type;
    std::uint64_t objects = 0;
    std::uint64_t bytes = 0;
    context_allocations allocated; // JP's metrics: instances per type, arrays and their elements
    evidence_summary evidence; // what the estimate is computed from; profiles carry it so that they merge
    replica_estimate estimate; // from comparisons
    whole_object_summary whole; // objects digested whole; profiles carry it so that they merge
    identical_groups_estimate identical; // from `whole`
    near_replica_estimate near;          // from `whole`
    site_estimate combined; // the site's estimate, from whichever evidence the rule picks (site_estimate.hpp)
    live_summary live;      // its objects alive at the heap view's moment (replica_report::live_moment)
    struct access {
        context_id context = no_context;
        std::uint64_t samples = 0;
    };
    std::vector<access> accesses; // most sampled first
};

// What a profile says: contexts sorted by their combined estimate (ranks_before in site_estimate.hpp; contexts
// without an estimate last), and the run's counters.
struct replica_report {
    std::vector<context_report> contexts;
    profiler_stats stats;
    estimator_config estimator; // the settings the estimates were computed with
    std::uint64_t allocation_sampling_interval = 0; // profiler_config's: 0 when the allocation metrics are exact
    std::uint64_t allocation_tracking_target = 0;   // profiler_config's: 0 when the interval was fixed
    // The smallest and largest interval a tracked object said it was sampled at (allocation_shape), when any did.
    std::optional<std::pair<std::uint64_t, std::uint64_t>> sampled_interval_range;

    live_heap_moment live_moment; // the heap view's moment (live_heap.hpp): none where no sweep saw the heap

    // Adaptive tracking whose interval never left 0, as its agent said (profiler::note_tracking_stayed_exact):
    // every allocation at or above the threshold was tracked, so its counts are counts.
    bool tracking_stayed_exact = false;

    // Whether the allocation metrics are scaled estimates rather than counts.
    bool allocations_estimated() const noexcept {
        return allocation_sampling_interval != 0 || (allocation_tracking_target != 0 && !tracking_stayed_exact);
    }
};

// The policies a profiler is built from.
template <class P>
concept profiler_policies = watchpoint_arming<typename P::watchpoints> && memory_reader<typename P::memory> &&
                            replacement_policy<typename P::replacement> && pairing_policy<typename P::pairing>;

// The one way to bundle them: a backend names its watchpoints and memory (each backend an alias of this), the
// replacement and pairing policies default to OJXPerf's reservoirs and may be chosen per run.
template <class Watchpoints, class Memory, replacement_policy Replacement = reservoir_replacement,
          pairing_policy Pairing = reservoir_pairing>
struct policy_bundle {
    using watchpoints = Watchpoints;
    using memory = Memory;
    using replacement = Replacement;
    using pairing = Pairing;
};

// What digest_at_death and digest_tracked_objects tell by default: nobody.
struct ignore_digest {
    void operator()(const whole_object_digest&) const noexcept {}
};

template <profiler_policies Policies>
class profiler {
public:
    using watchpoints_type = typename Policies::watchpoints;
    using memory_type = typename Policies::memory;
    using replacement_type = typename Policies::replacement;
    using pairing_type = typename Policies::pairing;

    profiler(const profiler_config& config, watchpoints_type& watchpoints, memory_type& memory)
        : config_(sanitized(config)),
          watchpoints_(watchpoints),
          memory_(memory),
          contexts_(config_.context_tree_capacity),
          objects_(interval_map_config{.initial_capacity = config_.object_map_capacity,
                                       .advise_large_table = config_.advise_large_table}),
          pool_(watchpoints.slot_count(), config_.seed ^ 0x5eedULL),
          rng_(config_.seed),
          digest_rng_(config_.seed ^ 0xd19e57ULL),
          state_of_context_(zeroed_storage<std::uint32_t>(config_.context_tree_capacity)) {}

    profiler(const profiler&) = delete;
    profiler& operator=(const profiler&) = delete;

    const profiler_config& config() const noexcept { return config_; }
    const profiler_stats& stats() const noexcept { return stats_; }
    context_tree& contexts() noexcept { return contexts_; }
    const context_tree& contexts() const noexcept { return contexts_; }
    std::size_t tracked_objects() const noexcept { return objects_.size(); }
    // Signal-safe: whether `where` is inside a tracked object (for tests and tools; a sample is resolved instead).
    bool tracks(address where) const noexcept { return objects_.lookup(where).status == lookup_status::found; }
    // Bytes held by the object map (all tables, including retired ones), for memory accounting.
    std::size_t object_map_bytes() const noexcept { return objects_.memory_bytes(); }

    // Bytes of state one allocation context costs with this configuration (allocated when its first object is).
    static std::size_t bytes_per_context(const profiler_config& config) noexcept {
        const profiler_config c = sanitized(config);
        return sizeof(context_state) + sizeof(std::uint32_t) +
               c.remembered_objects * (sizeof(std::uint64_t) + sizeof(remembered_object)) +
               c.remembered_objects * c.probes_per_object * sizeof(probe) +
               c.access_contexts_per_context * sizeof(context_report::access);
    }
    // And what a context costs once its first object is digested whole.
    static std::size_t whole_object_bytes_per_context(const profiler_config& config) noexcept {
        return whole_object_evidence::bytes_for(config.whole_objects);
    }

    // A new object [begin, begin + size) allocated in `context`. May allocate (first object of a context).
    // Returns what the profiler now remembers about it (for callers that relocate objects themselves, see
    // on_collection), or nothing when the object is not tracked.
    std::optional<object_info> on_allocation(address begin, std::uint64_t size, context_id context, type_id type,
                                             const allocation_shape& shape = {}) {
        ++stats_.allocations;
        if (size < config_.min_object_size || size == 0) {
            ++stats_.allocations_ignored_small;
            return std::nullopt;
        }
        context_state* state = state_for(context, type);
        if (state == nullptr) {
            ++stats_.allocations_ignored_contexts_full;
            return std::nullopt;
        }
        const std::uint64_t interval = shape.sampling_interval.value_or(config_.allocation_sampling_interval);
        if (shape.sampling_interval) {
            sampled_interval_range_ = sampled_interval_range_
                                          ? std::pair{std::min(sampled_interval_range_->first, interval),
                                                      std::max(sampled_interval_range_->second, interval)}
                                          : std::pair{interval, interval};
        }
        const double weight = sampling_weight(size + shape.header_bytes, interval);
        const object_info info{context, type, ++next_serial_, weight, shape.typed_layout};
        const auto inserted = objects_.insert(begin, begin + size, info);
        stats_.objects_evicted_by_overlap += inserted.evicted;
        live_tracked_bytes_ += weight * static_cast<double>(size);
        ++state->objects;
        state->bytes += size;
        state->allocated.add(type, size, shape, weight);
        if (context < contexts_.size()) {
            contexts_.metrics(context).allocations += 1;
            contexts_.metrics(context).allocated_bytes += size;
        }
        return info;
    }

    // The tracked object that begins at `begin`, if any.
    std::optional<object_info> object_at(address begin) const noexcept {
        const auto found = objects_.lookup(begin);
        if (found.status != lookup_status::found || found.value.begin != begin) return std::nullopt;
        return found.value.payload;
    }

    void on_free(address begin) {
        const auto found = objects_.lookup(begin);
        if (found.status != lookup_status::found || found.value.begin != begin) return;
        ++stats_.frees;
        cancel_watches_on(found.value.payload.serial);
        live_tracked_bytes_ = std::max(0.0, live_tracked_bytes_ - found.value.payload.allocation_weight *
                                                                    static_cast<double>(found.value.end - found.value.begin));
        objects_.erase(begin);
    }

    // The object at `from` now lives at `to` (a moving GC). Its watchpoints are cancelled: they watch the old
    // address.
    void on_move(address from, address to) {
        const auto found = objects_.lookup(from);
        if (found.status != lookup_status::found || found.value.begin != from) return;
        ++stats_.moves;
        cancel_watches_on(found.value.payload.serial);
        // Its comparisons were cancelled with the watchpoints: let its next sample pair it again.
        if (context_state* state = existing_state(found.value.payload.allocation_context);
            state && state->last_paired_target == found.value.payload.serial)
            state->last_paired_target = 0;
        objects_.relocate(from, to);
    }

    // Before a collection: every armed watchpoint may be about to watch a moved or dead object. Objects whose
    // comparisons are cancelled this way may be paired again.
    void on_gc_start() {
        for (std::size_t slot = 0; slot < pool_.slot_count(); ++slot) cancel_slot(slot);
        for (const auto& chunk : states_)
            for (context_state& state : *chunk) state.last_paired_target = 0;
    }

    // After a moving collection whose every survivor the caller knows (a JVM agent: from object tags): the
    // complete set of live tracked objects, each with where it was and where it is now. Every other tracked
    // object died. The map is rebuilt in one go, because a survivor may now lie where another one was; the
    // objects keep their serials, so their remembered probes stay theirs. Call on_gc_start before the
    // collection; no watchpoint survives it. Each survivor comes with all it was tracked with (its weight and
    // typed layout included): its entry may be gone from the map (an allocation after the collection overlapped
    // its old place before this call).
    using relocated_object = ojx::relocated_object;
    void on_collection(std::span<const relocated_object> survivors) {
        on_gc_start();
        const std::size_t before = objects_.size();
        objects_.clear();
        live_tracked_bytes_ = 0;
        for (const relocated_object& object : survivors) {
            if (object.from != object.to) ++stats_.moves;
            stats_.objects_evicted_by_overlap += objects_.insert(object.to, object.to + object.size, object.info).evicted;
            live_tracked_bytes_ += object.info.allocation_weight * static_cast<double>(object.size);
        }
        if (before > objects_.size()) stats_.frees += before - objects_.size();
    }

    // Every tracked object is gone or unknown (e.g. a GC whose moves were not observed).
    void forget_all_objects() {
        on_gc_start();
        objects_.clear();
        live_tracked_bytes_ = 0;
    }

    // Signal-safe (no lock, no allocation): `sample` with the tracked object at its address, looked up once here
    // for everything the sample goes to (the host's access context capture, every sink).
    resolved_sample resolve(const access_sample& sample) const noexcept {
        const auto found = objects_.lookup(sample.effective_address);
        return resolved_sample{sample, found.status,
                               tracked_object{found.value.begin, found.value.end, found.value.payload}};
    }

    // Signal-safe (no allocation, no lock): called for each delivered sample, found by resolve.
    void on_sample(const resolved_sample& resolved) noexcept {
        const access_sample& sample = resolved.sample;
        ++stats_.samples;
        if (ignores(sample)) {
            ++stats_.samples_stores_ignored;
            return;
        }
        if (resolved.status == lookup_status::busy) {
            ++stats_.samples_busy;
            return;
        }
        if (!resolved.found()) {
            ++stats_.samples_untracked;
            return;
        }
        const tracked_object& object = resolved.object;
        context_state* state = existing_state(object.info.allocation_context);
        if (state == nullptr) {
            ++stats_.samples_untracked;
            return;
        }
        count_access(*state, sample.access_context);
        const std::uint64_t size = object.size();
        const std::uint64_t offset = sample.effective_address - object.begin;
        const std::uint8_t width = clamp_width(sample.width, size - offset);
        compared_window window;
        if (!read_window(object.begin, size, offset, window)) {
            ++stats_.samples_unreadable;
            return;
        }
        const probe sampled{offset, masked(sample.value, width), 0, width, sample.access_context};
        if (state->last_paired_target != object.info.serial) {
            state->last_paired_target = object.info.serial;
            auto scan = scan_remembered<true>(*state, object.info.serial);
            pair_with_earlier(*state, scan, object.info, object.begin, size);
            remember(*state, scan.own_slot, object.info.serial, object.begin, size, sampled, window);
        } else {
            remember(*state, scan_remembered<false>(*state, object.info.serial).own_slot, object.info.serial,
                     object.begin, size, sampled, window);
        }
        if (config_.compare_at_sample) compare_armed_now(sample);
    }
    // A sample no host has resolved (a replay, an emulated machine driving the profiler alone).
    void on_sample(const access_sample& sample) noexcept {
        on_sample(ignores(sample) ? resolved_sample{sample} : resolve(sample));
    }
    // Whether on_sample drops `sample` whatever it hit (a store, unless stores are probed).
    bool ignores(const access_sample& sample) const noexcept {
        return sample.kind == access_kind::store && !config_.probe_stores;
    }

    // Signal-safe: called when the watchpoint in `trap.slot` fires.
    void on_trap(const watchpoint_trap& trap) noexcept {
        ++stats_.traps;
        if (!pool_.armed(trap.slot) || pool_.at(trap.slot).where != trap.watched_address) {
            ++stats_.traps_stale;
            return;
        }
        if (trap.kind == access_kind::store && !config_.probe_stores) {
            ++stats_.traps_stores_ignored; // keep watching: the load that follows is what we compare
            return;
        }
        const auto watch = *pool_.release(trap.slot);
        watchpoints_.disarm(trap.slot);
        const watch_payload& w = watch.payload;
        const auto found = objects_.lookup(watch.where);
        context_state* state = existing_state(w.context);
        if (found.status != lookup_status::found || found.value.payload.serial != w.target_serial ||
            state == nullptr) {
            ++stats_.traps_stale;
            return;
        }
        const std::uint64_t size = found.value.end - found.value.begin;
        compared_window window;
        if (!read_window(found.value.begin, size, watch.where - found.value.begin, window)) {
            ++stats_.traps_stale;
            return;
        }
        const bool equal = masked(trap.value, watch.width) == w.value && window.digest() == w.digest;
        state->evidence.record(w.source_serial, w.target_serial, equal, w.weight);
        ++stats_.comparisons;
    }

    // Whole-object evidence. Each tracked object is offered once: at its death (digest_at_death), or at the first
    // sweep after its allocation (digest_tracked_objects), whichever comes first; a sweep offers only objects
    // allocated since the previous one. Counting an object at its first moment, not its last, keeps the
    // histograms add-only (no per-object digest kept, nothing to take back), and where the caller sees deaths
    // (native free()) that first moment is the last. Not signal-safe, and not concurrent with any other event:
    // call under the lock that serializes allocation and free events. No allocation, except a context's tables at
    // its first digested object.
    //
    // `note` is handed what each call decided (whole_object_digest.hpp), for a recorder: a digested object with
    // its fingerprint and weight, and counts of objects skipped or unreadable (one note per kind and sweep). The
    // budgets draw from a generator of their own, so that a replay, which applies the notes instead
    // (apply_recorded_digest), leaves every other draw of the profiler as the live run made it.
    enum class digest_outcome {
        digested,
        untracked,      // no tracked object starts at `begin`
        offered_before, // a sweep since its allocation offered it already (or it was just digested)
        over_budget,    // not drawn by the per-second budget's subsampling
        unreadable,     // its memory could not be read
    };

    // At an object's death, before on_free: digests the tracked object that starts at `begin`. `now_ns`: a
    // monotonic clock in nanoseconds, for death_digest_bytes_per_second. Each second's objects are drawn with one
    // probability, min(1, budget / bytes offered the second before), and weighted by its inverse, so that the
    // budget subsamples every site alike; past twice the budget within a second the probability falls
    // (budgeted_inclusion), never to 0, so that a burst is subsampled fairly whatever its order.
    template <class Note = ignore_digest>
    digest_outcome digest_at_death(address begin, std::uint64_t now_ns = 0, Note&& note = Note{}) {
        const auto found = objects_.lookup(begin);
        if (found.status != lookup_status::found || found.value.begin != begin) return digest_outcome::untracked;
        const object_info& info = found.value.payload;
        if (info.serial <= swept_through_ || info.serial == last_death_digest_) return digest_outcome::offered_before;
        last_death_digest_ = info.serial;
        const std::uint64_t size = found.value.end - found.value.begin;
        double inclusion = 1;
        if (const std::uint64_t budget = config_.death_digest_bytes_per_second; budget != 0) {
            if (now_ns - death_window_start_ >= 1'000'000'000ULL) {
                death_inclusion_ = death_window_offered_ > budget
                                       ? static_cast<double>(budget) / static_cast<double>(death_window_offered_)
                                       : 1;
                death_window_start_ = now_ns;
                death_window_offered_ = 0;
                death_window_digested_ = 0;
            }
            death_window_offered_ += size;
            inclusion = budgeted_inclusion(death_inclusion_, static_cast<double>(death_window_digested_),
                                           2 * static_cast<double>(budget));
            if (inclusion < 1 && !(digest_rng_.unit() < inclusion)) {
                settle(whole_object_digest::left_out(whole_object_digest::kind::skipped), nullptr, note);
                return digest_outcome::over_budget;
            }
            death_window_digested_ += size;
        }
        const digest_outcome outcome = digest(found.value.begin, size, info, 1 / inclusion, note);
        if (outcome == digest_outcome::unreadable)
            settle(whole_object_digest::left_out(whole_object_digest::kind::unreadable), nullptr, note);
        return outcome;
    }

    struct sweep_result {
        std::uint64_t offered = 0;  // tracked objects allocated since the previous sweep
        std::uint64_t digested = 0;
        std::uint64_t skipped = 0;  // not drawn by the budget
        std::uint64_t unreadable = 0;
        std::uint64_t bytes = 0;    // digested
    };

    // A sweep (exit; a collection's start is hold_collection_digests): digests the tracked objects allocated since
    // the previous sweep, reading about `byte_budget` bytes (0: no limit). Where they hold more, each is drawn
    // with the same probability, budget / their bytes, and weighted by its inverse: a fair subsample within every
    // site, without ordering the objects (no allocation); past twice the budget the probability falls
    // (budgeted_inclusion), never to 0.
    template <class Note = ignore_digest>
    sweep_result digest_tracked_objects(std::uint64_t byte_budget = 0, Note&& note = Note{}) {
        sweep_result result;
        const std::uint64_t since = swept_through_;
        std::uint64_t offered_bytes = 0;
        double live_bytes = 0;
        objects_.for_each([&](const auto& object) {
            if (object.payload.serial <= since) return;
            ++result.offered;
            offered_bytes += object.end - object.begin;
            live_bytes += object.payload.allocation_weight * static_cast<double>(object.end - object.begin);
        });
        // The heap view's moment, where the map holds the live heap and holds more than any moment before: the
        // objects this sweep offers, and the ones it digests.
        std::optional<live_heap_census> census;
        if (config_.sweep_sees_live_heap && live_bytes > live_moment_.bytes)
            census.emplace(config_.whole_objects.content_groups);
        context_id digesting = no_context;
        const auto noting = [&](const whole_object_digest& decided) {
            if (census && decided.outcome == whole_object_digest::kind::digested)
                census->digested(digesting, decided.fingerprint, decided.weight);
            note(decided);
        };
        const double inclusion = byte_budget == 0 || offered_bytes <= byte_budget
                                     ? 1
                                     : static_cast<double>(byte_budget) / static_cast<double>(offered_bytes);
        objects_.for_each([&](const auto& object) {
            if (object.payload.serial <= since) return;
            const std::uint64_t size = object.end - object.begin;
            const double drawn = budgeted_inclusion(inclusion, static_cast<double>(result.bytes),
                                                    2 * static_cast<double>(byte_budget));
            if (census) census->live(object.payload.allocation_context, object.payload.allocation_weight, size);
            if (drawn < 1 && !(digest_rng_.unit() < drawn)) {
                ++result.skipped;
                return;
            }
            digesting = object.payload.allocation_context;
            switch (digest(object.begin, size, object.payload, 1 / drawn, noting)) {
            case digest_outcome::digested:
                ++result.digested;
                result.bytes += size;
                break;
            case digest_outcome::unreadable: ++result.unreadable; break;
            default: break;
            }
        });
        swept_through_ = next_serial_;
        settle_counts(result, note);
        if (census)
            take_live_moment(*census, {.at = live_heap_moment::kind::exit, .collection = 0, .collections = 0,
                                       .bytes = live_bytes});
        return result;
    }

    // The heap view during a run whose every death is seen (live_census_bytes set: a native agent): whether the
    // tracked bytes alive have grown past the census threshold, half again the most a census or sweep has
    // seen (and at least a floor, so that a small heap waits for its exit). Cheap: a running sum kept at
    // allocation and free (an object evicted by an overlapping allocation is not taken off it until the next
    // census recounts, so it may run high: a census then costs a pass and finds no new moment).
    bool live_census_due() const noexcept {
        return config_.live_census_bytes.has_value() && live_tracked_bytes_ >= next_census_bytes_;
    }

    // A census of the live heap as a moment of the heap view, where it holds more tracked bytes than any moment
    // before: every tracked object counted alive, about live_census_bytes of them read and fingerprinted (each
    // drawn with one probability, weighted by its inverse, as a sweep draws), and nothing counted into the
    // whole-object evidence (each object is counted there at its death). Not concurrent with any other event;
    // allocates the census's tables.
    sweep_result census_live_heap() {
        sweep_result result;
        double live_bytes = 0;
        std::uint64_t bytes = 0;
        objects_.for_each([&](const auto& object) {
            ++result.offered;
            bytes += object.end - object.begin;
            live_bytes += object.payload.allocation_weight * static_cast<double>(object.end - object.begin);
        });
        live_tracked_bytes_ = live_bytes;
        next_census_bytes_ = std::max(census_floor_bytes, std::max(live_bytes, live_moment_.bytes) * census_growth);
        if (!(live_bytes > live_moment_.bytes)) return result;
        const std::uint64_t budget = config_.live_census_bytes.value_or(0);
        const double inclusion =
            budget == 0 || bytes <= budget ? 1 : static_cast<double>(budget) / static_cast<double>(bytes);
        live_heap_census census(config_.whole_objects.content_groups);
        objects_.for_each([&](const auto& object) {
            const std::uint64_t size = object.end - object.begin;
            const context_id context = object.payload.allocation_context;
            census.live(context, object.payload.allocation_weight, size);
            const double drawn = budgeted_inclusion(inclusion, static_cast<double>(result.bytes),
                                                    2 * static_cast<double>(budget));
            if (drawn < 1 && !(digest_rng_.unit() < drawn)) {
                ++result.skipped;
                return;
            }
            object_fingerprint fingerprint;
            if (!fingerprint_object(memory_, object.begin, size, fingerprint)) {
                ++result.unreadable;
                return;
            }
            ++result.digested;
            result.bytes += size;
            census.digested(context, fingerprint, object.payload.allocation_weight / drawn);
        });
        take_live_moment(census, {.at = live_heap_moment::kind::census, .collection = 0, .collections = 0,
                                  .bytes = live_bytes});
        return result;
    }

    // Moving collections (a JVM) tell an object's death only after the collection, when its memory is gone; yet
    // its contents are final only then (an array still being filled at one collection, kept, and dropped at a
    // later one was judged half-written when each object was digested once, at the first collection after its
    // allocation). So at each collection's start, before anything moves, the tracked objects are fingerprinted
    // and held, not counted (hold_collection_digests); once the runtime says which survived, the ones that did
    // not are counted with the contents they died with, and the survivors' are dropped, to be taken again at the
    // next collection's start (settle_collection_digests, before on_collection). Objects alive at exit are
    // counted by digest_tracked_objects, as ever; a collection's digests never advance what it offers.
    //
    // The budget: about `byte_budget` bytes a collection (0: no limit), the objects allocated since the previous
    // collection first (most die young, and each gets one chance), the survivors with what is left (at least a
    // quarter); each drawn with its class's probability, falling past twice the budget (budgeted_inclusion), and
    // weighted by its inverse, so that the objects counted at each death are a fair subsample whatever their
    // lifetimes. Every tracked object is offered; `offered` counts them, `skipped` those not drawn. A survivor's
    // held fingerprint is dropped whether or not it was drawn, and what a dead object without one is counted as
    // (skipped, or unreadable) is decided at settle_collection_digests. No allocation beyond the held list's
    // growth. Not concurrent with any other event.
    //
    // `hold_scope::since_last_hold`: a collection that starts before the previous one was settled (its runtime
    // had not yet said which objects survived, so the map still holds their old addresses): only the objects
    // allocated since the previous start are read, and the fingerprints held then stand; the settling after
    // this collection counts the objects both freed.
    enum class hold_scope : std::uint8_t { every_object, since_last_hold };
    sweep_result hold_collection_digests(std::uint64_t byte_budget = 0, hold_scope scope = hold_scope::every_object) {
        sweep_result result;
        if (scope == hold_scope::every_object) held_digests_.clear();
        const auto offered = [&](const auto& object) {
            return scope == hold_scope::every_object || object.payload.serial > held_through_;
        };
        std::uint64_t new_bytes = 0, old_bytes = 0;
        objects_.for_each([&](const auto& object) {
            if (!offered(object)) return;
            ++result.offered;
            (object.payload.serial > held_through_ ? new_bytes : old_bytes) += object.end - object.begin;
        });
        const auto share = [](double budget, std::uint64_t bytes) {
            return budget <= 0 || static_cast<double>(bytes) <= budget ? 1.0 : budget / static_cast<double>(bytes);
        };
        const double budget = static_cast<double>(byte_budget);
        const double new_inclusion = byte_budget == 0 ? 1 : share(budget, new_bytes);
        const double old_inclusion =
            byte_budget == 0 ? 1
                             : share(std::max(budget - static_cast<double>(new_bytes), budget / 4), old_bytes);
        objects_.for_each([&](const auto& object) {
            if (!offered(object)) return;
            const std::uint64_t size = object.end - object.begin;
            const double base = object.payload.serial > held_through_ ? new_inclusion : old_inclusion;
            const double drawn = budgeted_inclusion(base, static_cast<double>(result.bytes), 2 * budget);
            if (drawn < 1 && !(digest_rng_.unit() < drawn)) {
                ++result.skipped;
                return;
            }
            held_digest held{.serial = object.payload.serial,
                             .context = object.payload.allocation_context,
                             .digest = whole_object_digest::digested_at(object.begin,
                                                                         object.payload.allocation_weight / drawn),
                             .counted = false};
            if (!fingerprint_object(memory_, object.begin, size, held.digest.fingerprint)) {
                held.digest = whole_object_digest::left_out(whole_object_digest::kind::unreadable, 1, object.begin);
                ++result.unreadable;
            } else {
                ++result.digested;
                result.bytes += size;
            }
            held_digests_.push_back(held);
        });
        held_through_ = next_serial_;
        held_since_settle_ = true;
        return result;
    }

    // After a collection, before on_collection(survivors): counts every tracked object the collection freed (it
    // is not among `survivors`) with its held fingerprint, or as skipped or unreadable, and drops the held
    // fingerprints of the survivors. An object whose entry a later allocation evicted from the map before this
    // call is counted too, by its context (whole_object_digest::kind::digested_gone: a replay could not find it
    // by address either). `note` is handed what is counted (whole_object_digest records), the objects still in
    // the map first, in map order, before anything moves.
    template <class Note = ignore_digest>
    sweep_result settle_collection_digests(std::span<const relocated_object> survivors, Note&& note = Note{}) {
        sweep_result result;
        std::vector<std::uint64_t> surviving;
        surviving.reserve(survivors.size());
        for (const relocated_object& object : survivors) surviving.push_back(object.info.serial);
        std::sort(surviving.begin(), surviving.end());
        const auto survived = [&](std::uint64_t serial) {
            return std::binary_search(surviving.begin(), surviving.end(), serial);
        };
        std::sort(held_digests_.begin(), held_digests_.end(),
                  [](const held_digest& a, const held_digest& b) { return a.serial < b.serial; });
        objects_.for_each([&](const auto& object) {
            if (survived(object.payload.serial)) return;
            ++result.offered;
            const auto held = std::lower_bound(held_digests_.begin(), held_digests_.end(), object.payload.serial,
                                               [](const held_digest& h, std::uint64_t serial) { return h.serial < serial; });
            if (held == held_digests_.end() || held->serial != object.payload.serial || held->digest.where != object.begin) {
                ++result.skipped;
                return;
            }
            held->counted = true;
            count_held(held->digest, held->context, result, note);
        });
        // Held, then gone from the map before now: an allocation over its stale address evicted it (the
        // collection freed it, and the relocation that says so came after that allocation). Counted by its
        // context, which the record names since a replay cannot find it by address either.
        for (held_digest& held : held_digests_) {
            if (held.counted || survived(held.serial)) continue;
            ++result.offered;
            if (held.digest.outcome == whole_object_digest::kind::digested)
                held.digest = {.outcome = whole_object_digest::kind::digested_gone,
                               .context = held.context,
                               .weight = held.digest.weight,
                               .fingerprint = held.digest.fingerprint};
            count_held(held.digest, held.context, result, note);
        }
        ++collections_settled_;
        // A collection whose start was not read (its agent skipped the sweep) holds no fingerprints of its
        // survivors: not a moment (whether it was read does not depend on contents, so the choice stays fair).
        if (held_since_settle_) census_survivors(survived);
        held_since_settle_ = false;
        held_digests_.clear();
        settle_counts(result, note);
        return result;
    }

    // A replay's digest: what the live run's digest_at_death or digest_tracked_objects noted, applied with the
    // same bookkeeping, from the recorded fingerprint instead of memory. False when a digested object it names is
    // not tracked here (the trace does not describe this profiler's objects).
    bool apply_recorded_digest(const whole_object_digest& recorded) {
        if (recorded.outcome == whole_object_digest::kind::digested_gone) {
            context_state* state = existing_state(recorded.context);
            if (state == nullptr) return false;
            settle(recorded, state, ignore_digest{});
            return true;
        }
        if (recorded.outcome != whole_object_digest::kind::digested) {
            settle(recorded, nullptr, ignore_digest{});
            return true;
        }
        const auto found = objects_.lookup(recorded.where);
        if (found.status != lookup_status::found || found.value.begin != recorded.where) return false;
        context_state* state = existing_state(found.value.payload.allocation_context);
        if (state == nullptr) return false;
        settle(recorded, state, ignore_digest{});
        return true;
    }

    // The heap view as a trace keeps it, record by record to `record(const live_heap_event&)`, with the run's
    // length `seconds`: for a recorder, when the profile is taken.
    template <class Record>
    void record_live_heap(double seconds, Record&& record) const {
        live_heap_event moment;
        moment.moment = live_moment_;
        moment.moment.collections = collections_settled_;
        moment.seconds = seconds;
        record(moment);
        for (const auto& [context, live] : live_heap_) {
            live_heap_event site;
            site.what = live_heap_event::kind::site;
            site.context = context;
            site.site = {.objects = live.objects, .weight = live.weight, .bytes = live.bytes, .digested = {}};
            site.site.digested.unkept_objects = live.digested.unkept_objects;
            site.site.digested.unkept_weight = live.digested.unkept_weight;
            site.site.digested.unkept_weight_squared = live.digested.unkept_weight_squared;
            site.site.digested.unkept_largest_weight = live.digested.unkept_largest_weight;
            record(site);
            live_heap_event group;
            group.what = live_heap_event::kind::group;
            for (const content_group& g : live.digested.groups) {
                group.group = g;
                record(group);
            }
        }
    }

    // A replay's heap view: the live run's, record by record (record_live_heap; a site's context already mapped
    // to this profiler's). False for a group with no site before it.
    bool apply_recorded_live_heap(const live_heap_event& recorded) {
        switch (recorded.what) {
        case live_heap_event::kind::moment:
            live_moment_ = recorded.moment;
            collections_settled_ = std::max(collections_settled_, recorded.moment.collections);
            live_heap_.clear();
            return true;
        case live_heap_event::kind::site: {
            live_summary site = recorded.site;
            site.digested.groups.clear();
            live_heap_.insert(live_heap_.begin() + static_cast<std::ptrdiff_t>(live_heap_index(recorded.context)),
                              {recorded.context, std::move(site)});
            last_live_site_ = recorded.context;
            return true;
        }
        case live_heap_event::kind::group: {
            const std::size_t at = live_heap_index(last_live_site_);
            if (at == live_heap_.size() || live_heap_[at].first != last_live_site_) return false;
            live_heap_[at].second.digested.groups.push_back(recorded.group);
            return true;
        }
        }
        return false;
    }

    // The evidence of one allocation context (for tools and tests).
    const replica_evidence* evidence(context_id context) const noexcept {
        const context_state* state = existing_state(context);
        return state ? &state->evidence : nullptr;
    }

    // An adaptive tracker's word, before report(): its interval never left 0, so every allocation was tracked and
    // the sites' populations are known (digest_population).
    void note_tracking_stayed_exact(bool stayed) noexcept { tracking_stayed_exact_ = stayed; }
    bool tracking_stayed_exact() const noexcept { return tracking_stayed_exact_; }

    replica_report report() const {
        replica_report result;
        result.stats = stats_;
        result.estimator = config_.estimator;
        result.allocation_sampling_interval = config_.allocation_sampling_interval;
        result.allocation_tracking_target = config_.allocation_tracking_target;
        result.tracking_stayed_exact = tracking_stayed_exact_;
        result.live_moment = live_moment_;
        result.live_moment.collections = collections_settled_;
        result.sampled_interval_range = sampled_interval_range_;
        for (const auto& chunk : states_) {
            for (const context_state& state : *chunk) {
                context_report entry;
                entry.context = state.context;
                entry.type = state.type;
                entry.objects = state.objects;
                entry.bytes = state.bytes;
                entry.allocated = state.allocated;
                entry.evidence = state.evidence.summary();
                entry.estimate = estimate_replicas(state.objects, entry.evidence, config_.estimator);
                if (state.whole) entry.whole = state.whole->summary();
                entry.identical =
                    estimate_identical_groups(entry.whole.identical, config_.estimator.confidence,
                                              digest_population(state.objects, state.allocated.total().instances,
                                                                !result.allocations_estimated()));
                entry.near = estimate_near_replicas(entry.whole.near, entry.whole.objects());
                entry.combined = combine_estimates(entry.estimate, entry.identical, config_.estimator);
                const std::size_t live = live_heap_index(state.context);
                if (live < live_heap_.size() && live_heap_[live].first == state.context)
                    entry.live = live_heap_[live].second;
                entry.accesses.assign(state.accesses.get(), state.accesses.get() + state.access_count);
                std::sort(entry.accesses.begin(), entry.accesses.end(),
                          [](const auto& a, const auto& b) { return a.samples > b.samples; });
                result.contexts.push_back(std::move(entry));
            }
        }
        std::stable_sort(result.contexts.begin(), result.contexts.end(),
                         [](const context_report& a, const context_report& b) {
                             if (ranks_before(a.combined, b.combined)) return true;
                             if (ranks_before(b.combined, a.combined)) return false;
                             return ranks_before(a.estimate, b.estimate);
                         });
        return result;
    }

private:
    struct probe {
        std::uint64_t offset = 0;
        std::uint64_t value = 0;
        std::uint64_t digest = 0;
        std::uint8_t width = 0;
        context_id access_context = no_context;
    };

    // An earlier sampled object of the context and the probes taken from it (a ring of the latest ones). Its
    // serial lives apart, in remembered_serials, because every sample scans the serials and nothing else.
    struct remembered_object {
        std::uint64_t size = 0;
        std::uint32_t probe_count = 0;
        std::uint32_t next_probe = 0;
    };

    // What every sample of the context reads fills the first cache line (hence the alignment); the rest after.
    struct alignas(64) context_state {
        context_id context = no_context;
        std::uint32_t access_count = 0; // entries used in `accesses` (≤ 1024)
        std::uint64_t sampled_objects = 0; // distinct sampled objects offered to the pairing policy
        std::uint64_t last_paired_target = 0;
        std::uint64_t last_offered_serial = 0;
        std::unique_ptr<std::uint64_t[]> remembered_serials; // 0: empty slot (serials start at 1)
        std::unique_ptr<remembered_object[]> remembered;
        std::unique_ptr<probe[]> probes; // remembered_objects × probes_per_object
        std::unique_ptr<context_report::access[]> accesses;
        type_id type = no_type;
        std::uint64_t objects = 0;
        std::uint64_t bytes = 0;
        context_allocations allocated;
        replica_evidence evidence;
        std::unique_ptr<whole_object_evidence> whole; // at the context's first digested object
    };

    // What one pass over a context's remembered serials finds for a sampled object.
    struct remembered_scan {
        std::array<std::uint8_t, 64> earlier; // slots holding objects older than it; remembered_objects ≤ 64
        std::size_t earlier_count = 0;
        std::size_t own_slot = 0; // its own slot; remembered_objects when it has none
    };

    // The compared window as read at a sample or a trap, and its digest (0 without a window). A sample whose probe
    // is not kept never needs the digest, so it is computed when first asked for.
    struct compared_window {
        std::array<unsigned char, 256> bytes; // not cleared: only the `size` bytes read are looked at
        std::size_t size = 0;
        std::uint64_t digest_value = 0;
        bool digested = true;

        std::uint64_t digest() noexcept {
            if (!digested) {
                content_digest hash;
                hash.update(bytes.data(), size);
                digest_value = hash.value();
                digested = true;
            }
            return digest_value;
        }
    };

    struct watch_payload {
        context_id context = no_context;
        std::uint64_t source_serial = 0;
        std::uint64_t target_serial = 0;
        std::uint64_t value = 0;
        std::uint64_t digest = 0;
        double weight = 1; // the pairing policy's weight for this pair
    };

    static constexpr std::size_t states_per_chunk = 256;

    static profiler_config sanitized(profiler_config config) {
        config.remembered_objects = std::clamp<std::size_t>(config.remembered_objects, 1, 64);
        config.probes_per_object = std::clamp<std::size_t>(config.probes_per_object, 1, 64);
        config.probes_per_pair = std::clamp<std::size_t>(config.probes_per_pair, 1, config.probes_per_object);
        config.access_contexts_per_context = std::clamp<std::size_t>(config.access_contexts_per_context, 1, 1024);
        config.compare_window = config.compare_window == 0 ? 0 : std::max<std::size_t>(config.compare_window, 8);
        config.companion_probe = config.companion_probe.value_or(false);
        return config;
    }

    static std::uint8_t clamp_width(std::uint8_t width, std::uint64_t room) noexcept {
        std::uint8_t w = width == 0 ? 1 : (width > 8 ? 8 : width);
        while (w > room) w = static_cast<std::uint8_t>(w / 2);
        return w == 0 ? 1 : w;
    }

    static std::uint64_t masked(std::uint64_t value, std::uint8_t width) noexcept {
        return width >= 8 ? value : value & ((std::uint64_t{1} << (8 * width)) - 1);
    }

    context_state* state_for(context_id context, type_id type) {
        if (context >= config_.context_tree_capacity) return nullptr;
        if (state_of_context_[context] != 0) return &state_at(state_of_context_[context] - 1);
        if (state_count_ >= config_.max_contexts) return nullptr;
        if (state_count_ % states_per_chunk == 0)
            states_.push_back(std::make_unique<std::vector<context_state>>());
        auto& chunk = *states_.back();
        chunk.reserve(states_per_chunk);
        context_state& state = chunk.emplace_back();
        state.context = context;
        state.type = type;
        state.remembered_serials = std::make_unique<std::uint64_t[]>(config_.remembered_objects);
        state.remembered = std::make_unique<remembered_object[]>(config_.remembered_objects);
        state.probes = std::make_unique<probe[]>(config_.remembered_objects * config_.probes_per_object);
        state.accesses = std::make_unique<context_report::access[]>(config_.access_contexts_per_context);
        state_of_context_[context] = static_cast<std::uint32_t>(++state_count_);
        return &state;
    }

    context_state& state_at(std::uint32_t index) const noexcept {
        return (*states_[index / states_per_chunk])[index % states_per_chunk];
    }

    context_state* existing_state(context_id context) const noexcept {
        if (context >= config_.context_tree_capacity || state_of_context_[context] == 0) return nullptr;
        return &state_at(state_of_context_[context] - 1);
    }

    // Space-saving heavy hitters: a full table replaces its least-sampled entry and inherits its count, so the
    // most sampled access contexts survive with bounded memory.
    void count_access(context_state& state, context_id access_context) noexcept {
        if (access_context == no_context) return;
        if (access_context < contexts_.size()) contexts_.metrics(access_context).samples += 1;
        for (std::uint32_t i = 0; i < state.access_count; ++i) {
            if (state.accesses[i].context == access_context) {
                ++state.accesses[i].samples;
                return;
            }
        }
        if (state.access_count < config_.access_contexts_per_context) {
            state.accesses[state.access_count++] = {access_context, 1};
            return;
        }
        std::size_t least = 0;
        for (std::uint32_t i = 1; i < state.access_count; ++i)
            if (state.accesses[i].samples < state.accesses[least].samples) least = i;
        state.accesses[least] = {access_context, state.accesses[least].samples + 1};
    }

    // Reads the aligned window of `compare_window` bytes that holds `offset`, clipped to the object, into
    // `window`; false when the memory could not be read.
    bool read_window(address begin, std::uint64_t size, std::uint64_t offset, compared_window& window) noexcept {
        if (config_.compare_window == 0) return true;
        const std::uint64_t width = config_.compare_window;
        // A 64-bit division costs more than the rest of the arithmetic here; windows are usually powers of two.
        // (Not std::has_single_bit: without -mpopcnt it is a library call.)
        const bool power_of_two = (width & (width - 1)) == 0;
        const std::uint64_t start = power_of_two ? offset & ~(width - 1) : offset / width * width;
        const std::uint64_t end = std::min<std::uint64_t>(start + width, size);
        if (end - start <= window.bytes.size()) {
            window.size = static_cast<std::size_t>(end - start);
            if (!memory_.read(begin + start, window.bytes.data(), window.size)) return false;
            window.digested = false;
            return true;
        }
        // Longer than the buffer: digested piece by piece as it is read.
        content_digest hash;
        for (std::uint64_t at = start; at < end;) {
            const auto chunk = static_cast<std::size_t>(std::min<std::uint64_t>(window.bytes.size(), end - at));
            if (!memory_.read(begin + at, window.bytes.data(), chunk)) return false;
            hash.update(window.bytes.data(), chunk);
            at += chunk;
        }
        window.digest_value = hash.value();
        return true;
    }

    // Every sample looks for its object's own slot; a sample that pairs also needs the earlier objects, found in
    // the same pass.
    template <bool find_earlier>
    remembered_scan scan_remembered(const context_state& state, std::uint64_t serial) const noexcept {
        remembered_scan scan;
        // Bit i: slot i holds the object. A mask rather than a conditional slot number, which the compiler turns
        // into a branch that mispredicts on every sample whose object is remembered.
        std::uint64_t own_slots = 0;
        std::size_t earlier_count = 0; // a local, not a member of scan, so that it stays in a register
        for (std::size_t i = 0; i < config_.remembered_objects; ++i) {
            const std::uint64_t remembered = state.remembered_serials[i];
            own_slots |= std::uint64_t{remembered == serial} << i;
            if constexpr (find_earlier) {
                scan.earlier[earlier_count] = static_cast<std::uint8_t>(i);
                // 0 < remembered < serial in one comparison (serial ≥ 1): 0 is an empty slot, and wraps to the
                // largest value. A remembered object has ≥ 1 probe.
                earlier_count += remembered - 1 < serial - 1 ? 1 : 0;
            }
        }
        // At most one slot holds it (remember fills a slot only with an object no slot holds).
        scan.own_slot =
            own_slots == 0 ? config_.remembered_objects : static_cast<std::size_t>(std::countr_zero(own_slots));
        scan.earlier_count = earlier_count;
        return scan;
    }

    // May reorder scan.earlier.
    void pair_with_earlier(context_state& state, remembered_scan& scan, const object_info& target,
                           address target_begin, std::uint64_t target_size) noexcept {
        auto& eligible = scan.earlier;
        const std::size_t count = scan.earlier_count;
        if (count == 0) return;
        // The policy picks a rank among the eligible objects ordered oldest to newest; select just that one (a
        // uniform pick needs no order).
        const auto rank = static_cast<std::ptrdiff_t>(pairing_type::pick(count, rng_));
        if constexpr (!pairing_type::picks_uniformly) {
            const auto first = eligible.begin();
            std::nth_element(first, first + rank, first + static_cast<std::ptrdiff_t>(count),
                             [&](std::uint8_t a, std::uint8_t b) {
                                 return state.remembered_serials[a] < state.remembered_serials[b];
                             });
        }
        const std::size_t chosen = eligible[static_cast<std::size_t>(rank)];
        const std::uint64_t source_serial = state.remembered_serials[chosen];
        const remembered_object& source = state.remembered[chosen];
        const double weight = pairing_type::pair_weight(state.sampled_objects);
        ++stats_.pairs;
        if (source.size != target_size) {
            ++stats_.size_mismatches;
            ++stats_.comparisons;
            state.evidence.record_mismatch(source_serial, target.serial, weight);
            return;
        }
        const probe* probes = &state.probes[chosen * config_.probes_per_object];
        const std::size_t n = std::min<std::size_t>(config_.probes_per_pair, source.probe_count);
        // The newest probes first: they are the ones taken closest to the target's current use. Free slots take
        // all of them; once the replacement policy is consulted, this sample has had its one chance at a slot
        // (Witch: a new sample takes at most one slot).
        for (std::size_t k = 0; k < n; ++k) {
            // (next_probe - 1 - k) modulo probes_per_object without a division: k < probe_count ≤ probes_per_object.
            const std::size_t per_object = config_.probes_per_object;
            const std::size_t before = source.next_probe + per_object - 1 - k;
            const std::size_t index = before >= per_object ? before - per_object : before;
            if (!watch(state, source_serial, target, target_begin, probes[index], weight)) break;
        }
    }

    // Offers a watchpoint; true when it went into a free slot (so the pair may ask for another).
    bool watch(const context_state& state, std::uint64_t source_serial, const object_info& target,
               address target_begin, const probe& p, double weight) noexcept {
        ++stats_.watch_requests;
        const address where = target_begin + p.offset;
        if (pool_.find(where)) return true; // already watched (another probe at the same offset)
        const auto placed = pool_.offer(where, p.width,
                                        watch_payload{state.context, source_serial, target.serial, p.value, p.digest, weight});
        if (!placed.placed()) {
            ++stats_.watch_declined;
            return false;
        }
        if (placed.evicted) {
            ++stats_.watch_evicted;
            watchpoints_.disarm(placed.slot);
        }
        if (!watchpoints_.arm(placed.slot, where, p.width)) {
            ++stats_.watch_arm_failures;
            pool_.release(placed.slot);
            return false;
        }
        ++stats_.watch_armed;
        if (config_.compare_at_sample) armed_now_ |= std::uint32_t{1} << placed.slot;
        return !placed.evicted;
    }

    // compare_at_sample: each slot armed by this sample is compared now, in slot order, as a load of its word by
    // the sampled code (a slot armed, evicted and armed again is compared once, for its last pair). An unreadable
    // word (unmapped since) is not compared: the slot stays taken until its object dies or the replacement policy
    // gives it to another pair.
    void compare_armed_now(const access_sample& sample) noexcept {
        for (std::size_t slot = 0; armed_now_ != 0; ++slot) {
            const std::uint32_t bit = std::uint32_t{1} << slot;
            if ((armed_now_ & bit) == 0) continue;
            armed_now_ &= ~bit;
            if (!pool_.armed(slot)) continue;
            const address where = pool_.at(slot).where;
            const std::uint8_t width = pool_.at(slot).width;
            std::uint64_t value = 0;
            if (!memory_.read(where, &value, width)) continue;
            on_trap(watchpoint_trap{slot, where, value, width, access_kind::load, sample.ip, sample.thread,
                                    sample.access_context});
        }
    }

    // `slot`: the object's slot among the remembered ones (see scan_remembered), remembered_objects when none.
    // The probe kept is `p` with the digest of `window`, computed only if it is kept. An object remembered for
    // the first time also gets its companion probe, when configured.
    void remember(context_state& state, std::size_t slot, std::uint64_t serial, address begin, std::uint64_t size,
                  probe p, compared_window& window) noexcept {
        const bool first = slot == config_.remembered_objects;
        if (first) {
            if (state.last_offered_serial == serial) return; // offered to the policy already and not kept
            state.last_offered_serial = serial;
            const auto kept = pairing_type::keep_slot(state.sampled_objects++, config_.remembered_objects, rng_);
            if (!kept) return;
            slot = *kept;
            state.remembered_serials[slot] = serial;
            state.remembered[slot] = remembered_object{size, 0, 0};
        }
        p.digest = window.digest();
        keep_probe(state, slot, p);
        if (first && *config_.companion_probe && config_.probes_per_object >= 2) {
            probe companion;
            if (take_companion_probe(begin, size, p, companion)) keep_probe(state, slot, companion);
        }
    }

    void keep_probe(context_state& state, std::size_t slot, const probe& p) noexcept {
        remembered_object& r = state.remembered[slot];
        state.probes[slot * config_.probes_per_object + r.next_probe] = p;
        const auto probes_per_object = static_cast<std::uint32_t>(config_.probes_per_object);
        r.next_probe = r.next_probe + 1 == probes_per_object ? 0 : r.next_probe + 1;
        r.probe_count = std::min(r.probe_count + 1, probes_per_object);
    }

    // Signal-safe (reads through the memory policy, which is fault-safe). A second probe of the object
    // [begin, begin + size), read now: a word (8 bytes at an 8-byte step from its window's start, fewer at the
    // window's end: word-aligned for the usual windows) in a compared window other than the sampled probe's,
    // chosen uniformly among the object's other windows. α is P(equal | the objects are
    // not identical) at a place compared; it is measured by the comparisons a pair makes after its first
    // difference, so they must be at places that do not depend on where the pair happened to be equal or
    // different. Another word of the sampled window would share its digest and differ whenever the first did
    // (α biased low, ω too high); a uniform other window is an independent draw. An object of one window has no
    // such place and gets no companion. False when there is none or it could not be read.
    bool take_companion_probe(address begin, std::uint64_t size, const probe& sampled, probe& companion) noexcept {
        const std::uint64_t unit = config_.compare_window == 0 ? 8 : config_.compare_window;
        const std::uint64_t windows = (size + unit - 1) / unit;
        if (windows < 2) return false;
        const std::uint64_t sampled_window = sampled.offset / unit;
        std::uint64_t chosen = rng_.below(windows - 1);
        chosen += chosen >= sampled_window ? 1 : 0;
        const std::uint64_t start = chosen * unit;
        const std::uint64_t end = std::min(start + unit, size);
        const std::uint64_t offset = start + 8 * rng_.below((end - start + 7) / 8);
        const std::uint8_t width = clamp_width(8, end - offset);
        compared_window window;
        if (!read_window(begin, size, offset, window)) return false;
        std::uint64_t value = 0;
        // The word lies inside its window: when the window was read whole, the word came with it (one read).
        if (window.size != 0)
            std::memcpy(&value, window.bytes.data() + (offset - start), width);
        else if (!memory_.read(begin + offset, &value, width))
            return false;
        ++stats_.companion_probes;
        companion = probe{offset, value, window.digest(), width, sampled.access_context};
        return true;
    }

    // Reads and fingerprints [begin, begin + size), the tracked object `info`, and settles it into its context's
    // whole-object evidence with `weight` (the inverse of the chance it was drawn) times the allocations it stands
    // for; the trace keeps that product, so a replay needs no allocation weights. An unreadable object is left to
    // the caller to settle (a sweep counts them in one note).
    template <class Note>
    digest_outcome digest(address begin, std::uint64_t size, const object_info& info, double weight, Note&& note) {
        context_state* state = existing_state(info.allocation_context);
        if (state == nullptr) return digest_outcome::untracked;
        whole_object_digest digested = whole_object_digest::digested_at(begin, weight * info.allocation_weight);
        if (!fingerprint_object(memory_, begin, size, digested.fingerprint)) return digest_outcome::unreadable;
        settle(digested, state, note);
        return digest_outcome::digested;
    }

    // A collection's survivors as a moment of the heap view, where they hold more tracked bytes than any moment
    // before: the ones its start offered (allocated before it: serial up to held_through_), and the held
    // fingerprints of those drawn then. Before the held list is cleared (settle_collection_digests), which is
    // sorted by serial.
    template <class Survived>
    void census_survivors(const Survived& survived) {
        double live_bytes = 0;
        const auto offered_survivor = [&](const auto& object) {
            return object.payload.serial <= held_through_ && survived(object.payload.serial);
        };
        objects_.for_each([&](const auto& object) {
            if (offered_survivor(object))
                live_bytes += object.payload.allocation_weight * static_cast<double>(object.end - object.begin);
        });
        if (!(live_bytes > live_moment_.bytes)) return;
        live_heap_census census(config_.whole_objects.content_groups);
        objects_.for_each([&](const auto& object) {
            if (!offered_survivor(object)) return;
            census.live(object.payload.allocation_context, object.payload.allocation_weight, object.end - object.begin);
            const auto held = std::lower_bound(held_digests_.begin(), held_digests_.end(), object.payload.serial,
                                               [](const held_digest& h, std::uint64_t serial) { return h.serial < serial; });
            if (held != held_digests_.end() && held->serial == object.payload.serial &&
                held->digest.outcome == whole_object_digest::kind::digested)
                census.digested(held->context, held->digest.fingerprint, held->digest.weight);
        });
        take_live_moment(census, {.at = live_heap_moment::kind::collection,
                                  .collection = collections_settled_,
                                  .collections = 0, // the report's: the run's count then
                                  .bytes = live_bytes});
    }

    // Where `context`'s live summary is, or would go, in live_heap_ (sorted by context).
    std::size_t live_heap_index(context_id context) const {
        return static_cast<std::size_t>(
            std::lower_bound(live_heap_.begin(), live_heap_.end(), context,
                             [](const auto& l, context_id c) { return l.first < c; }) -
            live_heap_.begin());
    }

    void take_live_moment(const live_heap_census& census, const live_heap_moment& moment) {
        live_heap_ = census.summaries();
        live_moment_ = moment;
    }

    // The bookkeeping of one decision, live or replayed: a digested object goes into `state`'s evidence with its
    // weight, the others into the counters; then `note` is told.
    // A sweep's objects skipped and unreadable, one record each.
    template <class Note>
    void settle_counts(const sweep_result& result, Note&& note) {
        if (result.skipped != 0)
            settle(whole_object_digest::left_out(whole_object_digest::kind::skipped, result.skipped), nullptr, note);
        if (result.unreadable != 0)
            settle(whole_object_digest::left_out(whole_object_digest::kind::unreadable, result.unreadable), nullptr,
                   note);
    }
    // The fingerprint held for an object of `context` that its collection freed, counted.
    template <class Note>
    void count_held(const whole_object_digest& held, context_id context, sweep_result& result, Note&& note) {
        context_state* state = existing_state(context);
        if (held.outcome == whole_object_digest::kind::unreadable) {
            ++result.unreadable;
        } else if (state == nullptr) {
            ++result.skipped;
        } else {
            settle(held, state, note);
            ++result.digested;
            result.bytes += held.fingerprint.size;
        }
    }
    template <class Note>
    void settle(const whole_object_digest& decided, context_state* state, Note&& note) {
        switch (decided.outcome) {
        case whole_object_digest::kind::digested:
        case whole_object_digest::kind::digested_gone: {
            const std::uint64_t size = decided.fingerprint.size;
            if (!state->whole) state->whole = std::make_unique<whole_object_evidence>(config_.whole_objects);
            state->whole->record(decided.fingerprint, decided.weight);
            ++stats_.objects_digested;
            stats_.bytes_digested += size;
            break;
        }
        case whole_object_digest::kind::skipped: stats_.digests_skipped_budget += decided.count; break;
        case whole_object_digest::kind::unreadable: stats_.digests_unreadable += decided.count; break;
        }
        note(decided);
    }

    void cancel_slot(std::size_t slot) noexcept {
        if (pool_.release(slot)) {
            watchpoints_.disarm(slot);
            ++stats_.watch_cancelled;
        }
    }

    void cancel_watches_on(std::uint64_t serial) noexcept {
        for (std::size_t slot = 0; slot < pool_.slot_count(); ++slot)
            if (pool_.armed(slot) && pool_.at(slot).payload.target_serial == serial) cancel_slot(slot);
    }

    profiler_config config_;
    watchpoints_type& watchpoints_;
    memory_type& memory_;
    context_tree contexts_;
    object_map objects_;
    watchpoint_pool<watch_payload, replacement_type> pool_;
    fast_random rng_;
    fast_random digest_rng_; // the digest budgets' draws only (see digest_at_death)
    profiler_stats stats_;
    std::uint32_t armed_now_ = 0; // compare_at_sample: slots armed by the sample being handled
    static_assert(max_watchpoint_slots <= 32);
    std::uint64_t next_serial_ = 0;
    // Whole-object digests: objects with serials up to swept_through_ were offered to a sweep; the last object
    // digested at its death; the per-second budget's window (start, bytes offered and digested) and the inclusion
    // probability drawn from the window before.
    std::uint64_t swept_through_ = 0;
    std::uint64_t last_death_digest_ = 0;
    // A collection's held fingerprints (hold_collection_digests), and the serials a collection's start had seen.
    struct held_digest {
        std::uint64_t serial = 0;
        context_id context = no_context;
        whole_object_digest digest;
        bool counted = false; // by settle_collection_digests
    };
    std::vector<held_digest> held_digests_;
    std::uint64_t held_through_ = 0;
    // The heap view: the moment with the most tracked bytes alive so far, each site's live objects then (sorted
    // by context), and the collections settled.
    live_heap_moment live_moment_;
    std::vector<std::pair<context_id, live_summary>> live_heap_;
    std::uint64_t collections_settled_ = 0;
    bool held_since_settle_ = false; // hold_collection_digests ran since the last settle_collection_digests
    context_id last_live_site_ = no_context; // apply_recorded_live_heap: the site its group records belong to
    // Censuses during the run (census_live_heap): the tracked bytes alive (a running sum, see live_census_due),
    // and the sum the next census waits for.
    static constexpr double census_floor_bytes = 1 << 20;
    // Half again: a census reads about live_census_bytes, so a heap growing to P costs log1.5(P / 1 MiB) of them
    // (python3 growing to 700 MiB: 1.25 cost +3 % of its run against the agent without censuses, bench/RESULTS.md),
    // and the largest is at least two thirds of the tracked peak.
    static constexpr double census_growth = 1.5;
    double live_tracked_bytes_ = 0;
    double next_census_bytes_ = census_floor_bytes;
    std::uint64_t death_window_start_ = 0;
    std::uint64_t death_window_offered_ = 0;
    std::uint64_t death_window_digested_ = 0;
    double death_inclusion_ = 1;
    std::optional<std::pair<std::uint64_t, std::uint64_t>> sampled_interval_range_;
    bool tracking_stayed_exact_ = false;
    // Context id → 1 + the index of its state, 0 for none: calloc's zeros, so its pages are touched only where
    // contexts have state (filled with a marker at construction, it cost every process 256 KiB of resident
    // memory). Sized to the tree's capacity up front so the sample path never reallocates it; states live in
    // fixed-size chunks that never move.
    zeroed_ptr<std::uint32_t> state_of_context_;
    std::vector<std::unique_ptr<std::vector<context_state>>> states_;
    std::size_t state_count_ = 0;
};

} // namespace ojx
