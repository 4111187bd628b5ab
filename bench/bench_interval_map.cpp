// Lookup speed and memory of ojx::interval_map against a std::map<address, entry> + upper_bound baseline.
//
// Heaps of 1 K, 100 K and 1 M live objects of 1–4 KiB (the objects JVM agents track), laid out contiguously with
// 1–64 byte random gaps; lookups of precomputed random addresses, 90 % inside live objects and 10 % in gaps.
// Reported: time per lookup (ns_per_lookup; items_per_second is lookups), and bytes of memory per object.
//
// The *_lookup benchmarks issue independent lookups, so the processor overlaps their cache misses (throughput). The
// *_dependent ones make each address depend on the previous answer, so every lookup pays its full miss latency, as
// a lone lookup in a signal handler does.
#include "ojx/interval_map.hpp"

#include <benchmark/benchmark.h>

#include <bit>

#include <cstdint>
#include <map>
#include <memory>
#include <new>
#include <random>
#include <utility>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <sys/mman.h>

namespace {

struct object_range {
    ojx::address begin;
    ojx::address end;
};

struct heap {
    std::vector<object_range> objects;
    std::vector<ojx::address> probes; // lookup addresses, in random order
};

const heap& make_heap(std::size_t count) {
    static std::map<std::size_t, std::unique_ptr<heap>> cache;
    auto& slot = cache[count];
    if (!slot) {
        slot = std::make_unique<heap>();
        std::mt19937_64 rng(count);
        ojx::address next = 0x7F0000000000;
        slot->objects.reserve(count);
        for (std::size_t i = 0; i < count; ++i) {
            const std::uint64_t size = 1024 + rng() % (3 * 1024 + 1);
            slot->objects.push_back({next, next + size});
            next += size + 1 + rng() % 64;
        }
        slot->probes.resize(std::size_t{1} << 20);
        for (auto& a : slot->probes) {
            const std::size_t i = rng() % count;
            const object_range& o = slot->objects[i];
            const ojx::address gap_end = i + 1 < count ? slot->objects[i + 1].begin : next;
            a = rng() % 10 == 0 ? o.end + rng() % (gap_end - o.end) : o.begin + rng() % (o.end - o.begin);
        }
    }
    return *slot;
}

std::size_t heap_bytes() {
#if defined(__GLIBC__)
    const struct mallinfo2 info = ::mallinfo2();
    return info.uordblks + info.hblkhd;
#else
    return 0;
#endif
}

ojx::object_info info_of(std::size_t i) {
    return ojx::object_info{static_cast<ojx::context_id>(i % 1000), static_cast<ojx::type_id>(i % 77), i};
}

struct built_map {
    std::unique_ptr<ojx::object_map> map;
    std::size_t bytes_with_retired = 0;
};

// What a Linux backend passes to the map: huge pages for large tables (this machine's THP mode is "madvise").
void advise_huge_pages(void* memory, std::size_t bytes) { (void)::madvise(memory, bytes, MADV_HUGEPAGE); }

const built_map& make_map(std::size_t count, unsigned granule_shift) {
    static std::map<std::pair<std::size_t, unsigned>, built_map> cache;
    built_map& slot = cache[{count, granule_shift}];
    if (!slot.map) {
        const heap& h = make_heap(count);
        slot.map = std::make_unique<ojx::object_map>(ojx::interval_map_config{.granule_shift = granule_shift,
                                                                                .advise_large_table = advise_huge_pages});
        for (std::size_t i = 0; i < h.objects.size(); ++i) {
            slot.map->insert(h.objects[i].begin, h.objects[i].end, info_of(i));
        }
        slot.bytes_with_retired = slot.map->memory_bytes();
        slot.map->reclaim_retired(); // no reader is running
    }
    return slot;
}

void interval_map_lookup(benchmark::State& state, unsigned granule_shift) {
    const auto count = static_cast<std::size_t>(state.range(0));
    const heap& h = make_heap(count);
    const built_map& built = make_map(count, granule_shift);
    const ojx::object_map& map = *built.map;
    const ojx::address* const probes = h.probes.data();
    const std::size_t n = h.probes.size();
    std::uint64_t found = 0;
    // All the probes per batch, in a plain loop: the harness adds an increment and a compare per lookup.
    while (state.KeepRunningBatch(static_cast<benchmark::IterationCount>(n))) {
        for (std::size_t i = 0; i < n; ++i) {
            const auto r = map.lookup(probes[i]);
            found += r.value.payload.serial; // zero when absent: no branch on the answer
        }
    }
    benchmark::DoNotOptimize(found);
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
    state.counters["bytes_per_object"] = static_cast<double>(map.memory_bytes()) / static_cast<double>(count);
    state.counters["bytes_per_object_with_retired"] =
        static_cast<double>(built.bytes_with_retired) / static_cast<double>(count);
    state.counters["cells_per_object"] = static_cast<double>(map.cells_in_use()) / static_cast<double>(count);
    state.counters["ns_per_lookup"] = benchmark::Counter(static_cast<double>(state.iterations()),
                                                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// Each lookup's address depends on the previous answer (through a data dependency that is always zero).
void BM_interval_map_lookup_dependent(benchmark::State& state) {
    const auto count = static_cast<std::size_t>(state.range(0));
    const heap& h = make_heap(count);
    const ojx::object_map& map = *make_map(count, ojx::interval_map_config{}.granule_shift).map;
    const std::size_t mask = h.probes.size() - 1;
    std::size_t i = 0;
    std::uint64_t carry = 0;
    for (auto _ : state) {
        const auto r = map.lookup(h.probes[(i + carry) & mask]);
        carry = r.value.payload.serial >> 63; // always 0, but not known to be
        ++i;
    }
    benchmark::DoNotOptimize(carry);
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
    state.counters["ns_per_lookup"] = benchmark::Counter(static_cast<double>(state.iterations()),
                                                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_interval_map_lookup(benchmark::State& state) { interval_map_lookup(state, ojx::interval_map_config{}.granule_shift); }
void BM_interval_map_lookup_granule_1k(benchmark::State& state) { interval_map_lookup(state, 10); }

struct built_std_map {
    std::map<ojx::address, ojx::object_map::entry> map;
    std::size_t bytes = 0;
};

const built_std_map& make_std_map(std::size_t count) {
    static std::map<std::size_t, std::unique_ptr<built_std_map>> cache;
    auto& slot = cache[count];
    if (!slot) {
        const heap& h = make_heap(count);
        const std::size_t before = heap_bytes();
        slot = std::make_unique<built_std_map>();
        for (std::size_t i = 0; i < h.objects.size(); ++i) {
            slot->map.emplace(h.objects[i].begin,
                              ojx::object_map::entry{h.objects[i].begin, h.objects[i].end, info_of(i)});
        }
        slot->bytes = heap_bytes() - before;
    }
    return *slot;
}

std::uint64_t std_map_serial(const std::map<ojx::address, ojx::object_map::entry>& map, ojx::address a) {
    auto it = map.upper_bound(a);
    if (it != map.begin()) {
        --it;
        if (a < it->second.end) {
            return it->second.payload.serial;
        }
    }
    return 0;
}

void BM_std_map_lookup(benchmark::State& state) {
    const auto count = static_cast<std::size_t>(state.range(0));
    const heap& h = make_heap(count);
    const built_std_map& built = make_std_map(count);
    const std::size_t mask = h.probes.size() - 1;
    std::size_t i = 0;
    std::uint64_t found = 0;
    for (auto _ : state) {
        found += std_map_serial(built.map, h.probes[i & mask]);
        ++i;
    }
    benchmark::DoNotOptimize(found);
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
    state.counters["bytes_per_object"] = static_cast<double>(built.bytes) / static_cast<double>(count);
    state.counters["ns_per_lookup"] = benchmark::Counter(static_cast<double>(state.iterations()),
                                                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_std_map_lookup_dependent(benchmark::State& state) {
    const auto count = static_cast<std::size_t>(state.range(0));
    const heap& h = make_heap(count);
    const built_std_map& built = make_std_map(count);
    const std::size_t mask = h.probes.size() - 1;
    std::size_t i = 0;
    std::uint64_t carry = 0;
    for (auto _ : state) {
        carry = std_map_serial(built.map, h.probes[(i + carry) & mask]) >> 63;
        ++i;
    }
    benchmark::DoNotOptimize(carry);
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
    state.counters["ns_per_lookup"] = benchmark::Counter(static_cast<double>(state.iterations()),
                                                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// The floor under any hashed lookup of a table this size: per probe address, the same multiply-shift hash of its
// 4 KiB granule and one 8-byte read from the 64-byte line it selects, in a table of as many bytes as the
// interval map's (huge pages advised, every page touched), no comparison. What a lookup costs beyond this is its
// own work; this is what the memory system charges for one random line.
//
// With Terms > 0, each read is followed by 2·Terms instructions that depend on the word read but not on each other
// (an add and an xor per term), as the comparisons and the copy of a lookup depend on the line it loaded. Those wait
// in the processor's scheduler until the line arrives, and the scheduler is small: the more of them each lookup
// has, the fewer lookups can have their misses in flight at once. This measures what each one costs.
template <int Terms>
void BM_memory_floor_one_random_line(benchmark::State& state) {
    const auto count = static_cast<std::size_t>(state.range(0));
    const heap& h = make_heap(count);
    const std::size_t bytes = std::bit_ceil(make_map(count, ojx::interval_map_config{}.granule_shift).map->cell_capacity() *
                                            (sizeof(ojx::object_map::entry)));
    const std::size_t lines = bytes / 64;
    const auto shift = static_cast<unsigned>(64 - std::countr_zero(lines));
    auto* table = static_cast<std::uint64_t*>(::operator new(bytes, std::align_val_t{2 << 20}));
    advise_huge_pages(table, bytes);
    for (std::size_t w = 0; w < bytes / 8; ++w) table[w] = w;
    const std::size_t mask = h.probes.size() - 1;
    std::size_t i = 0;
    std::uint64_t sum = 0;
    for (auto _ : state) {
        const std::uint64_t line = ((h.probes[i & mask] >> 12) * 0x9E3779B97F4A7C15ULL) >> shift;
        const std::uint64_t word = table[line * 8];
        std::uint64_t mixed = word;
        [&]<int... k>(std::integer_sequence<int, k...>) {
            ((mixed ^= [](std::uint64_t term) {
                 benchmark::DoNotOptimize(term); // one add per term, kept apart from the others
                 return term;
             }(word + k)),
             ...);
        }(std::make_integer_sequence<int, Terms>{});
        sum += mixed;
        ++i;
    }
    benchmark::DoNotOptimize(sum);
    ::operator delete(table, bytes, std::align_val_t{2 << 20});
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
    state.counters["table_bytes"] = static_cast<double>(bytes);
    state.counters["dependent_instructions"] = 2 * Terms;
    state.counters["ns_per_lookup"] = benchmark::Counter(static_cast<double>(state.iterations()),
                                                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// Writer side: one allocation (insert) and one free (erase) per iteration in a heap of 100 K live objects.
void BM_interval_map_insert_erase(benchmark::State& state) {
    const auto count = static_cast<std::size_t>(state.range(0));
    const heap& h = make_heap(count);
    ojx::object_map map;
    for (std::size_t i = 0; i < count; ++i) {
        map.insert(h.objects[i].begin, h.objects[i].end, info_of(i));
    }
    std::size_t i = 0;
    for (auto _ : state) {
        const object_range& o = h.objects[i % count];
        map.erase(o.begin);
        map.insert(o.begin, o.end, info_of(i));
        ++i;
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * 2);
}

} // namespace

BENCHMARK(BM_interval_map_lookup)->Arg(1000)->Arg(100'000)->Arg(1'000'000);
BENCHMARK(BM_interval_map_lookup_granule_1k)->Arg(1000)->Arg(100'000)->Arg(1'000'000);
BENCHMARK(BM_std_map_lookup)->Arg(1000)->Arg(100'000)->Arg(1'000'000);
BENCHMARK_TEMPLATE(BM_memory_floor_one_random_line, 0)->Arg(1000)->Arg(100'000)->Arg(1'000'000);
BENCHMARK_TEMPLATE(BM_memory_floor_one_random_line, 4)->Arg(1'000'000);
BENCHMARK_TEMPLATE(BM_memory_floor_one_random_line, 8)->Arg(1'000'000);
BENCHMARK_TEMPLATE(BM_memory_floor_one_random_line, 12)->Arg(1'000'000);
BENCHMARK_TEMPLATE(BM_memory_floor_one_random_line, 16)->Arg(1'000'000);
BENCHMARK(BM_interval_map_lookup_dependent)->Arg(1000)->Arg(100'000)->Arg(1'000'000);
BENCHMARK(BM_std_map_lookup_dependent)->Arg(1000)->Arg(100'000)->Arg(1'000'000);
BENCHMARK(BM_interval_map_insert_erase)->Arg(100'000);
