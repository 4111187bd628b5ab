// The ground truth a trace of every access knows: every object's contents. Per allocation context (of the objects
// a profiler tracks, those of at least min_object_size bytes), the objects X, the largest group of identical ones
// X_N and its share X_N/X — what the profiler's bounds [ω, γ] claim to bracket — and the exact θ: the chance that
// two different objects of the context, compared at a uniformly random word of the first, hold the same word and
// the same compare window around it (the profiler's comparison; objects of different sizes never compare equal).
//
// An object's contents are taken when it dies (freed, or overwritten by an allocation over it) or, if it lives to
// the end, at the end of the trace: after its initialisation and any later stores. Contexts are keyed by the ids
// a replay of the same trace gives them (trace_contexts.hpp), so that truth and profiles match site by site.
#pragma once

#include "ojx/content_digest.hpp"
#include "ojx/profiler.hpp"
#include "ojx/replay/object_extents.hpp"
#include "ojx/replay/rebuilt_memory.hpp"
#include "ojx/replay/trace_contexts.hpp"
#include "ojx/trace_format.hpp"
#include "ojx/trace_reader.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace ojx::replay {

struct site_truth {
    std::string site;                // the allocation context's leaf frame, by the trace's name for it
    std::uint64_t objects = 0;       // X
    std::uint64_t largest_group = 0; // X_N
    double largest_group_ratio = 0;  // X_N / X
    double theta = 0;                // exact; 0 for a context of fewer than two objects
};

struct replica_truth {
    std::string error; // one line naming the trace; empty when it was read whole
    std::map<context_id, site_truth> sites;
};

namespace truth_detail {

// One dead (or surviving) object's contents, in 8-byte words (the last one zero-padded).
struct object_contents {
    std::uint64_t size = 0;
    std::vector<std::uint64_t> words;
    friend auto operator<=>(const object_contents&, const object_contents&) = default;
};

// The key two objects of one size agree on at word `w` exactly when the profiler would call them equal there:
// the word and the digest of the window around it.
inline std::uint64_t comparison_key(const object_contents& object, std::size_t w, std::size_t window) {
    const std::uint64_t word = object.words[w];
    if (window == 0) return word;
    const std::uint64_t start = (8 * w) / window * window;
    const std::uint64_t end = std::min<std::uint64_t>(start + window, object.size);
    content_digest digest;
    digest.update(reinterpret_cast<const unsigned char*>(object.words.data()) + start, static_cast<std::size_t>(end - start));
    return digest.value() * 0x9E3779B97F4A7C15ull ^ word;
}

inline site_truth truth_of(std::vector<object_contents>& objects, std::size_t window) {
    site_truth truth;
    truth.objects = objects.size();
    if (objects.empty()) return truth;
    std::sort(objects.begin(), objects.end());
    for (std::size_t i = 0; i < objects.size();) {
        std::size_t j = i;
        while (j < objects.size() && objects[j] == objects[i]) ++j;
        truth.largest_group = std::max<std::uint64_t>(truth.largest_group, j - i);
        i = j;
    }
    truth.largest_group_ratio = static_cast<double>(truth.largest_group) / static_cast<double>(truth.objects);
    if (objects.size() < 2) return truth;
    // Sum over ordered pairs (i ≠ j) of the same size of the fraction of i's words where they agree.
    double agreeing = 0;
    std::vector<std::uint64_t> keys;
    for (std::size_t first = 0; first < objects.size();) {
        std::size_t last = first;
        while (last < objects.size() && objects[last].size == objects[first].size) ++last;
        const std::size_t words = objects[first].words.size();
        for (std::size_t w = 0; w < words; ++w) {
            keys.clear();
            for (std::size_t i = first; i < last; ++i) keys.push_back(comparison_key(objects[i], w, window));
            std::sort(keys.begin(), keys.end());
            for (std::size_t a = 0; a < keys.size();) {
                std::size_t b = a;
                while (b < keys.size() && keys[b] == keys[a]) ++b;
                const double run = static_cast<double>(b - a);
                agreeing += run * (run - 1) / static_cast<double>(words);
                a = b;
            }
        }
        first = last;
    }
    const double n = static_cast<double>(objects.size());
    truth.theta = agreeing / (n * (n - 1));
    return truth;
}

} // namespace truth_detail

// Reads the whole trace. `profiler` gives min_object_size and the context tree's capacity (as the replays
// have it, so that context ids match), `compare_window` the window θ is taken with.
inline replica_truth find_replica_truth(std::span<const std::byte> file, std::string_view name,
                                        const profiler_config& profiler, std::size_t compare_window) {
    using truth_detail::object_contents;
    replica_truth result;
    context_tree tree(profiler.context_tree_capacity);
    trace_contexts contexts(tree);
    rebuilt_memory memory;
    object_extents extents;
    std::map<context_id, std::vector<object_contents>> dead;
    const auto keep = [&](address where, const object_extents::extent& object) {
        if (object.size < profiler.min_object_size || object.size == 0) return;
        const context_id context = contexts.mapped(object.context);
        if (context == no_context) return;
        object_contents contents{object.size, std::vector<std::uint64_t>(static_cast<std::size_t>((object.size + 7) / 8))};
        memory.read(where, contents.words.data(), static_cast<std::size_t>(object.size));
        dead[context].push_back(std::move(contents));
    };
    trace_reader reader(file, name);
    while (const auto event = reader.next()) {
        if (const auto* node = std::get_if<context_symbol>(&*event)) {
            contexts.define(*node);
        } else if (const auto* a = std::get_if<allocation_event>(&*event)) {
            for (const auto& [where, object] : extents.allocate(a->where, a->size, a->context)) keep(where, object);
            memory.zero(a->where, a->size);
        } else if (const auto* f = std::get_if<free_event>(&*event)) {
            const auto found = extents.objects().find(f->where);
            if (found != extents.objects().end()) keep(found->first, found->second);
            extents.free(f->where);
        } else if (const auto* m = std::get_if<move_event>(&*event)) {
            if (const auto size = extents.move_object(m->from, m->to)) memory.move(m->from, m->to, *size);
        } else if (const auto* r = std::get_if<region_move_event>(&*event)) {
            for (const auto& moved : extents.move_region(*r)) memory.move(moved.from, moved.to, moved.size);
        } else if (const auto* access = std::get_if<access_event>(&*event)) {
            if (access->value) memory.store(access->where, access->width, *access->value);
        } else if (const auto* fill = std::get_if<memory_fill_event>(&*event)) {
            memory.write(fill->where, fill->bytes);
        }
    }
    if (reader.failed()) {
        result.error = reader.error();
        return result;
    }
    for (const auto& [where, object] : extents.objects()) keep(where, object);
    for (auto& [context, objects] : dead) {
        site_truth truth = truth_detail::truth_of(objects, compare_window);
        const trace_frame_id frame = tree.frame_of(context);
        const auto named = reader.frames().find(frame);
        truth.site = named != reader.frames().end() ? named->second : "frame " + std::to_string(frame);
        result.sites[context] = std::move(truth);
    }
    return result;
}

} // namespace ojx::replay
