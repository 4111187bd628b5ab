// The emulated machine: runs a synthetic program's allocations, frees, loads, stores and collections against
// a synthetic heap, and turns them into the events a real backend would deliver — allocation, free and move
// events, access samples (chosen by the emulated sampler, with the value the access sees) and watchpoint traps
// (from the emulated debug registers, after the access, with the value now there). Deterministic: the same
// program and seeds give the same events. The memory is the synthetic heap, or any memory with the same loads and
// stores (a replay's, rebuilt from a trace of every access: then only the access path is used).
#pragma once

#include "ojx/emulation/emulated_sampler.hpp"
#include "ojx/emulation/emulated_watchpoints.hpp"
#include "ojx/emulation/synthetic_heap.hpp"
#include "ojx/allocation_metrics.hpp"
#include "ojx/sampler.hpp"
#include "ojx/types.hpp"

#include <concepts>
#include <cstdint>
#include <optional>
#include <vector>

namespace ojx::emulation {

// What receives the machine's events: the profiler, or anything that records or checks them.
template <class S>
concept heap_event_sink = sample_sink<S> && requires(S& sink, address a, std::uint64_t size, context_id c, type_id t,
                                                      const allocation_shape& shape) {
    sink.on_allocation(a, size, c, t, shape);
    sink.on_free(a);
    sink.on_move(a, a);
    sink.on_gc_start();
};

template <heap_event_sink Sink, class Memory = synthetic_heap>
class emulated_machine {
public:
    emulated_machine(Memory& heap, emulated_sampler& sampler, emulated_watchpoints& watchpoints, Sink& sink)
        : heap_(heap), sampler_(sampler), watchpoints_(watchpoints), sink_(sink) {}

    std::uint64_t accesses() const noexcept { return accesses_; }

    // Allocates and reports the object; none when the heap is full (collect, then retry).
    std::optional<address> allocate(std::uint64_t size, context_id context, type_id type,
                                    const allocation_shape& shape = {}) {
        const auto where = heap_.allocate(size);
        if (where) sink_.on_allocation(*where, size, context, type, shape);
        return where;
    }

    // False when no live object starts at `where` (nothing happens then).
    bool free(address where) {
        if (!heap_.release(where)) return false;
        sink_.on_free(where);
        return true;
    }

    // A moving collection: the sink hears GC start, then every move. Returns the moves.
    std::vector<synthetic_heap::move> collect() {
        sink_.on_gc_start();
        auto moves = heap_.compact();
        for (const auto& m : moves) sink_.on_move(m.from, m.to);
        return moves;
    }

    std::uint64_t load(address where, std::uint8_t width, context_id access_context, address ip = 0) {
        const std::uint64_t value = heap_.load(where, width);
        access(where, width, value, access_kind::load, access_context, ip);
        return value;
    }

    void store(address where, std::uint8_t width, std::uint64_t value, context_id access_context, address ip = 0) {
        heap_.store(where, width, value);
        access(where, width, value, access_kind::store, access_context, ip);
    }

private:
    // The sample is taken as the access is about to execute (the decode sampler's view), so a watchpoint the
    // sample arms on this very address fires on this access, as it would on hardware.
    void access(address where, std::uint8_t width, std::uint64_t value, access_kind kind, context_id access_context,
                address ip) {
        ++accesses_;
        if (sampler_.should_sample()) sink_.on_sample(access_sample{ip, where, value, width, kind, 0, access_context});
        if (const auto hit = watchpoints_.check(where, width, kind == access_kind::store)) {
            sink_.on_trap(watchpoint_trap{hit->slot, hit->watched, heap_.load(hit->watched, hit->width), hit->width,
                                          kind, ip, 0, access_context});
        }
    }

    Memory& heap_;
    emulated_sampler& sampler_;
    emulated_watchpoints& watchpoints_;
    Sink& sink_;
    std::uint64_t accesses_ = 0;
};

} // namespace ojx::emulation
