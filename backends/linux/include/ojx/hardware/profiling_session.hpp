// A profiler running on real hardware in this process: the Linux backend's samples and traps feed the core
// profiler, allocation hooks (malloc interposition, JVMTI callbacks) feed it objects. Both agents build on this.
//
// The core profiler wants its events serialized. Allocation hooks run on any thread and may wait; signal
// handlers must not. So one spin lock guards the profiler: hooks take it (spinning, then yielding), handlers only
// try it. A sample that finds it held — by another thread for a moment, or by the very code it interrupted — is
// staged (what the handler learned, its access context included, in a fixed pool) and handed to the profiler by
// whoever holds the lock before letting it go; with the pool full it is dropped. A trap that finds the lock held
// is dropped (its slot may be re-armed before a later holder could compare it). Dropped events are counted.
//
// Recording (session_options::record_file): every event the profiler handles is also appended to a trace, with
// the memory the profiler read for it and the watchpoints it armed (ojx/trace_recording.hpp), by the one
// trace_writer that whoever holds the lock owns; blocks go to the file on a writer thread (trace_file_writer).
// The trace ends where the final profile is taken (with_final_profiler), so that `ojx replay` of it gives that
// profile; names, which need symbolization that is not signal-safe, are written by finish_recording.
#pragma once

