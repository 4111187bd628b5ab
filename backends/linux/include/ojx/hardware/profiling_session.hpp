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
//
// Analyses (ojx/analysis_sink.hpp): the session hands every event — samples (staged ones too), traps, allocations,
// frees, moves, collection starts, collections — to an analysis host (ojx/analysis_host.hpp) over its profiler,
// which hands it to the profiler first and then to each of `Sinks`. So an analysis is added by naming it in
// basic_profiling_session<Sinks...>, at compile time, without touching the profiler, the backend or this file; the
// profiler gets what it gets alone, when it gets it. The session owns what the sinks share: the lock (every sink
// handler runs under it), the recorder (the trace records the events, the sinks' input as the profiler's), and the
// sample's object, found once by the host and handed to every sink with the sample. Sinks' sample and trap
// handlers run in the signal handlers, under the same rules as the profiler's. The whole-object digests stay
// questions to the profiler alone (it answers with an outcome): no sink sees them.
// profiling_session, with no further sink, is what the agents run; it is compiled once (profiling_session.cpp),
// and a session with sinks is compiled where it is named, from the members defined below the class.
#pragma once

#include "ojx/hardware/fault_safe_read.hpp"
#include "ojx/hardware/hardware_backend.hpp"
#include "ojx/hardware/trace_file_writer.hpp"
#include "ojx/analysis_host.hpp"
#include "ojx/followed_copy_graph.hpp"
#include "ojx/analysis_sink.hpp"
#include "ojx/pairing_policy.hpp"
#include "ojx/profiler.hpp"
#include "ojx/report.hpp"
#include "ojx/trace_run.hpp"
#include "ojx/trace_recording.hpp"
#include "ojx/trace_writer.hpp"
#include "ojx/watchpoint_pool.hpp"

#include <time.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace ojx::hardware {

// The backend's watchpoints and the process's memory, noted for the trace while recording.
using hardware_policies = policy_bundle<recording_watchpoints<hardware_backend>, recording_memory<process_memory>>;

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

// Given to the profiler as profiler_config::advise_large_table unless the options name another.
void advise_huge_pages(void* memory, std::size_t bytes);

template <analysis_sink... Sinks>
class basic_profiling_session {
public:
    using profiler_type = profiler<hardware_policies>;
    using host_type = analysis_host<profiler_type, Sinks...>;
    static constexpr std::size_t max_frames = 64;

    // The sinks are the session's, handed every event from start on.
    basic_profiling_session() requires(std::is_default_constructible_v<Sinks> && ...) = default;
    explicit basic_profiling_session(Sinks... sinks) requires(sizeof...(Sinks) > 0) : sinks_(std::move(sinks)...) {}
    basic_profiling_session(const basic_profiling_session&) = delete;
    basic_profiling_session& operator=(const basic_profiling_session&) = delete;
    ~basic_profiling_session() { stop(); }

    // Starts the backend (probing the machine) and the profiler. Error message on failure.
    std::optional<std::string> start(const session_options& options);
    // Stops sampling and watching on every thread; the profile stays readable.
    void stop() noexcept;
    bool running() const noexcept { return backend_.running(); }

    // The run facts of the profile (and of the trace): the runtime named in the options, the backend's choices,
    // the policies, and health_counters. An agent adds its counters.
    run_facts facts() const;
    // How the session follows sampled loads for its copy analyses, as the profile's copy section says it (and the
    // trace, for its replay); empty when it follows none.
    std::string followed_copies_description() const;
    // What the program was spared, as counters for the profile's run.agent (only those not zero): threads that
    // ran unprofiled, events given up, the watchdog's interventions.
    std::vector<std::pair<std::string, std::uint64_t>> health_counters() const;
    // The same in words, one line each, for the agents' exit summaries (empty when nothing happened).
    std::vector<std::string> health_lines() const;

