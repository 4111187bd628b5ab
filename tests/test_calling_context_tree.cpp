// Tests of the calling context tree: structure and stable ids, capacity and overflow, merge algebra, per-thread
// trees merged at the end, a concurrent reader (run under ThreadSanitizer too) and the binary format, including
// every kind of corrupt input.
#include "ojx/calling_context_tree.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

using ojx::context_id;
using ojx::frame;
using ojx::no_context;

struct counts {
    std::uint64_t samples = 0;
    std::uint64_t bytes = 0;

    counts& operator+=(const counts& other) {
        samples += other.samples;
        bytes += other.bytes;
        return *this;
    }
    friend bool operator==(const counts&, const counts&) = default;
};

using tree = ojx::calling_context_tree<counts>;
using path_t = std::vector<frame>;

static_assert(ojx::cct_metrics<counts>);
static_assert(ojx::cct_metrics<ojx::no_metrics>);
static_assert(!ojx::cct_metrics<std::string>); // not trivially copyable
static_assert(!ojx::cct_metrics<int*>);        // no +=  with another pointer
static_assert(!std::is_copy_constructible_v<tree> && !std::is_copy_assignable_v<tree>);
static_assert(std::is_nothrow_move_constructible_v<tree> && std::is_nothrow_move_assignable_v<tree>);

// Every node's path (root first) and metrics. Paths are unique in a tree, so this is the tree's whole content.
std::map<path_t, counts> contents(const tree& t) {
    std::map<path_t, counts> out;
    for (context_id id = 0; id < t.size(); ++id) {
        const bool fresh = out.emplace(t.path_from_root(id), t.metrics(id)).second;
        REQUIRE(fresh);
    }
    return out;
}

// Structural invariants that must hold for every tree: parents precede children, depths add up, every node is
// findable by (parent, frame) and appears exactly once among its parent's children.
void check_structure(const tree& t) {
    REQUIRE(t.size() >= 1);
    REQUIRE(t.parent(tree::root) == no_context);
    REQUIRE(t.depth(tree::root) == 0);
    std::size_t links = 0;
    for (context_id id = 0; id < t.size(); ++id) {
        std::set<context_id> kids;
        t.for_each_child(id, [&](context_id c) {
            REQUIRE(t.parent(c) == id);
            REQUIRE(kids.insert(c).second);
        });
        links += kids.size();
        if (id == tree::root) continue;
        const context_id up = t.parent(id);
        REQUIRE(up < id);
        REQUIRE(t.depth(id) == t.depth(up) + 1);
        REQUIRE(t.find_child(up, t.frame_of(id)) == std::optional<context_id>(id));
        REQUIRE(t.find_path(t.path_from_root(id)) == std::optional<context_id>(id));
    }
    REQUIRE(links == t.size() - 1);
}

struct weighted_path {
    path_t frames;
    counts add;
};

// Random paths over a small alphabet and bounded depth, so that they share many prefixes.
std::vector<weighted_path> random_paths(std::uint64_t seed, std::size_t n, frame alphabet = 6,
                                        std::size_t max_depth = 7) {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<std::size_t> depth(0, max_depth);
    std::uniform_int_distribution<frame> symbol(1, alphabet);
    std::uniform_int_distribution<std::uint64_t> size(1, 4096);
    std::vector<weighted_path> out(n);
    for (auto& p : out) {
        p.frames.resize(depth(rng));
        for (auto& f : p.frames) f = symbol(rng) * 0x1000 + 0x400000; // look like return addresses
        p.add = counts{1, size(rng)};
    }
    return out;
}

void insert_all(tree& t, const std::vector<weighted_path>& paths) {
    for (const auto& p : paths) {
        const context_id id = t.insert_path(p.frames);
        REQUIRE(id != no_context);
        t.metrics(id) += p.add;
    }
}

std::string bytes_of(const tree& t) {
    std::ostringstream out;
    t.serialize(out);
    REQUIRE(out.good());
    return out.str();
}

tree::deserialize_result read_back(const std::string& bytes, std::size_t capacity) {
    std::istringstream in(bytes);
    return tree::deserialize(in, capacity);
}

