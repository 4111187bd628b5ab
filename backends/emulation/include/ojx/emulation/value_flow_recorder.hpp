// Recording a program's value flow (docs/trace-format.md, "Value flow"): a value flow sink that appends each register
// event to the trace, so that a trace of every access of a program with registers holds everything the exact copy
// graph needs. It stands beside the access recorder, which records the allocations, frees, moves and accesses: the
// register machine passes each access to the access recorder and then reports its register here, which the writer
// writes as a two-byte record right after the access's.
#pragma once

#include "ojx/allocation_metrics.hpp"
#include "ojx/trace_writer.hpp"
#include "ojx/types.hpp"
#include "ojx/value_flow.hpp"

#include <cstdint>
#include <optional>
#include <span>

namespace ojx::emulation {

class value_flow_recorder {
public:
    explicit value_flow_recorder(trace_writer& writer) noexcept : writer_(writer) {}

    // The access recorder records these.
    void on_allocation(address, std::uint64_t, context_id, const allocation_shape&) {}
    void on_free(address) {}
    void on_move(address, address) {}

    void on_new_reference(value_register r, context_id context) {
        writer_.append(value_flow_event::new_reference(r, context));
    }
    void on_constant(value_register r) { writer_.append(value_flow_event::constant(r)); }
    void on_load(value_register r, address where, std::uint8_t width) {
        writer_.append(value_flow_event::load(r, where, width));
    }
    void on_register_move(value_register destination, value_register source) {
        writer_.append(value_flow_event::register_move(destination, source));
    }
    void on_store(value_register r, address where, std::uint8_t width) {
        writer_.append(value_flow_event::store(r, where, width));
    }
    void on_compute(std::span<const value_register> sources, std::optional<value_register> result) {
        writer_.append(value_flow_event::compute(sources, result));
    }
    void on_string_move(address destination, address source, std::uint64_t bytes, std::uint8_t element_width) {
        writer_.append(value_flow_event::string_move(destination, source, bytes, element_width));
    }

private:
    trace_writer& writer_;
};

static_assert(value_flow_sink<value_flow_recorder>);

} // namespace ojx::emulation
