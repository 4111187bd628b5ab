// Following a sampled load's value (value_following.hpp): once a decoded sample's delivery asks for it, the
// thread is single-stepped to the load (found by decoding ahead, it may lie a few instructions on) and from there
// for at most follow_bound instructions. Before each instruction runs, x86_value_flow says what it does to values,
// given the registers it is about to run with; a value_follower applies that and notes each store of the value (a
// copy) and each computation that reads it. Following ends when no register holds the value, at the bound, or
// before an instruction that must not be stepped over (a system call, with SIGTRAP blocked) or cannot be decoded;
// the record then goes to the delivery. Everything here runs in the thread's own signal handlers: fixed state in
// thread_state, code read through the fault-safe read.
#include "backend_internals.hpp"

#include "ojx/hardware/arch_x86_64.hpp"

#include <array>
#include <span>

namespace ojx::hardware {

namespace {

// Steps allowed to reach a load found by decoding ahead: the look-ahead follows straight-line code and simple
// branches for a few dozen instructions at most.
constexpr std::uint32_t max_reach_steps = 64;

// Signal-safe: the record goes to the delivery, and the thread runs on unstepped.
void finish(hardware_backend& backend, thread_state& state, follow_end end, ucontext_t& context,
            const handler_reads& reads) noexcept {
    value_following& f = state.following;
    if (f.record.end != follow_end::uses_full) f.record.end = end;
    f.active = false;
    state.stepping = false;
    arch::clear_trap_flag(context);
    hardware_backend::internals::deliver_followed(backend, f.record, context, reads);
}

// Signal-safe: applies an instruction's events (or what is left of them) to the value being followed.
void apply(value_following& f, std::span<const value_flow_event> events) noexcept {
    for (const value_flow_event& event : events) {
        f.value.apply(event, [&](value_use use, address to, std::uint8_t width) {
            f.record.add(followed_value::use{use, width, to});
        });
    }
    // The scratch registers hold what one instruction read or wrote in memory, nothing past it.
    f.value.drop(scratch_register);
    f.value.drop(second_scratch_register);
}

// Signal-safe: where the load's instruction takes the sampled value: its value flow from the load of the sampled
// address on, or its string move that copies that element. False when the instruction makes neither (the code
// changed under the sample, or it decodes otherwise than the sampler's decoder said).
bool take_load(value_following& f, std::span<const value_flow_event> events) noexcept {
    const address sampled = f.record.load.effective_address;
    for (std::size_t i = 0; i < events.size(); ++i) {
        const value_flow_event& event = events[i];
        if (event.kind == value_flow_kind::string_move && sampled >= event.from && sampled - event.from < event.bytes) {
            f.record.string_move = true;
            f.record.add(followed_value::use{value_use::copied, event.width, event.at + (sampled - event.from)});
            f.value = value_follower{}; // nothing left to follow: the element was copied memory to memory
            return true;
        }
        if (event.kind == value_flow_kind::load && event.at == sampled) {
            f.value = value_follower(event.reg, event.width);
            apply(f, events.subspan(i + 1));
            return true;
        }
    }
    return false;
}

// Signal-safe: the thread is about to run the instruction at its pc; takes it into the following and decides
// whether to step over it.
void advance(hardware_backend& backend, thread_state& state, ucontext_t& context) noexcept {
    value_following& f = state.following;
    const handler_reads reads = reads_for(context, state);
    std::uint8_t code[max_instruction_length];
    const std::uint64_t pc = arch::pc_of(context);
    const std::size_t available = code_reader_for(reads)(pc, code, sizeof code);
    const std::uint32_t bound = hardware_backend::internals::options(backend).follow_bound;
    bool reaching = !f.loaded;
    if (f.loaded || pc == f.record.load.ip) {
        register_file regs = from_ucontext(context);
        std::array<value_flow_event, max_x86_value_flow_events> events;
        const instruction_value_flow flow = x86_value_flow(code, available, regs, f.slots, events);
        if (!flow.decoded || !flow.complete)
            return finish(backend, state, follow_end::undecodable, context, reads);
        const std::span<const value_flow_event> described(events.data(), flow.count);
        if (f.loaded) {
            apply(f, described);
            ++f.record.steps;
        } else {
            // The sampled load, unless decoding ahead found it on a later pass through this instruction (a loop's
            // next iteration): then on to that one.
            f.loaded = take_load(f, described);
            reaching = !f.loaded;
        }
        if (f.loaded && !f.value.holding()) return finish(backend, state, follow_end::released, context, reads);
        if (f.loaded && (f.record.end == follow_end::uses_full || f.record.steps >= bound))
            return finish(backend, state, follow_end::bound, context, reads);
    }
    if (reaching && ++f.reach_steps > max_reach_steps)
        return finish(backend, state, follow_end::load_missed, context, reads);
    if (!may_step_over(context, code, available))
        return finish(backend, state, follow_end::not_stepped, context, reads);
    state.stepping = true;
    arch::set_trap_flag(context);
}

} // namespace

void hardware_backend::internals::begin_following(hardware_backend& backend, thread_state& state,
                                                  const access_sample& load, ucontext_t& context) noexcept {
    value_following& f = state.following;
    f.active = true;
    f.loaded = false;
    f.reach_steps = 0;
    f.record = followed_value{};
    f.record.load = load;
    f.slots = stack_slot_table{};
    advance(backend, state, context);
}

void hardware_backend::internals::follow_step(hardware_backend& backend, thread_state& state,
                                              ucontext_t& context) noexcept {
    backend.counters_.follow_steps.fetch_add(1, std::memory_order_relaxed);
    advance(backend, state, context);
}

void hardware_backend::internals::abandon_following(thread_state& state) noexcept { state.following.active = false; }

} // namespace ojx::hardware
