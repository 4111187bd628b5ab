// Synthetic programs whose heaps have a known replica structure, for testing estimators: per allocation
// context, X objects in N groups of identical contents with chosen sizes (shuffled in time, or in runs), or a
// run process ("equal to the previous object with probability p"), partial replicas that differ in a few
// words, sparse contents, and mutation after allocation. Each program runs on an emulated machine and returns
// the ground truth the profiler's estimates are judged against.
#pragma once

#include "ojx/allocation_metrics.hpp"
#include "ojx/emulation/synthetic_heap.hpp"
#include "ojx/emulation/synthetic_stack.hpp"
#include "ojx/profiler.hpp"
#include "ojx/random.hpp"
#include "ojx/types.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ojx::emulation {

enum class ordering {
    shuffled, // objects of all groups interleaved at random
    runs,     // each group's objects one after another
};

struct context_shape {
    std::string name;                       // the allocation site, as a report would print it
    std::string type = "long[]";
    std::uint64_t object_size = 1024;       // bytes, a multiple of 8
    std::vector<std::uint32_t> group_sizes; // objects per group of identical contents; X is their sum
    ordering order = ordering::shuffled;
    // When ≥ 0, group_sizes is ignored: `objects` objects, each equal to the previous one with this
    // probability and otherwise a new value (replicas that come in runs).
    double repeat_probability = -1;
    std::uint32_t objects = 0;
    std::uint32_t differing_words = 0; // partial replicas: each object differs from its group in this many words
    std::uint32_t mutated_words = 0;   // overwritten after initialisation, identically within a group
    double zero_fraction = 0;          // sparse contents: this fraction of a group's words are zero
    std::uint32_t read_passes = 2;     // full read passes over each object after it is initialised
};

struct context_truth {
    std::uint64_t objects = 0;
    std::uint64_t largest_group = 0;
    double largest_group_ratio = 0;
    // P(equal) for a uniformly random pair of the context's objects compared at a uniformly random word, the
    // way the profiler compares (the word, and the aligned window of `compare_window` bytes around it).
    double theta = 0;
};

struct workload_config {
    std::uint64_t seed = 1;
    std::size_t compare_window = profiler_config{}.compare_window; // must match the profiler's (ground-truth θ)
    std::uint32_t live_objects = 16;  // objects alive at once; older ones are freed
    std::uint32_t collect_every = 0;  // a moving collection every this many allocations (0: never)
    std::uint32_t truth_samples = 5000;
};

// Frames of the synthetic program: frame = (context index + 1) << 8 | role.
enum class frame_role : std::uint64_t { caller = 1, allocation = 2, initialise = 3, use = 4 };
inline constexpr std::uint64_t main_frame = 0xffff00;
inline constexpr std::uint64_t synthetic_frame(std::size_t context_index, frame_role role) {
    return (static_cast<std::uint64_t>(context_index) + 1) << 8 | static_cast<std::uint64_t>(role);
}

// A human-readable name for a synthetic frame (what a symbolizer would return).
inline std::string synthetic_frame_name(std::uint64_t frame, std::span<const context_shape> shapes) {
    if (frame == main_frame) return "Main.main(Main.java:10)";
    const std::size_t index = static_cast<std::size_t>(frame >> 8) - 1;
    const std::string site = index < shapes.size() ? shapes[index].name : "Unknown" + std::to_string(index);
    switch (static_cast<frame_role>(frame & 0xff)) {
    case frame_role::caller: return site + ".run(Workload.java:" + std::to_string(20 + index) + ")";
    case frame_role::allocation: return site + ".allocate(Workload.java:" + std::to_string(40 + index) + ")";
    case frame_role::initialise: return site + ".fill(Workload.java:" + std::to_string(60 + index) + ")";
    case frame_role::use: return site + ".use(Workload.java:" + std::to_string(80 + index) + ")";
    }
    return "?";
}

// The shape of a synthetic object of `type` (a Java-style name): an array's length is its size over the size of
// its elements ("long[]" of 1024 bytes: 128 longs; a reference array's elements are 8 bytes). No header: the
// synthetic heap's objects are all contents.
inline allocation_shape synthetic_shape(std::string_view type, std::uint64_t object_size) {
    if (!type.ends_with("[]")) return {};
    const std::string_view element = type.substr(0, type.size() - 2);
    std::uint64_t element_size = 8;
    if (element == "byte" || element == "boolean") element_size = 1;
    else if (element == "short" || element == "char") element_size = 2;
    else if (element == "int" || element == "float") element_size = 4;
    allocation_shape shape;
    shape.array_length = object_size / element_size;
    return shape;
}