void put_u32(std::string& bytes, std::size_t offset, std::uint32_t value) {
    for (std::size_t i = 0; i < 4; ++i) bytes.at(offset + i) = static_cast<char>((value >> (8 * i)) & 0xFF);
}
void put_u64(std::string& bytes, std::size_t offset, std::uint64_t value) {
    for (std::size_t i = 0; i < 8; ++i) bytes.at(offset + i) = static_cast<char>((value >> (8 * i)) & 0xFF);
}
std::size_t node_offset(context_id id) { return tree::serialized_header_size + id * tree::serialized_node_size; }

} // namespace

TEST_CASE("shared prefixes share nodes; parent, depth and path of every node", "[cct]") {
    tree t(64);
    REQUIRE(t.size() == 1);
    REQUIRE(t.capacity() == 64);
    REQUIRE(t.insert_path(path_t{}) == tree::root);

    const path_t p123{1, 2, 3}, p124{1, 2, 4}, p15{1, 5}, p6{6};
    const context_id a = t.insert_path(p123);
    const context_id b = t.insert_path(p124);
    const context_id c = t.insert_path(p15);
    const context_id d = t.insert_path(p6);
    // root, 1, 1/2, 1/2/3, 1/2/4, 1/5, 6
    REQUIRE(t.size() == 7);
    REQUIRE(a == 3);
    REQUIRE(b == 4);
    REQUIRE(c == 5);
    REQUIRE(d == 6);

    const context_id n1 = *t.find_path(path_t{1});
    const context_id n12 = *t.find_path(path_t{1, 2});
    REQUIRE(n1 == 1);
    REQUIRE(n12 == 2);
    REQUIRE(t.parent(n1) == tree::root);
    REQUIRE(t.parent(n12) == n1);
    REQUIRE(t.parent(a) == n12);
    REQUIRE(t.parent(b) == n12);
    REQUIRE(t.parent(c) == n1);
    REQUIRE(t.parent(d) == tree::root);
    REQUIRE(t.depth(tree::root) == 0);
    REQUIRE(t.depth(n1) == 1);
    REQUIRE(t.depth(n12) == 2);
    REQUIRE(t.depth(a) == 3);
    REQUIRE(t.depth(b) == 3);
    REQUIRE(t.depth(c) == 2);
    REQUIRE(t.depth(d) == 1);
    REQUIRE(t.frame_of(a) == 3);
    REQUIRE(t.frame_of(b) == 4);
    REQUIRE(t.frame_of(tree::root) == 0);
    REQUIRE(t.path_from_root(a) == p123);
    REQUIRE(t.path_from_root(b) == p124);
    REQUIRE(t.path_from_root(c) == p15);
    REQUIRE(t.path_from_root(d) == p6);
    REQUIRE(t.path_from_root(tree::root).empty());

    // Same path twice: same id, nothing new.
    REQUIRE(t.insert_path(p123) == a);
    REQUIRE(t.insert_path(p15) == c);
    REQUIRE(t.child(n12, 4) == b);
    REQUIRE(t.size() == 7);

    // Lookups never insert.
    REQUIRE_FALSE(t.find_path(path_t{1, 2, 9}).has_value());
    REQUIRE_FALSE(t.find_path(path_t{7}).has_value());
    REQUIRE_FALSE(t.find_child(n1, 3).has_value());
    REQUIRE_FALSE(t.find_child(no_context, 1).has_value());
    REQUIRE(t.find_path(path_t{}) == std::optional<context_id>(tree::root));
    REQUIRE(t.size() == 7);

    // Insertion below a given node.
    const path_t tail{7, 8};
    const context_id e = t.insert_path(c, tail);
    REQUIRE(t.path_from_root(e) == path_t{1, 5, 7, 8});
    REQUIRE(t.insert_path(path_t{1, 5, 7, 8}) == e);
    REQUIRE(t.overflow_count() == 0);
    check_structure(t);
}

