// Synthetic programs with a known copy structure, for testing copy graphs (docs/copy-profiling.md). A program is
// a random mix of planted patterns, each at allocation contexts of its own, repeated a random number of times and
// interleaved at random, on a register machine (register_machine.hpp) with frees and moving collections:
//   chain      S.f → (register, moved to another) → T.g → D.h, then D.h computed on: a copy through a temporary;
//   clone      array A copied whole into a fresh array B by a string move (1- or 8-byte elements) or a hand
//              loop through a register, then a few of B's elements computed on;
//   carrier    a static word → K.f → R.f, then R.f computed on;
//   control    X.f computed on and the result stored into Y.f (no copy), and a register loaded from X.g but
//              overwritten with a constant before it is stored into Y.g (no copy either); Y.f then compared;
//   reference  a fresh E's reference stored into an element of the reference array Q, which is later loaded
//              and compared.
// What the program planted is its truth: every edge (counted as planted, from the plan, never from the
// addresses), the chains through ≥ 2 heap locations, the clone pairs, the controls that must show no copy, and
// the carrier sites (S, T, A, K: copied out of and never computed on).
#pragma once

#include "ojx/emulation/heap_shapes.hpp"
#include "ojx/emulation/synthetic_stack.hpp"
#include "ojx/allocation_metrics.hpp"
#include "ojx/calling_context_tree.hpp"
#include "ojx/copy_graph.hpp"
#include "ojx/hot_copy_chains.hpp"
#include "ojx/random.hpp"
#include "ojx/types.hpp"
#include "ojx/value_flow.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <vector>

namespace ojx::emulation {

struct copy_program_config {
    std::uint64_t seed = 1;
    std::uint32_t chains = 3, clones = 2, carriers = 2, controls = 2, references = 1; // pattern instances
    std::uint32_t min_repetitions = 20, max_repetitions = 200;                       // per instance
    std::uint32_t kept_objects = 24;  // objects a pattern keeps alive at once; older ones are freed
    std::uint32_t collect_every = 0;  // a moving collection every this many repetitions (0: only when full)
    address static_area = 0;          // static words (carriers need them): a synthetic heap's statics()
};

struct planted_clone {
    context_id from = no_context, to = no_context;
    std::uint64_t bytes = 0;
};

struct planted_control {
    context_id computed_from = no_context, stored_into = no_context;
};

struct copy_program_truth {
    copy_graph graph;                       // every copy and use the program made
    std::vector<copy_chain> chains;         // planted chains (chain and carrier patterns), with their bytes
    std::vector<planted_clone> clones;
    std::vector<planted_control> controls;
    std::set<context_id> carriers;
    std::uint64_t collections = 0;
};

// The program's own references: they follow their objects through moving collections, as a GC updates them.
class object_handles {
public:
    using handle = std::uint64_t;

