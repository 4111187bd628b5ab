// What every backend hands to the profiler, and what the profiler asks of a backend, stated as C++20 concepts.
// A backend (hardware PMU + debug registers, software emulation, replay of a recorded trace) is anything that
// delivers `access_sample`s and `watchpoint_trap`s to a sink, arms and disarms watchpoints in a fixed number of
// slots, captures calling contexts into a tree, and reads the profiled program's memory without faulting.
#pragma once

#include "ojx/types.hpp"

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ojx {

enum class access_kind : std::uint8_t { load, store };

// One sampled memory access. `value` holds the `width` bytes at `address` as the access saw them (for a load:
// the value it read; for a store: the value it wrote), zero-extended, little-endian. Accesses wider than 8
// bytes are reported as their first 8 bytes with width 8.
struct access_sample {
    address ip = 0;
    address effective_address = 0;
    std::uint64_t value = 0;
    std::uint8_t width = 0;
    access_kind kind = access_kind::load;
    std::uint32_t thread = 0;
    context_id access_context = no_context;

    friend bool operator==(const access_sample&, const access_sample&) = default;
};

// A watchpoint fired: `slot` is the slot the backend armed with `arm`, `value` the `width` bytes now at the
// watched address after the access (what a load read, what a store wrote).
struct watchpoint_trap {
    std::size_t slot = 0;
    address watched_address = 0;
    std::uint64_t value = 0;
    std::uint8_t width = 0;
    access_kind kind = access_kind::load;
    address ip = 0;
    std::uint32_t thread = 0;
    context_id access_context = no_context;

    friend bool operator==(const watchpoint_trap&, const watchpoint_trap&) = default;
};

// Receives samples and traps. The profiler is one; a recorder that writes a trace is another.
template <class Sink>
concept sample_sink = requires(Sink& sink, const access_sample& sample, const watchpoint_trap& trap) {
    sink.on_sample(sample);
    sink.on_trap(trap);
};

// A source of access samples. Samples are pushed to the sink given at construction; `start`/`stop` bracket
// delivery, and `name` says which mechanism was chosen (reports print it).
template <class S>
concept sampler = requires(S& s, const S& cs) {
    { cs.name() } -> std::convertible_to<std::string_view>;
    { s.start() } -> std::same_as<bool>;
    s.stop();
    { cs.samples_delivered() } -> std::convertible_to<std::uint64_t>;
};

// Hardware-like watchpoints: a fixed number of slots, each watching `width` bytes at an address. `arm`
// returns false when the backend could not arm (the profiler then frees the slot and counts it).
template <class W>
concept watchpoint_arming = requires(W& w, const W& cw, std::size_t slot, address where, std::uint8_t width) {
    { cw.slot_count() } -> std::convertible_to<std::size_t>;
    { w.arm(slot, where, width) } -> std::same_as<bool>;
    w.disarm(slot);
};

// Turns "where the program is now" into a node of a calling context tree.
template <class C, class Tree>
concept context_capture = requires(C& capture, Tree& tree) {
    { capture.capture(tree) } -> std::same_as<context_id>;
};

// Reads the profiled program's memory. Must never fault: returns false when [where, where + size) is not
// readable. Called from the sample and trap paths, so implementations must be signal-safe.
template <class M>
concept memory_reader = requires(M& memory, address where, void* out, std::size_t size) {
    { memory.read(where, out, size) } -> std::same_as<bool>;
};

} // namespace ojx
