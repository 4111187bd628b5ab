// Two value flow sinks fed as one (value_flow.hpp): every event goes to the first, then to the second. What lets a
// program with registers feed a copy graph builder and a trace recorder at once, or a replay feed the exact and the
// sampled builder from one trace.
#pragma once

#include "ojx/allocation_metrics.hpp"
#include "ojx/types.hpp"
#include "ojx/value_flow.hpp"

#include <cstdint>
#include <optional>
#include <span>

namespace ojx {

template <value_flow_sink First, value_flow_sink Second>
class value_flow_tee {
public:
    value_flow_tee(First& first, Second& second) noexcept : first_(first), second_(second) {}

    void on_allocation(address where, std::uint64_t size, context_id context, const allocation_shape& shape) {
        first_.on_allocation(where, size, context, shape);
        second_.on_allocation(where, size, context, shape);
    }
    void on_free(address where) {
        first_.on_free(where);
        second_.on_free(where);
    }
    void on_move(address from, address to) {
        first_.on_move(from, to);
        second_.on_move(from, to);
    }
    void on_new_reference(value_register r, context_id context) {
        first_.on_new_reference(r, context);
        second_.on_new_reference(r, context);
    }
    void on_constant(value_register r) {
        first_.on_constant(r);
        second_.on_constant(r);
    }
    void on_load(value_register r, address where, std::uint8_t width) {
        first_.on_load(r, where, width);
        second_.on_load(r, where, width);
    }
    void on_register_move(value_register destination, value_register source) {
        first_.on_register_move(destination, source);
        second_.on_register_move(destination, source);
    }
    void on_store(value_register r, address where, std::uint8_t width) {
        first_.on_store(r, where, width);
        second_.on_store(r, where, width);
    }
    void on_compute(std::span<const value_register> sources, std::optional<value_register> result) {
        first_.on_compute(sources, result);
        second_.on_compute(sources, result);
    }
    void on_string_move(address destination, address source, std::uint64_t bytes, std::uint8_t element_width) {
        first_.on_string_move(destination, source, bytes, element_width);
        second_.on_string_move(destination, source, bytes, element_width);
    }

private:
    First& first_;
    Second& second_;
};

} // namespace ojx
