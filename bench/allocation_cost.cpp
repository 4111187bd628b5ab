// What one tracked allocation and free cost: a single thread keeps `--live` blocks of 1–4 KiB and replaces a
// random one `--pairs` times per round (a free and a malloc of blocks at or above the native agent's default
// threshold), each malloc from one of `--sites` call sites `--depth` frames deep, as a program's allocations are.
// `--evict KIB` streams through that much memory between two replacements, so that the allocator's and the
// agent's data are out of the caches as they are in a real program (overhead_workload reads 4 MiB between two).
// Each replacement is timed on its own with the steady clock (≈ 27 ns a reading here, in every configuration
// alike), so the streaming stays out of the figure; a round's figure is the mean of its replacements without the
// slowest 0.5 % (a timer interrupt or a preemption lands in ≈ 1 in 4 000 windows of a microsecond and would add
// tens of microseconds). It prints the median over `--rounds` rounds. Run under LD_PRELOAD=libojxpreload.so and
// without it, the difference is what the agent adds per tracked malloc+free (bench/allocation_cost.py does that).
//
//   allocation_cost [--pairs N] [--rounds N] [--live N] [--depth N] [--sites N] [--evict KIB]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string_view>
#include <vector>

namespace {

struct settings {
    long pairs = 20000;
    int rounds = 15;
    std::size_t live = 256;
    int depth = 12;
    unsigned sites = 4;
    std::size_t evict_kib = 0;
};

// The allocation sites: one noinline function each, so that each has its own return address.
template <unsigned site>
[[gnu::noinline]] void* allocate_at(std::size_t size) {
    void* block = std::malloc(size);
    std::memset(block, static_cast<int>(site), 64); // touched, as a program touches what it allocates
    return block;
}
using allocate_function = void* (*)(std::size_t);
constexpr allocate_function sites_table[] = {allocate_at<0>, allocate_at<1>, allocate_at<2>, allocate_at<3>,
                                             allocate_at<4>, allocate_at<5>, allocate_at<6>, allocate_at<7>};

// `depth` frames of calls above the allocation site (noinline, and not a tail call: the result is used).
[[gnu::noinline]] void* allocate_below(int depth, unsigned site, std::size_t size) {
    if (depth <= 0) return sites_table[site](size);
    void* block = allocate_below(depth - 1, site, size);
    __asm__ __volatile__("" : : "r"(block) : "memory");
    return block;
}

std::uint64_t stream(const std::vector<std::uint64_t>& memory) {
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < memory.size(); i += 8) sum += memory[i]; // one word a cache line
    return sum;
}

bool parse(int argc, char** argv, settings& s) {
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string_view name = argv[i];
        const long value = std::strtol(argv[i + 1], nullptr, 10);
        if (value < 0) return false;
        if (name == "--pairs") s.pairs = value;
        else if (name == "--rounds") s.rounds = static_cast<int>(value);
        else if (name == "--live") s.live = static_cast<std::size_t>(value);
        else if (name == "--depth") s.depth = static_cast<int>(value);
        else if (name == "--sites") s.sites = static_cast<unsigned>(value);
        else if (name == "--evict") s.evict_kib = static_cast<std::size_t>(value);
        else return false;
    }
    return argc % 2 == 1 && s.pairs > 0 && s.rounds > 0 && s.live > 0 && s.sites >= 1 &&
           s.sites <= std::size(sites_table);
}

} // namespace

int main(int argc, char** argv) {
    settings s;
    if (!parse(argc, argv, s)) {
        std::fprintf(stderr, "usage: allocation_cost [--pairs N] [--rounds N] [--live N] [--depth N] [--sites 1-8] "
                             "[--evict KIB]\n");
        return 2;
    }
    std::mt19937_64 random(1); // drawn outside the timed windows
    const auto size_of_next = [&] { return 1024 + random() % 3073; }; // 1–4 KiB
    std::vector<void*> live(s.live);
    for (void*& block : live)
        block = allocate_below(s.depth, static_cast<unsigned>(random() % s.sites), size_of_next());
    std::vector<std::uint64_t> evict(s.evict_kib * 1024 / sizeof(std::uint64_t), 1);
    std::uint64_t sink = 0;
    std::vector<double> per_pair;
    std::vector<double> durations(static_cast<std::size_t>(s.pairs));
    for (int round = -1; round < s.rounds; ++round) { // round -1 warms up
        for (double& duration : durations) {
            if (!evict.empty()) sink += stream(evict);
            void*& victim = live[random() % s.live];
            const unsigned site = static_cast<unsigned>(random() % s.sites);
            const std::size_t size = size_of_next();
            const auto start = std::chrono::steady_clock::now();
            std::free(victim);
            victim = allocate_below(s.depth, site, size);
            duration = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
        }
        if (round < 0) continue;
        const auto kept = durations.size() - durations.size() / 200;
        std::nth_element(durations.begin(), durations.begin() + static_cast<std::ptrdiff_t>(kept), durations.end());
        double sum = 0;
        for (std::size_t i = 0; i < kept; ++i) sum += durations[i];
        per_pair.push_back(sum / static_cast<double>(kept));
    }
    for (void* block : live) std::free(block);
    std::sort(per_pair.begin(), per_pair.end());
    std::printf("%.1f ns per malloc+free (median of %d rounds of %ld; min %.1f, max %.1f)%s\n",
                per_pair[per_pair.size() / 2], s.rounds, s.pairs, per_pair.front(), per_pair.back(),
                sink == 42 ? " " : "");
    return 0;
}
