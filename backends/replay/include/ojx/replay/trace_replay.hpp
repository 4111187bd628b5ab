// Feeding a recorded trace to a profiler: the replay backend's driver. It reads the trace with `trace_reader`,
// rebuilds the calling context tree in the profiler's own tree (trace context ids are mapped to the tree's ids as
// the nodes arrive, each after its parent), and delivers allocations, frees, moves, region moves, collections,
// samples and traps in the recorded order, with the memory the recording profiler read for each (replay_memory),
// the arms its backend refused refused again, and its recorded watchpoint calls checked against the profiler's
// (replay_watchpoints).
//
// Followed values (a Linux agent's copies=N) go to a followed copy graph, whose copy section the profile gets again.
//
// What a trace of samples and traps can answer: the same analysis again, or with other estimator settings
// (min comparisons, confidence), which change only how the evidence is judged. Not other sampler, pairing or
// watchpoint policies, nor another seed: they change which pairs are watched, hence which traps would exist, and
// the recorded traps then match nothing the profiler watches. That needs a trace of every access
// (access_replay.hpp).
#pragma once

#include "ojx/analysis_host.hpp"
#include "ojx/followed_copy_graph.hpp"
#include "ojx/pairing_policy.hpp"
#include "ojx/profiler.hpp"
#include "ojx/relocation_survivors.hpp"
#include "ojx/replay/object_extents.hpp"
#include "ojx/replay/replay_memory.hpp"
#include "ojx/replay/replay_watchpoints.hpp"
#include "ojx/replay/trace_contexts.hpp"
#include "ojx/trace_format.hpp"
#include "ojx/trace_reader.hpp"
#include "ojx/trace_run.hpp"
#include "ojx/watchpoint_pool.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace ojx::replay {

template <replacement_policy Replacement = reservoir_replacement, pairing_policy Pairing = reservoir_pairing>
using policies = policy_bundle<replay_watchpoints, replay_memory, Replacement, Pairing>;

// The run a trace describes, read in a first pass over the whole trace: so that a damaged trace is refused before
// any analysis, and the profiler can be built with the recorded settings before the first event.
struct run_reading {
    std::optional<trace_run_description> run; // none: `error` says why
    std::string error;                        // one line naming the trace
};

inline run_reading read_run_description(std::span<const std::byte> file, std::string_view name) {
    run_reading result;
    trace_run_description run;
    trace_reader reader(file, name);
    bool slots_given = false;
    while (const auto event = reader.next()) {
        if (const auto* attribute = std::get_if<run_attribute>(&*event)) {
            if (const auto problem = apply_run_attribute(run, *attribute)) {
                result.error = std::string(name) + ": " + *problem;
                return result;
            }
            slots_given = slots_given || attribute->name == "watchpoint_slots";
        }
    }
    if (reader.failed()) {
        result.error = reader.error();
    } else if (!slots_given) {
        result.error = std::string(name) +
                       ": the trace does not describe its run (no run attribute watchpoint_slots): it cannot be replayed";
    } else if (const auto problem = incompletely_recorded_problem(run)) {
        result.error = std::string(name) + ": " + *problem;
    } else {
        result.run = run;
    }
    return result;
}

// How a replay went.
struct replay_result {
    std::string error;                    // the reader's one-line message; empty when the whole trace was read
    bool complete = false;                // the trace had its end record
    std::uint64_t events = 0;             // delivered to the profiler
    std::uint64_t events_lost = 0;        // the recorder could not write them: the profile misses them
    std::uint64_t watchpoint_differences = 0; // arms and disarms unlike the recording's (see replay_watchpoints)
    std::uint64_t undefined_contexts = 0; // events naming a context node the trace does not define before them
    std::uint64_t unmatched_heap_records = 0; // heap view records that name no site (live_heap_event)
    double seconds = 0; // the live run's length when its profile was taken, as its heap view record says
    std::unordered_map<trace_frame_id, std::string> frames; // the trace's symbols, for naming the report
    std::unordered_map<type_id, std::string> types;
    std::map<std::pair<type_id, std::uint64_t>, std::string> fields; // (type, offset) -> name

