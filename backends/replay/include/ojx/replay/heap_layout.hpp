// The heap as a trace describes it at one point: which objects were live, where, how big, allocated at which
// context with which type. `heap_layout` applies a trace's allocations, frees, moves and region moves in order and
// checks them as it goes (an allocation over live objects, a free or move of an object that is not live, a move
// onto a live object, a region move that cuts an object, totals that do not add up); `reconstruct_heap` reads a
// trace up to the start of a given collection or after a given event; `census_of` groups the live objects by
// allocation context and type; `check_censuses` compares the heap with every census the runtime itself took
// (heap_census_event). Used by `ojx heap` and to check that recorders write consistent traces.
//
// Overlap follows the profiler (profiler.hpp: objects_evicted_by_overlap): a new or moved object that overlaps
// live ones evicts them, since the runtime can only have reused their memory. It is reported, not fatal.
#pragma once

#include "ojx/relocation_survivors.hpp"
#include "ojx/trace_format.hpp"
#include "ojx/trace_reader.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

namespace ojx::replay {

// What is known of one live object.
struct live_object {
    std::uint64_t size = 0;
    context_id context = no_context;
    type_id type = no_type;
    trace_thread_id thread = 0;
    std::uint64_t allocated_at = 0; // the allocation's event number
};

// Kinds of inconsistency a trace can show. The order is the order reports list them in.
enum class heap_problem : std::uint8_t {
    overlapping_allocation, // an allocation overlaps live objects (they are evicted)
    free_of_unknown,        // a free names no live object's first byte
    move_of_unknown,        // a move names no live object's first byte: a dead or never-seen object
    move_onto_live,         // a moved object lands on live objects (they are evicted)
    region_misfit,          // a region move cuts an object: it starts in the region and ends past it, or the reverse
    totals_mismatch,        // live objects and bytes differ from allocated - freed - evicted
};
inline constexpr std::size_t heap_problem_kinds = 6;

inline const char* heap_problem_name(heap_problem problem) {
    switch (problem) {
    case heap_problem::overlapping_allocation: return "overlapping allocation";
    case heap_problem::free_of_unknown: return "free of an unknown address";
    case heap_problem::move_of_unknown: return "move of a dead object";
    case heap_problem::move_onto_live: return "move onto a live object";
    case heap_problem::region_misfit: return "region move cutting an object";
    case heap_problem::totals_mismatch: return "totals do not add up";
    }
    return "?";
}

struct heap_finding {
    heap_problem problem = heap_problem::overlapping_allocation;
    std::uint64_t event = 0; // the event number it was found at
    std::string detail;      // one line, addresses in hex
};

// Everything counted since the start of the trace: what the totals check adds up.
struct heap_totals {
    std::uint64_t allocated_objects = 0;
    std::uint64_t allocated_bytes = 0;
    std::uint64_t freed_objects = 0;
    std::uint64_t freed_bytes = 0;
    std::uint64_t evicted_objects = 0; // by an overlapping allocation or move
    std::uint64_t evicted_bytes = 0;
    std::uint64_t moves = 0; // objects moved, one by one or in a region
    std::uint64_t gcs = 0;   // GC start events
};

class heap_layout {
public:
    static constexpr std::size_t findings_kept = 10; // the first ones, with their event numbers

    // Applies one event, numbered `event` (the reader's count, from 1). Events that do not change the heap are
    // ignored here.
    void apply(const trace_event& e, std::uint64_t event) {
        event_ = event;
        if (const auto* a = std::get_if<allocation_event>(&e)) allocate(*a);
        else if (const auto* f = std::get_if<free_event>(&e)) release(f->where);
        else if (const auto* m = std::get_if<move_event>(&e)) move(m->from, m->to);
        else if (const auto* r = std::get_if<region_move_event>(&e)) move_region(*r);
        else if (std::holds_alternative<gc_start_event>(e)) start_collection();
        else if (std::holds_alternative<gc_end_event>(e)) end_collection();
        else if (const auto* o = std::get_if<relocated_object_event>(&e)) relocating_.add(*o);
        else if (const auto* k = std::get_if<kept_survivors_event>(&e)) note_unless_fine(relocating_.add(*k));
        else if (const auto* ms = std::get_if<moved_survivor_event>(&e)) note_unless_fine(relocating_.add(*ms));
        else if (std::holds_alternative<relocation_event>(e)) relocate();
        else if (std::holds_alternative<events_lost_event>(e)) relocating_.forget_previous();
    }

