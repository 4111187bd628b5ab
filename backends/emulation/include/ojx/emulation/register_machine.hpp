// The emulated machine with registers: a synthetic program keeps values in registers, loads them from memory,
// moves them between registers (and spills them to stack slots and reloads them), stores them, computes on them and moves memory to memory with string moves
// (`rep movs`, memcpy). It stands where a workload expects a machine and passes every allocation, free,
// collection, load and store on to the machine it wraps (an emulated machine, or an access recorder), so the
// profiler sees the same accesses, samples and traps as for a program without registers; and it reports each
// operation as a value flow event (ojx/value_flow.hpp) to `Flow`, the exact copy graph builder or anything that
// checks one. A string move is, to the wrapped machine, a load and a store per element, in ascending order.
#pragma once

#include "ojx/allocation_metrics.hpp"
#include "ojx/types.hpp"
#include "ojx/value_flow.hpp"

#include <array>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>

namespace ojx::emulation {

template <class Machine, value_flow_sink Flow>
class register_machine {
public:
    static constexpr std::size_t register_count = 16;
    // Stack slots a compiler spills registers to. A spill or reload is a register move (value_flow.hpp: a slot is
    // a register), reported as register `register_count + slot`; to the wrapped machine it is no access, as the
    // profiler tracks no stack memory.
    static constexpr std::size_t stack_slots = 16;

    register_machine(Machine& machine, Flow& flow) : machine_(machine), flow_(flow) {}

    std::uint64_t value(value_register r) const { return registers_.at(r); }

    std::optional<address> allocate(std::uint64_t size, context_id context, type_id type,
                                    const allocation_shape& shape = {}) {
        const auto where = machine_.allocate(size, context, type, shape);
        if (where) flow_.on_allocation(*where, size, context, shape);
        return where;
    }

    // Allocates, and puts the reference to the new object in `r` (as `new` leaves it in a register).
    std::optional<address> allocate_into(value_register r, std::uint64_t size, context_id context, type_id type,
                                         const allocation_shape& shape = {}) {
        const auto where = allocate(size, context, type, shape);
        if (where) {
            registers_.at(r) = *where;
            flow_.on_new_reference(r, context);
        }
        return where;
    }

    bool free(address where) {
        if (!machine_.free(where)) return false;
        flow_.on_free(where);
        return true;
    }

    auto collect() {
        auto moves = machine_.collect();
        for (const auto& m : moves) flow_.on_move(m.from, m.to);
        return moves;
    }

    void set(value_register r, std::uint64_t constant) {
        registers_.at(r) = constant;
        flow_.on_constant(r);
    }

    void load(value_register r, address where, std::uint8_t width, context_id access_context, address ip = 0) {
        registers_.at(r) = machine_.load(where, width, access_context, ip);
        flow_.on_load(r, where, width);
    }

    void move(value_register destination, value_register source) {
        registers_.at(destination) = registers_.at(source);
        flow_.on_register_move(destination, source);
    }

    void spill(std::size_t slot, value_register source) {
        slots_.at(slot) = registers_.at(source);
        flow_.on_register_move(slot_register(slot), source);
    }

    void reload(value_register destination, std::size_t slot) {
        registers_.at(destination) = slots_.at(slot);
        flow_.on_register_move(destination, slot_register(slot));
    }

    void store(value_register r, address where, std::uint8_t width, context_id access_context, address ip = 0) {
        machine_.store(where, width, truncated(registers_.at(r), width), access_context, ip);
        flow_.on_store(r, where, width);
    }

    // A computation that uses `sources` and leaves `value` in `result`.
    void compute(value_register result, std::initializer_list<value_register> sources, std::uint64_t value) {
        check(sources);
        registers_.at(result) = value;
        flow_.on_compute(std::span<const value_register>(sources.begin(), sources.size()), result);
    }

    // A use that produces no value: a comparison, a branch, an argument to a native call.
    void consume(std::initializer_list<value_register> sources) {
        check(sources);
        flow_.on_compute(std::span<const value_register>(sources.begin(), sources.size()), std::nullopt);
    }

    // `bytes` (a multiple of `element_width`) from `source` to `destination`, ascending, through no register.
    void string_move(address destination, address source, std::uint64_t bytes, std::uint8_t element_width,
                     context_id access_context, address ip = 0) {
        for (std::uint64_t at = 0; at + element_width <= bytes; at += element_width)
            machine_.store(destination + at, element_width,
                           machine_.load(source + at, element_width, access_context, ip), access_context, ip);
        flow_.on_string_move(destination, source, bytes, element_width);
    }

private:
    static std::uint64_t truncated(std::uint64_t value, std::uint8_t width) noexcept {
        return width >= 8 ? value : value & ((std::uint64_t{1} << (8 * width)) - 1);
    }
    static value_register slot_register(std::size_t slot) noexcept {
        return static_cast<value_register>(register_count + slot);
    }
    void check(std::initializer_list<value_register> sources) const {
        for (const value_register r : sources) (void)registers_.at(r);
    }

    Machine& machine_;
    Flow& flow_;
    std::array<std::uint64_t, register_count> registers_{};
    std::array<std::uint64_t, stack_slots> slots_{};
};

} // namespace ojx::emulation
