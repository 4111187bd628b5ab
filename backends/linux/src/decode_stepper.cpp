// The decode stepper: how a trigger that does not carry the data address (a timer, a counter overflow) becomes an
// address sample. Single-step a random 0..max_random_steps instructions with the trap flag, then on to the next
// instruction that accesses memory; decode it and read the value it is about to access. Decoding ahead
// (access_lookahead.hpp) finds most accesses without any step. Per thread, a small state machine driven by the
// trigger (start_stepping) and by each single-step trap (step).
#include "backend_internals.hpp"

#include "ojx/hardware/arch_x86_64.hpp"

#include <optional>

namespace ojx::hardware {

namespace {

// Signal-safe: up to `size` code bytes at `pc`; code may end just before an unmapped page, so a failed full
// read is retried with what is left of the page. Returns the number of bytes read (0: unreadable). A
// code_reader for find_access_ahead.
std::size_t read_code(const void* state, std::uint64_t pc, std::uint8_t* code, std::size_t size) noexcept {
    const handler_reads& reads = *static_cast<const handler_reads*>(state);
    if (read_memory(pc, code, size, reads)) return size;
    const std::size_t rest_of_page = 4096 - (pc & 4095);
    if (rest_of_page < size && read_memory(pc, code, rest_of_page, reads)) return rest_of_page;
    return 0;
}

// How much code the sampler reads at the pc for looking ahead: one read of 64 bytes costs what one of 15 does.
constexpr std::size_t lookahead_bytes = 64;

// The code bytes at the interrupted pc, read once per signal: both the decoder and the system-call check need
// them, and each fault-safe read is a system call (≈ 1 µs).
struct code_at_pc {
    std::uint64_t pc;
    std::uint8_t bytes[lookahead_bytes];
    std::size_t available;
};

// Signal-safe.
code_at_pc read_code_at_pc(const ucontext_t& context, const handler_reads& reads) noexcept {
    code_at_pc code{};
    code.pc = arch::pc_of(context);
    code.available = code_reader_for(reads)(code.pc, code.bytes, sizeof code.bytes);
    return code;
}

// What try_sample_ahead did.
struct attempt {
    bool done = false;                 // delivered, or given up: no more stepping for this sample
    std::optional<access_sample> follow; // delivered, and its load's value is to be followed
};

// Signal-safe: the access that `skip` more steps and then stepping to the next access would reach, when it can
// be found by decoding ahead (find_access_ahead; with skip 0 that includes the instruction at the pc): delivered
// at once, and done. Unreadable code ends the attempt (done): it could not be stepped over safely. Not done:
// single-step.
attempt try_sample_ahead(hardware_backend& backend, pid_t tid, const ucontext_t& context, const code_at_pc& code,
                         std::uint32_t skip, const handler_reads& reads) noexcept {
    backend_counters& counters = hardware_backend::internals::counters(backend);
    if (code.available == 0) {
        counters.unreadable.fetch_add(1, std::memory_order_relaxed);
        return {true, std::nullopt};
    }
    const access_ahead ahead =
        find_access_ahead(code.bytes, code.available, from_ucontext(context), skip, code_reader_for(reads));
    if (!ahead.found) return {};
    counters.found_ahead.fetch_add(1, std::memory_order_relaxed);
    using delivered = hardware_backend::internals::delivered;
    if (hardware_backend::internals::deliver_sample(backend, ahead.access, ahead.pc, tid, context, reads) !=
        delivered::follow)
        return {true, std::nullopt};
    return {true, access_sample{.ip = ahead.pc, .effective_address = ahead.access.effective_address,
                                .width = static_cast<std::uint8_t>(ahead.access.width > 8 ? 8 : ahead.access.width),
                                .kind = access_kind::load, .thread = static_cast<std::uint32_t>(tid)}};
}

} // namespace

code_reader code_reader_for(const handler_reads& reads) noexcept { return {read_code, &reads}; }

// Never over a system call: one that blocks SIGTRAP (sigprocmask; glibc's pthread_create blocks every signal
// around clone) or creates a thread (the child inherits the flag, with signals blocked) takes its single-step trap
// with SIGTRAP blocked, and the kernel then kills the process with it. Nor while the interrupted code has SIGTRAP
// blocked.
bool may_step_over(const ucontext_t& context, const std::uint8_t* code, std::size_t available) noexcept {
    if (sigismember(&context.uc_sigmask, SIGTRAP) == 1) return false;
    if (available < 2) return false;
    return !arch::is_system_call(code);
}

void hardware_backend::internals::start_stepping(hardware_backend& backend, thread_state& state, pid_t tid,
                                                 ucontext_t& context) noexcept {
    if (state.stepping) {
        backend.counters_.triggers_while_stepping.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    state.steps_to_skip = static_cast<std::uint32_t>(state.rng.below(backend.options_.max_random_steps + 1));
    state.steps_taken = 0;
    const handler_reads reads = reads_for(context, state);
    const code_at_pc code = read_code_at_pc(context, reads);
    const attempt tried = try_sample_ahead(backend, tid, context, code, state.steps_to_skip, reads);
    if (tried.follow) begin_following(backend, state, *tried.follow, context);
    if (tried.done) return;
    if (!may_step_over(context, code.bytes, code.available)) { // our SIGTRAP handler was checked by on_event
        backend.counters_.steps_refused.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    state.stepping = true;
    arch::set_trap_flag(context);
}

void hardware_backend::internals::step(hardware_backend& backend, thread_state& state, pid_t tid,
                                       ucontext_t& context) noexcept {
    if (backend.handlers_displaced_.load(std::memory_order_relaxed)) {
        // The program is taking SIGTRAP over (before_program_handler): end the step here.
        arch::clear_trap_flag(context);
        state.stepping = false;
        abandon_following(state);
        return;
    }
    if (state.following.active) {
        follow_step(backend, state, context);
        return;
    }
    backend.counters_.steps.fetch_add(1, std::memory_order_relaxed);
    ++state.steps_taken;
    const handler_reads reads = reads_for(context, state);
    const code_at_pc code = read_code_at_pc(context, reads);
    if (state.steps_to_skip > 0) --state.steps_to_skip;
    const attempt tried = try_sample_ahead(backend, tid, context, code, state.steps_to_skip, reads);
    bool done = tried.done;
    if (!done && state.steps_taken >= backend.options_.max_steps) {
        backend.counters_.gave_up.fetch_add(1, std::memory_order_relaxed);
        done = true;
    }
    if (!done && !may_step_over(context, code.bytes, code.available)) {
        backend.counters_.steps_refused.fetch_add(1, std::memory_order_relaxed);
        done = true;
    }
    if (!done) {
        arch::set_trap_flag(context);
        return;
    }
    state.stepping = false;
    arch::clear_trap_flag(context);
    if (tried.follow) begin_following(backend, state, *tried.follow, context);
}

} // namespace ojx::hardware
