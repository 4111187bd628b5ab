// A compact calling context tree (CCT). Every allocation context and every access context in ojx is a node id in
// one of these trees: a path of frames, root first, is inserted and yields a node id, and per-node metrics are
// attached to that id. Frames are opaque 64-bit values (a JVM method id + bytecode index, a native return address,
// a synthetic id in tests); names are resolved only when a report is written, never here.
//
// Threading contract: one owner thread inserts; other threads may concurrently read nodes that were published;
// merge/serialize at a quiescent point or from a snapshot.
//  * Writes (child, insert_path, merge, and every write to metrics) come from the owner only, and from one
//    execution context at a time: if the owner inserts from a signal handler and also from ordinary code, the
//    ordinary code blocks the signal around its writes. Insertion never locks and never allocates: all storage
//    is preallocated by the constructor, so it may run inside a signal handler.
//  * A node is published once size() > id. A published node is fully linked (findable through find_child and
//    visible to child iteration), and its parent, frame and depth never change again. Any thread may read
//    parent/frame_of/depth/path/first_child/next_sibling/for_each_child/find_child/find_path/size/overflow_count
//    while the owner inserts. A reader that reaches a node through find_child or the child links may see it a
//    moment before size() covers it; such a node is already complete and safe to read.
//  * Metrics are owner-thread data and are not synchronized: other threads read them only at a quiescent point
//    (owner stopped, or signal blocked and a happens-before edge established), or from a clone() made there.
//    merge() reads the metrics of its argument, and serialize() of its own tree, so both need that quiescence.
//
// Node ids are stable: once assigned, an id names the same path in that tree forever (never renumbered, never
// reused), including after merges into the tree. Ids are assigned in insertion order, so parent(id) < id for every
// node but the root: walking ids 0, 1, 2, ... visits every parent before its children.
//
// Serialized format (version 1). All integers are little-endian, records are packed without padding:
//     offset 0   6 bytes  magic "OJXCCT"
//     offset 6   u32      format version (1)
//     offset 10  u32      sizeof(Metrics)
//     offset 14  u64      overflow count
//     offset 22  u32      node count N (>= 1, the root included)
//     offset 26  N node records, in id order, node_size = 12 + sizeof(Metrics) bytes each:
//                  u32    parent id (0xFFFFFFFF for the root, otherwise less than this node's id)
//                  u64    frame (0 for the root; ignored on reading)
//                  sizeof(Metrics) bytes: the object representation of Metrics, copied as raw bytes
// Metrics are raw bytes of the trivially copyable type, in the writing host's byte order, so a file is tied to
// the Metrics layout (same members, order, padding) and to the host's endianness; the recorded sizeof(Metrics) must
// match on reading, which catches most, but not all, layout changes. Prefer Metrics without padding bytes so that
// the output is deterministic. Deserialization reproduces the node ids of the serialized tree.
#pragma once

#include "ojx/types.hpp"
#include "ojx/zeroed_storage.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <istream>
#include <memory>
#include <new>
#include <optional>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace ojx {

// One frame of a calling context: opaque to the tree.
using frame = std::uint64_t;

// What a node may carry: zero-initialised by default, copied as raw bytes, summed by `+=` when trees merge.
template <class M>
concept cct_metrics = std::default_initializable<M> && std::is_trivially_copyable_v<M> && requires(M& a, const M& b) {
    a += b;
};

// Metrics for trees that need none.
struct no_metrics {
    constexpr no_metrics& operator+=(const no_metrics&) noexcept { return *this; }
    friend constexpr bool operator==(const no_metrics&, const no_metrics&) noexcept = default;
};

// Why deserialization failed.
enum class cct_error {
    none,
    invalid_capacity,        // the capacity asked for is 0 or larger than context ids can number
    bad_magic,               // the stream does not start with "OJXCCT"
    unsupported_version,     // a format version this code does not read
    metrics_size_mismatch,   // written with a Metrics of another size
    truncated,               // the stream ended (or failed) before the data did
    empty_tree,              // node count 0: not even a root
    too_many_nodes,          // node count larger than the capacity asked for
    root_has_parent,         // node 0 names a parent
    parent_not_before_child, // a node's parent id is not less than its own id
    duplicate_child,         // two nodes with the same (parent, frame)
};

// The outcome of deserialization: a tree, or an error kind with a message naming the problem.
template <class Tree>
struct cct_deserialize_result {
    std::optional<Tree> tree;
    cct_error error = cct_error::none;
    std::string message;