TEST_CASE("frames are opaque: 0 and all-ones are ordinary frames", "[cct]") {
    tree t(8);
    const context_id z = t.child(tree::root, 0);
    const context_id m = t.child(z, ~frame{0});
    REQUIRE(z != tree::root);
    REQUIRE(z != no_context);
    REQUIRE(t.path_from_root(m) == path_t{0, ~frame{0}});
    REQUIRE(t.child(tree::root, 0) == z);
    check_structure(t);
}

TEST_CASE("path() writes leaf first and truncates to the span", "[cct]") {
    tree t(16);
    const context_id leaf = t.insert_path(path_t{10, 20, 30, 40});
    std::array<frame, 8> buf{};
    REQUIRE(t.path(leaf, buf) == 4);
    REQUIRE(std::vector<frame>(buf.begin(), buf.begin() + 4) == path_t{40, 30, 20, 10});

    buf.fill(0);
    REQUIRE(t.path(leaf, std::span<frame>(buf.data(), 2)) == 2);
    REQUIRE(buf[0] == 40);
    REQUIRE(buf[1] == 30);
    REQUIRE(buf[2] == 0); // nothing written past the span

    REQUIRE(t.path(leaf, std::span<frame>()) == 0);
    REQUIRE(t.path(tree::root, buf) == 0);
}

TEST_CASE("children iteration visits exactly the children", "[cct]") {
    tree t(32);
    std::set<context_id> expected;
    for (frame f = 1; f <= 5; ++f) expected.insert(t.insert_path(path_t{100, f}));
    t.insert_path(path_t{100, 3, 9}); // a grandchild is not a child
    t.insert_path(path_t{200});
    const context_id parent = *t.find_path(path_t{100});

    std::vector<context_id> seen;
    t.for_each_child(parent, [&](context_id c) { seen.push_back(c); });
    REQUIRE(std::set<context_id>(seen.begin(), seen.end()) == expected);
    REQUIRE(seen.size() == expected.size());
    // Most recently inserted first.
    REQUIRE(std::is_sorted(seen.rbegin(), seen.rend()));

    std::vector<context_id> manual;
    for (context_id c = t.first_child(parent); c != no_context; c = t.next_sibling(c)) manual.push_back(c);
    REQUIRE(manual == seen);

    const context_id leaf = *t.find_path(path_t{200});
    REQUIRE(t.first_child(leaf) == no_context);
    std::size_t root_children = 0;
    t.for_each_child(tree::root, [&](context_id) { ++root_children; });
    REQUIRE(root_children == 2);
}

TEST_CASE("ids are stable after further insertions and after merges into the tree", "[cct]") {
    const auto first = random_paths(11, 200);
    tree t(1 << 14);
    insert_all(t, first);
    std::map<path_t, context_id> ids;
    for (context_id id = 0; id < t.size(); ++id) ids[t.path_from_root(id)] = id;
    const std::size_t before = t.size();

    insert_all(t, random_paths(12, 300, 9, 9));
    REQUIRE(t.size() > before);

    tree other(1 << 14);
    insert_all(other, random_paths(13, 300, 12, 8));
    const auto remap = t.merge(other);
    REQUIRE(remap.size() == other.size());
    REQUIRE(t.size() > before);

    for (const auto& [p, id] : ids) {
        REQUIRE(t.path_from_root(id) == p);
        REQUIRE(t.find_path(p) == std::optional<context_id>(id));
        REQUIRE(t.insert_path(p) == id);
    }
    check_structure(t);
}