#include "ojx/hardware/fault_safe_read.hpp"
#include "ojx/hardware/hardware_backend.hpp"
#include "ojx/hardware/trace_file_writer.hpp"
#include "ojx/pairing_policy.hpp"
#include "ojx/profiler.hpp"
#include "ojx/report.hpp"
#include "ojx/trace_recording.hpp"
#include "ojx/trace_writer.hpp"
#include "ojx/watchpoint_pool.hpp"

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace ojx::hardware {

// The backend's watchpoints and the process's memory, noted for the trace while recording.
struct hardware_policies {
    using watchpoints = recording_watchpoints<hardware_backend>;
    using memory = recording_memory<process_memory>;
    using replacement = reservoir_replacement;
    using pairing = reservoir_pairing;
};

// How an access context is captured from a signal handler: the interrupted code's frames, leaf first, as the
// agent encodes them (native return addresses; a JVM agent's method and bytecode index). `thread` is the kernel id
// of the interrupted thread, which is the calling one, so that per-thread state is found without a system call.
// Must be signal-safe. Unset: hardware_backend::capture_stack (frame pointers).
struct stack_walker {
    void* state = nullptr;
    std::size_t (*walk)(void* state, const ucontext_t& context, pid_t thread, std::uint64_t* leaf_first,
                        std::size_t max) noexcept = nullptr;
};

struct session_options {
    backend_options backend{};
    profiler_config profiler{};
    stack_walker access_walker{};
    std::string runtime = "native"; // what the profile's run facts call the profiled runtime
    std::string record_file;        // where to record the trace; empty: no recording
};

// How a recording went (finish_recording).
struct recording_summary {
    std::string file;
    std::uint64_t events = 0;          // handed to the profiler while recording
    std::uint64_t records_dropped = 0; // records the writer could not place (no free buffer): in the trace as events_lost
    std::uint64_t incomplete_events = 0; // events whose reads or arms did not fit the notes (the replay refuses)
    std::uint64_t bytes = 0;           // the file's size
    std::string error;                 // one line when the file could not be written whole
};

// A lock for the profiler: `lock` may wait (never call it from a signal handler), `try_lock` never waits.
class profiler_lock {
public:
    void lock() noexcept;
    bool try_lock() noexcept { return !held_.exchange(true, std::memory_order_acquire); }
    void unlock() noexcept { held_.store(false, std::memory_order_release); }

private:
    std::atomic<bool> held_{false};
};

class profiling_session {
public:
    using profiler_type = profiler<hardware_policies>;
    static constexpr std::size_t max_frames = 64;

    profiling_session() = default;
    profiling_session(const profiling_session&) = delete;
    profiling_session& operator=(const profiling_session&) = delete;
    ~profiling_session() { stop(); }

    // Starts the backend (probing the machine) and the profiler. Error message on failure.
    std::optional<std::string> start(const session_options& options);
    // Stops sampling and watching on every thread; the profile stays readable.
    void stop() noexcept;
    bool running() const noexcept { return backend_.running(); }

    // The run facts of the profile (and of the trace): the runtime named in the options, the backend's choices,
    // the policies, and health_counters. An agent adds its counters.
    run_facts facts() const;
    // What the program was spared, as counters for the profile's run.agent (only those not zero): threads that
    // ran unprofiled, events given up, the watchdog's interventions.
    std::vector<std::pair<std::string, std::uint64_t>> health_counters() const;
    // The same in words, one line each, for the agents' exit summaries (empty when nothing happened).
    std::vector<std::string> health_lines() const;

    // Runs `use` with the profiler locked, and ends the recording there: the trace holds exactly the events that
    // the profile `use` takes has seen. Events after it are profiled, not recorded.
    template <class F>
    decltype(auto) with_final_profiler(F&& use) {
        const guard locked(*this);
        if (recording_) recording_->open = false;
        return use(*profiler_);
    }
    // Hands the block being filled to the writer thread (a JVM dump: the file then holds every event so far).
    void flush_recording() noexcept;
    // After with_final_profiler: writes the names of the tree's frames and of types [0, type_count) as `naming`
    // gives them (not under the profiler's lock: naming may wait, e.g. for JVMTI), the agent's counters, and the
    // end record, waits for the file to be written and closes it. Nothing when not recording.
    std::optional<recording_summary> finish_recording(const report_naming& naming, type_id type_count,
                                                      const std::vector<std::pair<std::string, std::uint64_t>>& counters);

    std::optional<std::string> attach_current_thread();
    std::optional<std::string> attach_thread(pid_t tid); // another thread of this process
    void detach_current_thread() noexcept;

    // A new object; `frames` is its allocation context, leaf first. Not signal-safe (may allocate, may wait).
    // Returns the profiler's record of it, or nothing when it is not tracked.
    std::optional<object_info> on_allocation(address begin, std::uint64_t size, std::span<const std::uint64_t> frames,
                                             type_id type, const allocation_shape& shape = {});
    // The same, for an allocation context already in the tree (from allocation_context): an agent that remembers
    // the contexts of its stacks (ojx/context_path_cache.hpp) skips the tree walk.
    std::optional<object_info> on_allocation(address begin, std::uint64_t size, context_id context, type_id type,
                                             const allocation_shape& shape = {});
    // The context-tree node of the allocation stack `frames` (leaf first), inserted if new; no_context when the
    // tree is full. Node ids are stable for the session's life. Not signal-safe (may wait).
    context_id allocation_context(std::span<const std::uint64_t> frames);
    void on_free(address begin);
    // Whole-object evidence (profiler::digest_at_death, digest_tracked_objects), under the lock, reading memory as
    // code outside the handlers may (hardware_backend::reads_here). While recording, the trace gets what each
    // decided (whole_object_digest records), not the bytes read. Not signal-safe (may wait).
    // At the death of the object at `begin`, before on_free; the per-second budget runs on CLOCK_MONOTONIC.
    profiler_type::digest_outcome digest_at_death(address begin);
    // The tracked objects allocated since the previous sweep, within about `byte_budget` bytes (0: no limit).
    profiler_type::sweep_result digest_tracked_objects(std::uint64_t byte_budget);
    void on_move(address from, address to);
    void on_gc_start();
    void on_collection(std::span<const profiler_type::relocated_object> survivors);
    // While recording: the tracked objects alive now by type, as the runtime counted them after a collection's
    // relocation (heap_census_event), for checking the trace. Not an event for the profiler.
    void record_census(const heap_census_event& census);

    // While objects may be where the object map does not say (a collection has started and its survivors are
    // not relocated yet), samples and traps are dropped and counted. `pause` is signal-safe and may be called
    // from any thread (a JVM's GC-start callback); it returns the pause's generation. `resume(generation)`
    // resumes only if no pause came since that generation, so a collection that starts while the previous
    // one's survivors are being relocated keeps sampling paused.
    std::uint64_t pause() noexcept;
    bool resume(std::uint64_t generation) noexcept;
    bool paused() const noexcept { return (pause_state_.load(std::memory_order_acquire) & 1) != 0; }
    std::uint64_t pause_generation() const noexcept { return pause_state_.load(std::memory_order_acquire) >> 1; }

    // Runs `use` with the profiler locked (for reports and tests).
    template <class F>
    decltype(auto) with_profiler(F&& use) {
        const guard locked(*this);
        return use(*profiler_);
    }

    const hardware_backend& backend() const noexcept { return backend_; }
    std::uint64_t samples_dropped_busy() const noexcept { return samples_busy_.load(std::memory_order_relaxed); }
    // Samples that found the lock held and were staged for its next holder (samples_dropped_busy: the pool was full).
    std::uint64_t samples_staged() const noexcept { return samples_staged_.load(std::memory_order_relaxed); }
    std::uint64_t traps_dropped_busy() const noexcept { return traps_busy_.load(std::memory_order_relaxed); }
    std::uint64_t samples_dropped_paused() const noexcept { return samples_paused_.load(std::memory_order_relaxed); }
    std::uint64_t traps_dropped_paused() const noexcept { return traps_paused_.load(std::memory_order_relaxed); }

private:
    // Holds the lock; hands the staged samples to the profiler before letting it go.
    struct guard {
        explicit guard(profiling_session& session) : session_(session) { session_.lock_.lock(); }
        ~guard() { session_.release(nullptr); }
        profiling_session& session_;
    };
    // Signal-safe: the backend's delivery callbacks (for samples and for traps). Only tries the lock.
    template <class Event>
    static void deliver(void* self, const Event& event, const ucontext_t& context,
                        const handler_reads& reads) noexcept {
        auto& session = *static_cast<profiling_session*>(self);
        constexpr bool is_sample = std::is_same_v<Event, access_sample>;
        if (session.paused()) {
            (is_sample ? session.samples_paused_ : session.traps_paused_).fetch_add(1, std::memory_order_relaxed);
            return;
        }
        if (!session.lock_.try_lock()) {
            if constexpr (is_sample) {
                if (session.stage(event, context)) return;
            }
            (is_sample ? session.samples_busy_ : session.traps_busy_).fetch_add(1, std::memory_order_relaxed);
            return;
        }
        // A pause that began after the check above: the map may already be stale.
        if (session.paused()) {
            (is_sample ? session.samples_paused_ : session.traps_paused_).fetch_add(1, std::memory_order_relaxed);
            session.lock_.unlock();
            return;
        }
        session.memory_.reads = reads; // for this handler's reads only: set back before the lock is released
        if constexpr (is_sample) {
            // The sample's object, found once for all that follows. Only a sample in a tracked object gets an
            // access context: the others are dropped, and their paths would fill the context tree, which
            // allocation contexts share.
            resolved_sample resolved = session.profiler_->resolve(event);
            if (resolved.found())
                resolved.sample.access_context = session.access_context(context, static_cast<pid_t>(event.thread));
            session.deliver_sample(resolved);
        } else {
            watchpoint_trap with_context = event;
            with_context.access_context = session.access_context(context, static_cast<pid_t>(event.thread));
            session.handle([&]() noexcept { session.profiler_->on_trap(with_context); }, with_context);
        }
        session.memory_.reads = {};
        session.release(&reads);
    }

    // A sample a handler could not deliver because the lock was held (stage), kept until a holder of the lock
    // hands it to the profiler (drain_staged). `state` goes free → filling (the handler that claimed it) → ready
    // → free (the lock's holder), so each slot has one writer at a time.
    enum staged_state : std::uint32_t { staged_free, staged_filling, staged_ready };
    struct staged_sample {
        std::atomic<std::uint32_t> state{staged_free};
        access_sample sample{};
        std::uint32_t depth = 0; // its access context's frames, leaf first; 0: not in a tracked object when staged
        std::uint64_t frames[max_frames];
    };
    // How many samples wait in the pool: with one per sampled thread caught at once by a lock held for a moment,
    // a few dozen cover a busy process; a full pool drops (samples_dropped_busy).
    static constexpr std::size_t staged_capacity = 32;
    // Signal-safe, without the lock: keeps `sample` for the lock's next holder, with the access context walked
    // now (on the interrupted thread, as only here it can be). False when the pool is full.
    bool stage(const access_sample& sample, const ucontext_t& context) noexcept;
    // Signal-safe, with the lock held: hands every staged sample to the profiler, reading memory as `reads` allow
    // (the holder's: a handler's own, or reads_here).
    void drain_staged(const handler_reads& reads) noexcept;
    // Signal-safe: drains and lets the lock go; `reads` is the calling handler's, or nullptr outside handlers. A
    // sample staged just before the unlock is drained here too, by taking the lock again if it is free.
    void release(const handler_reads* reads) noexcept;
    // Signal-safe, with the lock held: hands a resolved sample to the profiler and, where pairs are compared at the
    // sample, compares the watches it armed now, each as a trap with the word read at once.
    void deliver_sample(const resolved_sample& resolved) noexcept {
        const access_sample& sample = resolved.sample;
        handle([&]() noexcept { profiler_->on_sample(resolved); }, sample);
        if (!backend_.compares_at_sample()) return;
        while (const auto watch = backend_.take_armed_at_sample()) {
            std::uint64_t value = 0;
            // Unreadable (unmapped since): no comparison; the slot stays taken until its object is freed or the
            // replacement policy gives it to another pair.
            if (!memory_.read(watch->where, &value, watch->width)) continue;
            const watchpoint_trap trap{watch->slot, watch->where, value, watch->width, access_kind::load,
                                       sample.ip, sample.thread, sample.access_context};
            handle([&]() noexcept { profiler_->on_trap(trap); }, trap);
        }
    }
    // The thread an event is recorded as (a system call: outside the lock), 0 when not recording.
    trace_thread_id recording_thread() const noexcept;
    // With the lock held: the tree node of the allocation stack `frames` (leaf first), and the allocation itself.
    context_id insert_allocation_context(std::span<const std::uint64_t> frames) noexcept;
    std::optional<object_info> handle_allocation(const allocation_event& allocation);
    // With the lock held: runs `digest(note)`, a profiler digest call, reading as this thread may, with `note`
    // appending what it decided to the trace while recording.
    template <class Digest>
    auto digest_whole(Digest&& digest);
    // Signal-safe, with the lock held: the access context of the interrupted code, on thread `tid`.
    context_id access_context(const ucontext_t& context, pid_t tid) noexcept;
    // Signal-safe, on the interrupted thread `tid`, no lock needed: its frames, leaf first (at most max_frames).
    std::size_t walk_stack(const ucontext_t& context, pid_t tid, std::uint64_t* leaf_first) noexcept;
    // Signal-safe, with the lock held: the tree node of `depth` frames, leaf first (reordered in place).
    context_id context_of(std::uint64_t* leaf_first, std::size_t depth) noexcept;

    // With the lock held: hands `event` to the profiler (`deliver`) and, while recording, appends it to the trace
    // with the tree nodes inserted before it and the profiler's reads and arms. Signal-safe if `deliver` is.
    template <class Deliver, class Event>
    void handle(Deliver&& deliver, const Event& event) noexcept(noexcept(deliver())) {
        if (!recording_ || !recording_->open) {
            deliver();
            return;
        }
        recording_->recorder->write_new_contexts(profiler_->contexts());
        recording_->recorder->record(deliver, event);
    }

    // The trace being recorded: its file, the writer the lock's holder appends with, the profiler's notes.
    struct recording {
        trace_file_writer file;
        std::optional<trace_writer> writer;
        profiler_effects effects;
        std::optional<profiler_event_recorder> recorder;
        std::string path;
        bool open = false; // events are recorded (until the final profile is taken)
    };

    profiler_lock lock_;
    hardware_backend backend_;
    process_memory memory_;
    recording_watchpoints<hardware_backend> recorded_watchpoints_{backend_};
    recording_memory<process_memory> recorded_memory_{memory_};
    std::unique_ptr<recording> recording_;
    std::string runtime_;
    std::uint64_t gc_starts_ = 0;
    std::unique_ptr<profiler_type> profiler_;
    std::atomic<std::uint64_t> samples_busy_{0};
    std::atomic<std::uint64_t> traps_busy_{0};
    std::array<staged_sample, staged_capacity> staged_{};
    std::atomic<std::uint32_t> staged_ready_{0}; // samples in the pool that are ready
    std::atomic<std::uint64_t> samples_staged_{0};
    std::optional<std::string> note_unprofiled(std::optional<std::string> error);
    struct health_fact {
        std::string counter;
        std::uint64_t value = 0;
        std::string words;
    };
    std::vector<health_fact> health() const;
    std::uint64_t unprofiled_threads_ = 0; // under lock_
    std::string first_unprofiled_reason_;
    std::atomic<std::uint64_t> samples_paused_{0};
    std::atomic<std::uint64_t> traps_paused_{0};
    std::atomic<std::uint64_t> pause_state_{0}; // generation << 1 | paused
    stack_walker walker_{};
};

} // namespace ojx::hardware
