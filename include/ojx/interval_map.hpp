// Address → object lookup for the sampling profiler. Every tracked object's address range [begin, end) is kept
// here with a small payload (typically ojx::object_info); on each sampled memory access a signal handler, on
// whichever thread took the sample, asks which object encloses the sampled address.
//
// Concurrency contract
//  * Reader: lookup() is signal-safe. It takes no lock, allocates nothing, makes no system call and runs in bounded
//    time, on any number of threads at once, including in a signal handler that interrupted the writer. It never
//    returns a torn record: an answer is returned only if no update overlapped the read (one seqlock generation for
//    the whole map). If updates keep overlapping the read, or the reader interrupted the writer in the middle of an
//    update, lookup() gives up after config.read_attempts full passes and answers `busy`.
//  * Writer: one thread at a time (the caller serializes allocation, free and GC events) calls everything else:
//    insert, erase, relocate, clear, for_each, size, memory_bytes, validate, reclaim_retired. Those may allocate
//    and may throw std::bad_alloc; a throwing update leaves the map unchanged.
//  * Lifetime: the map must outlive every reader. Tables replaced by growth stay allocated ("retired") until the
//    destructor or reclaim_retired(), because a reader may still be scanning them. The map is neither copyable nor
//    movable: readers in signal handlers hold its address.
//
// Layout. An open-addressing table (linear probing) of cells {begin, size, payload words}, each word a
// std::atomic<std::uint64_t> accessed with relaxed loads and stores inside the seqlock. Objects are filed by size
// in levels of granules: level k has granules of 2^(granule_shift + k·level_step) bytes, and an object of size sz
// goes to the lowest level k with sz <= 2^(granule_shift + (k+1)·level_step) (the top level takes the rest), so it
// overlaps at most 2^level_step + 1 granules there; it takes one cell in every granule of its level that it
// overlaps. A cell carries no key: a lookup of address a at level k hashes (k, a >> shift_k) to a home cell and
// scans to the first empty cell, answering with the first cell whose range contains a (objects never overlap, so
// any containing cell is the answer). Only levels that hold objects are probed; with objects of similar sizes that
// is one level. Homes are even cells of a 64-byte-aligned table, so a probe starts with one cache line holding two
// cells; the hash is multiply-shift (Fibonacci) hashing, which spreads the consecutive granules of a contiguous
// heap evenly, so most lookups end in that first line. lookup() decides that case inline and leaves everything else
// to an out-of-line pass. Deletion compacts the affected runs toward their homes (backward shift, no tombstones).
//
// Cost. A lookup in a table larger than the caches costs one DRAM access to its home line (≈ 200 ns on this
// project's VMs); the profiler makes a few per sample, which costs tens of µs (bench/RESULTS.md), so the code is
// plain portable C++ rather than tuned to the instruction.
#pragma once

#include "ojx/types.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>


#if defined(__SANITIZE_THREAD__)
#define OJX_INTERVAL_MAP_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define OJX_INTERVAL_MAP_TSAN 1
#endif
#endif

// lookup() is inlined into its caller and its uncommon cases are kept out of line, so that the caller's sample path
// stays a straight line (bench/RESULTS.md: left to itself, GCC 12 inlines the rest into lookup and calls lookup).
#if defined(__GNUC__)
#define OJX_INTERVAL_MAP_INLINE inline __attribute__((always_inline))
#define OJX_INTERVAL_MAP_NOINLINE __attribute__((noinline))
#else
#define OJX_INTERVAL_MAP_INLINE inline
#define OJX_INTERVAL_MAP_NOINLINE
#endif