TEST_CASE("a full tree refuses new nodes, counts the overflow, and keeps existing ids", "[cct]") {
    tree t(5); // root + 4
    const path_t deep{1, 2, 3, 4, 5, 6};
    REQUIRE(t.insert_path(deep) == no_context);
    REQUIRE(t.size() == 5);
    REQUIRE(t.overflow_count() == 1); // the path stops at the first refusal

    // Existing nodes are still found, by lookup and by insertion, without counting overflow.
    const path_t four{1, 2, 3, 4};
    const context_id id4 = *t.find_path(four);
    REQUIRE(id4 == 4);
    REQUIRE(t.insert_path(four) == id4);
    REQUIRE(t.child(*t.find_path(path_t{1, 2}), 3) == 3);
    REQUIRE(t.path_from_root(id4) == four);
    REQUIRE(t.overflow_count() == 1);

    REQUIRE(t.child(tree::root, 99) == no_context);
    REQUIRE(t.overflow_count() == 2);
    REQUIRE_FALSE(t.find_path(path_t{1, 2, 3, 4, 5}).has_value());

    // A no_context parent propagates without counting: the refusal was counted where it happened.
    REQUIRE(t.child(no_context, 7) == no_context);
    REQUIRE(t.insert_path(no_context, four) == no_context);
    REQUIRE(t.overflow_count() == 2);

    t.metrics(id4) += counts{3, 30};
    REQUIRE(t.metrics(id4) == counts{3, 30});
    check_structure(t);

    tree only_root(1);
    REQUIRE(only_root.child(tree::root, 1) == no_context);
    REQUIRE(only_root.overflow_count() == 1);
    REQUIRE(only_root.insert_path(path_t{}) == tree::root);

    REQUIRE_THROWS_AS(tree(0), std::invalid_argument);
}

TEST_CASE("merge yields the union of paths with summed metrics", "[cct][merge]") {
    tree a(64), b(64);
    const std::vector<weighted_path> in_a{{{1, 2}, {1, 10}}, {{1, 3}, {2, 20}}, {{4}, {1, 1}}, {{}, {5, 0}}};
    const std::vector<weighted_path> in_b{{{1, 2}, {7, 70}}, {{1, 2, 9}, {1, 5}}, {{8}, {2, 2}}, {{}, {1, 0}}};
    insert_all(a, in_a);
    insert_all(b, in_b);

    std::map<path_t, counts> expected{
        {{}, {6, 0}},        {{1}, {0, 0}},    {{1, 2}, {8, 80}}, {{1, 3}, {2, 20}},
        {{1, 2, 9}, {1, 5}}, {{4}, {1, 1}},    {{8}, {2, 2}},
    };

    tree ab = a.clone();
    const auto remap_b = ab.merge(b);
    REQUIRE(contents(ab) == expected);
    REQUIRE(ab.size() == expected.size());
    for (context_id id = 0; id < b.size(); ++id) REQUIRE(ab.path_from_root(remap_b[id]) == b.path_from_root(id));

    tree ba = b.clone();
    const auto remap_a = ba.merge(a);
    REQUIRE(contents(ba) == expected);
    for (context_id id = 0; id < a.size(); ++id) REQUIRE(ba.path_from_root(remap_a[id]) == a.path_from_root(id));

    // The sources are untouched.
    REQUIRE(a.metrics(*a.find_path(path_t{1, 2})) == counts{1, 10});
    REQUIRE(b.size() == 5);
    check_structure(ab);
    check_structure(ba);
}

TEST_CASE("A+B and B+A hold the same paths and metrics (random trees)", "[cct][merge]") {
    tree a(8192), b(8192);
    insert_all(a, random_paths(21, 1000));
    insert_all(b, random_paths(22, 1000, 8, 6));
    tree ab = a.clone();
    ab.merge(b);
    tree ba = b.clone();
    ba.merge(a);
    REQUIRE(contents(ab) == contents(ba));
    REQUIRE(ab.size() == ba.size());
    check_structure(ab);
}

TEST_CASE("merge into an empty tree reproduces the source, ids included", "[cct][merge]") {
    tree source(4096);
    insert_all(source, random_paths(31, 500));
    tree target(4096);
    const auto remap = target.merge(source);
    REQUIRE(target.size() == source.size());
    for (context_id id = 0; id < source.size(); ++id) {
        REQUIRE(remap[id] == id);
        REQUIRE(target.parent(id) == source.parent(id));
        REQUIRE(target.frame_of(id) == source.frame_of(id));
        REQUIRE(target.metrics(id) == source.metrics(id));
    }
    REQUIRE(contents(target) == contents(source));
    REQUIRE(target.overflow_count() == 0);

    // clone() is the same thing, plus the overflow count.
    tree small(3);
    small.insert_path(path_t{1, 2, 3});
    const tree copy = small.clone();
    REQUIRE(copy.overflow_count() == 1);
    REQUIRE(copy.capacity() == 3);
    REQUIRE(contents(copy) == contents(small));
}

