// The host analyses sit on (analysis_sink.hpp): it takes a backend's events, finds each sample's object once, and
// hands every event to the replica profiler first — which keeps what the analyses share: the object map and the
// calling context tree — and then to each further sink that declares it. A backend drives the host as it would
// drive the profiler alone (it is a heap event sink), so an analysis is added by naming it here, without touching
// the profiler or the backend.
//
// Events must be delivered one at a time, as the profiler's. The sample and trap paths are signal-safe when every
// sink's handlers are.
#pragma once

#include "ojx/analysis_sink.hpp"
#include "ojx/profiler.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <tuple>
#include <type_traits>

namespace ojx {

// A followed value's objects, found in `profiler`'s object map: the load's, and each copied-to address's. What the
// host hands its sinks, and a replay of recorded followed values finds again. Signal-safe.
template <class Profiler>
resolved_follow resolve_follow(const Profiler& profiler, const followed_value& value) noexcept {
    resolved_follow resolved{value, profiler.resolve(value.load), {}};
    for (std::size_t i = 0; i < value.use_count; ++i) {
        if (value.uses[i].kind != value_use::copied) continue;
        const resolved_sample to = profiler.resolve(access_sample{.effective_address = value.uses[i].to});
        if (to.found()) resolved.destinations[i] = to.object;
    }
    return resolved;
}

template <class Profiler, analysis_sink... Sinks>
class analysis_host {
public:
    explicit analysis_host(Profiler& profiler, Sinks&... sinks) noexcept : profiler_(profiler), sinks_(sinks...) {}

    Profiler& profiler() noexcept { return profiler_; }

    // The tracked object at the sample's address, or why none was: what on_sample(resolved_sample) takes. A backend
    // that adds to the sample what only a sample in a tracked object needs (its access context) resolves first.
    resolved_sample resolve(const access_sample& sample) const noexcept { return profiler_.resolve(sample); }
    void on_sample(const access_sample& sample) noexcept { on_sample(resolve(sample)); }
    void on_sample(const resolved_sample& resolved) noexcept {
        profiler_.on_sample(resolved);
        each([&]<class S>(S& sink) {
            if constexpr (takes_samples<S>) sink.on_sample(resolved);
        });
    }

    void on_trap(const watchpoint_trap& trap) noexcept {
        profiler_.on_trap(trap);
        each([&]<class S>(S& sink) {
            if constexpr (takes_traps<S>) sink.on_trap(trap);
        });
    }

    // Some sink takes followed values: the backend should follow sampled loads for it.
    static constexpr bool follows_values = (takes_followed_values<Sinks> || ...);

    // A sampled load's value the backend followed: its object and each stored-to object found once, for every sink
    // that takes it. Signal-safe.
    void on_followed_value(const followed_value& value) noexcept {
        if constexpr (follows_values) {
            const resolved_follow resolved = resolve_follow(profiler_, value);
            each([&]<class S>(S& sink) {
                if constexpr (takes_followed_values<S>) sink.on_followed_value(resolved);
            });
        }
    }

    std::optional<object_info> on_allocation(address begin, std::uint64_t size, context_id context, type_id type,
                                             const allocation_shape& shape = {}) {
        return on_allocation(allocation_event{0, begin, size, context, type, shape});
    }
    // The same, described whole by the backend (with the allocating thread, as a trace has it).
    std::optional<object_info> on_allocation(const allocation_event& allocation) {
        const std::optional<object_info> tracked = profiler_.on_allocation(allocation.where, allocation.size,
                                                                           allocation.context, allocation.type,
                                                                           allocation.shape);
        each([&]<class S>(S& sink) {
            if constexpr (takes_allocations<S>) sink.on_allocation(allocation, tracked);
        });
        return tracked;
    }

    void on_free(address begin) {
        profiler_.on_free(begin);
        each([&]<class S>(S& sink) {
            if constexpr (takes_frees<S>) sink.on_free(free_event{begin});
        });
    }

    void on_move(address from, address to) {
        profiler_.on_move(from, to);
        each([&]<class S>(S& sink) {
            if constexpr (takes_moves<S>) sink.on_move(move_event{from, to});
        });
    }

    void on_gc_start() { on_gc_start(gc_start_event{++gc_starts_}); }
    // The same, numbered by the backend (as its trace numbers collections). A backend numbers all or none.
    void on_gc_start(const gc_start_event& start) {
        profiler_.on_gc_start();
        each([&]<class S>(S& sink) {
            if constexpr (takes_gc_starts<S>) sink.on_gc_start(start);
        });
    }

    void on_collection(std::span<const relocated_object> survivors) {
        profiler_.on_collection(survivors);
        each([&]<class S>(S& sink) {
            if constexpr (takes_collections<S>) sink.on_collection(survivors);
        });
    }

private:
    template <class Visit>
    void each(Visit&& visit) {
        std::apply([&](auto&... sink) { (visit(sink), ...); }, sinks_);
    }

    Profiler& profiler_;
    std::tuple<Sinks&...> sinks_;
    std::uint64_t gc_starts_ = 0;
};

} // namespace ojx
