// The events by which values flow through a program's registers (docs/copy-profiling.md): loads from memory into
// registers, moves between registers, stores from registers, computations that consume registers and produce a
// new value, and string moves that copy memory to memory at once (`rep movs`, memcpy). With the allocations,
// frees and moves of the objects they touch, they are what a copy graph is built from: a backend that sees every
// one of them (the emulation) gives the exact graph. value_flow_event is one such event as plain data: what a
// signal handler stores in a fixed buffer and a trace carries, replayed to a sink with deliver().
#pragma once

#include "ojx/allocation_metrics.hpp"
#include "ojx/types.hpp"

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <type_traits>

namespace ojx {

// A register of the program (general-purpose, vector, or a stack slot that a compiler uses as one).
using value_register = std::uint8_t;

template <class F>
concept value_flow_sink = requires(F& flow, address a, std::uint64_t size, context_id c, const allocation_shape& shape,
                                   value_register r, std::span<const value_register> sources,
                                   std::optional<value_register> result, std::uint8_t width) {
    flow.on_allocation(a, size, c, shape);
    flow.on_free(a);
    flow.on_move(a, a);
    flow.on_new_reference(r, c); // r now holds a reference to a fresh object of context c
    flow.on_constant(r);         // r now holds a value that no load produced (an immediate)
    flow.on_load(r, a, width);
    flow.on_register_move(r, r); // destination, source
    flow.on_store(r, a, width);
    flow.on_compute(sources, result);
    flow.on_string_move(a, a, size, width); // destination, source, bytes, element width
};

enum class value_flow_kind : std::uint8_t { load, register_move, store, compute, constant, string_move, new_reference };

// One value flow event (the sink's on_* calls other than allocation, free and move) as fixed-size plain data.
// Invariants, kept by the factories: the fields a kind does not use are zero, so that == compares events;
// sources[0, source_count) are the sources and the rest is zero.
struct value_flow_event {
    static constexpr std::size_t max_sources = 6;

    value_flow_kind kind = value_flow_kind::constant;
    // load, register_move, constant, new_reference: the register written; store: the register stored;
    // compute: the result when has_result.
    value_register reg = 0;
    bool has_result = false;        // compute
    std::uint8_t source_count = 0;  // register_move: 1; compute: 0..max_sources
    std::array<value_register, max_sources> sources{};
    std::uint8_t width = 0;         // load, store: bytes accessed; string_move: element width
    context_id context = 0;         // new_reference
    address at = 0;                 // load, store: the address accessed; string_move: the destination
    address from = 0;               // string_move: the source
    std::uint64_t bytes = 0;        // string_move

    static constexpr value_flow_event load(value_register r, address where, std::uint8_t width) noexcept {
        return {.kind = value_flow_kind::load, .reg = r, .width = width, .at = where};
    }
    static constexpr value_flow_event register_move(value_register destination, value_register source) noexcept {
        return {.kind = value_flow_kind::register_move, .reg = destination, .source_count = 1,
                .sources = {source}};
    }
    static constexpr value_flow_event store(value_register r, address where, std::uint8_t width) noexcept {
        return {.kind = value_flow_kind::store, .reg = r, .width = width, .at = where};
    }
    // Precondition: sources.size() <= max_sources.
    static constexpr value_flow_event compute(std::span<const value_register> sources,
                                              std::optional<value_register> result) noexcept {
        value_flow_event event{.kind = value_flow_kind::compute, .reg = result.value_or(0),
                               .has_result = result.has_value(),
                               .source_count = static_cast<std::uint8_t>(sources.size())};
        for (std::size_t i = 0; i < sources.size(); ++i) event.sources[i] = sources[i];
        return event;
    }
    static constexpr value_flow_event constant(value_register r) noexcept {
        return {.kind = value_flow_kind::constant, .reg = r};
    }
    static constexpr value_flow_event string_move(address destination, address source, std::uint64_t bytes,
                                                  std::uint8_t element_width) noexcept {
        return {.kind = value_flow_kind::string_move, .width = element_width, .at = destination, .from = source,
                .bytes = bytes};
    }
    static constexpr value_flow_event new_reference(value_register r, context_id context) noexcept {
        return {.kind = value_flow_kind::new_reference, .reg = r, .context = context};
    }

    friend bool operator==(const value_flow_event&, const value_flow_event&) = default;
};
static_assert(std::is_trivially_copyable_v<value_flow_event>);

// Calls the sink member that `event` stands for.
template <value_flow_sink F>
void deliver(const value_flow_event& event, F& flow) {
    switch (event.kind) {
    case value_flow_kind::load:
        flow.on_load(event.reg, event.at, event.width);
        break;
    case value_flow_kind::register_move:
        flow.on_register_move(event.reg, event.sources[0]);
        break;
    case value_flow_kind::store:
        flow.on_store(event.reg, event.at, event.width);
        break;
    case value_flow_kind::compute:
        flow.on_compute(std::span<const value_register>(event.sources.data(), event.source_count),
                        event.has_result ? std::optional<value_register>(event.reg) : std::nullopt);
        break;
    case value_flow_kind::constant:
        flow.on_constant(event.reg);
        break;
    case value_flow_kind::string_move:
        flow.on_string_move(event.at, event.from, event.bytes, event.width);
        break;
    case value_flow_kind::new_reference:
        flow.on_new_reference(event.reg, event.context);
        break;
    }
}

} // namespace ojx