TEST_CASE("merging the two halves of a split equals building from the whole", "[cct][merge]") {
    const auto all = random_paths(41, 3000, 7, 8);
    std::mt19937_64 rng(42);
    std::vector<weighted_path> left, right;
    for (const auto& p : all) (rng() % 2 ? left : right).push_back(p);
    REQUIRE(!left.empty());
    REQUIRE(!right.empty());

    tree whole(1 << 16), l(1 << 16), r(1 << 16), merged(1 << 16);
    insert_all(whole, all);
    insert_all(l, left);
    insert_all(r, right);
    merged.merge(l);
    merged.merge(r);
    REQUIRE(merged.size() == whole.size());
    REQUIRE(contents(merged) == contents(whole));

    // Merging a half into the other half gives the same.
    l.merge(r);
    REQUIRE(contents(l) == contents(whole));
    check_structure(merged);
}

TEST_CASE("merge into a tree that fills up drops whole subtrees and counts them", "[cct][merge]") {
    tree source(64);
    source.metrics(tree::root) += counts{1, 1};
    const context_id s1 = source.insert_path(path_t{1});
    const context_id s12 = source.insert_path(path_t{1, 2});
    const context_id s123 = source.insert_path(path_t{1, 2, 3});
    const context_id s4 = source.insert_path(path_t{4});
    for (context_id id : {s1, s12, s123, s4}) source.metrics(id) += counts{id, 100u * id};

    tree target(3); // root + 2 nodes
    const context_id t9 = target.insert_path(path_t{9});
    target.metrics(t9) += counts{9, 9};
    const auto remap = target.merge(source);

    REQUIRE(remap.size() == source.size());
    REQUIRE(remap[tree::root] == tree::root);
    REQUIRE(remap[s1] != no_context); // the one free slot goes to the first node in id order
    REQUIRE(remap[s12] == no_context);
    REQUIRE(remap[s123] == no_context); // below a dropped node
    REQUIRE(remap[s4] == no_context);
    REQUIRE(target.overflow_count() == 3);
    REQUIRE(target.size() == 3);
    REQUIRE(target.path_from_root(remap[s1]) == path_t{1});
    REQUIRE(target.metrics(remap[s1]) == source.metrics(s1));
    REQUIRE(target.metrics(tree::root) == counts{1, 1});
    REQUIRE(target.metrics(t9) == counts{9, 9});
    REQUIRE(target.path_from_root(t9) == path_t{9});
}

TEST_CASE("per-thread trees merged at the end equal a single-threaded build", "[cct][threads]") {
    constexpr std::size_t threads = 4;
    std::vector<std::vector<weighted_path>> work;
    for (std::size_t i = 0; i < threads; ++i) work.push_back(random_paths(1000 + i, 2000, 6, 7));

    std::vector<tree> trees;
    for (std::size_t i = 0; i < threads; ++i) trees.emplace_back(1 << 15);
    std::vector<std::size_t> failures(threads, 0);
    std::vector<std::thread> pool;
    for (std::size_t i = 0; i < threads; ++i) {
        pool.emplace_back([&, i] {
            for (const auto& p : work[i]) {
                const context_id id = trees[i].insert_path(p.frames);
                if (id == no_context) {
                    ++failures[i];
                    continue;
                }
                trees[i].metrics(id) += p.add;
            }
        });
    }
    for (auto& th : pool) th.join();
    for (std::size_t i = 0; i < threads; ++i) REQUIRE(failures[i] == 0);

    tree merged(1 << 16);
    for (const auto& t : trees) merged.merge(t);

    tree single(1 << 16);
    for (const auto& w : work) insert_all(single, w);
    REQUIRE(merged.size() == single.size());
    REQUIRE(contents(merged) == contents(single));
    REQUIRE(merged.overflow_count() == 0);
    check_structure(merged);
}