    // Runs `use` with the profiler locked, and ends the recording there: the trace holds exactly the events that
    // the profile `use` takes has seen. Events after it are profiled, not recorded.
    template <class F>
    decltype(auto) with_final_profiler(F&& use) {
        return with_final_analyses([&](profiler_type& profiler, Sinks&...) -> decltype(auto) { return use(profiler); });
    }
    // The same, as `use(profiler, sinks...)`: the final profile with every analysis's part of it.
    template <class F>
    decltype(auto) with_final_analyses(F&& use) {
        const guard locked(*this);
        // The run's length as this profile states it (facts), and the heap view for a replay, which has no memory
        // to take a census of: the trace's last events.
        profile_seconds_ = monotonic_seconds() - started_;
        if (recording_ && recording_->open)
            profiler_->record_live_heap(profile_seconds_,
                                        [&](const live_heap_event& record) { recording_->writer->append(record); });
        if (recording_) recording_->open = false;
        return std::apply([&](Sinks&... sinks) -> decltype(auto) { return use(*profiler_, sinks...); }, sinks_);
    }
    // Hands the block being filled to the writer thread (a JVM dump: the file then holds every event so far).
    void flush_recording() noexcept;
    // After with_final_profiler: writes the names of the tree's frames and of types [0, type_count) as `naming`
    // gives them (not under the profiler's lock: naming may wait, e.g. for JVMTI), `fields` (those `naming` names:
    // a replay names the copy section's field nodes by them), the agent's counters, and the end record, waits for
    // the file to be written and closes it. Nothing when not recording.
    std::optional<recording_summary> finish_recording(const report_naming& naming, type_id type_count,
                                                      const std::vector<std::pair<std::string, std::uint64_t>>& counters,
                                                      const std::vector<field_symbol>& fields = {});

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
    // Moving collections (profiler::hold_collection_digests, settle_collection_digests): at a collection's start
    // the tracked objects are fingerprinted and held; after it, before on_collection, the ones it freed are
    // counted with the contents they died with.
    profiler_type::sweep_result hold_collection_digests(
        std::uint64_t byte_budget, typename profiler_type::hold_scope scope = profiler_type::hold_scope::every_object);
    profiler_type::sweep_result settle_collection_digests(std::span<const profiler_type::relocated_object> survivors);
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
    // Runs `use(profiler, sinks...)` with them locked (after start), for their reports.
    template <class F>
    decltype(auto) with_analyses(F&& use) {
        const guard locked(*this);
        return std::apply([&](Sinks&... sinks) -> decltype(auto) { return use(*profiler_, sinks...); }, sinks_);
    }