    // Names from the trace's symbols; a frame or type without one is shown by its number, a field without one by
    // its offset. Refers to this result.
    report_naming naming() const {
        return report_naming{[this](std::uint64_t frame) {
                                 const auto found = frames.find(frame);
                                 return found != frames.end() ? found->second : "frame " + std::to_string(frame);
                             },
                             [this](type_id type) {
                                 const auto found = types.find(type);
                                 return found != types.end() ? found->second : "type " + std::to_string(type);
                             },
                             [this](type_id type, std::uint64_t offset) {
                                 const auto found = fields.find({type, offset});
                                 return found != fields.end() ? found->second : std::string();
                             }};
    }
};

// Reads the whole trace, hands each event to `deliver`, and notes in `result` how the reading went, the contexts
// it named without defining them, and the trace's symbols.
template <class Deliver>
void deliver_trace(std::span<const std::byte> file, std::string_view name, Deliver&& deliver,
                   const trace_contexts& contexts, replay_result& result) {
    trace_reader reader(file, name);
    while (const auto event = reader.next()) std::visit(deliver, *event);
    result.error = reader.failed() ? reader.error() : std::string();
    result.complete = reader.complete();
    result.undefined_contexts = contexts.undefined();
    result.frames = reader.frames();
    result.types = reader.types();
    result.fields = reader.fields();
}

template <class Policies>
class trace_replayer {
    static_assert(std::is_same_v<typename Policies::watchpoints, replay_watchpoints> &&
                      std::is_same_v<typename Policies::memory, replay_memory>,
                  "a replayed profiler reads and watches through the replay backend");

public:
    // `copies`: where the recording followed sampled loads (trace_run_description::followed_copies), the graph
    // their records rebuild; none: they are read and left out.
    trace_replayer(profiler<Policies>& profiler, replay_watchpoints& watchpoints, replay_memory& memory,
                   followed_copy_graph* copies = nullptr)
        : profiler_(profiler), watchpoints_(watchpoints), memory_(memory), contexts_(profiler.contexts()),
          copies_(copies) {}

