// The events by which values flow through a program's registers (docs/copy-profiling.md): loads from memory into
// registers, moves between registers, stores from registers, computations that consume registers and produce a
// new value, and string moves that copy memory to memory at once (`rep movs`, memcpy). With the allocations,
// frees and moves of the objects they touch, they are what a copy graph is built from: a backend that sees every
// one of them (the emulation) gives the exact graph.
#pragma once

#include "ojx/allocation_metrics.hpp"
#include "ojx/types.hpp"

#include <concepts>
#include <cstdint>
#include <optional>
#include <span>

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

} // namespace ojx
