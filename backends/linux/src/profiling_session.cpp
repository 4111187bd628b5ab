#include "ojx/hardware/profiling_session.hpp"

#include "ojx/hardware/arch_x86_64.hpp"

#include <sched.h>
#include <sys/mman.h>
#include <time.h>

#include "ojx/trace_run.hpp"

#include <algorithm>

namespace ojx::hardware {

namespace {

// The object map's large tables get huge pages (this project's machines run transparent huge pages in "madvise"
// mode): a lookup probes a random line of a table that may be hundreds of MiB, and with 4 KiB pages each probe
// also misses the TLB. Advice only: refused, the table works as before.
void advise_huge_pages(void* memory, std::size_t bytes) { (void)::madvise(memory, bytes, MADV_HUGEPAGE); }

} // namespace

void profiler_lock::lock() noexcept {
    unsigned spins = 0;
    while (!try_lock()) {
        // Wait until the lock looks free before trying again: each failed exchange would take the cache line away
        // from the holder. The holder may be a descheduled thread (or vCPU), so after a while give way to it.
        while (held_.load(std::memory_order_relaxed)) {
            if (++spins < 64)
                arch::spin_pause();
            else
                sched_yield();
        }
    }
}

std::optional<std::string> profiling_session::start(const session_options& options) {
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
    if (auto error = backend_.start(options.backend, backend_delivery{this, deliver<access_sample>, deliver<watchpoint_trap>})) {
        if (recording_) recording_->file.close();
        recording_.reset();
        return error;
    }
    // Known only now that the backend has chosen how pairs are compared.
    profiler_config config = resolved_for_backend(options.profiler, backend_.compares_at_sample());
    if (config.advise_large_table == nullptr) config.advise_large_table = advise_huge_pages;
    profiler_ = std::make_unique<profiler_type>(config, recorded_watchpoints_, recorded_memory_);
    walker_ = options.access_walker;
    if (recording_) {
        recording& r = *recording_;
        r.writer.emplace(r.file.first_buffer(), r.file.sink());
        r.recorder.emplace(*r.writer, r.effects);
        recorded_watchpoints_.record_into(&r.effects);
        recorded_memory_.record_into(&r.effects);
        const trace_run_description run{profiler_->config(), recorded_watchpoints_.slot_count(), facts()};
        for (const run_attribute& attribute : run_attributes(run)) r.writer->append(attribute);
        r.open = true;
    }
    return std::nullopt;
}

run_facts profiling_session::facts() const {
    return run_facts{runtime_,
                     backend_.sampler_description(),
                     backend_.watchpoint_description(),
                     std::string(reservoir_pairing::name),
                     std::string(reservoir_replacement::name),
                     health_counters()};
}

void profiling_session::flush_recording() noexcept {
    if (!recording_) return;
    const guard locked(*this);
    if (recording_->open) recording_->writer->flush();
}

std::optional<recording_summary> profiling_session::finish_recording(
    const report_naming& naming, type_id type_count, const std::vector<std::pair<std::string, std::uint64_t>>& counters) {
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

void profiling_session::stop() noexcept {
    if (!backend_.running()) return;
    const guard locked(*this);
    backend_.stop();
}

std::optional<std::string> profiling_session::attach_current_thread() {
    const guard locked(*this);
    return note_unprofiled(backend_.attach_current_thread());
}

std::optional<std::string> profiling_session::attach_thread(pid_t tid) {
    const guard locked(*this);
    return note_unprofiled(backend_.attach_thread(tid));
}

std::optional<std::string> profiling_session::note_unprofiled(std::optional<std::string> error) {
    if (error) {
        if (unprofiled_threads_++ == 0) first_unprofiled_reason_ = *error;
    }
    return error;
}

// One fact each: its run.agent counter, its value, and the words that follow the number in the exit summary.
std::vector<profiling_session::health_fact> profiling_session::health() const {
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

std::vector<std::pair<std::string, std::uint64_t>> profiling_session::health_counters() const {
    std::vector<std::pair<std::string, std::uint64_t>> nonzero;
    for (const health_fact& fact : health())
        if (fact.value != 0) nonzero.emplace_back(fact.counter, fact.value);
    return nonzero;
}

std::vector<std::string> profiling_session::health_lines() const {
    std::vector<std::string> lines;
    for (const health_fact& fact : health())
        if (fact.value != 0) lines.push_back(std::to_string(fact.value) + fact.words);
    return lines;
}

void profiling_session::detach_current_thread() noexcept {
    const guard locked(*this);
    backend_.detach_current_thread();
}

std::optional<object_info> profiling_session::on_allocation(address begin, std::uint64_t size,
                                                           std::span<const std::uint64_t> frames, type_id type,
                                                           const allocation_shape& shape) {
    allocation_event allocation{recording_thread(), begin, size, no_context, type, shape};
    const guard locked(*this);
    allocation.context = insert_allocation_context(frames);
    return handle_allocation(allocation);
}

std::optional<object_info> profiling_session::on_allocation(address begin, std::uint64_t size, context_id context,
                                                           type_id type, const allocation_shape& shape) {
    const allocation_event allocation{recording_thread(), begin, size, context, type, shape};
    const guard locked(*this);
    return handle_allocation(allocation);
}

context_id profiling_session::allocation_context(std::span<const std::uint64_t> frames) {
    const guard locked(*this);
    return insert_allocation_context(frames);
}

trace_thread_id profiling_session::recording_thread() const noexcept {
    return recording_ ? static_cast<trace_thread_id>(current_tid()) : 0;
}

context_id profiling_session::insert_allocation_context(std::span<const std::uint64_t> frames) noexcept {
    std::uint64_t root_first[max_frames];
    const std::size_t depth = std::min(frames.size(), max_frames);
    std::reverse_copy(frames.begin(), frames.begin() + static_cast<std::ptrdiff_t>(depth), root_first);
    return profiler_->contexts().insert_path(std::span<const std::uint64_t>(root_first, depth));
}

std::optional<object_info> profiling_session::handle_allocation(const allocation_event& allocation) {
    std::optional<object_info> tracked;
    handle([&] {
        tracked = profiler_->on_allocation(allocation.where, allocation.size, allocation.context, allocation.type,
                                           allocation.shape);
    }, allocation);
    return tracked;
}

void profiling_session::on_free(address begin) {
    const guard locked(*this);
    handle([&] { profiler_->on_free(begin); }, free_event{begin});
}

template <class Digest>
auto profiling_session::digest_whole(Digest&& digest) {
    const bool is_recording = recording_ && recording_->open;
    memory_.reads = backend_.reads_here();
    // The trace keeps the fingerprint; the bytes read for it would overflow the event notes.
    if (is_recording) recorded_memory_.record_into(nullptr);
    const auto note = [this, is_recording](const whole_object_digest& decided) noexcept {
        if (is_recording) recording_->writer->append(decided);
    };
    const auto result = digest(note);
    if (is_recording) recorded_memory_.record_into(&recording_->effects);
    memory_.reads = {};
    return result;
}

profiling_session::profiler_type::digest_outcome profiling_session::digest_at_death(address begin) {
    timespec now{};
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    const auto now_ns = static_cast<std::uint64_t>(now.tv_sec) * 1'000'000'000ULL + static_cast<std::uint64_t>(now.tv_nsec);
    const guard locked(*this);
    return digest_whole([&](const auto& note) { return profiler_->digest_at_death(begin, now_ns, note); });
}

profiling_session::profiler_type::sweep_result profiling_session::digest_tracked_objects(std::uint64_t byte_budget) {
    const guard locked(*this);
    return digest_whole([&](const auto& note) { return profiler_->digest_tracked_objects(byte_budget, note); });
}

void profiling_session::on_move(address from, address to) {
    const guard locked(*this);
    handle([&] { profiler_->on_move(from, to); }, move_event{from, to});
}

void profiling_session::on_gc_start() {
    const guard locked(*this);
    handle([&] { profiler_->on_gc_start(); }, gc_start_event{++gc_starts_});
}

void profiling_session::on_collection(std::span<const profiler_type::relocated_object> survivors) {
    const guard locked(*this);
    const auto deliver = [&] { profiler_->on_collection(survivors); };
    if (!recording_ || !recording_->open) {
        deliver();
        return;
    }
    recording_->recorder->record_relocation(deliver, survivors);
}

void profiling_session::record_census(const heap_census_event& census) {
    const guard locked(*this);
    if (recording_ && recording_->open) recording_->writer->append(census);
}

std::uint64_t profiling_session::pause() noexcept {
    std::uint64_t state = pause_state_.load(std::memory_order_relaxed);
    std::uint64_t next = 0;
    do {
        next = (((state >> 1) + 1) << 1) | 1;
    } while (!pause_state_.compare_exchange_weak(state, next, std::memory_order_acq_rel, std::memory_order_relaxed));
    return next >> 1;
}

bool profiling_session::resume(std::uint64_t generation) noexcept {
    std::uint64_t expected = (generation << 1) | 1;
    return pause_state_.compare_exchange_strong(expected, generation << 1, std::memory_order_acq_rel);
}

std::size_t profiling_session::walk_stack(const ucontext_t& context, pid_t tid, std::uint64_t* leaf_first) noexcept {
    return std::min(max_frames, walker_.walk ? walker_.walk(walker_.state, context, tid, leaf_first, max_frames)
                                             : hardware_backend::capture_stack(context, tid, leaf_first, max_frames));
}

context_id profiling_session::access_context(const ucontext_t& context, pid_t tid) noexcept {
    std::uint64_t leaf_first[max_frames];
    return context_of(leaf_first, walk_stack(context, tid, leaf_first));
}

context_id profiling_session::context_of(std::uint64_t* leaf_first, std::size_t depth) noexcept {
    std::reverse(leaf_first, leaf_first + depth);
    return profiler_->contexts().insert_path(std::span<const std::uint64_t>(leaf_first, depth));
}

bool profiling_session::stage(const access_sample& sample, const ucontext_t& context) noexcept {
    for (staged_sample& slot : staged_) {
        std::uint32_t expected = staged_free;
        if (!slot.state.compare_exchange_strong(expected, staged_filling, std::memory_order_acquire,
                                                std::memory_order_relaxed))
            continue;
        slot.sample = sample;
        // As deliver: only a sample in a tracked object gets an access context (the object map's lookup needs no
        // lock). An object freed before the drain makes the sample untracked there, and the path unused.
        slot.depth = profiler_->resolve(sample).found()
                         ? static_cast<std::uint32_t>(walk_stack(context, static_cast<pid_t>(sample.thread), slot.frames))
                         : 0;
        slot.state.store(staged_ready, std::memory_order_release);
        staged_ready_.fetch_add(1, std::memory_order_release);
        samples_staged_.fetch_add(1, std::memory_order_relaxed);
        return true;
    }
    return false;
}

void profiling_session::drain_staged(const handler_reads& reads) noexcept {
    for (staged_sample& slot : staged_) {
        if (slot.state.load(std::memory_order_acquire) != staged_ready) continue;
        // Found again: the object may have been freed since it was staged.
        resolved_sample resolved = profiler_->resolve(slot.sample);
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

void profiling_session::release(const handler_reads* reads) noexcept {
    for (;;) {
        if (staged_ready_.load(std::memory_order_acquire) != 0 && profiler_)
            drain_staged(reads != nullptr ? *reads : backend_.reads_here());
        lock_.unlock();
        if (staged_ready_.load(std::memory_order_acquire) == 0 || !lock_.try_lock()) return;
    }
}

} // namespace ojx::hardware