namespace ojx {

// Outcome of interval_map::lookup.
enum class lookup_status : std::uint8_t {
    found,  // the enclosing object is in lookup_result::value
    absent, // no tracked object encloses the address
    busy,   // updates kept overlapping the read; the caller should drop the sample
};

// Outcome of interval_map::insert.
enum class insert_status : std::uint8_t {
    inserted,      // the object is in the map (objects it overlapped were evicted)
    invalid_range, // begin >= end; nothing changed
};

struct insert_result {
    insert_status status = insert_status::inserted;
    std::size_t evicted = 0; // objects removed because the new one overlaps them
};

struct interval_map_config {
    // Cells in the first table, rounded up to a power of two (at least 16). Each object takes one cell per granule
    // of its level that it overlaps; the table doubles when more than max_load_percent of its cells are used.
    std::size_t initial_capacity = 1024;
    // Level-0 granule is 2^granule_shift bytes (0..63). 4 KiB: with objects of 1 KiB and more (the profiler's
    // default threshold) half the memory of 1 KiB granules, at a lookup cost of the same order (bench/RESULTS.md).
    unsigned granule_shift = 12;
    // Each level's granule is 2^level_step times the previous one's (1..12). An object takes at most
    // 2^level_step + 1 cells.
    unsigned level_step = 6;
    // Growth threshold, 10..90.
    unsigned max_load_percent = 50;
    // How many full passes a reader makes, after its first look at one line, before answering `busy` (at least 1).
    unsigned read_attempts = 16;
    // Called (writer side) on each new table of 4 MiB or more, which is 2 MiB-aligned: a place for an OS backend
    // to ask for huge pages (random probes of a large table otherwise pay a TLB miss each). The core makes no
    // system call itself.
    void (*advise_large_table)(void* memory, std::size_t bytes) = nullptr;
};

namespace interval_map_detail {

#if defined(OJX_INTERVAL_MAP_TSAN)
// ThreadSanitizer does not model atomic_thread_fence (and GCC warns about it), so under TSan the seqlock puts the
// ordering on the data accesses themselves: acquire loads and release stores, an equally correct seqlock.
inline constexpr bool use_fences = false;
inline constexpr std::memory_order data_load = std::memory_order_acquire;
inline constexpr std::memory_order data_store = std::memory_order_release;
#else
inline constexpr bool use_fences = true;
inline constexpr std::memory_order data_load = std::memory_order_relaxed;
inline constexpr std::memory_order data_store = std::memory_order_relaxed;
#endif

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

// A level's key: a per-level salt for the hash, with the level's granule shift in its low six bits (so that one
// load gives a reader both) and bit 6 set, so that no key is zero (zero stands for "no level").
inline std::uint64_t level_key(unsigned level, unsigned granule_shift) noexcept {
    return ((std::uint64_t{level} * 0xD6E8FEB86659FD93ULL * 0x9E3779B97F4A7C15ULL) & ~std::uint64_t{127}) | 64U |
           granule_shift;
}

// Home cell of granule g of the level with key `key` in a table of 2^(65 - line_shift) cells (2^(64 - line_shift)
// lines of two cells): Fibonacci (multiply-shift) hashing, which spreads runs of consecutive granules evenly, salted
// by the level. Homes are even cells, the first of a line.
inline std::size_t home(std::uint64_t key, std::uint64_t granule, unsigned line_shift) noexcept {
    return static_cast<std::size_t>((granule * 0x9E3779B97F4A7C15ULL + key) >> line_shift) << 1;
}

} // namespace interval_map_detail

template <class Payload>
    requires std::is_trivially_copyable_v<Payload> && (sizeof(Payload) % 8 == 0) && (alignof(Payload) <= 8)
class interval_map {
public:
    struct entry {
        address begin;
        address end;
        Payload payload;
    };

    struct lookup_result {
        lookup_status status;
        entry value; // meaningful only when status == found
        [[nodiscard]] bool found() const noexcept { return status == lookup_status::found; }
    };

    explicit interval_map(const interval_map_config& config = {})
        : granule_shift_(config.granule_shift), level_step_(config.level_step),
          read_attempts_(config.read_attempts), config_(config) {
        if (config.granule_shift > 63 || config.level_step < 1 || config.level_step > 12 ||
            config.max_load_percent < 10 || config.max_load_percent > 90 || config.read_attempts < 1 ||
            config.initial_capacity > (std::size_t{1} << 40)) {
            throw std::invalid_argument("ojx::interval_map: invalid configuration");
        }
        levels_ = (63 - granule_shift_) / level_step_ + 1;
        for (unsigned k = 0; k < levels_; ++k) {
            level_keys_[k] = interval_map_detail::level_key(k, shift(k));
        }
        std::size_t cells = std::bit_ceil(std::max<std::size_t>(config.initial_capacity, 16));
        current_ = std::make_unique<table>(cells, config_.advise_large_table);
        published_.store(current_.get(), std::memory_order_release);
    }

    // Call only when no lookup can be in flight.
    ~interval_map() = default;

    interval_map(const interval_map&) = delete;
    interval_map& operator=(const interval_map&) = delete;
    interval_map(interval_map&&) = delete;
    interval_map& operator=(interval_map&&) = delete;

    // The object enclosing address a. Signal-safe: no lock, no allocation, no system call, bounded time (one look
    // at a line, then at most read_attempts full passes over the probed runs); any thread, any time, concurrently
    // with the writer.
    //
    // The common case is decided here, inline: the home line of the lowest level that holds objects (at 1 M
    // objects of 1-4 KiB, about three lookups in four). The rest of that level's run and the other levels go to
    // lookup_rest, which continues in the same seqlock window; an update in progress to lookup_slow.
    [[nodiscard]] OJX_INTERVAL_MAP_INLINE lookup_result lookup(address a) const noexcept {
        using interval_map_detail::data_load;
        const std::uint64_t g1 = gen_.load(std::memory_order_acquire);
        const table& t = *published_.load(std::memory_order_acquire);
        const std::uint64_t key = first_key_.load(data_load);
        if (((g1 & 1U) == 0) && key != 0) [[likely]] {
            // Homes are even cells of a 64-byte-aligned table: the home cell and the next share a line. Any
            // containing cell is the answer (objects never overlap).
            const std::atomic<std::uint64_t>* home = t.cell(t.home(key, a));
            const std::atomic<std::uint64_t>* chosen = home;
            std::uint64_t begin = home[0].load(data_load);
            std::uint64_t size = home[1].load(data_load);
            if (a - begin >= size) {
                chosen = home + cell_words;
                begin = chosen[0].load(data_load);
                size = chosen[1].load(data_load);
            }
            const auto payload = read_payload(chosen);
            if constexpr (interval_map_detail::use_fences) {
                std::atomic_thread_fence(std::memory_order_acquire);
            }
            if (a - begin >= size) {
                return lookup_rest(a, g1, t, home);
            }
            if (gen_.load(std::memory_order_relaxed) == g1) [[likely]] {
                return found(stored_cell{begin, size, payload});
            }
        }
        return lookup_slow(a);
    }

