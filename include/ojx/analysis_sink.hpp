// What an analysis receives from the host it sits on. The host (analysis_host.hpp), with the backend's session
// around it (on Linux, profiling_session.hpp), owns what every analysis shares — the object map and the calling
// context tree (the profiler's), the recorder, the lock — and hands each event to every sink that declares it. A
// sink declares an event by having its handler; it is handed only those:
//
//   on_sample(const resolved_sample&)    a sample, with the tracked object found at its address (found once, by
//                                        the host, for every sink) or why none was;
//   on_trap(const watchpoint_trap&)      a watched word was touched;
//   on_followed_value(const resolved_follow&)
//                                        a sampled load's value the backend followed forward (followed_value.hpp),
//                                        with the objects it was loaded from and stored into, found by the host;
//   on_allocation(const allocation_event&, const std::optional<object_info>&)
//                                        an object was allocated; the info is the host's record when it tracks it;
//   on_free(const free_event&), on_move(const move_event&)
//   on_gc_start(const gc_start_event&), on_collection(std::span<const relocated_object>)
//                                        the heap changed: the host's object map already says so;
//   report() const                       the sink's final word, whatever type it chooses.
//
// Sample, trap and followed-value handlers run in signal handlers on the hardware backend, under the host's lock: they allocate
// nothing, take no lock and read memory only through the host's reader. The others run outside handlers, under
// the same lock, one at a time.
#pragma once

#include "ojx/followed_value.hpp"
#include "ojx/interval_map.hpp"
#include "ojx/sampler.hpp"
#include "ojx/trace_format.hpp"
#include "ojx/types.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <span>

namespace ojx {

// A tracked object as the host's object map holds it: [begin, end) and what the host knows of it.
struct tracked_object {
    address begin = 0;
    address end = 0;
    object_info info{};

    std::uint64_t size() const noexcept { return end - begin; }
    friend bool operator==(const tracked_object&, const tracked_object&) = default;
};

// A sample with what the host found at its address.
struct resolved_sample {
    access_sample sample{};
    lookup_status status = lookup_status::absent; // busy: the map was being updated by the interrupted code
    tracked_object object{};                      // meaningful only when found()

    bool found() const noexcept { return status == lookup_status::found; }
};

// One object that survived a moving collection whose every survivor the runtime knows (a JVM agent: from object
// tags): where it was, where it is now, and the host's record of it.
struct relocated_object {
    address from = 0;
    address to = 0;
    std::uint64_t size = 0;
    object_info info{};
};

// A followed value with what the host found at its addresses: the object it was loaded from, and for each use that
// copied it, the tracked object stored into (none: memory no tracked object holds).
struct resolved_follow {
    followed_value value{};
    resolved_sample origin{};
    std::array<std::optional<tracked_object>, followed_value::max_uses> destinations{};
};

template <class S>
concept takes_samples = requires(S& sink, const resolved_sample& sample) { sink.on_sample(sample); };
template <class S>
concept takes_traps = requires(S& sink, const watchpoint_trap& trap) { sink.on_trap(trap); };
template <class S>
concept takes_followed_values = requires(S& sink, const resolved_follow& follow) { sink.on_followed_value(follow); };
template <class S>
concept takes_allocations = requires(S& sink, const allocation_event& allocation,
                                     const std::optional<object_info>& tracked) { sink.on_allocation(allocation, tracked); };
template <class S>
concept takes_frees = requires(S& sink, const free_event& free) { sink.on_free(free); };
template <class S>
concept takes_moves = requires(S& sink, const move_event& move) { sink.on_move(move); };
template <class S>
concept takes_gc_starts = requires(S& sink, const gc_start_event& start) { sink.on_gc_start(start); };
template <class S>
concept takes_collections = requires(S& sink, std::span<const relocated_object> survivors) {
    sink.on_collection(survivors);
};

// An analysis: something that declares at least one event.
template <class S>
concept analysis_sink = takes_samples<S> || takes_traps<S> || takes_followed_values<S> || takes_allocations<S> || takes_frees<S> ||
                        takes_moves<S> || takes_gc_starts<S> || takes_collections<S>;

} // namespace ojx