    // Compares the live objects with the counters; a difference is a finding. Call once, where the census is taken.
    void check_totals() {
        std::uint64_t bytes = 0;
        for (const auto& [where, object] : live_) bytes += object.size;
        for (const auto& [where, object] : displaced_) bytes += object.size;
        const std::uint64_t expected_objects =
            totals_.allocated_objects - totals_.freed_objects - totals_.evicted_objects;
        const std::uint64_t expected_bytes = totals_.allocated_bytes - totals_.freed_bytes - totals_.evicted_bytes;
        const std::size_t objects = live_.size() + displaced_.size();
        if (objects != expected_objects || bytes != expected_bytes)
            note(heap_problem::totals_mismatch, std::to_string(objects) + " live objects of " +
                                                    std::to_string(bytes) + " bytes, but allocated - freed - evicted = " +
                                                    std::to_string(expected_objects) + " objects of " +
                                                    std::to_string(expected_bytes) + " bytes");
    }

    const std::map<address, live_object>& live() const noexcept { return live_; }
    const heap_totals& totals() const noexcept { return totals_; }
    std::uint64_t count(heap_problem problem) const noexcept { return counts_[static_cast<std::size_t>(problem)]; }
    std::uint64_t problems() const noexcept {
        std::uint64_t all = 0;
        for (const std::uint64_t n : counts_) all += n;
        return all;
    }
    const std::vector<heap_finding>& findings() const noexcept { return findings_; }

private:
    void allocate(const allocation_event& a) {
        ++totals_.allocated_objects;
        totals_.allocated_bytes += a.size;
        if (collecting_) {
            displace_overlapping(a.where, a.size);
            live_[a.where] = live_object{a.size, a.context, a.type, a.thread, event_};
            return;
        }
        const std::size_t evicted = evict_overlapping(a.where, a.size);
        if (evicted != 0)
            note(heap_problem::overlapping_allocation, "allocation of " + std::to_string(a.size) + " bytes at " +
                                                           hex(a.where) + " overlaps " + std::to_string(evicted) +
                                                           " live object(s), evicted");
        live_[a.where] = live_object{a.size, a.context, a.type, a.thread, event_};
    }

    void release(address where) {
        const auto found = live_.find(where);
        if (found == live_.end()) {
            note(heap_problem::free_of_unknown, "free of " + hex(where) + ", where no live object starts");
            return;
        }
        ++totals_.freed_objects;
        totals_.freed_bytes += found->second.size;
        live_.erase(found);
    }

    void move(address from, address to) {
        const auto found = live_.find(from);
        if (found == live_.end()) {
            note(heap_problem::move_of_unknown, "move of " + hex(from) + " to " + hex(to) +
                                                    ": no live object starts there");
            return;
        }
        const live_object object = found->second;
        live_.erase(found);
        place_moved(from, to, object);
    }

    // Every object that starts in [from, from + length) moves by to - from; each must also end in it, and no object
    // may start before the region and reach into it.
    void move_region(const region_move_event& r) {
        const address end = r.from + r.length;
        auto first = live_.lower_bound(r.from);
        if (first != live_.begin()) {
            const auto before = std::prev(first);
            if (before->first + before->second.size > r.from)
                note(heap_problem::region_misfit, "region move of [" + hex(r.from) + ", " + hex(end) +
                                                      ") cuts the object at " + hex(before->first) +
                                                      ", which starts before it; the object stays");
        }
        std::vector<std::pair<address, live_object>> moving;
        for (auto it = first; it != live_.end() && it->first < end;) {
            if (it->first + it->second.size > end)
                note(heap_problem::region_misfit, "region move of [" + hex(r.from) + ", " + hex(end) +
                                                      ") cuts the object at " + hex(it->first) + " (" +
                                                      std::to_string(it->second.size) + " bytes), which ends past it");
            moving.emplace_back(*it);
            it = live_.erase(it);
        }
        // Taken out first, put back after: the region's objects may land where others of the region were.
        for (const auto& [from, object] : moving) place_moved(from, from - r.from + r.to, object);
    }