    // Writer side. Adds [begin, end) → payload. Objects overlapping the new range are evicted first (a new
    // allocation at an address proves the object that was there is dead); the result says how many. An empty or
    // inverted range is rejected and changes nothing.
    insert_result insert(address begin, address end, const Payload& payload) {
        if (!(begin < end)) {
            return {insert_status::invalid_range, 0};
        }
        const raw_cell cell = make_cell(begin, end, payload);
        collect_overlaps(begin, end);
        commit(&cell);
        return {insert_status::inserted, victims_.size()};
    }

    // Writer side. Removes the object that starts exactly at begin; false if there is none.
    bool erase(address begin) {
        raw_cell cell;
        if (!find_cell(begin, cell) || cell.begin != begin) {
            return false;
        }
        if (!erase_in_place(cell)) {
            victims_.assign(1, cell);
            commit(nullptr);
        }
        return true;
    }

    // Writer side. Moves the object that starts exactly at old_begin to new_begin (same size, same payload), as a
    // moving GC does; objects overlapping the destination are evicted. Readers see the object either at its old or
    // at its new place, never both or neither. False (and nothing changes) if no object starts at old_begin or the
    // moved range would pass the end of the address space.
    bool relocate(address old_begin, address new_begin) {
        raw_cell cell;
        if (!find_cell(old_begin, cell) || cell.begin != old_begin) {
            return false;
        }
        if (new_begin == old_begin) {
            return true;
        }
        const std::uint64_t size = cell.end - cell.begin;
        if (new_begin > std::numeric_limits<address>::max() - size) {
            return false;
        }
        raw_cell moved = cell;
        moved.begin = new_begin;
        moved.end = new_begin + size;
        collect_overlaps(moved.begin, moved.end);
        const auto it = std::lower_bound(victims_.begin(), victims_.end(), cell.begin, begin_less);
        if (it == victims_.end() || it->begin != cell.begin) {
            victims_.insert(it, cell);
        }
        commit(&moved);
        return true;
    }

    // Writer side. Removes every object (bulk invalidation). Keeps the table's capacity. Readers are held off
    // only for a constant-time update; the cells are wiped afterwards.
    void clear() noexcept {
        write_begin();
        wmask_ = 0;
        publish_levels();
        write_end();
        // Readers that overlapped the update above fail validation; this fence makes any of them that sees a wiped
        // cell also see the new generation (readers that start later see no level, first_key_ 0, and read no cell).
        if constexpr (interval_map_detail::use_fences) {
            std::atomic_thread_fence(std::memory_order_release);
        }
        table& t = *current_;
        for (std::size_t i = 0; i <= t.mask; ++i) {
            store_cell(t, i, raw_cell{});
        }
        size_ = 0;
        used_cells_ = 0;
        level_objects_.fill(0);
    }

    // Writer side. Calls fn(const entry&) once per object, in no particular order. fn must not modify the map.
    template <class Fn>
    void for_each(Fn fn) const {
        for_each_object(*current_, [&](const raw_cell& cell) {
            const entry e = to_entry(cell);
            fn(e);
        });
    }

    // Writer side.
    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
    // Cells of the current table, and how many hold an object's granule.
    [[nodiscard]] std::size_t cell_capacity() const noexcept { return current_->mask + 1; }
    [[nodiscard]] std::size_t cells_in_use() const noexcept { return used_cells_; }
    [[nodiscard]] const interval_map_config& config() const noexcept { return config_; }

    // Writer side. Every byte the map holds: itself, the current table, retired tables and scratch space.
    [[nodiscard]] std::size_t memory_bytes() const noexcept {
        std::size_t bytes = sizeof(*this) + sizeof(table) + current_->bytes;
        for (const auto& t : retired_) {
            bytes += sizeof(table) + t->bytes;
        }
        bytes += retired_.capacity() * sizeof(std::unique_ptr<table>);
        bytes += (victims_.capacity() + scratch_cells_.capacity() + plan_cells_.capacity()) * sizeof(raw_cell);
        bytes += starts_.capacity() * sizeof(std::size_t) + homed_.capacity() * sizeof(homed) +
                 plans_.capacity() * sizeof(plan);
        return bytes;
    }

    // Writer side. Frees the tables that growth replaced. Call only when no lookup can be in flight (e.g. with
    // sampling stopped); otherwise a reader may still be scanning one of them.
    void reclaim_retired() noexcept { retired_.clear(); }

