// Address → object lookup for the sampling profiler. Every tracked object's address range [begin, end) is kept
// here with a small payload (typically ojx::object_info); on each sampled memory access a signal handler, on
// whichever thread took the sample, asks which object encloses the sampled address.
//
// Concurrency contract
//  * Readers: lookup(), lookup_many() and prefetch() are signal-safe. They take no lock, allocate nothing, make no
//    system call and run in bounded time, on any number of threads at once, including in a signal handler that
//    interrupted the writer. lookup() never returns a torn record: an answer is returned only if no update
//    overlapped the read (one seqlock generation for the whole map). If updates keep overlapping the read, or the
//    reader interrupted the writer in the middle of an update, lookup() gives up after config.read_attempts tries
//    and answers `busy`. lookup_many() is lookup() per address, with the same protocol and the same answers (each
//    validated on its own, so an update between two addresses of one batch is seen by the later ones); prefetch()
//    stores nothing and answers nothing.
//  * Writer: one thread at a time (the caller serializes allocation, free and GC events) calls everything else:
//    insert, erase, relocate, clear, erase_if, for_each, size, memory_bytes, validate, reclaim_retired. Those may
//    allocate and may throw std::bad_alloc; a throwing update leaves the map unchanged.
//  * Lifetime: the map must outlive every reader. Tables replaced by growth stay allocated ("retired") until the
//    destructor or reclaim_retired(), because a reader may still be scanning them. The map is neither copyable nor
//    movable: readers in signal handlers hold its address.
//
// Layout. An open-addressing table (linear probing) of cells {begin, end, payload words}, each word a
// std::atomic<std::uint64_t> accessed with relaxed loads and stores inside the seqlock. Objects are filed by size
// in levels of granules: level k has granules of 2^(granule_shift + k·level_step) bytes, and an object of size sz
// goes to the lowest level k with sz <= 2^(granule_shift + (k+1)·level_step) (the top level takes the rest), so it
// overlaps at most 2^level_step + 1 granules there; it takes one cell in every granule of its level that it
// overlaps. A cell carries no key: a lookup of address a at level k hashes (k, a >> shift_k) to a home cell and
// scans to the first empty cell, answering with the first cell whose range contains a (objects never overlap, so
// any containing cell is the answer). Only levels that hold objects are probed; with objects of similar sizes that
// is one level. Homes are even cells of a 64-byte-aligned table, so a probe starts with one cache line holding two
// cells, examined without data-dependent branches; the hash is multiply-shift (Fibonacci) hashing, which spreads the
// consecutive granules of a contiguous heap evenly, so most lookups end in that first line. Deletion compacts the
// affected runs toward their homes (backward shift, no tombstones).
//
// Latency and throughput. A lookup in a table larger than the caches costs one DRAM access to its home line
// (≈ 200 ns on this project's VMs), and independent lookups overlap only a few of those: each lookup's work
// depends on its line and fills the processor's window while the miss is outstanding. A caller that knows its
// addresses in advance gets the misses of many lookups in flight at once, either with lookup_many (groups of
// lookup_group addresses, all their lines prefetched before the first is resolved) or by calling prefetch(a) a
// dozen or more lookups before lookup(a). That raises throughput (bench/RESULTS.md); a lone lookup, as in a signal
// handler with one sampled address, still pays the full latency.
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
#include <span>
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
    // default threshold) this measured as fast as 1 KiB granules at half the memory (bench/RESULTS.md).
    unsigned granule_shift = 12;
    // Each level's granule is 2^level_step times the previous one's (1..12). An object takes at most
    // 2^level_step + 1 cells.
    unsigned level_step = 6;
    // Growth threshold, 10..90.
    unsigned max_load_percent = 50;
    // How many times a reader retries before answering `busy` (at least 1).
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

// Hides a value from the optimizer, so that it is computed as written (here: without branches).
inline void opaque(std::uint64_t& value) noexcept {
#if defined(__GNUC__)
    __asm__("" : "+r"(value));
#else
    (void)value;
#endif
}

// Asks for the cache line holding p without waiting for it. Never faults, whatever p is. On x86 written as an
// instruction the compiler must keep: GCC 12 deletes a loop whose only effect is __builtin_prefetch.
inline void prefetch_line(const void* p) noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __asm__ __volatile__("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#elif defined(__GNUC__)
    __builtin_prefetch(p);
#else
    (void)p;
#endif
}

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