    // Between a collection's start and the relocation of its survivors (a recorder that relocates, the JVM
    // agent), the trace's objects are where the collection found them, and new objects are allocated where it
    // left room: an allocation that overlaps live objects is no inconsistency then. They are set aside; the
    // relocation brings back those that survived, and the rest died in the collection. A recorder relocates once
    // per collection, so while collections started outnumber relocations one is still pending: two collections
    // that start before the first one's relocation leave the second pending after it, and objects that the second
    // moved are found by its own relocation. A collection that ends (GC end, a recorder that does not relocate)
    // with objects still set aside had them evicted by the overlap after all.
    void start_collection() {
        ++totals_.gcs;
        ++pending_collections_;
        collecting_ = true;
    }
    void end_collection() {
        pending_collections_ = 0;
        collecting_ = false;
        for (const auto& [where, object] : displaced_) {
            ++totals_.evicted_objects;
            totals_.evicted_bytes += object.size;
            note(heap_problem::overlapping_allocation, "the object at " + hex(where) + " (" +
                                                           std::to_string(object.size) +
                                                           " bytes), overlapped by an allocation during the "
                                                           "collection, was not relocated; evicted");
        }
        displaced_.clear();
    }
    void displace_overlapping(address begin, std::uint64_t size) {
        const address end = begin + std::max<std::uint64_t>(size, 1);
        auto it = live_.lower_bound(begin);
        if (it != live_.begin() && std::prev(it)->first + std::prev(it)->second.size > begin) --it;
        while (it != live_.end() && it->first < end) {
            displaced_.insert(*it); // an address already set aside keeps its first object
            it = live_.erase(it);
        }
    }

    // The survivors recorded since the previous relocation are the live objects, where they are now; every other
    // live object (set aside or not) died. A survivor is found at its old address among the live objects, or
    // among those set aside; where both hold an object there, the one of its size, context and type.
    void relocate() {
        std::map<address, live_object> before;
        before.swap(live_);
        std::map<address, live_object> displaced;
        displaced.swap(displaced_);
        if (pending_collections_ > 0) --pending_collections_;
        collecting_ = pending_collections_ > 0;
        const auto matches = [](const relocated_object_event& o, const live_object& object) {
            return object.size == o.size && object.context == o.object.allocation_context && object.type == o.object.type;
        };
        std::vector<std::pair<const relocated_object_event*, live_object>> survivors;
        for (const relocated_object_event& o : relocating_.survivors()) {
            auto found = before.find(o.from);
            std::map<address, live_object>* from = &before;
            if (const auto aside = displaced.find(o.from);
                aside != displaced.end() && (found == before.end() || (!matches(o, found->second) && matches(o, aside->second)))) {
                found = aside;
                from = &displaced;
            }
            if (found == from->end()) {
                note(heap_problem::move_of_unknown, "relocation of " + hex(o.from) + " to " + hex(o.to) +
                                                        ": no live object starts there");
                continue;
            }
            survivors.emplace_back(&o, found->second);
            from->erase(found);
        }
        for (const auto* died : {&before, &displaced})
            for (const auto& [where, object] : *died) {
                ++totals_.freed_objects;
                totals_.freed_bytes += object.size;
            }
        for (const auto& [o, object] : survivors) {
            if (o->from != o->to) place_moved(o->from, o->to, object);
            else live_[o->to] = object;
        }
        relocating_.finish_relocation();
    }
    void note_unless_fine(const std::optional<std::string>& problem) {
        if (problem) note(heap_problem::move_of_unknown, "a survivor record " + *problem);
    }

    void place_moved(address from, address to, const live_object& object) {
        ++totals_.moves;
        const std::size_t evicted = evict_overlapping(to, object.size);
        if (evicted != 0)
            note(heap_problem::move_onto_live, "move of " + hex(from) + " (" + std::to_string(object.size) +
                                                   " bytes) to " + hex(to) + " lands on " + std::to_string(evicted) +
                                                   " live object(s), evicted");
        live_[to] = object;
    }

    // Removes the live objects overlapping [begin, begin + size) (a zero-size object overlaps what starts at its
    // address) and counts them as evicted.
    std::size_t evict_overlapping(address begin, std::uint64_t size) {
        const address end = begin + std::max<std::uint64_t>(size, 1);
        auto it = live_.lower_bound(begin);
        if (it != live_.begin() && std::prev(it)->first + std::prev(it)->second.size > begin) --it;
        std::size_t evicted = 0;
        while (it != live_.end() && it->first < end) {
            ++evicted;
            ++totals_.evicted_objects;
            totals_.evicted_bytes += it->second.size;
            it = live_.erase(it);
        }
        return evicted;
    }