    // Writer side, for tests: checks every structural invariant (counts, levels, no overlaps, every granule of
    // every object reachable from its home, no stray cells). O(cells · run length).
    [[nodiscard]] bool validate() const {
        const table& t = *current_;
        std::vector<std::pair<std::uint64_t, std::uint64_t>> cells; // (begin, end) of every occupied cell
        for (std::size_t i = 0; i <= t.mask; ++i) {
            const raw_cell c = load_cell(t, i);
            if (c.end != 0) {
                if (!(c.begin < c.end)) {
                    return false;
                }
                cells.emplace_back(c.begin, c.end);
            }
        }
        if (cells.size() != used_cells_) {
            return false;
        }
        std::sort(cells.begin(), cells.end());
        std::array<std::size_t, 64> per_level{};
        std::size_t objects = 0;
        for (std::size_t i = 0; i < cells.size();) {
            const auto [b, e] = cells[i];
            std::size_t j = i;
            while (j < cells.size() && cells[j].first == b) {
                if (cells[j].second != e) {
                    return false; // two objects with one begin
                }
                ++j;
            }
            if (j - i != cells_of(b, e)) {
                return false;
            }
            if (j < cells.size() && cells[j].first < e) {
                return false; // overlap
            }
            const unsigned k = level_of(e - b);
            ++per_level[k];
            ++objects;
            const unsigned s = shift(k);
            for (std::uint64_t g = b >> s; g <= (e - 1) >> s; ++g) {
                if (!run_contains(t, home_cell(t, k, g), b)) {
                    return false;
                }
            }
            i = j;
        }
        if (objects != size_) {
            return false;
        }
        std::size_t visited = 0;
        for_each_object(t, [&](const raw_cell&) { ++visited; });
        if (visited != size_) {
            return false;
        }
        std::uint64_t mask = 0;
        for (unsigned k = 0; k < 64; ++k) {
            if (per_level[k] != level_objects_[k]) {
                return false;
            }
            if (per_level[k] != 0) {
                mask |= std::uint64_t{1} << k;
            }
        }
        const std::uint64_t first_key = mask == 0 ? 0 : level_keys_[std::countr_zero(mask)];
        return mask == wmask_ && mask == level_mask_.load(std::memory_order_relaxed) &&
               first_key == first_key_.load(std::memory_order_relaxed);
    }

private:
    static constexpr std::size_t payload_words = sizeof(Payload) / 8;
    static constexpr std::size_t cell_words = 2 + payload_words;

    // One table of cells. Word layout of cell i: [begin, size, payload...]; size == 0 marks an empty cell. (The
    // size rather than the end, because a reader then tests b <= a < b + size as one subtraction and one
    // comparison: a - b < size.) Readers reach it through published_; its fields never change after construction,
    // and its cells never change after it stops being current.
    struct table {
        std::size_t mask;      // cells - 1
        unsigned line_shift;   // 64 - log2(lines), a line being two cells
        std::size_t bytes;     // of the word array
        std::size_t alignment; // of the word array
        std::atomic<std::uint64_t>* words;

        table(std::size_t cells, void (*advise_large)(void*, std::size_t))
            : mask(cells - 1), line_shift(65U - static_cast<unsigned>(std::countr_zero(cells))),
              bytes(cells * cell_words * sizeof(std::uint64_t)),
              alignment(bytes >= (std::size_t{4} << 20) ? (std::size_t{2} << 20) : 64) {
            void* memory = ::operator new(bytes, std::align_val_t{alignment});
            if (alignment > 64 && advise_large != nullptr) advise_large(memory, bytes);
            words = static_cast<std::atomic<std::uint64_t>*>(memory);
            std::uninitialized_value_construct_n(words, cells * cell_words);
        }
        // Unsized: Clang (before 19) declares no sized deallocation unless asked (-fsized-deallocation).
        ~table() { ::operator delete(words, std::align_val_t{alignment}); }
        table(const table&) = delete;
        table& operator=(const table&) = delete;

        [[nodiscard]] const std::atomic<std::uint64_t>* cell(std::size_t i) const noexcept {
            return words + i * cell_words;
        }
        [[nodiscard]] std::atomic<std::uint64_t>* cell(std::size_t i) noexcept { return words + i * cell_words; }

        // Home cell of address a at the level with key `key` (which carries the level's granule shift).
        [[nodiscard]] std::size_t home(std::uint64_t key, address a) const noexcept {
            return interval_map_detail::home(key, a >> (key & 63U), line_shift);
        }
    };

    // A cell's contents, copied out (writer side) or to be stored.
    struct raw_cell {
        std::uint64_t begin = 0;
        std::uint64_t end = 0;
        std::array<std::uint64_t, payload_words> payload{};
    };

    // A cell of a run being compacted, with the offset of one of its object's homes within the run.
    struct homed {
        std::size_t offset;
        std::size_t index;
    };

    // New contents for the run of `length` cells starting at `start`, in plan_cells_[first, first + length).
    struct plan {
        std::size_t start;
        std::size_t length;
        std::size_t first;
    };

    static bool begin_less(const raw_cell& c, std::uint64_t b) noexcept { return c.begin < b; }

    static entry empty_entry() noexcept {
        return entry{0, 0, std::bit_cast<Payload>(std::array<std::uint64_t, payload_words>{})};
    }

    static entry to_entry(const raw_cell& c) noexcept {
        return entry{c.begin, c.end, std::bit_cast<Payload>(c.payload)};
    }

    static raw_cell make_cell(address begin, address end, const Payload& payload) noexcept {
        raw_cell c;
        c.begin = begin;
        c.end = end;
        std::memcpy(c.payload.data(), std::addressof(payload), sizeof(Payload));
        return c;
    }

    [[nodiscard]] unsigned shift(unsigned level) const noexcept { return granule_shift_ + level * level_step_; }

    // Writer side: home cell of granule g of level k in table t.
    [[nodiscard]] std::size_t home_cell(const table& t, unsigned k, std::uint64_t g) const noexcept {
        return interval_map_detail::home(level_keys_[k], g, t.line_shift);
    }

    // The lowest level whose granule is at least size / 2^level_step (the top level takes everything larger).
    [[nodiscard]] unsigned level_of(std::uint64_t size) const noexcept {
        const auto w = static_cast<unsigned>(std::bit_width(size - 1)); // size <= 2^w
        if (w <= granule_shift_ + level_step_) {
            return 0;
        }
        return std::min((w - granule_shift_ - 1) / level_step_, levels_ - 1);
    }