// Home cell of granule g of level k in a table of 2^(64 - hash_shift) cells: Fibonacci (multiply-shift)
// hashing, which spreads runs of consecutive granules evenly. Homes are even cells.
inline std::size_t home(unsigned level, std::uint64_t granule, unsigned hash_shift) noexcept {
    const std::uint64_t x = (granule + std::uint64_t{level} * 0xD6E8FEB86659FD93ULL) * 0x9E3779B97F4A7C15ULL;
    return static_cast<std::size_t>(x >> hash_shift) & ~std::size_t{1};
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
        std::size_t cells = std::bit_ceil(std::max<std::size_t>(config.initial_capacity, 16));
        current_ = std::make_unique<table>(cells, config_.advise_large_table);
        table_.store(current_.get(), std::memory_order_release);
    }

    // Call only when no lookup can be in flight.
    ~interval_map() = default;

    interval_map(const interval_map&) = delete;
    interval_map& operator=(const interval_map&) = delete;
    interval_map(interval_map&&) = delete;
    interval_map& operator=(interval_map&&) = delete;

    // The object enclosing address a. Signal-safe: no lock, no allocation, no system call, bounded time (at most
    // read_attempts passes over the probed runs); any thread, any time, concurrently with the writer.
    [[nodiscard]] OJX_INTERVAL_MAP_INLINE lookup_result lookup(address a) const noexcept {
        lookup_result result{lookup_status::absent, empty_entry()}; // built in place in the return slot
        if (!try_read(a, result)) [[unlikely]] {
            retry(a, result);
        }
        return result;
    }

    // How many addresses lookup_many prefetches at a time before resolving them: enough lines in flight to cover a
    // DRAM access (≈ 200 ns here); 16 measured slower at 1 M objects, 64 no faster (bench/RESULTS.md).
    static constexpr std::size_t lookup_group = 32;

    // Starts loading the cache lines lookup(a) reads first and returns at once: at every level that holds objects,
    // the home line, and the line after it, which the quarter or so of lookups whose run continues past the home
    // line read next. A hint only: it answers nothing and changes nothing. Issued a dozen or more lookups before
    // lookup(a), it lets the memory latencies of successive lookups overlap. Signal-safe: no lock, no allocation,
    // no store, bounded time; it cannot fault (a stale table it may name stays allocated while readers may run,
    // and a prefetch of any address is harmless).
    OJX_INTERVAL_MAP_INLINE void prefetch(address a) const noexcept {
        const table* t = table_.load(std::memory_order_acquire);
        for (std::uint64_t levels = level_mask_.load(interval_map_detail::data_load); levels != 0;
             levels &= levels - 1) {
            const auto k = static_cast<unsigned>(std::countr_zero(levels));
            const std::size_t i = interval_map_detail::home(k, a >> shift(k), t->hash_shift);
            interval_map_detail::prefetch_line(t->cell(i));
            interval_map_detail::prefetch_line(t->cell((i + 2) & t->mask));
        }
    }

    // out[i] = lookup(addresses[i]) for every i: each answer is a plain lookup, validated by the seqlock on its own
    // exactly as lookup's is, but the addresses go in groups of lookup_group whose lines are all prefetched before
    // the first of them is resolved. The misses of a whole group are then in flight at once, which a loop of plain
    // lookups cannot arrange (each lookup's dependent work fills the processor's window while its own miss is
    // outstanding). For a caller that knows several addresses before it needs the answers. out must have room for
    // every address; only the first addresses.size() entries are written. Signal-safe, as lookup is.
    void lookup_many(std::span<const address> addresses, std::span<lookup_result> out) const noexcept {
        assert(out.size() >= addresses.size());
        const std::size_t n = std::min(addresses.size(), out.size());
        for (std::size_t first = 0; first < n; first += lookup_group) {
            const std::size_t last = std::min(n, first + lookup_group);
            for (std::size_t i = first; i < last; ++i) {
                prefetch(addresses[i]);
            }
            for (std::size_t i = first; i < last; ++i) {
                out[i] = lookup(addresses[i]);
            }
        }
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
        level_mask_.store(0, interval_map_detail::data_store);
        write_end();
        // Readers that overlapped the update above fail validation; this fence makes any of them that sees a wiped
        // cell also see the new generation (readers that start later see no level and read no cell).
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

    // Writer side. Removes every object for which pred(const entry&) is true (e.g. every object in a collected
    // region); returns how many. Each removal is its own short update, so readers are never held off for long.
    template <class Predicate>
    std::size_t erase_if(Predicate pred) {
        std::vector<raw_cell> doomed;
        for_each_object(*current_, [&](const raw_cell& cell) {
            const entry e = to_entry(cell);
            if (pred(e)) {
                doomed.push_back(cell);
            }
        });
        for (const raw_cell& cell : doomed) {
            victims_.assign(1, cell);
            commit(nullptr);
        }
        return doomed.size();
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
                if (!run_contains(t, interval_map_detail::home(k, g, t.hash_shift), b)) {
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
        return mask == wmask_ && mask == level_mask_.load(std::memory_order_relaxed);
    }

private:
    static constexpr std::size_t payload_words = sizeof(Payload) / 8;
    static constexpr std::size_t cell_words = 2 + payload_words;

    // One table of cells. Word layout of cell i: [begin, end, payload...]; end == 0 marks an empty cell (no object
    // ends at address 0). Never modified after it stops being current.
    struct table {
        std::size_t mask;      // cells - 1
        unsigned hash_shift;   // 64 - log2(cells)
        std::size_t bytes;     // of the word array
        std::size_t alignment; // of the word array
        std::atomic<std::uint64_t>* words;

        table(std::size_t cells, void (*advise_large)(void*, std::size_t))
            : mask(cells - 1), hash_shift(64U - static_cast<unsigned>(std::countr_zero(cells))),
              bytes(cells * cell_words * sizeof(std::uint64_t)),
              alignment(bytes >= (std::size_t{4} << 20) ? (std::size_t{2} << 20) : 64) {
            void* memory = ::operator new(bytes, std::align_val_t{alignment});
            if (alignment > 64 && advise_large != nullptr) advise_large(memory, bytes);
            words = static_cast<std::atomic<std::uint64_t>*>(memory);
            std::uninitialized_value_construct_n(words, cells * cell_words);
        }
        ~table() { ::operator delete(words, bytes, std::align_val_t{alignment}); }
        table(const table&) = delete;
        table& operator=(const table&) = delete;

        [[nodiscard]] const std::atomic<std::uint64_t>* cell(std::size_t i) const noexcept {
            return words + i * cell_words;
        }
        [[nodiscard]] std::atomic<std::uint64_t>* cell(std::size_t i) noexcept { return words + i * cell_words; }
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

    // Reader: one seqlock-validated pass. Signal-safe.
    OJX_INTERVAL_MAP_INLINE bool try_read(address a, lookup_result& result) const noexcept {
        const std::uint64_t g1 = gen_.load(std::memory_order_acquire);
        if ((g1 & 1U) != 0) {
            return false;
        }
        const table* t = table_.load(std::memory_order_acquire);
        probe(*t, level_mask_.load(interval_map_detail::data_load), a, result);
        if constexpr (interval_map_detail::use_fences) {
            std::atomic_thread_fence(std::memory_order_acquire);
        }
        return gen_.load(std::memory_order_relaxed) == g1;
    }

    // Reader: the first pass overlapped an update; back off and try again, a bounded number of times (the update
    // may belong to the very thread this signal handler interrupted). Signal-safe.
    OJX_INTERVAL_MAP_NOINLINE void retry(address a, lookup_result& result) const noexcept {
        for (unsigned attempt = 1; attempt < read_attempts_; ++attempt) {
            const unsigned spins = 1U << std::min(attempt - 1, 5U);
            for (unsigned i = 0; i < spins; ++i) {
                interval_map_detail::cpu_relax();
            }
            if (try_read(a, result)) {
                return;
            }
        }
        result.status = lookup_status::busy;
        result.value = empty_entry();
    }

    // Reader core. Signal-safe.
    //
    // Homes are even cells and tables are 64-byte aligned, so the home cell and the next one share a cache line
    // (with 32-byte cells). Both are examined without data-dependent branches: a containing cell among them is the
    // answer (objects never overlap, so it does not matter which run it belongs to), and an empty one ends the run.
    // Only the rare run that fills the whole line continues with a plain scan. Keeping the common path short and
    // free of mispredicted branches lets the processor overlap the cache misses of consecutive lookups.
    OJX_INTERVAL_MAP_INLINE void probe(const table& t, std::uint64_t levels, address a,
                                       lookup_result& out) const noexcept {
        using interval_map_detail::data_load;
        while (levels != 0) {
            const auto k = static_cast<unsigned>(std::countr_zero(levels));
            levels &= levels - 1;
            std::size_t i = interval_map_detail::home(k, a >> shift(k), t.hash_shift);
            const std::atomic<std::uint64_t>* c = t.cell(i); // cells i and i + 1 exist: i is even, the size even
            const std::uint64_t b0 = c[0].load(data_load);
            const std::uint64_t e0 = c[1].load(data_load);
            const std::uint64_t b1 = c[cell_words].load(data_load);
            const std::uint64_t e1 = c[cell_words + 1].load(data_load);
            // a - b < e - b  <=>  b <= a < e (for b < e; an empty cell, b = e = 0, contains nothing). Computed as
            // integers and laundered, so that the compiler makes one branch of it, not one per comparison.
            std::uint64_t hit0 = static_cast<std::uint64_t>(a - b0 < e0 - b0);
            std::uint64_t hits = hit0 | (static_cast<std::uint64_t>(a - b1 < e1 - b1) << 1);
            interval_map_detail::opaque(hits);
            if (hits != 0) [[likely]] {
                found_at(c + (hit0 ^ 1U) * cell_words, out); // the home cell if it contains a, else the next
                return;
            }
            if ((static_cast<unsigned>(e0 == 0) | static_cast<unsigned>(e1 == 0)) != 0) {
                continue; // the run from the home ended without a containing cell
            }
            i = (i + 2) & t.mask;
            // Bounded by the table size even if a concurrent update leaves no empty cell in view.
            for (std::size_t n = 2; n <= t.mask; ++n) {
                c = t.cell(i);
                const std::uint64_t e = c[1].load(data_load);
                if (e == 0) {
                    break;
                }
                const std::uint64_t b = c[0].load(data_load);
                if (b <= a && a < e) {
                    found_at(c, out);
                    return;
                }
                i = (i + 1) & t.mask;
            }
        }
        out.status = lookup_status::absent;
        out.value = empty_entry();
    }

    // Reader: the record in cell c (its line is already in the cache). Signal-safe.
    static OJX_INTERVAL_MAP_INLINE void found_at(const std::atomic<std::uint64_t>* c, lookup_result& out) noexcept {
        std::array<std::uint64_t, payload_words> words;
        for (std::size_t w = 0; w < payload_words; ++w) {
            words[w] = c[2 + w].load(interval_map_detail::data_load);
        }
        out.status = lookup_status::found;
        out.value.begin = c[0].load(interval_map_detail::data_load);
        out.value.end = c[1].load(interval_map_detail::data_load);
        out.value.payload = std::bit_cast<Payload>(words);
    }

    // ---- writer-side cell access (the writer is the only thread that stores, so it reads without the seqlock)

    static raw_cell load_cell(const table& t, std::size_t i) noexcept {
        const std::atomic<std::uint64_t>* c = t.cell(i);
        raw_cell r;
        r.begin = c[0].load(std::memory_order_relaxed);
        r.end = c[1].load(std::memory_order_relaxed);
        for (std::size_t w = 0; w < payload_words; ++w) {
            r.payload[w] = c[2 + w].load(std::memory_order_relaxed);
        }
        return r;
    }

    static void store_cell(table& t, std::size_t i, const raw_cell& r) noexcept {
        std::atomic<std::uint64_t>* c = t.cell(i);
        c[0].store(r.begin, interval_map_detail::data_store);
        c[1].store(r.end, interval_map_detail::data_store);
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
            std::size_t i = interval_map_detail::home(k, a >> shift(k), t.hash_shift);
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
            std::size_t j = interval_map_detail::home(k, c.begin >> shift(k), t.hash_shift);
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
            std::size_t i = interval_map_detail::home(k, g, t.hash_shift);
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
                    for (std::size_t i = interval_map_detail::home(k, g, t.hash_shift); occupied(t, i);
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
        level_mask_.store(wmask_, interval_map_detail::data_store);
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
                std::size_t i = interval_map_detail::home(k, g, t.hash_shift);
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
                    const std::size_t offset = (interval_map_detail::home(k, g, t.hash_shift) - start) & t.mask;
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
            std::size_t start = interval_map_detail::home(k, first + n, t.hash_shift);
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
            std::size_t hole = interval_map_detail::home(k, first + n, t.hash_shift);
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
        level_mask_.store(wmask_, interval_map_detail::data_store);
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
            const std::size_t h = interval_map_detail::home(k, g, t.hash_shift);
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
        table_.store(next.get(), std::memory_order_release);
        write_end();
        retired_.push_back(std::move(current_));
        current_ = std::move(next);
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
    std::atomic<const table*> table_{nullptr};
    std::atomic<std::uint64_t> level_mask_{0}; // bit k set when level k holds objects
    const unsigned granule_shift_;
    const unsigned level_step_;
    const unsigned read_attempts_;

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