    void note(heap_problem problem, std::string detail) {
        ++counts_[static_cast<std::size_t>(problem)];
        if (findings_.size() < findings_kept) findings_.push_back({problem, event_, std::move(detail)});
    }

    static std::string hex(address value) {
        char buffer[24];
        std::snprintf(buffer, sizeof buffer, "0x%llx", static_cast<unsigned long long>(value));
        return buffer;
    }

    std::map<address, live_object> live_;
    survivor_decoder relocating_; // the survivors since the last relocation record
    bool collecting_ = false; // a collection has started, and neither ended nor been relocated
    std::uint64_t pending_collections_ = 0; // collections started and not yet relocated (or ended)
    std::map<address, live_object> displaced_; // overlapped by allocations while collecting_ (see start_collection)
    heap_totals totals_;
    std::array<std::uint64_t, heap_problem_kinds> counts_{};
    std::vector<heap_finding> findings_;
    std::uint64_t event_ = 0;
};

// Where to stop reading: at the start of a collection (the heap as the collector found it), or after an event.
struct heap_point {
    enum class kind : std::uint8_t { gc_start, after_event };
    kind at = kind::after_event;
    std::uint64_t number = 0;
};

// The layout at a point of a trace, with the trace's symbols as defined there.
struct heap_reconstruction {
    std::string error;         // one line naming the trace: unreadable, or the point is not in it; empty when fine
    heap_layout layout;
    std::uint64_t events = 0;  // events applied (the point's event number)
    std::unordered_map<trace_frame_id, std::string> frames;
    std::unordered_map<type_id, std::string> types;
    std::unordered_map<context_id, trace_reader::context_node> contexts;
};

// Rebuilds the heap at `point` and checks the totals there. The rest of the trace is read as well, unapplied: a
// damaged trace is refused whatever the point (as a replay refuses it before any analysis). `file` must outlive
// the call.
inline heap_reconstruction reconstruct_heap(std::span<const std::byte> file, std::string_view name,
                                            heap_point point) {
    heap_reconstruction result;
    trace_reader reader(file, name);
    bool reached = false;
    std::uint64_t gcs = 0;
    while (const auto event = reader.next()) {
        const bool gc_start = std::holds_alternative<gc_start_event>(*event);
        gcs += gc_start ? 1 : 0;
        if (reached) continue;
        if (gc_start && point.at == heap_point::kind::gc_start &&
            std::get<gc_start_event>(*event).gc == point.number) {
            reached = true;
            result.frames = reader.frames();
            result.types = reader.types();
            result.contexts = reader.contexts();
            continue;
        }
        result.layout.apply(*event, reader.events_read());
        result.events = reader.events_read();
        if (point.at == heap_point::kind::after_event && result.events == point.number) {
            reached = true;
            result.frames = reader.frames();
            result.types = reader.types();
            result.contexts = reader.contexts();
        }
    }
    const std::string prefix = std::string(name) + ": ";
    if (reader.failed()) {
        result.error = reader.error();
    } else if (!reached && point.at == heap_point::kind::gc_start) {
        result.error = prefix + "there is no GC " + std::to_string(point.number) + " (the trace has " +
                       std::to_string(gcs) + (gcs == 1 ? " collection)" : " collections)");
    } else if (!reached) {
        result.error = prefix + "there is no event " + std::to_string(point.number) + " (the trace has " +
                       std::to_string(reader.events_read()) + " events)";
    }
    result.layout.check_totals();
    return result;
}

// Live objects and bytes of one allocation context and type.
struct census_entry {
    context_id context = no_context;
    type_id type = no_type;
    std::uint64_t objects = 0;
    std::uint64_t bytes = 0;
};

struct heap_census {
    std::vector<census_entry> entries; // by bytes, largest first (then by context, type)
    std::uint64_t objects = 0;
    std::uint64_t bytes = 0;
    address lowest = 0;  // the address range the live objects cover: [lowest, highest_end)
    address highest_end = 0;
};

inline heap_census census_of(const heap_layout& layout) {
    heap_census census;
    std::map<std::pair<context_id, type_id>, census_entry> groups;
    for (const auto& [where, object] : layout.live()) {
        census_entry& entry = groups[{object.context, object.type}];
        entry.context = object.context;
        entry.type = object.type;
        ++entry.objects;
        entry.bytes += object.size;
        ++census.objects;
        census.bytes += object.size;
        census.highest_end = std::max(census.highest_end, where + object.size);
    }
    if (!layout.live().empty()) census.lowest = layout.live().begin()->first;
    for (auto& [key, entry] : groups) census.entries.push_back(entry);
    std::stable_sort(census.entries.begin(), census.entries.end(),
                     [](const census_entry& a, const census_entry& b) { return a.bytes > b.bytes; });
    return census;
}

// A context's frames from the trace's symbols, leaf first, without the root's; a frame without a name is shown by
// its number, a context without a definition as "context N". Stops at `max_frames` or at a cycle.
inline std::vector<std::string> context_frames(const heap_reconstruction& heap, context_id context,
                                               std::size_t max_frames = 64) {
    std::vector<std::string> names;
    if (context == no_context) return names;
    if (!heap.contexts.contains(context)) return {"context " + std::to_string(context)};
    for (context_id at = context; at != no_context && names.size() < max_frames;) {
        const auto node = heap.contexts.find(at);
        if (node == heap.contexts.end() || node->second.parent == no_context) break; // the root has no frame
        const auto name = heap.frames.find(node->second.frame);
        names.push_back(name != heap.frames.end() ? name->second : "frame " + std::to_string(node->second.frame));
        at = node->second.parent;
    }
    return names;
}

// ---- Checking the trace against the runtime's own census (heap_census_event) ----

// One type whose live objects the runtime's census and the rebuilt heap count differently.
struct census_difference {
    type_id type = no_type;
    std::uint64_t census_objects = 0, census_bytes = 0; // the runtime's count
    std::uint64_t heap_objects = 0, heap_bytes = 0;     // the rebuilt heap's
};

// A census in the trace against the heap rebuilt at its event.
struct census_comparison {
    std::uint64_t event = 0; // the census record's event number
    std::uint64_t gc = 0;
    std::uint64_t census_objects = 0, census_bytes = 0;
    std::uint64_t heap_objects = 0, heap_bytes = 0;
    std::vector<census_difference> differences; // by type; empty when they agree exactly
    // Live objects the two counts disagree on: the sum over types of the difference in objects.
    std::uint64_t objects_differing() const noexcept {
        std::uint64_t n = 0;
        for (const census_difference& d : differences)
            n += d.census_objects > d.heap_objects ? d.census_objects - d.heap_objects : d.heap_objects - d.census_objects;
        return n;
    }
};

inline census_comparison compare_census(const heap_layout& layout, const heap_census_event& census,
                                        std::uint64_t event) {
    census_comparison result;
    result.event = event;
    result.gc = census.gc;
    std::map<type_id, census_difference> by_type;
    for (const census_count& count : census.types) {
        census_difference& d = by_type[count.type];
        d.type = count.type;
        d.census_objects += count.objects;
        d.census_bytes += count.bytes;
        result.census_objects += count.objects;
        result.census_bytes += count.bytes;
    }
    for (const auto& [where, object] : layout.live()) {
        census_difference& d = by_type[object.type];
        d.type = object.type;
        ++d.heap_objects;
        d.heap_bytes += object.size;
        ++result.heap_objects;
        result.heap_bytes += object.size;
    }
    for (const auto& [type, d] : by_type)
        if (d.census_objects != d.heap_objects || d.census_bytes != d.heap_bytes) result.differences.push_back(d);
    return result;
}

// Every census of a trace, each compared with the heap rebuilt at its event, and the consistency checks (the
// totals checked at every census).
struct census_check {
    std::string error; // one line naming the trace when it is unreadable; empty when fine
    heap_layout layout;
    std::vector<census_comparison> comparisons;
    std::unordered_map<type_id, std::string> types;
};

inline census_check check_censuses(std::span<const std::byte> file, std::string_view name) {
    census_check result;
    trace_reader reader(file, name);
    while (const auto event = reader.next()) {
        if (const auto* census = std::get_if<heap_census_event>(&*event)) {
            result.comparisons.push_back(compare_census(result.layout, *census, reader.events_read()));
            result.layout.check_totals();
        } else {
            result.layout.apply(*event, reader.events_read());
        }
    }
    if (reader.failed()) result.error = reader.error();
    result.types = reader.types();
    return result;
}

inline std::string type_name(const std::unordered_map<type_id, std::string>& types, type_id type) {
    if (type == no_type) return "(no type)";
    const auto found = types.find(type);
    return found != types.end() ? found->second : "type " + std::to_string(type);
}

inline std::string type_name(const heap_reconstruction& heap, type_id type) { return type_name(heap.types, type); }

} // namespace ojx::replay
