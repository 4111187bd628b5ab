// The per-thread memo of allocation stacks: a hit is the node the tree walk returns, never a near miss.
#include "ojx/calling_context_tree.hpp"
#include "ojx/context_path_cache.hpp"
#include "ojx/random.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

using namespace ojx;

TEST_CASE("a remembered stack is found; other stacks, prefixes and extensions are not") {
    context_path_cache<8, 4> cache;
    const std::vector<std::uint64_t> stack{0x401000, 0x402000, 0x403000};
    CHECK(cache.find(stack) == no_context);
    cache.remember(stack, 17);
    CHECK(cache.find(stack) == 17);
    const std::vector<std::uint64_t> prefix{0x401000, 0x402000};
    const std::vector<std::uint64_t> extended{0x401000, 0x402000, 0x403000, 0x404000};
    const std::vector<std::uint64_t> other_leaf{0x401001, 0x402000, 0x403000};
    CHECK(cache.find(prefix) == no_context);
    CHECK(cache.find(extended) == no_context);
    CHECK(cache.find(other_leaf) == no_context);
}

TEST_CASE("stacks deeper than the memo holds, and no_context, are not remembered") {
    context_path_cache<2, 2> cache;
    const std::vector<std::uint64_t> deep{1, 2, 3};
    cache.remember(deep, 5);
    CHECK(cache.find(deep) == no_context);
    const std::vector<std::uint64_t> stack{1, 2};
    cache.remember(stack, no_context);
    CHECK(cache.find(stack) == no_context);
}

TEST_CASE("a set keeps two stacks and replaces the one used less recently") {
    context_path_cache<4, 2> cache; // one set of two ways: every stack competes for it
    const std::vector<std::uint64_t> a{1, 2}, b{3, 4}, c{5, 6};
    cache.remember(a, 1);
    cache.remember(b, 2);
    CHECK(cache.find(a) == 1); // a is now the more recent
    CHECK(cache.find(b) == 2); // and now b
    CHECK(cache.find(a) == 1);
    cache.remember(c, 3); // replaces b, used less recently than a
    CHECK(cache.find(a) == 1);
    CHECK(cache.find(b) == no_context);
    CHECK(cache.find(c) == 3);
}

TEST_CASE("every hit is the node the tree walk gives, over many seeded stack mixes") {
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
        fast_random random(seed);
        // 40 distinct stacks sharing prefixes (a few call sites at each level), more than the memo holds.
        std::vector<std::vector<std::uint64_t>> stacks(40);
        for (auto& stack : stacks) {
            stack.resize(1 + random() % 12);
            for (std::size_t i = 0; i < stack.size(); ++i) stack[i] = 0x400000 + 16 * (random() % 3) + i;
        }
        calling_context_tree<> tree(4096);
        context_path_cache<16, 8> cache;
        const auto walk = [&](const std::vector<std::uint64_t>& leaf_first) {
            std::vector<std::uint64_t> root_first(leaf_first.rbegin(), leaf_first.rend());
            return tree.insert_path(root_first);
        };
        std::size_t hits = 0;
        for (int i = 0; i < 2000; ++i) {
            // Mostly a few hot stacks, as a program's allocations are, now and then any of them.
            const auto& stack = stacks[random() % 4 == 0 ? random() % stacks.size() : random() % 3];
            const context_id remembered = cache.find(stack);
            const context_id walked = walk(stack);
            if (remembered != no_context) {
                ++hits;
                REQUIRE(remembered == walked);
            } else {
                cache.remember(stack, walked);
            }
        }
        CHECK(hits > 1000); // the hot stacks stay remembered
    }
}