    explicit operator bool() const noexcept { return tree.has_value(); }
};

template <cct_metrics Metrics = no_metrics>
class calling_context_tree {
public:
    using metrics_type = Metrics;
    using deserialize_result = cct_deserialize_result<calling_context_tree>;

    static constexpr context_id root = 0;
    static constexpr std::uint32_t format_version = 1;
    static constexpr std::size_t serialized_header_size = 26;
    static constexpr std::size_t serialized_node_size = 12 + sizeof(Metrics);
    // Largest capacity: ids 0 .. capacity-1 must all differ from no_context.
    static constexpr std::size_t max_capacity = no_context;

    // Preallocates everything: `capacity` nodes (the root included) and hash tables that grow, by doubling, to at
    // least 2 * capacity slots. Throws std::invalid_argument if capacity is 0 or above max_capacity, std::bad_alloc
    // if memory is short. The storage is reserved, not touched: a node is constructed when it is inserted, and the
    // tables come zeroed from calloc, which hands out fresh pages for large blocks without writing them. A tree
    // sized for 64 K contexts that sees a few thousand nodes thus touches a few dozen pages: nodes are written in
    // id order, and the table in use is sized to the nodes (a table at full size from the start had each insert
    // land on a page of its own, 1 MiB of a native program's resident memory for a few hundred contexts).
    explicit calling_context_tree(std::size_t capacity)
        : capacity_(checked_capacity(capacity)),
          first_table_slots_(std::min(first_table_slots, std::bit_ceil(2 * capacity_))),
          last_level_(static_cast<std::uint32_t>(std::countr_zero(std::bit_ceil(2 * capacity_) / first_table_slots_))),
          nodes_(zeroed_storage<node_record>(capacity_)), metrics_(zeroed_storage<Metrics>(capacity_)),
          slots_(zeroed_storage<std::uint64_t>(first_table_slots_ * ((std::size_t{2} << last_level_) - 1))) {
        std::construct_at(&nodes_[root]); // parent no_context, frame 0, depth 0
        std::construct_at(&metrics_[root]);
        count_.store(1, std::memory_order_release);
    }

    calling_context_tree(const calling_context_tree&) = delete;
    calling_context_tree& operator=(const calling_context_tree&) = delete;

    // Moving is an owner operation with no reader active. The moved-from tree has capacity 0 and no root: it may
    // be assigned to or destroyed, and child/insert_path on it return no_context.
    calling_context_tree(calling_context_tree&& other) noexcept
        : capacity_(std::exchange(other.capacity_, 0)),
          first_table_slots_(std::exchange(other.first_table_slots_, 0)),
          last_level_(std::exchange(other.last_level_, 0)), nodes_(std::move(other.nodes_)),
          metrics_(std::move(other.metrics_)), slots_(std::move(other.slots_)) {
        level_.store(other.level_.exchange(0, std::memory_order_relaxed), std::memory_order_relaxed);
        count_.store(other.count_.exchange(0, std::memory_order_relaxed), std::memory_order_release);
        overflow_.store(other.overflow_.exchange(0, std::memory_order_relaxed), std::memory_order_relaxed);
    }

    calling_context_tree& operator=(calling_context_tree&& other) noexcept {
        if (this != &other) {
            capacity_ = std::exchange(other.capacity_, 0);
            first_table_slots_ = std::exchange(other.first_table_slots_, 0);
            last_level_ = std::exchange(other.last_level_, 0);
            level_.store(other.level_.exchange(0, std::memory_order_relaxed), std::memory_order_relaxed);
            nodes_ = std::move(other.nodes_);
            metrics_ = std::move(other.metrics_);
            slots_ = std::move(other.slots_);
            count_.store(other.count_.exchange(0, std::memory_order_relaxed), std::memory_order_release);
            overflow_.store(other.overflow_.exchange(0, std::memory_order_relaxed), std::memory_order_relaxed);
        }
        return *this;
    }

    ~calling_context_tree() = default;

    // An independent copy with the same capacity, ids, metrics and overflow count. Reads metrics, so call it at a
    // quiescent point (or from the owner). Allocates; not signal-safe.
    [[nodiscard]] calling_context_tree clone() const {
        calling_context_tree copy(capacity_);
        copy.merge(*this); // into an empty tree of the same capacity: every id maps to itself
        copy.overflow_.store(overflow_count(), std::memory_order_relaxed);
        return copy;
    }

