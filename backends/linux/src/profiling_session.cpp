#include "ojx/hardware/profiling_session.hpp"

#include <sched.h>

#include <algorithm>

namespace ojx::hardware {

void profiler_lock::lock() noexcept {
    for (unsigned spins = 0; !try_lock(); ++spins) {
        if (spins >= 64) sched_yield();
    }
}

std::optional<std::string> profiling_session::start(const session_options& options) {
    if (profiler_) return std::string("the session is already started");
    if (auto error = backend_.start(options.backend, backend_delivery{this, deliver<access_sample, &profiler_type::on_sample>,
                                                                      deliver<watchpoint_trap, &profiler_type::on_trap>}))
        return error;
    profiler_ = std::make_unique<profiler_type>(options.profiler, backend_, memory_);
    walker_ = options.access_walker;
    return std::nullopt;
}

void profiling_session::stop() noexcept {
    if (!backend_.running()) return;
    const guard locked(lock_);
    backend_.stop();
}

std::optional<std::string> profiling_session::attach_current_thread() {
    const guard locked(lock_);
    return backend_.attach_current_thread();
}

std::optional<std::string> profiling_session::attach_thread(pid_t tid) {
    const guard locked(lock_);
    return backend_.attach_thread(tid);
}

void profiling_session::detach_current_thread() noexcept {
    const guard locked(lock_);
    backend_.detach_current_thread();
}

std::optional<object_info> profiling_session::on_allocation(address begin, std::uint64_t size,
                                                           std::span<const std::uint64_t> frames, type_id type,
                                                           const allocation_shape& shape) {
    std::uint64_t root_first[max_frames];
    const std::size_t depth = std::min(frames.size(), max_frames);
    std::reverse_copy(frames.begin(), frames.begin() + static_cast<std::ptrdiff_t>(depth), root_first);
    const guard locked(lock_);
    const context_id context = profiler_->contexts().insert_path(std::span<const std::uint64_t>(root_first, depth));
    return profiler_->on_allocation(begin, size, context, type, shape);
}

void profiling_session::on_free(address begin) {
    const guard locked(lock_);
    profiler_->on_free(begin);
}

void profiling_session::on_move(address from, address to) {
    const guard locked(lock_);
    profiler_->on_move(from, to);
}

void profiling_session::on_gc_start() {
    const guard locked(lock_);
    profiler_->on_gc_start();
}

void profiling_session::on_collection(std::span<const profiler_type::relocated_object> survivors) {
    const guard locked(lock_);
    profiler_->on_collection(survivors);
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

context_id profiling_session::access_context(const ucontext_t& context) noexcept {
    std::uint64_t leaf_first[max_frames];
    const std::size_t depth = std::min(max_frames, walker_.walk ? walker_.walk(walker_.state, context, leaf_first, max_frames)
                                                                : hardware_backend::capture_stack(context, leaf_first, max_frames));
    std::reverse(leaf_first, leaf_first + depth);
    return profiler_->contexts().insert_path(std::span<const std::uint64_t>(leaf_first, depth));
}

} // namespace ojx::hardware