namespace detail {

// Group id of each object of a shape, in allocation order.
inline std::vector<std::uint32_t> group_sequence(const context_shape& shape, fast_random& rng) {
    std::vector<std::uint32_t> groups;
    if (shape.repeat_probability >= 0) {
        std::uint32_t group = 0;
        for (std::uint32_t i = 0; i < shape.objects; ++i) {
            if (i > 0 && rng.unit() >= shape.repeat_probability) ++group;
            groups.push_back(group);
        }
        return groups;
    }
    for (std::uint32_t g = 0; g < shape.group_sizes.size(); ++g) groups.insert(groups.end(), shape.group_sizes[g], g);
    if (shape.order == ordering::shuffled) {
        for (std::size_t i = groups.size(); i > 1; --i) std::swap(groups[i - 1], groups[rng.below(i)]);
    } else { // runs, in a random order of groups
        std::vector<std::uint32_t> order(shape.group_sizes.size());
        for (std::uint32_t g = 0; g < order.size(); ++g) order[g] = g;
        for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
        groups.clear();
        for (std::uint32_t g : order) groups.insert(groups.end(), shape.group_sizes[g], g);
    }
    return groups;
}

inline std::uint64_t random_word(fast_random& rng, double zero_fraction) {
    if (zero_fraction > 0 && rng.unit() < zero_fraction) return 0;
    std::uint64_t v = rng();
    return v == 0 ? 1 : v;
}

inline bool windows_equal(const std::vector<std::uint64_t>& a, const std::vector<std::uint64_t>& b, std::size_t word,
                          std::size_t window_bytes) {
    if (a[word] != b[word]) return false;
    if (window_bytes == 0) return true;
    const std::size_t per_window = std::max<std::size_t>(1, window_bytes / 8);
    const std::size_t start = word / per_window * per_window;
    const std::size_t end = std::min(start + per_window, a.size());
    return std::equal(a.begin() + static_cast<std::ptrdiff_t>(start), a.begin() + static_cast<std::ptrdiff_t>(end),
                      b.begin() + static_cast<std::ptrdiff_t>(start));
}

} // namespace detail

// The result of running a workload: per shape, its allocation context in the tree and its ground truth.
struct workload_result {
    std::vector<context_id> allocation_contexts;
    std::vector<context_truth> truths;
};