    // Cells an object [b, e) takes: the granules of its level that it overlaps.
    [[nodiscard]] std::size_t cells_of(std::uint64_t b, std::uint64_t e) const noexcept {
        const unsigned s = shift(level_of(e - b));
        return static_cast<std::size_t>(((e - 1) >> s) - (b >> s) + 1);
    }

    // Reader: what lookup's look at one line did not decide. Up to read_attempts full passes, backing off between
    // them (an update in progress may belong to the very thread this signal handler interrupted); then `busy`.
    // Signal-safe.
    OJX_INTERVAL_MAP_NOINLINE lookup_result lookup_slow(address a) const noexcept {
        for (unsigned attempt = 0; attempt < read_attempts_; ++attempt) {
            const unsigned spins = attempt == 0 ? 0U : 1U << std::min(attempt - 1, 5U);
            for (unsigned i = 0; i < spins; ++i) {
                interval_map_detail::cpu_relax();
            }
            const std::uint64_t g1 = gen_.load(std::memory_order_acquire);
            const lookup_result result = probe(*published_.load(std::memory_order_acquire),
                                               level_mask_.load(interval_map_detail::data_load), a);
            if constexpr (interval_map_detail::use_fences) {
                std::atomic_thread_fence(std::memory_order_acquire);
            }
            if (((g1 & 1U) | (gen_.load(std::memory_order_relaxed) ^ g1)) == 0) {
                return result;
            }
        }
        return lookup_result{lookup_status::busy, empty_entry()};
    }

    // Reader: the rest of a lookup whose home line in the lowest level held no containing cell, in the seqlock
    // window lookup opened (generation g1, even): that level's run on from its home (the line is in the cache
    // now), then the other levels; lookup_slow if an update overlapped. Without starting over, because with small
    // objects (several to a granule) it is a common case. Signal-safe.
    OJX_INTERVAL_MAP_NOINLINE lookup_result lookup_rest(address a, std::uint64_t g1, const table& t,
                                                        const std::atomic<std::uint64_t>* home) const noexcept {
        lookup_result result = scan_run(t, static_cast<std::size_t>(home - t.words) / cell_words, a);
        if (!result.found()) {
            const std::uint64_t levels = level_mask_.load(interval_map_detail::data_load);
            result = probe(t, levels & (levels - 1), a);
        }
        if constexpr (interval_map_detail::use_fences) {
            std::atomic_thread_fence(std::memory_order_acquire);
        }
        if (gen_.load(std::memory_order_relaxed) == g1) {
            return result;
        }
        return lookup_slow(a);
    }

    // Reader: one full pass (to be validated by the seqlock): at every level in `levels`, the run from the home
    // cell. Signal-safe.
    lookup_result probe(const table& t, std::uint64_t levels, address a) const noexcept {
        for (; levels != 0; levels &= levels - 1) {
            const lookup_result result = scan_run(t, t.home(level_keys_[std::countr_zero(levels)], a), a);
            if (result.found()) {
                return result;
            }
        }
        return lookup_result{lookup_status::absent, empty_entry()};
    }

    // Reader: the run from cell i to its first empty cell, for a cell containing a. Signal-safe.
    static lookup_result scan_run(const table& t, std::size_t i, address a) noexcept {
        using interval_map_detail::data_load;
        const std::size_t mask = t.mask;
        // Bounded by the table size even if a concurrent update leaves no empty cell in view.
        for (std::size_t n = 0; n <= mask; ++n, i = (i + 1) & mask) {
            const std::atomic<std::uint64_t>* c = t.cell(i);
            const std::uint64_t size = c[1].load(data_load);
            if (size == 0) {
                break;
            }
            if (a - c[0].load(data_load) < size) { // b <= a < b + size
                return found(read_stored(c));
            }
        }
        return lookup_result{lookup_status::absent, empty_entry()};
    }

    // A cell's words as stored: begin, size (0: empty), payload.
    struct stored_cell {
        std::uint64_t begin;
        std::uint64_t size;
        std::array<std::uint64_t, payload_words> payload;
    };

    // Cell c's payload words as they are now. Signal-safe.
    static std::array<std::uint64_t, payload_words> read_payload(
        const std::atomic<std::uint64_t>* c) noexcept {
        std::array<std::uint64_t, payload_words> words;
        for (std::size_t w = 0; w < payload_words; ++w) {
            words[w] = c[2 + w].load(interval_map_detail::data_load);
        }
        return words;
    }

    // Cell c's words as they are now. Signal-safe.
    static stored_cell read_stored(const std::atomic<std::uint64_t>* c) noexcept {
        return stored_cell{c[0].load(interval_map_detail::data_load), c[1].load(interval_map_detail::data_load),
                           read_payload(c)};
    }

    static lookup_result found(const stored_cell& c) noexcept {
        return lookup_result{lookup_status::found, entry{c.begin, c.begin + c.size, std::bit_cast<Payload>(c.payload)}};
    }

    // ---- writer-side cell access (the writer is the only thread that stores, so it reads without the seqlock)

    static raw_cell load_cell(const table& t, std::size_t i) noexcept {
        const stored_cell c = read_stored(t.cell(i));
        return raw_cell{c.begin, c.begin + c.size, c.payload};
    }