TEST_CASE("a reader walking published nodes while the owner inserts sees a consistent tree", "[cct][threads]") {
    const auto work = random_paths(77, 6000, 10, 9);
    tree t(1 << 16);
    std::atomic<bool> started{false}, done{false};
    std::atomic<std::uint64_t> bad{0}; // Catch2 assertions are not thread-safe: count, check after join
    std::uint64_t walks = 0, full_walks = 0, nodes_seen = 0;

    std::thread reader([&] {
        std::array<frame, 64> leaf_first{};
        std::uint64_t local_bad = 0;
        // Most walks check only the newest nodes (where a publication race would show); every 32nd, and the
        // last, checks everything.
        const auto walk = [&](bool full) {
            const std::size_t n = t.size();
            const std::size_t from = full || n <= 257 ? 1 : n - 256; // never the root (id 0): it has no parent
            for (auto id = static_cast<context_id>(from); id < n; ++id) {
                const context_id up = t.parent(id);
                if (up >= id) ++local_bad;
                if (t.depth(id) != t.depth(up) + 1) ++local_bad;
                if (t.find_child(up, t.frame_of(id)) != std::optional<context_id>(id)) ++local_bad;
                // The path read leaf first leads back to the node.
                const std::size_t len = t.path(id, leaf_first);
                if (len != t.depth(id) || leaf_first[0] != t.frame_of(id)) ++local_bad;
                std::reverse(leaf_first.begin(), leaf_first.begin() + static_cast<std::ptrdiff_t>(len));
                if (t.find_path(std::span<const frame>(leaf_first.data(), len)) != std::optional<context_id>(id))
                    ++local_bad;
            }
            if (!full) return;
            // Top-down through the child links: every child names its parent and has a consistent depth.
            std::vector<context_id> stack{tree::root};
            while (!stack.empty()) {
                const context_id at = stack.back();
                stack.pop_back();
                t.for_each_child(at, [&](context_id c) {
                    if (c >= t.capacity() || t.parent(c) != at || t.depth(c) != t.depth(at) + 1) ++local_bad;
                    stack.push_back(c);
                });
            }
            nodes_seen += n;
            ++full_walks;
        };
        started.store(true, std::memory_order_release);
        for (std::uint64_t i = 1; !done.load(std::memory_order_acquire); ++i, ++walks) walk(i % 32 == 0);
        walk(true); // once more over the final tree
        bad.store(local_bad, std::memory_order_relaxed);
    });

    while (!started.load(std::memory_order_acquire)) std::this_thread::yield();
    std::uint64_t refused = 0;
    for (std::size_t i = 0; i < work.size(); ++i) {
        const context_id id = t.insert_path(work[i].frames);
        if (id == no_context) {
            ++refused;
            continue;
        }
        t.metrics(id) += work[i].add; // owner data: the reader never touches metrics
        if (i % 64 == 0) std::this_thread::yield(); // let the reader interleave, also on few cores
    }
    done.store(true, std::memory_order_release);
    reader.join();

    INFO("reader walks during insertion: " << walks);
    REQUIRE(refused == 0);
    REQUIRE(bad.load() == 0);
    REQUIRE(full_walks >= 1);
    REQUIRE(nodes_seen >= t.size() - 1);
    check_structure(t);
}