    // Replays the whole trace. `file` must outlive the call.
    replay_result run(std::span<const std::byte> file, std::string_view name) {
        deliver_trace(file, name, [this](const auto& e) { this->deliver(e); }, contexts_, result_);
        if (result_.error.empty() && !relocation_error_.empty())
            result_.error = std::string(name) + ": " + relocation_error_;
        if (result_.error.empty() && unmatched_digests_ != 0)
            result_.error = std::string(name) + ": " + std::to_string(unmatched_digests_) +
                            " whole-object digest record(s) name an object the replay does not track";
        if (result_.error.empty() && result_.unmatched_heap_records != 0)
            result_.error = std::string(name) + ": " + std::to_string(result_.unmatched_heap_records) +
                            " heap view record(s) follow no site record";
        result_.watchpoint_differences = watchpoints_.differences();
        return std::move(result_);
    }

private:
    void deliver(const context_symbol& node) { contexts_.define(node); }
    void deliver(const allocation_event& a) {
        extents_.allocate(a.where, a.size, a.context);
        consume([&] {
            if (const auto info = profiler_.on_allocation(a.where, a.size, contexts_.mapped(a.context), a.type, a.shape))
                allocated_[info->serial] = *info;
        });
    }
    void deliver(const free_event& f) {
        extents_.free(f.where);
        if (const auto freed = profiler_.object_at(f.where)) allocated_.erase(freed->serial);
        consume([&] { profiler_.on_free(f.where); });
    }
    void deliver(const move_event& m) {
        extents_.move_object(m.from, m.to);
        consume([&] { profiler_.on_move(m.from, m.to); });
    }
    void deliver(const region_move_event& r) {
        const auto moves = extents_.move_region(r);
        consume([&] {
            for (const auto& m : moves) profiler_.on_move(m.from, m.to);
        });
    }
    void deliver(const gc_start_event&) {
        consume([&] { profiler_.on_gc_start(); });
    }
    void deliver(const relocated_object_event& o) { relocating_.add(o); }
    void deliver(const kept_survivors_event& kept) { refuse_unless_fine(relocating_.add(kept)); }
    void deliver(const moved_survivor_event& moved) { refuse_unless_fine(relocating_.add(moved)); }
    // The survivors recorded before it, whatever their count says: had records been lost, the trace says so with
    // an events_lost record, which the replay reports. Each goes with what its allocation told the profiler, as
    // the live agent's registry hands it over: the record carries context, type and serial only, and the replayed
    // map may no longer hold the survivor at its old place (an allocation after the collection overlapped it).
    void deliver(const relocation_event&) {
        survivors_.clear();
        std::unordered_map<std::uint64_t, object_info> kept;
        for (const relocated_object_event& o : relocating_.survivors()) {
            object_info info = o.object;
            info.allocation_context = contexts_.mapped(info.allocation_context);
            if (const auto allocated = allocated_.find(info.serial); allocated != allocated_.end()) {
                info.allocation_weight = allocated->second.allocation_weight;
                info.typed_layout = allocated->second.typed_layout;
            }
            kept.emplace(info.serial, info);
            survivors_.push_back({o.from, o.to, o.size, info});
        }
        allocated_ = std::move(kept); // every other tracked object died
        relocating_.finish_relocation();
        extents_.relocate(survivors_);
        consume([&] { profiler_.on_collection(survivors_); });
    }
    void refuse_unless_fine(const std::optional<std::string>& problem) {
        if (problem && relocation_error_.empty()) relocation_error_ = "a survivor record " + *problem;
    }
    void deliver(const access_sample& sample) {
        access_sample mapped_sample = sample;
        mapped_sample.access_context = contexts_.mapped(sample.access_context);
        consume([&] { profiler_.on_sample(mapped_sample); });
    }
    void deliver(const watchpoint_trap& trap) {
        watchpoint_trap mapped_trap = trap;
        mapped_trap.access_context = contexts_.mapped(trap.access_context);
        consume([&] { profiler_.on_trap(mapped_trap); });
    }
    // Its objects found in the replayed object map, as the live session's host found them at the same point.
    void deliver(const followed_value& followed) {
        if (copies_ == nullptr) return;
        followed_value mapped = followed;
        mapped.load.access_context = contexts_.mapped(followed.load.access_context);
        consume([&] { copies_->on_followed_value(resolve_follow(profiler_, mapped)); });
    }
    // What the live run's digest decided, applied without memory (the trace has the fingerprint).
    void deliver(const whole_object_digest& decided) {
        if (!profiler_.apply_recorded_digest(decided)) ++unmatched_digests_;
    }
    // The live run's heap view, as it stood when its profile was taken.
    void deliver(const live_heap_event& recorded) {
        live_heap_event mapped = recorded;
        if (recorded.what == live_heap_event::kind::site) mapped.context = contexts_.mapped(recorded.context);
        if (recorded.what == live_heap_event::kind::moment) result_.seconds = recorded.seconds;
        if (!profiler_.apply_recorded_live_heap(mapped)) ++result_.unmatched_heap_records;
    }
    void deliver(const memory_contents_event& contents) { memory_.add(contents); }
    void deliver(const watchpoint_arm_event& arm) { watchpoints_.recorded(arm); }
    void deliver(const watchpoint_disarm_event& disarm) { watchpoints_.recorded(disarm); }
    void deliver(const watchpoint_arm_refused_event& refused) { watchpoints_.recorded(refused); }
    void deliver(const events_lost_event& lost) {
        result_.events_lost += lost.count;
        relocating_.forget_previous();
    }
    // Symbols the reader keeps (names are taken from it at the end), the run's description (read before the
    // replay), and what the profiler has no use for.
    void deliver(const type_symbol&) {}
    void deliver(const frame_symbol&) {}
    void deliver(const thread_symbol&) {}
    void deliver(const field_symbol&) {}
    void deliver(const run_attribute&) {}
    void deliver(const gc_end_event&) {}
    void deliver(const heap_census_event&) {}
    // A trace of every access is replayed by access_replay.hpp (replay_profile sends it there).
    void deliver(const access_event&) {}
    void deliver(const memory_fill_event&) {}
    // Value flow is replayed with every access (access_replay.hpp): samples alone cannot follow it.
    void deliver(const value_flow_event&) {}

    template <class Deliver>
    void consume(Deliver deliver_to_profiler) {
        watchpoints_.start_event();
        deliver_to_profiler();
        memory_.event_delivered();
        ++result_.events;
    }

    profiler<Policies>& profiler_;
    replay_watchpoints& watchpoints_;
    replay_memory& memory_;
    trace_contexts contexts_;
    followed_copy_graph* copies_;
    object_extents extents_;
    survivor_decoder relocating_; // the survivors since the last relocation record
    std::vector<typename profiler<Policies>::relocated_object> survivors_; // reused at each relocation record
    std::unordered_map<std::uint64_t, object_info> allocated_; // by serial: each tracked object the trace holds
    std::string relocation_error_; // the first survivor record that referred past the previous relocation
    std::uint64_t unmatched_digests_ = 0;
    replay_result result_;
};

} // namespace ojx::replay