    static void store_cell(table& t, std::size_t i, const raw_cell& r) noexcept {
        std::atomic<std::uint64_t>* c = t.cell(i);
        c[0].store(r.begin, interval_map_detail::data_store);
        c[1].store(r.end - r.begin, interval_map_detail::data_store);
        for (std::size_t w = 0; w < payload_words; ++w) {
            c[2 + w].store(r.payload[w], interval_map_detail::data_store);
        }
    }

    static bool occupied(const table& t, std::size_t i) noexcept {
        return t.cell(i)[1].load(std::memory_order_relaxed) != 0;
    }

    static std::uint64_t begin_at(const table& t, std::size_t i) noexcept {
        return t.cell(i)[0].load(std::memory_order_relaxed);
    }

    // Whether the run starting at cell i holds a cell of the object that begins at b.
    static bool run_contains(const table& t, std::size_t i, std::uint64_t b) noexcept {
        for (std::size_t n = 0; n <= t.mask && occupied(t, i); ++n, i = (i + 1) & t.mask) {
            if (begin_at(t, i) == b) {
                return true;
            }
        }
        return false;
    }

    // Writer-side lookup.
    bool find_cell(address a, raw_cell& out) const noexcept {
        const table& t = *current_;
        for (std::uint64_t levels = wmask_; levels != 0; levels &= levels - 1) {
            const auto k = static_cast<unsigned>(std::countr_zero(levels));
            std::size_t i = home_cell(t, k, a >> shift(k));
            for (; occupied(t, i); i = (i + 1) & t.mask) {
                const raw_cell c = load_cell(t, i);
                if (c.begin <= a && a < c.end) {
                    out = c;
                    return true;
                }
            }
        }
        return false;
    }

    // Calls fn(raw_cell) once per object of t: at the first cell of the object in the run from the home of its
    // first granule (which exists, as every granule of an object is reachable from its home).
    template <class Fn>
    void for_each_object(const table& t, Fn&& fn) const {
        for (std::size_t i = 0; i <= t.mask; ++i) {
            if (!occupied(t, i)) {
                continue;
            }
            const raw_cell c = load_cell(t, i);
            const unsigned k = level_of(c.end - c.begin);
            std::size_t j = home_cell(t, k, c.begin >> shift(k));
            while (occupied(t, j) && begin_at(t, j) != c.begin) {
                j = (j + 1) & t.mask;
            }
            if (j == i) {
                fn(c);
            }
        }
    }

    // Stores the object's cell in every granule of its level that it overlaps. No allocation.
    void place(table& t, const raw_cell& c) const noexcept {
        const unsigned k = level_of(c.end - c.begin);
        const unsigned s = shift(k);
        for (std::uint64_t g = c.begin >> s; g <= (c.end - 1) >> s; ++g) {
            std::size_t i = home_cell(t, k, g);
            while (occupied(t, i)) {
                i = (i + 1) & t.mask;
            }
            store_cell(t, i, c);
        }
    }

    // victims_ := the objects overlapping [b, e), sorted by begin, without duplicates.
    void collect_overlaps(std::uint64_t b, std::uint64_t e) {
        victims_.clear();
        const table& t = *current_;
        // Probing costs one run scan per granule of [b, e) at every populated level. When that exceeds a sequential
        // pass over the table (a huge range over fine levels), do the pass.
        std::uint64_t probes = 0;
        for (std::uint64_t levels = wmask_; levels != 0; levels &= levels - 1) {
            const unsigned s = shift(static_cast<unsigned>(std::countr_zero(levels)));
            const std::uint64_t n = ((e - 1) >> s) - (b >> s) + 1;
            probes = n > std::numeric_limits<std::uint64_t>::max() - probes ? std::numeric_limits<std::uint64_t>::max()
                                                                           : probes + n;
        }
        const auto overlaps = [b, e](const raw_cell& c) { return c.begin < e && b < c.end; };
        if (probes > (t.mask + 1) / 8) {
            for (std::size_t i = 0; i <= t.mask; ++i) {
                if (occupied(t, i)) {
                    const raw_cell c = load_cell(t, i);
                    if (overlaps(c)) {
                        victims_.push_back(c);
                    }
                }
            }
        } else {
            for (std::uint64_t levels = wmask_; levels != 0; levels &= levels - 1) {
                const auto k = static_cast<unsigned>(std::countr_zero(levels));
                const unsigned s = shift(k);
                for (std::uint64_t g = b >> s; g <= (e - 1) >> s; ++g) {
                    for (std::size_t i = home_cell(t, k, g); occupied(t, i);
                         i = (i + 1) & t.mask) {
                        const raw_cell c = load_cell(t, i);
                        if (overlaps(c)) {
                            victims_.push_back(c);
                        }
                    }
                }
            }
        }
        sort_unique(victims_);
    }

    static void sort_unique(std::vector<raw_cell>& cells) {
        std::sort(cells.begin(), cells.end(), [](const raw_cell& x, const raw_cell& y) { return x.begin < y.begin; });
        cells.erase(std::unique(cells.begin(), cells.end(),
                                [](const raw_cell& x, const raw_cell& y) { return x.begin == y.begin; }),
                    cells.end());
    }