    const hardware_backend& backend() const noexcept { return backend_; }
    std::uint64_t samples_dropped_busy() const noexcept { return samples_busy_.load(std::memory_order_relaxed); }
    // Samples that found the lock held and were staged for its next holder (samples_dropped_busy: the pool was full).
    std::uint64_t samples_staged() const noexcept { return samples_staged_.load(std::memory_order_relaxed); }
    std::uint64_t traps_dropped_busy() const noexcept { return traps_busy_.load(std::memory_order_relaxed); }
    std::uint64_t samples_dropped_paused() const noexcept { return samples_paused_.load(std::memory_order_relaxed); }
    std::uint64_t traps_dropped_paused() const noexcept { return traps_paused_.load(std::memory_order_relaxed); }

private:
    // Holds the lock; hands the staged samples to the host before letting it go.
    struct guard {
        explicit guard(basic_profiling_session& session) : session_(session) { session_.lock_.lock(); }
        ~guard() { session_.release(nullptr); }
        basic_profiling_session& session_;
    };
    // Signal-safe: the backend's delivery callbacks (for samples and for traps). Only tries the lock. For a sample:
    // whether its load's value is to be followed (a load in a tracked object, where a sink takes followed values).
    template <class Event>
    static bool deliver(void* self, const Event& event, const ucontext_t& context,
                        const handler_reads& reads) noexcept {
        auto& session = *static_cast<basic_profiling_session*>(self);
        constexpr bool is_sample = std::is_same_v<Event, access_sample>;
        if (session.paused()) {
            (is_sample ? session.samples_paused_ : session.traps_paused_).fetch_add(1, std::memory_order_relaxed);
            return false;
        }
        if (!session.lock_.try_lock()) {
            if constexpr (is_sample) {
                if (session.stage(event, context)) return false;
            }
            (is_sample ? session.samples_busy_ : session.traps_busy_).fetch_add(1, std::memory_order_relaxed);
            return false;
        }
        // A pause that began after the check above: the map may already be stale.
        if (session.paused()) {
            (is_sample ? session.samples_paused_ : session.traps_paused_).fetch_add(1, std::memory_order_relaxed);
            session.lock_.unlock();
            return false;
        }
        session.memory_.reads = reads; // for this handler's reads only: set back before the lock is released
        bool follow = false;
        if constexpr (is_sample) {
            // The sample's object, found once for all that follows. Only a sample in a tracked object gets an
            // access context: the others are dropped, and their paths would fill the context tree, which
            // allocation contexts share.
            resolved_sample resolved = session.host_->resolve(event);
            if (resolved.found())
                resolved.sample.access_context = session.access_context(context, static_cast<pid_t>(event.thread));
            session.deliver_sample(resolved);
            follow = session.follows_values_ && resolved.found() && event.kind == access_kind::load;
        } else {
            watchpoint_trap with_context = event;
            with_context.access_context = session.access_context(context, static_cast<pid_t>(event.thread));
            session.handle([&]() noexcept { session.host_->on_trap(with_context); }, with_context);
        }
        session.memory_.reads = {};
        session.release(&reads);
        return follow;
    }
    static void deliver_trap(void* self, const watchpoint_trap& trap, const ucontext_t& context,
                             const handler_reads& reads) noexcept {
        deliver(self, trap, context, reads);
    }
    // Signal-safe: a sampled load's value the backend followed, for the sinks that take it, and recorded as the
    // profiler's events are (a replay hands it to the same sinks). A value that was used gets the
    // calling context where its following ended as its load's access context: the code that copied it, which
    // the load, its uses and that end share but for a call or return within the follow bound.
    static void deliver_followed(void* self, const followed_value& value, const ucontext_t& context,
                                 const handler_reads& reads) noexcept {
        auto& session = *static_cast<basic_profiling_session*>(self);
        if (session.paused() || !session.lock_.try_lock()) {
            session.followed_dropped_.fetch_add(1, std::memory_order_relaxed);
            return;
        }
        if (session.paused()) {
            session.followed_dropped_.fetch_add(1, std::memory_order_relaxed);
            session.lock_.unlock();
            return;
        }
        session.memory_.reads = reads;
        followed_value with_context = value;
        if (value.use_count > 0 && value.load.access_context == no_context)
            with_context.load.access_context = session.access_context(context, static_cast<pid_t>(value.load.thread));
        session.handle([&]() noexcept { session.host_->on_followed_value(with_context); }, with_context);
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
    // Signal-safe, with the lock held: hands every staged sample to the host, reading memory as `reads` allow
    // (the holder's: a handler's own, or reads_here).
    void drain_staged(const handler_reads& reads) noexcept;
    // Signal-safe: drains and lets the lock go; `reads` is the calling handler's, or nullptr outside handlers. A
    // sample staged just before the unlock is drained here too, by taking the lock again if it is free.
    void release(const handler_reads* reads) noexcept;
    // Signal-safe, with the lock held: hands a resolved sample to the host. Where pairs are compared at the sample,
    // the profiler compares those this sample arms in the same call (profiler_config::compare_at_sample).
    void deliver_sample(const resolved_sample& resolved) noexcept {
        handle([&]() noexcept { host_->on_sample(resolved); }, resolved.sample);
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

    // With the lock held: hands `event` to the host (`deliver`) and, while recording, appends it to the trace
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
    // The session's start on the monotonic clock, for the profile's run.seconds (churn per second).
    static double monotonic_seconds() noexcept {
        timespec now{};
        ::clock_gettime(CLOCK_MONOTONIC, &now);
        return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
    }
    double started_ = monotonic_seconds();
    double profile_seconds_ = 0; // the run's length when the last profile was taken (0: none yet)
    std::uint64_t gc_starts_ = 0;
    std::unique_ptr<profiler_type> profiler_;
    std::tuple<Sinks...> sinks_;
    std::optional<host_type> host_; // over *profiler_ and sinks_, from start on
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
    std::atomic<std::uint64_t> followed_dropped_{0}; // followed values that found the lock held or sampling paused
    bool follows_values_ = false; // a sink takes followed values and the backend follows them (follow_bound > 0)
    std::atomic<std::uint64_t> pause_state_{0}; // generation << 1 | paused
    stack_walker walker_{};
};

// What the agents run: the replica profiler and, where values are followed (backend_options::follow_bound), the
// copy graph they make.
using profiling_session = basic_profiling_session<followed_copy_graph>;

// ---- Members ---------------------------------------------------------------------------------------------------

template <analysis_sink... Sinks>
std::optional<std::string> basic_profiling_session<Sinks...>::start(const session_options& options) {
    if (profiler_) return std::string("the session is already started");
    runtime_ = options.runtime;
    if (!options.record_file.empty()) {
        recording_ = std::make_unique<recording>();
        recording_->path = options.record_file;
        if (auto error = recording_->file.open(options.record_file)) {
            recording_.reset();
            return error;
        }
    }
    follows_values_ = host_type::follows_values && options.backend.follow_bound > 0;
    if (follows_values_) {
        std::apply([](Sinks&... sinks) {
            const auto prepare = [](auto& sink) {
                if constexpr (takes_followed_values<std::remove_reference_t<decltype(sink)>>) sink.prepare();
            };
            (prepare(sinks), ...);
        }, sinks_);
    }
    const backend_delivery delivery{this, deliver<access_sample>, deliver_trap, deliver_followed};
    if (auto error = backend_.start(options.backend, delivery)) {
        if (recording_) recording_->file.close();
        recording_.reset();
        return error;
    }
    // Known only now that the backend has chosen how pairs are compared.
    profiler_config config = resolved_for_backend(options.profiler, backend_.compares_at_sample());
    if (config.advise_large_table == nullptr) config.advise_large_table = advise_huge_pages;
    profiler_ = std::make_unique<profiler_type>(config, recorded_watchpoints_, recorded_memory_);
    std::apply([this](Sinks&... sinks) { host_.emplace(*profiler_, sinks...); }, sinks_);
    walker_ = options.access_walker;
    if (recording_) {
        recording& r = *recording_;
        r.writer.emplace(r.file.first_buffer(), r.file.sink());
        r.recorder.emplace(*r.writer, r.effects);
        recorded_watchpoints_.record_into(&r.effects);
        recorded_memory_.record_into(&r.effects);
        trace_run_description run{profiler_->config(), recorded_watchpoints_.slot_count(), facts()};
        run.followed_copies = followed_copies_description();
        for (const run_attribute& attribute : run_attributes(run)) r.writer->append(attribute);
        r.open = true;
    }
    return std::nullopt;
}

template <analysis_sink... Sinks>
run_facts basic_profiling_session<Sinks...>::facts() const {
    return run_facts{runtime_,
                     backend_.sampler_description(),
                     backend_.watchpoint_description(),
                     std::string(reservoir_pairing::name),
                     std::string(reservoir_replacement::name),
                     health_counters(),
                     profile_seconds_ > 0 ? profile_seconds_ : monotonic_seconds() - started_};
}

template <analysis_sink... Sinks>
std::string basic_profiling_session<Sinks...>::followed_copies_description() const {
    if (!follows_values_) return {};
    const backend_options& options = backend_.options();
    char rate[32];
    const auto written = std::to_chars(rate, rate + sizeof rate, options.samples_per_second); // shortest: "1000"
    return std::string(rate, written.ptr) +
           " samples/s per thread, each sampled load from a tracked object followed for up to " +
           std::to_string(options.follow_bound) + " instructions; each sample weighs 1 (sampled copies)";
}

template <analysis_sink... Sinks>
void basic_profiling_session<Sinks...>::flush_recording() noexcept {
    if (!recording_) return;
    const guard locked(*this);
    if (recording_->open) recording_->writer->flush();
}

template <analysis_sink... Sinks>
std::optional<recording_summary> basic_profiling_session<Sinks...>::finish_recording(
    const report_naming& naming, type_id type_count, const std::vector<std::pair<std::string, std::uint64_t>>& counters,
    const std::vector<field_symbol>& fields) {
    if (!recording_) return std::nullopt;
    std::vector<trace_frame_id> frames;
    {
        const guard locked(*this);
        recording_->open = false;
        recorded_watchpoints_.record_into(nullptr);
        recorded_memory_.record_into(nullptr);
        const context_tree& tree = profiler_->contexts();
        for (context_id id = 1; id < tree.size(); ++id) frames.push_back(tree.frame_of(id));
    }
    // No event is recorded any more: the writer is this thread's alone, and may wait for buffers.
    std::sort(frames.begin(), frames.end());
    frames.erase(std::unique(frames.begin(), frames.end()), frames.end());
    recording& r = *recording_;
    r.file.wait_for_buffers();
    trace_writer& writer = *r.writer;
    if (naming.frame)
        for (const trace_frame_id frame : frames) writer.append_frame(frame, naming.frame(frame));
    if (naming.type)
        for (type_id type = 0; type < type_count; ++type) writer.append_type(type, naming.type(type));
    for (const field_symbol& field : fields) writer.append(field);
    for (const auto& [name, count] : counters)
        writer.append_run_attribute("agent." + name, std::to_string(count));
    if (profiler_->tracking_stayed_exact()) writer.append_run_attribute(tracking_stayed_exact_attribute, "true");
    writer.finish();
    recording_summary summary;
    summary.file = r.path;
    summary.events = r.recorder->events();
    summary.records_dropped = writer.events_dropped();
    summary.incomplete_events = r.recorder->incomplete_events();
    if (auto error = r.file.close()) summary.error = *error;
    summary.bytes = r.file.bytes_written();
    recording_.reset();
    return summary;
}

template <analysis_sink... Sinks>
void basic_profiling_session<Sinks...>::stop() noexcept {
    if (!backend_.running()) return;
    const guard locked(*this);
    backend_.stop();
}

template <analysis_sink... Sinks>
std::optional<std::string> basic_profiling_session<Sinks...>::attach_current_thread() {
    const guard locked(*this);
    return note_unprofiled(backend_.attach_current_thread());
}

template <analysis_sink... Sinks>
std::optional<std::string> basic_profiling_session<Sinks...>::attach_thread(pid_t tid) {
    const guard locked(*this);
    return note_unprofiled(backend_.attach_thread(tid));
}

template <analysis_sink... Sinks>
std::optional<std::string> basic_profiling_session<Sinks...>::note_unprofiled(std::optional<std::string> error) {
    if (error) {
        if (unprofiled_threads_++ == 0) first_unprofiled_reason_ = *error;
    }
    return error;
}

// One fact each: its run.agent counter, its value, and the words that follow the number in the exit summary.
template <analysis_sink... Sinks>
auto basic_profiling_session<Sinks...>::health() const -> std::vector<health_fact> {
    const backend_counters& c = backend_.counters();
    const auto count = [](const std::atomic<std::uint64_t>& counter) { return counter.load(std::memory_order_relaxed); };
    return {
        {"threads_unprofiled", unprofiled_threads_,
         " thread(s) ran unprofiled (first reason: " + first_unprofiled_reason_ + ")"},
        {"threads_on_task_clock", count(c.timer_fallbacks),
         " thread(s) sampled on the task clock: the user's signal queue had no room for a timer (RLIMIT_SIGPENDING, "
         "ulimit -i)"},
        {"threads_stopped_by_watchdog", count(c.watchdog_quarantines),
         " thread(s) no longer sampled or watched: ojx's handlers took over half of their time (the watchdog)"},
        {"events_skipped_short_stack", count(c.no_stack_room),
         " event(s) skipped: the interrupted code ran on a short or foreign stack"},
        {"followed_values_dropped", count(followed_dropped_),
         " followed value(s) dropped: the session was busy or paused when their following ended"},
        {"descriptors_closed_by_program", count(c.descriptors_lost),
         " perf descriptor(s) closed by the program: those threads stopped being sampled or watched there"},
        {"signals_lost_queue_full", count(c.queue_overflows),
         " signal(s) of ojx lost: the user's signal queue was full (RLIMIT_SIGPENDING); the kernel's SIGIO for them "
         "was caught"},
        {"threads_rarely_sampled", count(c.threads_rarely_sampled),
         " thread(s) took under 1/20 of the samples their CPU time asked: they block signals (as liblzma's workers "
         "do) and were barely sampled"},
        {"handlers_displaced_by_program", backend_.handlers_displaced() ? 1u : 0u,
         " time the program installed its own handler for SIGTRAP or signal " +
             std::to_string(backend_.sampling_signal()) + ": sampling and watching stopped there"},
    };
}

template <analysis_sink... Sinks>
std::vector<std::pair<std::string, std::uint64_t>> basic_profiling_session<Sinks...>::health_counters() const {
    std::vector<std::pair<std::string, std::uint64_t>> nonzero;
    for (const health_fact& fact : health())
        if (fact.value != 0) nonzero.emplace_back(fact.counter, fact.value);
    return nonzero;
}

template <analysis_sink... Sinks>
std::vector<std::string> basic_profiling_session<Sinks...>::health_lines() const {
    std::vector<std::string> lines;
    for (const health_fact& fact : health())
        if (fact.value != 0) lines.push_back(std::to_string(fact.value) + fact.words);
    return lines;
}

template <analysis_sink... Sinks>
void basic_profiling_session<Sinks...>::detach_current_thread() noexcept {
    const guard locked(*this);
    backend_.detach_current_thread();
}

template <analysis_sink... Sinks>
std::optional<object_info> basic_profiling_session<Sinks...>::on_allocation(address begin, std::uint64_t size,
                                                           std::span<const std::uint64_t> frames, type_id type,
                                                           const allocation_shape& shape) {
    allocation_event allocation{recording_thread(), begin, size, no_context, type, shape};
    const guard locked(*this);
    allocation.context = insert_allocation_context(frames);
    return handle_allocation(allocation);
}

template <analysis_sink... Sinks>
std::optional<object_info> basic_profiling_session<Sinks...>::on_allocation(address begin, std::uint64_t size,
                                                                            context_id context,
                                                           type_id type, const allocation_shape& shape) {
    const allocation_event allocation{recording_thread(), begin, size, context, type, shape};
    const guard locked(*this);
    return handle_allocation(allocation);
}

template <analysis_sink... Sinks>
context_id basic_profiling_session<Sinks...>::allocation_context(std::span<const std::uint64_t> frames) {
    const guard locked(*this);
    return insert_allocation_context(frames);
}

template <analysis_sink... Sinks>
trace_thread_id basic_profiling_session<Sinks...>::recording_thread() const noexcept {
    return recording_ ? static_cast<trace_thread_id>(current_tid()) : 0;
}

template <analysis_sink... Sinks>
context_id basic_profiling_session<Sinks...>::insert_allocation_context(
    std::span<const std::uint64_t> frames) noexcept {
    std::uint64_t root_first[max_frames];
    const std::size_t depth = std::min(frames.size(), max_frames);
    std::reverse_copy(frames.begin(), frames.begin() + static_cast<std::ptrdiff_t>(depth), root_first);
    return profiler_->contexts().insert_path(std::span<const std::uint64_t>(root_first, depth));
}

template <analysis_sink... Sinks>
std::optional<object_info> basic_profiling_session<Sinks...>::handle_allocation(const allocation_event& allocation) {
    std::optional<object_info> tracked;
    handle([&] { tracked = host_->on_allocation(allocation); }, allocation);
    // The heap view's census, where the tracked heap has grown enough (profiler::live_census_due: never for a
    // runtime whose deaths only collections tell).
    if (tracked && profiler_->live_census_due()) {
        try {
            digest_whole([&](const auto&) { return profiler_->census_live_heap(); });
        } catch (const std::bad_alloc&) {
            // Without memory for its tables the census is skipped; the threshold has moved on already.
        }
    }
    return tracked;
}

template <analysis_sink... Sinks>
void basic_profiling_session<Sinks...>::on_free(address begin) {
    const guard locked(*this);
    handle([&] { host_->on_free(begin); }, free_event{begin});
}

template <analysis_sink... Sinks>
template <class Digest>
auto basic_profiling_session<Sinks...>::digest_whole(Digest&& digest) {
    const bool is_recording = recording_ && recording_->open;
    memory_.choose = [](const void* backend) noexcept {
        return static_cast<const hardware_backend*>(backend)->reads_here();
    };
    memory_.chooser = &backend_;
    // The trace keeps the fingerprint; the bytes read for it would overflow the event notes.
    if (is_recording) recorded_memory_.record_into(nullptr);
    const auto note = [this, is_recording](const whole_object_digest& decided) noexcept {
        if (is_recording) recording_->writer->append(decided);
    };
    const auto result = digest(note);
    if (is_recording) recorded_memory_.record_into(&recording_->effects);
    memory_ = {};
    return result;
}

template <analysis_sink... Sinks>
auto basic_profiling_session<Sinks...>::digest_at_death(address begin) -> typename profiler_type::digest_outcome {
    timespec now{};
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    const auto now_ns = static_cast<std::uint64_t>(now.tv_sec) * 1'000'000'000ULL + static_cast<std::uint64_t>(now.tv_nsec);
    const guard locked(*this);
    return digest_whole([&](const auto& note) { return profiler_->digest_at_death(begin, now_ns, note); });
}

template <analysis_sink... Sinks>
auto basic_profiling_session<Sinks...>::digest_tracked_objects(std::uint64_t byte_budget)
    -> typename profiler_type::sweep_result {
    const guard locked(*this);
    return digest_whole([&](const auto& note) { return profiler_->digest_tracked_objects(byte_budget, note); });
}

template <analysis_sink... Sinks>
auto basic_profiling_session<Sinks...>::hold_collection_digests(std::uint64_t byte_budget,
                                                                typename profiler_type::hold_scope scope)
    -> typename profiler_type::sweep_result {
    const guard locked(*this);
    return digest_whole([&](const auto&) { return profiler_->hold_collection_digests(byte_budget, scope); });
}

template <analysis_sink... Sinks>
auto basic_profiling_session<Sinks...>::settle_collection_digests(
    std::span<const profiler_type::relocated_object> survivors) -> typename profiler_type::sweep_result {
    const guard locked(*this);
    return digest_whole([&](const auto& note) { return profiler_->settle_collection_digests(survivors, note); });
}

template <analysis_sink... Sinks>
void basic_profiling_session<Sinks...>::on_move(address from, address to) {
    const guard locked(*this);
    handle([&] { host_->on_move(from, to); }, move_event{from, to});
}

template <analysis_sink... Sinks>
void basic_profiling_session<Sinks...>::on_gc_start() {
    const guard locked(*this);
    const gc_start_event start{++gc_starts_};
    handle([&] { host_->on_gc_start(start); }, start);
}

template <analysis_sink... Sinks>
void basic_profiling_session<Sinks...>::on_collection(std::span<const profiler_type::relocated_object> survivors) {
    const guard locked(*this);
    const auto deliver = [&] { host_->on_collection(survivors); };
    if (!recording_ || !recording_->open) {
        deliver();
        return;
    }
    recording_->recorder->record_relocation(deliver, survivors);
}

template <analysis_sink... Sinks>
void basic_profiling_session<Sinks...>::record_census(const heap_census_event& census) {
    const guard locked(*this);
    if (recording_ && recording_->open) recording_->writer->append(census);
}

template <analysis_sink... Sinks>
std::uint64_t basic_profiling_session<Sinks...>::pause() noexcept {
    std::uint64_t state = pause_state_.load(std::memory_order_relaxed);
    std::uint64_t next = 0;
    do {
        next = (((state >> 1) + 1) << 1) | 1;
    } while (!pause_state_.compare_exchange_weak(state, next, std::memory_order_acq_rel, std::memory_order_relaxed));
    return next >> 1;
}

template <analysis_sink... Sinks>
bool basic_profiling_session<Sinks...>::resume(std::uint64_t generation) noexcept {
    std::uint64_t expected = (generation << 1) | 1;
    return pause_state_.compare_exchange_strong(expected, generation << 1, std::memory_order_acq_rel);
}

template <analysis_sink... Sinks>
std::size_t basic_profiling_session<Sinks...>::walk_stack(const ucontext_t& context, pid_t tid,
                                                          std::uint64_t* leaf_first) noexcept {
    return std::min(max_frames, walker_.walk ? walker_.walk(walker_.state, context, tid, leaf_first, max_frames)
                                             : hardware_backend::capture_stack(context, tid, leaf_first, max_frames));
}

template <analysis_sink... Sinks>
context_id basic_profiling_session<Sinks...>::access_context(const ucontext_t& context, pid_t tid) noexcept {
    std::uint64_t leaf_first[max_frames];
    return context_of(leaf_first, walk_stack(context, tid, leaf_first));
}

template <analysis_sink... Sinks>
context_id basic_profiling_session<Sinks...>::context_of(std::uint64_t* leaf_first, std::size_t depth) noexcept {
    std::reverse(leaf_first, leaf_first + depth);
    return profiler_->contexts().insert_path(std::span<const std::uint64_t>(leaf_first, depth));
}

template <analysis_sink... Sinks>
bool basic_profiling_session<Sinks...>::stage(const access_sample& sample, const ucontext_t& context) noexcept {
    for (staged_sample& slot : staged_) {
        std::uint32_t expected = staged_free;
        if (!slot.state.compare_exchange_strong(expected, staged_filling, std::memory_order_acquire,
                                                std::memory_order_relaxed))
            continue;
        slot.sample = sample;
        // As deliver: only a sample in a tracked object gets an access context (the object map's lookup needs no
        // lock). An object freed before the drain makes the sample untracked there, and the path unused.
        slot.depth = host_->resolve(sample).found()
                         ? static_cast<std::uint32_t>(walk_stack(context, static_cast<pid_t>(sample.thread), slot.frames))
                         : 0;
        slot.state.store(staged_ready, std::memory_order_release);
        staged_ready_.fetch_add(1, std::memory_order_release);
        samples_staged_.fetch_add(1, std::memory_order_relaxed);
        return true;
    }
    return false;
}

template <analysis_sink... Sinks>
void basic_profiling_session<Sinks...>::drain_staged(const handler_reads& reads) noexcept {
    for (staged_sample& slot : staged_) {
        if (slot.state.load(std::memory_order_acquire) != staged_ready) continue;
        // Found again: the object may have been freed since it was staged.
        resolved_sample resolved = host_->resolve(slot.sample);
        if (slot.depth > 0 && resolved.found()) resolved.sample.access_context = context_of(slot.frames, slot.depth);
        slot.state.store(staged_free, std::memory_order_release);
        staged_ready_.fetch_sub(1, std::memory_order_relaxed);
        // A collection that started since it was staged: the object map may be stale.
        if (paused()) {
            samples_paused_.fetch_add(1, std::memory_order_relaxed);
            continue;
        }
        memory_.reads = reads;
        deliver_sample(resolved);
        memory_.reads = {};
    }
}

template <analysis_sink... Sinks>
void basic_profiling_session<Sinks...>::release(const handler_reads* reads) noexcept {
    for (;;) {
        if (staged_ready_.load(std::memory_order_acquire) != 0 && host_)
            drain_staged(reads != nullptr ? *reads : backend_.reads_here());
        lock_.unlock();
        if (staged_ready_.load(std::memory_order_acquire) == 0 || !lock_.try_lock()) return;
    }
}

extern template class basic_profiling_session<followed_copy_graph>;

} // namespace ojx::hardware