TEST_CASE("serialization round trip keeps structure, ids, metrics and overflow", "[cct][serialize]") {
    tree t(2048);
    insert_all(t, random_paths(51, 800));
    t.metrics(tree::root) += counts{2, 3};
    tree tiny(2);
    tiny.insert_path(path_t{1, 2}); // one overflow in tiny
    t.merge(tiny);                  // adds node 1 to t, not tiny's overflow
    const std::string bytes = bytes_of(t);
    REQUIRE(bytes.size() == tree::serialized_header_size + t.size() * tree::serialized_node_size);
    REQUIRE(bytes.substr(0, 6) == "OJXCCT");

    auto back = read_back(bytes, 4096);
    REQUIRE(back);
    REQUIRE(back.error == ojx::cct_error::none);
    REQUIRE(back.message.empty());
    tree& u = *back.tree;
    REQUIRE(u.capacity() == 4096);
    REQUIRE(u.size() == t.size());
    REQUIRE(u.overflow_count() == t.overflow_count());
    for (context_id id = 0; id < t.size(); ++id) {
        REQUIRE(u.parent(id) == t.parent(id));
        REQUIRE(u.frame_of(id) == t.frame_of(id));
        REQUIRE(u.depth(id) == t.depth(id));
        REQUIRE(u.metrics(id) == t.metrics(id));
    }
    REQUIRE(contents(u) == contents(t));
    check_structure(u);
    REQUIRE(bytes_of(u) == bytes); // byte-for-byte stable

    // The result is a live tree: insertion continues after the last id.
    const context_id fresh = u.insert_path(path_t{0xdead, 0xbeef});
    REQUIRE(fresh == t.size() + 1);

    // Exactly full is fine; two trees back to back in one stream are read one after the other.
    REQUIRE(read_back(bytes, t.size()));
    std::istringstream two(bytes + bytes_of(tiny));
    auto first = tree::deserialize(two, t.size());
    auto second = tree::deserialize(two, 2);
    REQUIRE(first);
    REQUIRE(second);
    REQUIRE(contents(*second.tree) == contents(tiny));
    REQUIRE(second.tree->overflow_count() == 1);
}

TEST_CASE("a tree without metrics round-trips", "[cct][serialize]") {
    using plain = ojx::calling_context_tree<>;
    plain t(16);
    const context_id id = t.insert_path(path_t{5, 6, 7});
    std::stringstream io;
    t.serialize(io);
    REQUIRE(io.str().size() == plain::serialized_header_size + 4 * plain::serialized_node_size);
    auto back = plain::deserialize(io, 16);
    REQUIRE(back);
    REQUIRE(back.tree->path_from_root(id) == path_t{5, 6, 7});
    REQUIRE(back.tree->size() == 4);
}

TEST_CASE("every truncation of a serialized tree is reported as truncated", "[cct][serialize]") {
    tree t(64);
    insert_all(t, random_paths(61, 20, 4, 4));
    const std::string bytes = bytes_of(t);
    for (std::size_t len = 0; len < bytes.size(); ++len) {
        INFO("length " << len << " of " << bytes.size());
        auto r = read_back(bytes.substr(0, len), 64);
        REQUIRE_FALSE(r);
        REQUIRE_FALSE(r.tree.has_value());
        REQUIRE(r.error == ojx::cct_error::truncated);
        REQUIRE(r.message.find("truncated") != std::string::npos);
    }
    REQUIRE(read_back(bytes, 64));

    // Even with exceptions enabled on the stream, bad input comes back as a value.
    std::istringstream in(bytes.substr(0, bytes.size() - 1));
    in.exceptions(std::ios_base::failbit | std::ios_base::badbit | std::ios_base::eofbit);
    tree::deserialize_result r;
    REQUIRE_NOTHROW(r = tree::deserialize(in, 64));
    REQUIRE(r.error == ojx::cct_error::truncated);
}