    // ---- Insertion (owner only) ----

    // The child of `parent` reached by frame `f`, inserted if absent. Returns no_context if `parent` is no_context
    // (or otherwise not a node), so calls chain; returns no_context and counts one overflow if the child is absent
    // and the tree is full. An existing child is always found, even when the tree is full. Signal-safe.
    context_id child(context_id parent, frame f) noexcept {
        const std::uint32_t n = count_.load(std::memory_order_relaxed); // the owner reads its own writes
        if (parent >= n) return no_context;
        const std::uint64_t h = hash_key(parent, f);
        probe_result found = probe(current_table(), parent, f, h);
        if (found.id != no_context) return found.id;
        if (n >= capacity_) {
            overflow_.store(overflow_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
            return no_context;
        }
        if (2 * std::size_t{n} > current_table().mask + 1) { // node n would make n keys: keep the load <= 1/2
            grow(n);
            found = probe(current_table(), parent, f, h);
        }
        node_record& node = *std::construct_at(&nodes_[n]);
        std::construct_at(&metrics_[n]);
        node_record& up = nodes_[parent];
        node.f = f;
        node.parent = parent;
        node.depth = up.depth + 1;
        node.next_sibling = up.first_child.load(std::memory_order_relaxed);
        // Publication order: table slot, then child link, then count. Readers acquire any of the three.
        slot(found.slot).store((h & tag_mask) | n, std::memory_order_release);
        up.first_child.store(n, std::memory_order_release);
        count_.store(n + 1, std::memory_order_release);
        return n;
    }

    // Inserts the path `frames_from` (first element nearest `from`) below `from` and returns its last node; stops
    // at the first node that cannot be inserted and returns no_context (one overflow counted). An empty path
    // returns `from`. Signal-safe.
    context_id insert_path(context_id from, std::span<const frame> frames_from) noexcept {
        context_id id = from;
        for (const frame f : frames_from) {
            id = child(id, f);
            if (id == no_context) break;
        }
        return id;
    }

    // Inserts a path given root first. Signal-safe.
    context_id insert_path(std::span<const frame> root_first) noexcept { return insert_path(root, root_first); }

    // Inserts every path of `other` into this tree, adds other's metrics (root included) to the matching nodes and
    // returns the remap: result[other id] = id in this tree. Existing ids of this tree are unchanged. If this tree
    // fills up, a node that cannot be inserted, and every descendant of it, maps to no_context, its metrics are
    // dropped, and each such node counts one overflow. Other's own overflow count is not added. `other` must be
    // quiescent (its metrics are read). Owner only; allocates the remap, so not signal-safe.
    std::vector<context_id> merge(const calling_context_tree& other) {
        const std::size_t n = other.size();
        std::vector<context_id> remap(n, no_context);
        for (std::size_t id = 0; id < n; ++id) {
            context_id mapped = root;
            if (id != root) {
                const context_id up = remap[other.nodes_[id].parent];
                if (up == no_context) {
                    overflow_.store(overflow_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
                    continue;
                }
                mapped = child(up, other.nodes_[id].f); // counts the overflow itself when full
                if (mapped == no_context) continue;
            }
            remap[id] = mapped;
            metrics_[mapped] += other.metrics_[id];
        }
        return remap;
    }

    // ---- Lookup (any thread; all signal-safe) ----

    // The child of `parent` reached by `f`, if present. Never inserts.
    std::optional<context_id> find_child(context_id parent, frame f) const noexcept {
        if (parent >= capacity_) return std::nullopt;
        const context_id id = probe(current_table(), parent, f, hash_key(parent, f)).id;
        if (id == no_context) return std::nullopt;
        return id;
    }

    // The node of a path given root first, if present. Never inserts. An empty path is the root.
    std::optional<context_id> find_path(std::span<const frame> root_first) const noexcept {
        if (capacity_ == 0) return std::nullopt;
        context_id id = root;
        for (const frame f : root_first) {
            const std::optional<context_id> next = find_child(id, f);
            if (!next) return std::nullopt;
            id = *next;
        }
        return id;
    }

    // ---- Node fields (any thread, published nodes only; all signal-safe) ----
    // Precondition for every `id` below and for metrics(): a node of this tree. An id >= capacity() (no_context in
    // particular) aborts rather than read out of bounds.

    // no_context for the root.
    context_id parent(context_id id) const noexcept { return node(id).parent; }
    // 0 for the root.
    frame frame_of(context_id id) const noexcept { return node(id).f; }
    // Number of frames on the path: 0 for the root, depth(parent) + 1 otherwise.
    std::uint32_t depth(context_id id) const noexcept { return node(id).depth; }

    // Writes the frames of the path to `id`, leaf first, into `out_leaf_first` and returns how many it wrote:
    // min(depth(id), out.size()). When the span is short, the frames nearest the leaf are kept.
    std::size_t path(context_id id, std::span<frame> out_leaf_first) const noexcept {
        std::size_t written = 0;
        while (id != root && written < out_leaf_first.size()) {
            const node_record& at = node(id);
            out_leaf_first[written++] = at.f;
            id = at.parent;
        }
        return written;
    }

    // The path to `id`, root first. Allocates; not signal-safe.
    std::vector<frame> path_from_root(context_id id) const {
        std::vector<frame> out(depth(id));
        const std::size_t written = path(id, out);
        out.resize(written);
        std::reverse(out.begin(), out.end());
        return out;
    }

    // Children, most recently inserted first: first_child(id), then next_sibling(child) until no_context.
    context_id first_child(context_id id) const noexcept {
        return node(id).first_child.load(std::memory_order_acquire);
    }
    context_id next_sibling(context_id id) const noexcept { return node(id).next_sibling; }

    // Calls fn(child_id) for every child of `id`, most recently inserted first. Signal-safe if fn is.
    template <class Fn>
    void for_each_child(context_id id, Fn&& fn) const {
        for (context_id c = first_child(id); c != no_context; c = next_sibling(c)) fn(c);
    }

    // ---- Metrics (owner thread, or any thread at a quiescent point; signal-safe) ----

    Metrics& metrics(context_id id) noexcept { return metrics_[checked(id)]; }
    const Metrics& metrics(context_id id) const noexcept { return metrics_[checked(id)]; }

    // ---- Sizes (any thread; signal-safe) ----

    // Published nodes, the root included (0 only for a moved-from tree). Ids 0 .. size()-1 are valid.
    std::size_t size() const noexcept { return count_.load(std::memory_order_acquire); }
    std::size_t capacity() const noexcept { return capacity_; }
    // Insertions refused because the tree was full (plus nodes dropped by merge), since construction.
    std::uint64_t overflow_count() const noexcept { return overflow_.load(std::memory_order_relaxed); }

    // ---- Serialization (quiescent point or a clone; not signal-safe) ----

    // Writes the format described at the top of this file. Errors are reported through the stream's state.
    void serialize(std::ostream& out) const {
        const std::size_t n = size();
        out.write(magic, magic_size);
        write_le<std::uint32_t>(out, format_version);
        write_le<std::uint32_t>(out, static_cast<std::uint32_t>(sizeof(Metrics)));
        write_le<std::uint64_t>(out, overflow_count());
        write_le<std::uint32_t>(out, static_cast<std::uint32_t>(n));
        for (std::size_t id = 0; id < n; ++id) {
            write_le<std::uint32_t>(out, nodes_[id].parent);
            write_le<std::uint64_t>(out, nodes_[id].f);
            unsigned char bytes[sizeof(Metrics)];
            std::memcpy(bytes, &metrics_[id], sizeof(Metrics));
            out.write(reinterpret_cast<const char*>(bytes), sizeof(Metrics));
        }
    }

    // Reads a tree written by serialize() into a new tree of the given capacity. Bad input never throws: the
    // result holds an error kind and a message (also when the stream has exceptions enabled). Reads exactly the
    // serialized tree and leaves the stream after it. Throws only std::bad_alloc if `capacity` cannot be allocated.
    static deserialize_result deserialize(std::istream& in, std::size_t capacity) {
        deserialize_result result;
        const auto fail = [&result](cct_error kind, std::string message) {
            result.tree.reset();
            result.error = kind;
            result.message = std::move(message);
            return std::move(result);
        };
        if (capacity == 0 || capacity > max_capacity)
            return fail(cct_error::invalid_capacity, "invalid capacity " + std::to_string(capacity));

        char found_magic[magic_size];
        if (!read_bytes(in, found_magic, magic_size))
            return fail(cct_error::truncated, "truncated data: stream ends inside the magic");
        if (std::memcmp(found_magic, magic, magic_size) != 0)
            return fail(cct_error::bad_magic, "bad magic: not an OJXCCT calling context tree");
        std::uint32_t version = 0;
        if (!read_le(in, version)) return fail(cct_error::truncated, "truncated data: stream ends inside the header");
        if (version != format_version)
            return fail(cct_error::unsupported_version, "unsupported version " + std::to_string(version) +
                                                            " (this reader knows version " +
                                                            std::to_string(format_version) + ")");
        std::uint32_t metrics_size = 0;
        if (!read_le(in, metrics_size))
            return fail(cct_error::truncated, "truncated data: stream ends inside the header");
        if (metrics_size != sizeof(Metrics))
            return fail(cct_error::metrics_size_mismatch, "metrics size mismatch: the data has " +
                                                              std::to_string(metrics_size) + "-byte metrics, this tree " +
                                                              std::to_string(sizeof(Metrics)) + "-byte metrics");
        std::uint64_t overflow = 0;
        std::uint32_t count = 0;
        if (!read_le(in, overflow) || !read_le(in, count))
            return fail(cct_error::truncated, "truncated data: stream ends inside the header");
        if (count == 0) return fail(cct_error::empty_tree, "node count is 0: the root is missing");
        if (count > capacity)
            return fail(cct_error::too_many_nodes, "node count " + std::to_string(count) + " exceeds capacity " +
                                                       std::to_string(capacity));

        result.tree.emplace(capacity);
        calling_context_tree& tree = *result.tree;
        for (std::uint32_t id = 0; id < count; ++id) {
            std::uint32_t up = 0;
            std::uint64_t f = 0;
            unsigned char bytes[sizeof(Metrics)];
            if (!read_le(in, up) || !read_le(in, f) || !read_bytes(in, bytes, sizeof(Metrics)))
                return fail(cct_error::truncated, "truncated data: stream ends inside node " + std::to_string(id) +
                                                      " of " + std::to_string(count));
            if (id == root) {
                if (up != no_context)
                    return fail(cct_error::root_has_parent, "node 0 (the root) has parent " + std::to_string(up));
            } else {
                if (up >= id)
                    return fail(cct_error::parent_not_before_child, "node " + std::to_string(id) + " has parent " +
                                                                        std::to_string(up) +
                                                                        ", which is not less than its own id");
                const context_id inserted = tree.child(up, f);
                if (inserted != id) // parents precede children and every earlier node was new, so this is a duplicate
                    return fail(cct_error::duplicate_child, "node " + std::to_string(id) + " duplicates node " +
                                                                std::to_string(inserted) + " (same parent and frame)");
            }
            std::memcpy(&tree.metrics_[id], bytes, sizeof(Metrics));
        }
        tree.overflow_.store(overflow, std::memory_order_relaxed);
        return result;
    }

private:
    // Owner writes f/parent/depth/next_sibling before publication and never again; first_child changes when a
    // child is added, hence atomic.
    struct node_record {
        frame f = 0;
        context_id parent = no_context;
        std::uint32_t depth = 0;
        std::atomic<context_id> first_child{no_context};
        context_id next_sibling = no_context;
    };

    struct probe_result {
        std::uint64_t* slot; // where the key is, or the empty slot where it would go
        context_id id;       // no_context if absent
    };

    // A table slot holds (high 32 bits of the key's hash) << 32 | node id; id 0 (the root, never a child) marks an
    // empty slot, so a zero-initialised table is empty. A table of 2m slots holds at most m keys (load <= 1/2), so
    // an empty slot always ends a probe.
    //
    // Tables by level: level k has first_table_slots_ << k slots, and they lie one after another in slots_ (their
    // sum is under twice the last), so growing allocates nothing and stays signal-safe. The owner fills the next
    // level from the nodes and then publishes it in level_; a level is never written again once the next is
    // published. A reader that loaded an older level still finds every node inserted before the growth, and it can
    // know of a node inserted after only through an acquire (count, child link, slot) that follows the level's
    // release, so its next load of level_ finds the new table.
    static constexpr std::size_t first_table_slots = 64;
    static constexpr std::uint64_t tag_mask = 0xFFFF'FFFF'0000'0000ULL;
    static constexpr std::size_t magic_size = 6;
    static constexpr char magic[magic_size] = {'O', 'J', 'X', 'C', 'C', 'T'};

    static_assert(std::atomic_ref<std::uint64_t>::is_always_lock_free && std::atomic<context_id>::is_always_lock_free,
                  "signal-safe insertion needs lock-free atomics");


    // Table slots are plain words (so calloc's zeros are valid empty slots) accessed atomically.
    static std::atomic_ref<std::uint64_t> slot(std::uint64_t* at) noexcept { return std::atomic_ref(*at); }

    struct table {
        std::uint64_t* slots;
        std::size_t mask; // slots - 1
    };
    table current_table() const noexcept {
        const std::uint32_t level = level_.load(std::memory_order_acquire);
        return {slots_.get() + first_table_slots_ * ((std::size_t{1} << level) - 1),
                (first_table_slots_ << level) - 1};
    }

    // Owner only, before inserting node `n`: fills the next level with nodes 1 .. n-1 and publishes it.
    void grow(context_id n) noexcept {
        const std::uint32_t next = level_.load(std::memory_order_relaxed) + 1;
        const table to{slots_.get() + first_table_slots_ * ((std::size_t{1} << next) - 1),
                       (first_table_slots_ << next) - 1};
        for (context_id id = 1; id < n; ++id) {
            const std::uint64_t h = hash_key(nodes_[id].parent, nodes_[id].f);
            std::size_t i = static_cast<std::size_t>(h) & to.mask;
            while (slot(to.slots + i).load(std::memory_order_relaxed) != 0) i = (i + 1) & to.mask;
            slot(to.slots + i).store((h & tag_mask) | id, std::memory_order_relaxed);
        }
        level_.store(next, std::memory_order_release);
    }

    static std::size_t checked_capacity(std::size_t capacity) {
        if (capacity == 0 || capacity > max_capacity)
            throw std::invalid_argument("calling_context_tree: capacity must be in [1, 2^32-1]");
        return capacity;
    }

    static std::uint64_t hash_key(context_id parent, frame f) noexcept {
        std::uint64_t x = f ^ (std::uint64_t{parent} * 0x9e3779b97f4a7c15ULL);
        x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
        x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
        return x ^ (x >> 31);
    }

    probe_result probe(table t, context_id parent, frame f, std::uint64_t h) const noexcept {
        const std::uint64_t tag = h & tag_mask;
        for (std::size_t i = static_cast<std::size_t>(h) & t.mask;; i = (i + 1) & t.mask) {
            const std::uint64_t s = slot(t.slots + i).load(std::memory_order_acquire);
            const auto id = static_cast<context_id>(s);
            if (id == 0) return {t.slots + i, no_context};
            if ((s & tag_mask) == tag && nodes_[id].parent == parent && nodes_[id].f == f) return {t.slots + i, id};
        }
    }

    context_id checked(context_id id) const noexcept {
        if (id >= capacity_) [[unlikely]]
            std::abort(); // not a node of this tree (e.g. no_context): fail loudly rather than read out of bounds
        return id;
    }
    const node_record& node(context_id id) const noexcept { return nodes_[checked(id)]; }

    template <class U>
    static void write_le(std::ostream& out, U value) {
        char bytes[sizeof(U)];
        for (std::size_t i = 0; i < sizeof(U); ++i) bytes[i] = static_cast<char>((value >> (8 * i)) & 0xFF);
        out.write(bytes, sizeof(U));
    }

    static bool read_bytes(std::istream& in, void* out, std::size_t n) {
        try {
            in.read(static_cast<char*>(out), static_cast<std::streamsize>(n));
            return in.gcount() == static_cast<std::streamsize>(n);
        } catch (const std::ios_base::failure&) {
            return false; // the caller enabled exceptions on the stream; report, never throw
        }
    }

    template <class U>
    static bool read_le(std::istream& in, U& value) {
        unsigned char bytes[sizeof(U)];
        if (!read_bytes(in, bytes, sizeof(U))) return false;
        value = 0;
        for (std::size_t i = 0; i < sizeof(U); ++i) value |= static_cast<U>(static_cast<U>(bytes[i]) << (8 * i));
        return true;
    }

    std::size_t capacity_;
    std::size_t first_table_slots_; // level 0's slots (a power of two)
    std::uint32_t last_level_;      // the level of at least 2 * capacity slots
    std::atomic<std::uint32_t> level_{0};
    zeroed_ptr<node_record> nodes_;
    zeroed_ptr<Metrics> metrics_;
    zeroed_ptr<std::uint64_t> slots_;
    std::atomic<std::uint32_t> count_{0};
    std::atomic<std::uint64_t> overflow_{0};
};

} // namespace ojx