    handle add(address where) {
        objects_.emplace(next_, where);
        return next_++;
    }
    address operator[](handle h) const { return objects_.at(h); }
    address remove(handle h) {
        const address where = objects_.at(h);
        objects_.erase(h);
        return where;
    }
    void moved(const std::map<address, address>& moves) {
        for (auto& [h, where] : objects_)
            if (const auto it = moves.find(where); it != moves.end()) where = it->second;
    }

private:
    std::map<handle, address> objects_;
    handle next_ = 0;
};

// Runs the program on `machine` (a register machine); contexts are inserted into `tree`.
template <class Machine, class Tree>
copy_program_truth run_copy_program(Machine& machine, Tree& tree, const copy_program_config& config) {
    constexpr std::uint64_t record_size = 64; // a record of eight 8-byte fields
    constexpr frame copy_program_frame = 0xc0000000;
    fast_random rng(config.seed);
    copy_program_truth truth;
    object_handles handles;
    context_id next_site = 0;
    const auto new_site = [&] {
        const synthetic_stack stack{main_frame, copy_program_frame | next_site++};
        return stack.capture(tree);
    };
    const auto reg = [&] { return static_cast<value_register>(rng.below(Machine::register_count)); };
    // Two different registers.
    const auto reg_pair = [&] {
        const value_register a = reg();
        value_register b = reg();
        while (b == a) b = reg();
        return std::pair{a, b};
    };
    const auto width = [&] { return static_cast<std::uint8_t>(1u << rng.below(4)); };
    const auto field = [&] { return 8 * rng.below(record_size / 8); };
    const auto collect = [&] {
        std::map<address, address> moves;
        for (const auto& m : machine.collect()) moves.emplace(m.from, m.to);
        handles.moved(moves);
        ++truth.collections;
    };
    // A new object; with `into`, its reference is left in that register.
    const auto allocate = [&](std::uint64_t size, context_id site, const allocation_shape& shape = {},
                              std::optional<value_register> into = std::nullopt) {
        const auto attempt = [&] {
            const auto type = static_cast<type_id>(site);
            return into ? machine.allocate_into(*into, size, site, type, shape)
                        : machine.allocate(size, site, type, shape);
        };
        auto where = attempt();
        if (!where) {
            collect();
            where = attempt();
        }
        if (!where) throw std::runtime_error("copy program: the heap is too small for its live objects");
        return handles.add(*where);
    };
    const auto constant = [&](value_register r, object_handles::handle h, std::uint64_t offset, std::uint8_t w,
                              context_id code) {
        machine.set(r, rng() | 1);
        machine.store(r, handles[h] + offset, w, code);
    };
    // Objects a pattern keeps: freed oldest first beyond `kept_objects`.
    std::vector<object_handles::handle> kept;
    const auto keep = [&](object_handles::handle h) {
        kept.push_back(h);
        if (kept.size() > config.kept_objects) {
            const std::size_t victim = static_cast<std::size_t>(rng.below(kept.size() / 2));
            machine.free(handles.remove(kept[victim]));
            kept.erase(kept.begin() + static_cast<std::ptrdiff_t>(victim));
        }
    };
    const auto release = [&](object_handles::handle h) { machine.free(handles.remove(h)); };

    struct instance {
        std::uint64_t repetitions_left = 0;
        std::function<void()> repeat;
    };
    std::vector<instance> instances;
    const auto repetitions = [&] {
        return config.min_repetitions + rng.below(config.max_repetitions - config.min_repetitions + 1);
    };

    for (std::uint32_t i = 0; i < config.chains; ++i) {
        const context_id s = new_site(), t = new_site(), d = new_site();
        const std::uint64_t f = field(), g = field(), h = field();
        const std::uint8_t w = width();
        const std::uint64_t n = repetitions();
        const copy_node sf = copy_node::field(s, f), tg = copy_node::field(t, g), dh = copy_node::field(d, h);
        truth.chains.push_back({{sf, tg, dh, copy_node::consumer()}, n * w});
        truth.carriers.insert({s, t});
        instances.push_back({n, [&, s, t, d, f, g, h, w, sf, tg, dh] {
            const auto source = allocate(record_size, s);
            const auto [r1, r2] = reg_pair();
            constant(r1, source, f, w, s);
            const auto temporary = allocate(record_size, t);
            machine.load(r1, handles[source] + f, w, t);
            machine.move(r2, r1);
            machine.store(r2, handles[temporary] + g, w, t);
            truth.graph.add({sf, tg, w});
            release(source);
            const auto destination = allocate(record_size, d);
            const auto [r3, r4] = reg_pair();
            machine.load(r3, handles[temporary] + g, w, d);
            machine.store(r3, handles[destination] + h, w, d);
            truth.graph.add({tg, dh, w});
            release(temporary);
            machine.load(r4, handles[destination] + h, w, d);
            machine.compute(r3, {r4}, machine.value(r4) + 1);
            truth.graph.add({dh, copy_node::consumer(), w});
            keep(destination);
        }});
    }

    for (std::uint32_t i = 0; i < config.clones; ++i) {
        const context_id a = new_site(), b = new_site();
        const std::uint64_t words = 32 + rng.below(97), size = 8 * words;
        const std::uint64_t uses = 1 + rng.below(4);
        const std::uint64_t n = repetitions();
        const allocation_shape shape = synthetic_shape("long[]", size);
        const copy_node ae = copy_node::field(a, copy_node::elements), be = copy_node::field(b, copy_node::elements);
        truth.clones.push_back({a, b, n * size});
        truth.carriers.insert(a);
        instances.push_back({n, [&, a, b, words, size, uses, shape, ae, be] {
            const auto original = allocate(size, a, shape);
            const auto r = reg();
            for (std::uint64_t word = 0; word < words; ++word) constant(r, original, 8 * word, 8, a);
            const auto copy = allocate(size, b, shape);
            switch (rng.below(3)) {
            case 0: // memcpy by bytes
                machine.string_move(handles[copy], handles[original], size, 1, b);
                truth.graph.add({ae, be, 1}, size);
                break;
            case 1: // rep movsq
                machine.string_move(handles[copy], handles[original], size, 8, b);
                truth.graph.add({ae, be, 8}, words);
                break;
            default: // a hand loop through a register
                for (std::uint64_t word = 0; word < words; ++word) {
                    machine.load(r, handles[original] + 8 * word, 8, b);
                    machine.store(r, handles[copy] + 8 * word, 8, b);
                }
                truth.graph.add({ae, be, 8}, words);
            }
            release(original);
            const auto [x, y] = reg_pair();
            for (std::uint64_t u = 0; u < uses; ++u) {
                machine.load(x, handles[copy] + 8 * rng.below(words), 8, b);
                machine.compute(y, {x, x}, machine.value(x) * 3);
                truth.graph.add({be, copy_node::consumer(), 8});
            }
            keep(copy);
        }});
    }

    for (std::uint32_t i = 0; i < config.carriers && config.static_area != 0; ++i) {
        const context_id k = new_site(), r = new_site();
        const address word = config.static_area + 8 * i;
        const std::uint64_t f = field(), g = field();
        const std::uint64_t n = repetitions();
        const copy_node st = copy_node::static_location(word), kf = copy_node::field(k, f), rg = copy_node::field(r, g);
        const value_register initial = reg();
        machine.set(initial, rng() | 1);
        machine.store(initial, word, 8, k);
        truth.chains.push_back({{st, kf, rg, copy_node::consumer()}, n * 8});
        truth.carriers.insert(k);
        instances.push_back({n, [&, k, r, word, f, g, st, kf, rg] {
            const auto carrier = allocate(record_size, k);
            const auto [r1, r2] = reg_pair();
            machine.load(r1, word, 8, k);
            machine.store(r1, handles[carrier] + f, 8, k);
            truth.graph.add({st, kf, 8});
            const auto receiver = allocate(record_size, r);
            machine.load(r2, handles[carrier] + f, 8, r);
            machine.store(r2, handles[receiver] + g, 8, r);
            truth.graph.add({kf, rg, 8});
            release(carrier);
            machine.load(r1, handles[receiver] + g, 8, r);
            machine.consume({r1});
            truth.graph.add({rg, copy_node::consumer(), 8});
            keep(receiver);
        }});
    }

    for (std::uint32_t i = 0; i < config.controls; ++i) {
        const context_id x = new_site(), y = new_site();
        const std::uint64_t f = field(), g = (f + 8) % record_size;
        const std::uint8_t w = width();
        const copy_node xf = copy_node::field(x, f), yf = copy_node::field(y, f);
        truth.controls.push_back({x, y});
        instances.push_back({repetitions(), [&, x, y, f, g, w, xf, yf] {
            const auto source = allocate(record_size, x);
            const auto [r1, r2] = reg_pair();
            constant(r1, source, f, w, x);
            constant(r1, source, g, 8, x);
            const auto target = allocate(record_size, y);
            machine.load(r1, handles[source] + f, w, y);
            machine.compute(r2, {r1}, machine.value(r1) ^ 0x5a);
            truth.graph.add({xf, copy_node::consumer(), w});
            machine.store(r2, handles[target] + f, w, y);
            machine.load(r1, handles[source] + g, 8, y);
            machine.set(r1, 7);
            machine.store(r1, handles[target] + g, 8, y);
            release(source);
            machine.load(r2, handles[target] + f, w, y);
            machine.consume({r2, r1});
            truth.graph.add({yf, copy_node::consumer(), w});
            keep(target);
        }});
    }

    for (std::uint32_t i = 0; i < config.references; ++i) {
        const context_id q = new_site(), e = new_site();
        const std::uint64_t slots = 16;
        const allocation_shape shape = synthetic_shape("Object[]", 8 * slots);
        const auto container = allocate(8 * slots, q, shape);
        const copy_node qe = copy_node::field(q, copy_node::elements);
        instances.push_back({repetitions(), [&, q, e, slots, container, qe] {
            const auto [r1, r2] = reg_pair();
            const auto element = allocate(record_size, e, {}, r1);
            const std::uint64_t slot = 8 * rng.below(slots);
            machine.store(r1, handles[container] + slot, 8, q);
            truth.graph.add({copy_node::allocation(e), qe, 8});
            machine.load(r2, handles[container] + slot, 8, q);
            machine.consume({r2});
            truth.graph.add({qe, copy_node::consumer(), 8});
            keep(element);
        }});
    }

    // Interleave the repetitions of all instances at random, as threads of one program would.
    std::uint64_t left = 0, done = 0;
    for (const auto& in : instances) left += in.repetitions_left;
    for (; left > 0; --left) {
        std::uint64_t pick = rng.below(left);
        std::size_t which = 0;
        while (pick >= instances[which].repetitions_left) pick -= instances[which++].repetitions_left;
        --instances[which].repetitions_left;
        instances[which].repeat();
        if (config.collect_every > 0 && ++done % config.collect_every == 0) collect();
    }
    return truth;
}

} // namespace ojx::emulation