    [[nodiscard]] bool is_victim(std::uint64_t b) const noexcept {
        const auto it = std::lower_bound(victims_.begin(), victims_.end(), b, begin_less);
        return it != victims_.end() && it->begin == b;
    }

    [[nodiscard]] std::size_t load_limit(std::size_t cells) const noexcept {
        return cells / 100 * config_.max_load_percent + cells % 100 * config_.max_load_percent / 100;
    }

    // Removes victims_ and then adds *added (if any), as one update. Everything that can allocate or throw happens
    // before the update starts, so a failure leaves the map unchanged and readers never see a half-done update.
    void commit(const raw_cell* added) {
        std::size_t freed = 0;
        for (const raw_cell& v : victims_) {
            freed += cells_of(v.begin, v.end);
        }
        ensure_capacity(used_cells_ - freed + (added != nullptr ? cells_of(added->begin, added->end) : 0));
        plan_removal();

        table& t = *current_;
        write_begin();
        for (const plan& p : plans_) {
            for (std::size_t n = 0; n < p.length; ++n) {
                store_cell(t, (p.start + n) & t.mask, plan_cells_[p.first + n]);
            }
        }
        for (const raw_cell& v : victims_) {
            account(v, false);
        }
        if (added != nullptr) {
            place(t, *added);
            account(*added, true);
        }
        publish_levels();
        write_end();
    }

    void account(const raw_cell& c, bool added) noexcept {
        const unsigned k = level_of(c.end - c.begin);
        const std::size_t cells = cells_of(c.begin, c.end);
        if (added) {
            ++size_;
            used_cells_ += cells;
            ++level_objects_[k];
            wmask_ |= std::uint64_t{1} << k;
        } else {
            --size_;
            used_cells_ -= cells;
            if (--level_objects_[k] == 0) {
                wmask_ &= ~(std::uint64_t{1} << k);
            }
        }
    }

    // Plans the removal of every cell of victims_: each run (maximal block of occupied cells) that holds one is
    // rebuilt without them. Cells carry no key, but a run holds exactly one cell of object q for each granule of q
    // whose home lies in the run, so the run's homes can be listed from its objects; placing them in home order,
    // each at its home or right after the previous one, is linear probing's own layout and stays within the run.
    void plan_removal() {
        plans_.clear();
        plan_cells_.clear();
        starts_.clear();
        if (victims_.empty()) {
            return;
        }
        const table& t = *current_;
        for (const raw_cell& v : victims_) {
            const unsigned k = level_of(v.end - v.begin);
            const unsigned s = shift(k);
            for (std::uint64_t g = v.begin >> s; g <= (v.end - 1) >> s; ++g) {
                std::size_t i = home_cell(t, k, g);
                assert(occupied(t, i));
                while (occupied(t, (i - 1) & t.mask)) {
                    i = (i - 1) & t.mask;
                }
                starts_.push_back(i);
            }
        }
        std::sort(starts_.begin(), starts_.end());
        starts_.erase(std::unique(starts_.begin(), starts_.end()), starts_.end());

        for (const std::size_t start : starts_) {
            std::size_t length = 0;
            scratch_cells_.clear();
            for (std::size_t i = start; occupied(t, i); i = (i + 1) & t.mask) {
                ++length;
                const raw_cell c = load_cell(t, i);
                if (!is_victim(c.begin)) {
                    scratch_cells_.push_back(c);
                }
            }
            sort_unique(scratch_cells_); // one entry per surviving object of the run
            homed_.clear();
            for (std::size_t index = 0; index < scratch_cells_.size(); ++index) {
                const raw_cell& c = scratch_cells_[index];
                const unsigned k = level_of(c.end - c.begin);
                const unsigned s = shift(k);
                for (std::uint64_t g = c.begin >> s; g <= (c.end - 1) >> s; ++g) {
                    const std::size_t offset = (home_cell(t, k, g) - start) & t.mask;
                    if (offset < length) {
                        homed_.push_back({offset, index});
                    }
                }
            }
            std::sort(homed_.begin(), homed_.end(),
                      [](const homed& x, const homed& y) { return x.offset < y.offset; });
            const std::size_t first = plan_cells_.size();
            plan_cells_.resize(first + length);
            std::size_t position = 0;
            for (const homed& h : homed_) {
                position = std::max(position, h.offset);
                assert(position < length);
                plan_cells_[first + position] = scratch_cells_[h.index];
                ++position;
            }
            plans_.push_back({start, length, first});
        }
    }

    // The objects erase_in_place takes: those of at most this many cells (all but the largest of a level).
    static constexpr std::uint64_t in_place_granules = 4;

