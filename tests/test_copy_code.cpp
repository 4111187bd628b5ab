// The code that made copy edges (copy_code.hpp, copy_code_slots.hpp): a handler's fixed slots keep the first
// contexts of an edge exactly and count the rest, and samples with no context, as "other", so an edge's code always
// sums to the samples it was given; the edge table keeps that per edge beside the edge's own sums; and the code of
// parts of a run merges exactly, in any order and grouping.
#include "ojx/copy_code.hpp"
#include "ojx/copy_code_slots.hpp"
#include "ojx/copy_edge_table.hpp"
#include "ojx/random.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <map>
#include <vector>

using namespace ojx;

namespace {

copy_edge edge_to(std::uint64_t offset) {
    return {copy_node::field(1, copy_node::elements), copy_node::field(2, offset), 8};
}

copy_code random_code(std::uint64_t seed) {
    fast_random rng(seed);
    copy_code code;
    for (int i = 0; i < 200; ++i) {
        edge_code one;
        if (rng.below(4) != 0) one.contexts[static_cast<context_id>(rng.below(6))] = 1 + rng.below(5);
        else one.other = 1 + rng.below(3);
        code.add(edge_to(rng.below(5) * 8), one);
    }
    return code;
}

} // namespace

TEST_CASE("an edge's slots keep its first contexts exactly and count the rest as other, so the sums stay exact") {
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
        fast_random rng(seed);
        copy_code_slots slots;
        std::map<context_id, std::uint64_t> truth;
        std::vector<context_id> first_seen;
        std::uint64_t unknown = 0, added = 0;
        for (int i = 0; i < 500; ++i) {
            const bool none = rng.below(10) == 0;
            const context_id context = none ? no_context : static_cast<context_id>(100 + rng.below(3 + seed % 8));
            slots.add(context);
            ++added;
            if (none) {
                ++unknown;
                continue;
            }
            if (++truth[context] == 1) first_seen.push_back(context);
        }
        const edge_code code = slots.code();
        CHECK(code.samples() == added);
        CHECK(code.contexts.size() == std::min(first_seen.size(), copy_code_slots::kept));
        std::uint64_t kept = 0;
        for (std::size_t i = 0; i < first_seen.size() && i < copy_code_slots::kept; ++i) {
            REQUIRE(code.contexts.contains(first_seen[i]));
            CHECK(code.contexts.at(first_seen[i]) == truth.at(first_seen[i]));
            kept += truth.at(first_seen[i]);
        }
        CHECK(code.other == added - kept);
        CHECK(code.other >= unknown);
    }
}

TEST_CASE("more contexts than an edge keeps: the fifth and later go to other") {
    copy_code_slots slots;
    for (context_id c = 0; c < 7; ++c)
        for (context_id n = 0; n <= c; ++n) slots.add(c); // context c sampled c + 1 times
    const edge_code code = slots.code();
    CHECK(code.contexts == std::map<context_id, std::uint64_t>{{0, 1}, {1, 2}, {2, 3}, {3, 4}});
    CHECK(code.other == 5 + 6 + 7);
    CHECK(code.samples() == 28);
}

TEST_CASE("the edge table counts each kept edge's samples in its code once, with their contexts") {
    fast_random rng(7);
    copy_edge_table table(4);
    std::map<copy_edge, std::uint64_t> samples;
    for (int i = 0; i < 3000; ++i) {
        const copy_edge edge = edge_to(rng.below(6) * 8); // six edges, four kept
        const context_id context = rng.below(8) == 0 ? no_context : static_cast<context_id>(rng.below(9));
        if (table.add(edge, 1 + rng.below(4), context)) ++samples[edge];
    }
    const copy_code code = table.code();
    const sampled_copy_graph graph = table.graph();
    REQUIRE(code.edges().size() == 4);
    for (const auto& [edge, volume] : graph.edges()) {
        CHECK(volume.samples == samples.at(edge));
        CHECK(code.of(edge).samples() == volume.samples);
        CHECK(code.of(edge).contexts.size() == copy_code_slots::kept);
        CHECK(code.of(edge).other > 0);
    }
    CHECK(code.of(edge_to(999)).empty());
}

TEST_CASE("code merges exactly, in either order and any grouping") {
    const copy_code a = random_code(1), b = random_code(2), c = random_code(3);
    copy_code ab = a, ba = b;
    ab.merge(b);
    ba.merge(a);
    CHECK(ab == ba);
    copy_code ab_c = ab, bc = b, a_bc = a;
    ab_c.merge(c);
    bc.merge(c);
    a_bc.merge(bc);
    CHECK(ab_c == a_bc);
    for (const auto& [edge, merged] : ab_c.edges()) {
        CHECK(merged.samples() == a.of(edge).samples() + b.of(edge).samples() + c.of(edge).samples());
        CHECK(merged.other == a.of(edge).other + b.of(edge).other + c.of(edge).other);
        for (const auto& [context, samples] : merged.contexts) {
            const auto in = [&](const copy_code& part) {
                const auto it = part.of(edge).contexts.find(context);
                return it == part.of(edge).contexts.end() ? std::uint64_t{0} : it->second;
            };
            CHECK(samples == in(a) + in(b) + in(c));
        }
    }
    copy_code with_empty = a;
    with_empty.add(edge_to(8), edge_code{});
    with_empty.merge(copy_code{});
    CHECK(with_empty == a);
}