TEST_CASE("corrupt headers and records give the specific error", "[cct][serialize]") {
    tree t(64);
    const context_id a = t.insert_path(path_t{1, 2});
    const context_id b = t.insert_path(path_t{1, 3});
    REQUIRE(a == 2);
    REQUIRE(b == 3);
    const std::string good = bytes_of(t);
    REQUIRE(read_back(good, 64));

    SECTION("bad magic") {
        for (std::size_t i = 0; i < 6; ++i) {
            std::string bytes = good;
            bytes[i] = static_cast<char>(bytes[i] ^ 0x20);
            const auto r = read_back(bytes, 64);
            REQUIRE_FALSE(r);
            REQUIRE(r.error == ojx::cct_error::bad_magic);
            REQUIRE(r.message.find("magic") != std::string::npos);
        }
        REQUIRE(read_back("not a tree at all, but long enough", 64).error == ojx::cct_error::bad_magic);
    }
    SECTION("unsupported version") {
        std::string bytes = good;
        put_u32(bytes, 6, tree::format_version + 1);
        const auto r = read_back(bytes, 64);
        REQUIRE_FALSE(r);
        REQUIRE(r.error == ojx::cct_error::unsupported_version);
        REQUIRE(r.message.find("version 2") != std::string::npos);
        put_u32(bytes, 6, 0);
        REQUIRE(read_back(bytes, 64).error == ojx::cct_error::unsupported_version);
    }
    SECTION("metrics of another size") {
        std::istringstream in(good);
        const auto r = ojx::calling_context_tree<ojx::no_metrics>::deserialize(in, 64);
        REQUIRE_FALSE(r);
        REQUIRE(r.error == ojx::cct_error::metrics_size_mismatch);
        REQUIRE(r.message.find("16") != std::string::npos);
    }
    SECTION("count larger than the capacity, zero, or an invalid capacity") {
        auto r = read_back(good, 3);
        REQUIRE_FALSE(r);
        REQUIRE(r.error == ojx::cct_error::too_many_nodes);
        REQUIRE(r.message.find("capacity") != std::string::npos);

        std::string huge = good;
        put_u32(huge, 22, 0xFFFF'FFFFu); // never trusted for allocation
        REQUIRE(read_back(huge, 64).error == ojx::cct_error::too_many_nodes);
        put_u32(huge, 22, 60); // within capacity, but the records are missing
        REQUIRE(read_back(huge, 64).error == ojx::cct_error::truncated);

        std::string empty = good;
        put_u32(empty, 22, 0);
        REQUIRE(read_back(empty, 64).error == ojx::cct_error::empty_tree);

        REQUIRE(read_back(good, 0).error == ojx::cct_error::invalid_capacity);
    }
    SECTION("a parent not less than the node id") {
        for (std::uint32_t parent : {a, a + 1, 0xFFFF'FFFEu, 0xFFFF'FFFFu}) {
            std::string bytes = good;
            put_u32(bytes, node_offset(a), parent);
            const auto r = read_back(bytes, 64);
            REQUIRE_FALSE(r);
            REQUIRE(r.error == ojx::cct_error::parent_not_before_child);
            REQUIRE(r.message.find("node 2") != std::string::npos);
        }
    }
    SECTION("a root with a parent") {
        std::string bytes = good;
        put_u32(bytes, node_offset(tree::root), 0);
        const auto r = read_back(bytes, 64);
        REQUIRE(r.error == ojx::cct_error::root_has_parent);
    }
    SECTION("a duplicate (parent, frame)") {
        std::string bytes = good;
        put_u64(bytes, node_offset(b) + 4, 2); // 1/3 becomes a second 1/2
        const auto r = read_back(bytes, 64);
        REQUIRE_FALSE(r);
        REQUIRE(r.error == ojx::cct_error::duplicate_child);
        REQUIRE(r.message.find("node 3 duplicates node 2") != std::string::npos);
    }
    SECTION("the root's frame is ignored") {
        std::string bytes = good;
        put_u64(bytes, node_offset(tree::root) + 4, 12345);
        const auto r = read_back(bytes, 64);
        REQUIRE(r);
        REQUIRE(r.tree->frame_of(tree::root) == 0);
    }
}

TEST_CASE("moving a tree keeps its ids; the moved-from tree is empty and inert", "[cct]") {
    tree t(16);
    const context_id id = t.insert_path(path_t{3, 4});
    t.metrics(id) += counts{1, 2};
    tree moved(std::move(t));
    REQUIRE(moved.path_from_root(id) == path_t{3, 4});
    REQUIRE(moved.metrics(id) == counts{1, 2});
    REQUIRE(moved.capacity() == 16);
    REQUIRE(t.size() == 0); // NOLINT(bugprone-use-after-move): the moved-from state is specified
    REQUIRE(t.capacity() == 0);
    REQUIRE(t.child(tree::root, 1) == no_context);
    REQUIRE_FALSE(t.find_path(path_t{3}).has_value());

    tree other(4);
    other = std::move(moved);
    REQUIRE(other.find_path(path_t{3, 4}) == std::optional<context_id>(id));
    REQUIRE(other.capacity() == 16);
    t = std::move(other); // a moved-from tree can be assigned to
    REQUIRE(t.metrics(id) == counts{1, 2});
}