    // Removes the object v (a free: the common update) without planning: each of its cells is deleted by backward
    // shift (Knuth's algorithm R), every later cell of the run moving back into the hole unless its home lies
    // between the hole and it. That needs each such cell's home, which a cell (it carries no key) tells only when
    // exactly one granule of its object has its home in the run up to the cell. When some cell of the runs
    // involved does not (an object with two granules homed in one run: rare), or v has many cells, nothing changes
    // and the answer is false: plan_removal handles every case. No allocation; one update, as commit's.
    bool erase_in_place(const raw_cell& v) noexcept {
        table& t = *current_;
        const unsigned k = level_of(v.end - v.begin);
        const unsigned s = shift(k);
        const std::uint64_t first = v.begin >> s;
        const std::uint64_t granules = ((v.end - 1) >> s) - first + 1;
        if (granules > in_place_granules) {
            return false;
        }
        std::array<std::size_t, in_place_granules> run_starts{};
        for (std::uint64_t n = 0; n < granules; ++n) {
            std::size_t start = home_cell(t, k, first + n);
            while (occupied(t, (start - 1) & t.mask)) {
                start = (start - 1) & t.mask;
            }
            run_starts[n] = start;
            for (std::size_t i = start; occupied(t, i); i = (i + 1) & t.mask) {
                if (home_in_run(t, load_cell(t, i), start, i) == no_home) {
                    return false;
                }
            }
        }
        write_begin();
        for (std::uint64_t n = 0; n < granules; ++n) {
            std::size_t hole = home_cell(t, k, first + n);
            while (begin_at(t, hole) != v.begin) { // the granule's cell: reachable from its home, alone in its run
                hole = (hole + 1) & t.mask;
            }
            for (std::size_t j = (hole + 1) & t.mask; occupied(t, j); j = (j + 1) & t.mask) {
                const raw_cell c = load_cell(t, j);
                // Cells only move back, and never before their home, so the home found in the whole original run
                // is still the only one.
                const std::size_t h = home_in_run(t, c, run_starts[n], j);
                if (((j - h) & t.mask) < ((j - hole) & t.mask)) {
                    continue; // its home lies in (hole, j]: it must stay past the hole
                }
                store_cell(t, hole, c);
                hole = j;
            }
            store_cell(t, hole, raw_cell{});
        }
        account(v, false);
        publish_levels();
        write_end();
        return true;
    }

    static constexpr std::size_t no_home = std::numeric_limits<std::size_t>::max();

    // The home of cell c at `position` in the run that starts at `start`: that of the one granule of c's object
    // whose home lies in [start, position]; no_home when several do (an object's cells are identical, so which
    // granule this one stands for is then unknown).
    [[nodiscard]] std::size_t home_in_run(const table& t, const raw_cell& c, std::size_t start,
                                          std::size_t position) const noexcept {
        const unsigned k = level_of(c.end - c.begin);
        const unsigned s = shift(k);
        const std::size_t span = (position - start) & t.mask;
        std::size_t found = no_home;
        for (std::uint64_t g = c.begin >> s; g <= (c.end - 1) >> s; ++g) {
            const std::size_t h = home_cell(t, k, g);
            if (((h - start) & t.mask) <= span) {
                if (found != no_home) {
                    return no_home;
                }
                found = h;
            }
        }
        return found;
    }

    // Grows the table (doubling) until `cells` cells fit under the load limit. The new table is filled while
    // unpublished, then swapped in; the old one is retired, not freed.
    void ensure_capacity(std::size_t cells) {
        std::size_t capacity = current_->mask + 1;
        if (cells <= load_limit(capacity)) {
            return;
        }
        while (cells > load_limit(capacity)) {
            capacity *= 2;
        }
        auto next = std::make_unique<table>(capacity, config_.advise_large_table);
        for_each_object(*current_, [&](const raw_cell& c) { place(*next, c); });
        retired_.reserve(retired_.size() + 1);
        write_begin();
        published_.store(next.get(), std::memory_order_release);
        write_end();
        retired_.push_back(std::move(current_));
        current_ = std::move(next);
    }

    // Inside an update: tells readers which levels hold objects (wmask_).
    void publish_levels() noexcept {
        level_mask_.store(wmask_, interval_map_detail::data_store);
        first_key_.store(wmask_ == 0 ? 0 : level_keys_[std::countr_zero(wmask_)], interval_map_detail::data_store);
    }

    void write_begin() noexcept {
        gen_.store(wgen_ + 1, std::memory_order_relaxed);
        if constexpr (interval_map_detail::use_fences) {
            std::atomic_thread_fence(std::memory_order_release);
        }
    }

    void write_end() noexcept {
        wgen_ += 2;
        gen_.store(wgen_, std::memory_order_release);
    }

    // Read by readers (one cache line).
    alignas(64) std::atomic<std::uint64_t> gen_{0}; // seqlock generation; odd while an update is in progress
    std::atomic<const table*> published_{nullptr}; // current_, for readers
    std::atomic<std::uint64_t> level_mask_{0}; // bit k set when level k holds objects
    std::atomic<std::uint64_t> first_key_{0};  // key of the lowest level that holds objects; 0 if none
    const unsigned granule_shift_;
    const unsigned level_step_;
    const unsigned read_attempts_;
    std::array<std::uint64_t, 64> level_keys_{}; // level_key(k, shift(k)); set by the constructor

    // Writer only.
    alignas(64) interval_map_config config_;
    unsigned levels_ = 0;
    std::uint64_t wgen_ = 0;
    std::uint64_t wmask_ = 0;
    std::unique_ptr<table> current_;
    std::vector<std::unique_ptr<table>> retired_;
    std::size_t size_ = 0;
    std::size_t used_cells_ = 0;
    std::array<std::size_t, 64> level_objects_{};
    // Scratch space kept between updates.
    std::vector<raw_cell> victims_;
    std::vector<raw_cell> scratch_cells_;
    std::vector<raw_cell> plan_cells_;
    std::vector<std::size_t> starts_;
    std::vector<homed> homed_;
    std::vector<plan> plans_;
};

// The profiler's map: object address ranges to allocation context, type and serial.
using object_map = interval_map<object_info>;

} // namespace ojx