// Runs the shapes' objects, interleaved at random across contexts, on `machine`; `tree` is the calling context
// tree the profiler uses (contexts are inserted into it).
template <class Machine, class Tree>
workload_result run_workload(Machine& machine, Tree& tree, std::span<const context_shape> shapes,
                             const workload_config& config) {
    fast_random rng(config.seed);
    workload_result result;
    struct context_plan {
        context_id allocation = no_context, initialise = no_context, use = no_context;
        std::vector<std::uint32_t> groups;
        std::vector<std::vector<std::uint64_t>> group_contents;
        std::vector<std::size_t> mutated;                             // words overwritten after initialisation
        std::vector<std::vector<std::uint64_t>> object_contents;     // for the ground truth
        std::size_t next = 0;
    };
    std::vector<context_plan> plans(shapes.size());
    std::size_t total = 0;
    for (std::size_t c = 0; c < shapes.size(); ++c) {
        const context_shape& shape = shapes[c];
        context_plan& plan = plans[c];
        synthetic_stack stack{main_frame, synthetic_frame(c, frame_role::caller)};
        for (const auto& [role, id] : {std::pair{frame_role::allocation, &plan.allocation},
                                       std::pair{frame_role::initialise, &plan.initialise},
                                       std::pair{frame_role::use, &plan.use}}) {
            stack.push(synthetic_frame(c, role));
            *id = stack.capture(tree);
            stack.pop();
        }
        plan.groups = detail::group_sequence(shape, rng);
        const std::size_t words = static_cast<std::size_t>(shape.object_size / 8);
        const std::uint32_t group_count = plan.groups.empty() ? 0 : *std::max_element(plan.groups.begin(), plan.groups.end()) + 1;
        plan.group_contents.resize(group_count);
        for (auto& content : plan.group_contents) {
            content.resize(words);
            for (auto& w : content) w = detail::random_word(rng, shape.zero_fraction);
        }
        for (std::uint32_t m = 0; m < shape.mutated_words && words > 0; ++m)
            plan.mutated.push_back(static_cast<std::size_t>(rng.below(words)));
        total += plan.groups.size();
        result.allocation_contexts.push_back(plan.allocation);
    }

    std::deque<address> live;
    std::uint64_t allocations = 0;
    // A moving collection; the workload's own references follow their objects, as a GC updates them.
    const auto collect = [&] {
        std::map<address, address> moved;
        for (const auto& m : machine.collect()) moved.emplace(m.from, m.to);
        for (address& a : live)
            if (const auto it = moved.find(a); it != moved.end()) a = it->second;
    };
    for (std::size_t done = 0; done < total; ++done) {
        // Pick the next context with probability proportional to the objects it has left.
        std::uint64_t pick = rng.below(total - done);
        std::size_t c = 0;
        for (; c < plans.size(); ++c) {
            const std::size_t left = plans[c].groups.size() - plans[c].next;
            if (pick < left) break;
            pick -= left;
        }
        context_plan& plan = plans[c];
        const context_shape& shape = shapes[c];
        const std::uint32_t group = plan.groups[plan.next++];
        std::vector<std::uint64_t> content = plan.group_contents[group];
        for (std::uint32_t d = 0; d < shape.differing_words && !content.empty(); ++d)
            content[static_cast<std::size_t>(rng.below(content.size()))] = rng() | 1;
        const allocation_shape object_shape = synthetic_shape(shape.type, shape.object_size);
        auto where = machine.allocate(shape.object_size, plan.allocation, static_cast<type_id>(c), object_shape);
        if (!where) {
            collect();
            where = machine.allocate(shape.object_size, plan.allocation, static_cast<type_id>(c), object_shape);
        }
        if (!where) continue; // the live objects alone fill the heap
        ++allocations;
        for (std::size_t w = 0; w < content.size(); ++w)
            machine.store(*where + 8 * w, 8, content[w], plan.initialise, synthetic_frame(c, frame_role::initialise));
        for (const std::size_t word : plan.mutated) {
            content[word] = content[word] * 31 + group + 7; // a function of the group: replicas stay replicas
            machine.store(*where + 8 * word, 8, content[word], plan.initialise);
        }
        for (std::uint32_t pass = 0; pass < shape.read_passes && !content.empty(); ++pass) {
            const std::size_t start = static_cast<std::size_t>(rng.below(content.size()));
            for (std::size_t i = 0; i < content.size(); ++i)
                machine.load(*where + 8 * ((start + i) % content.size()), 8, plan.use,
                             synthetic_frame(c, frame_role::use));
        }
        plan.object_contents.push_back(std::move(content));
        live.push_back(*where);
        if (live.size() > config.live_objects) {
            machine.free(live.front());
            live.pop_front();
        }
        if (config.collect_every > 0 && allocations % config.collect_every == 0) collect();
    }

    for (std::size_t c = 0; c < plans.size(); ++c) {
        const auto& objects = plans[c].object_contents;
        context_truth truth;
        truth.objects = objects.size();
        std::map<std::vector<std::uint64_t>, std::uint64_t> group_sizes;
        for (const auto& content : objects) truth.largest_group = std::max(truth.largest_group, ++group_sizes[content]);
        truth.largest_group_ratio =
            truth.objects ? static_cast<double>(truth.largest_group) / static_cast<double>(truth.objects) : 0;
        if (objects.size() >= 2 && !objects[0].empty()) {
            std::uint64_t equal = 0;
            for (std::uint32_t s = 0; s < config.truth_samples; ++s) {
                const std::size_t i = static_cast<std::size_t>(rng.below(objects.size()));
                std::size_t j = static_cast<std::size_t>(rng.below(objects.size() - 1));
                if (j >= i) ++j;
                const std::size_t word = static_cast<std::size_t>(rng.below(objects[i].size()));
                equal += detail::windows_equal(objects[i], objects[j], word, config.compare_window) ? 1 : 0;
            }
            truth.theta = static_cast<double>(equal) / config.truth_samples;
        }
        result.truths.push_back(truth);
    }
    return result;
}

} // namespace ojx::emulation
