// The native agent's steady-state cost, measured inside one process so that a noisy machine cancels out.
//
// Whole-process measurements (bench/agent_overhead.py) compare separate runs, and on our shared VMs identical
// runs differ by ±5–15 %: a 2 % effect needs hundreds of runs. Here each thread does the same fixed work in three
// arms, in short phases whose order is shuffled every round, timed in the thread's own CPU time (which includes
// its signal handlers and the kernel's single-step and interrupt work on its behalf):
//
//   plain     plain malloc/free, no profiler;
//   tracked   every allocation and free also goes to the profiling session (the object map, the calling context
//             tree, the profiler's lock), as the native agent's malloc hooks do; the thread is not sampled;
//   profiled  the same, and the thread attached: sampled at `--rate` per second of its CPU time, pairs compared.
//
// A disturbance from outside lasts much longer than a phase, so it hits the arms of a round alike; the median
// over rounds of (arm / plain) is the arm's cost. Each arm has its own objects (so that all of the tracked arms'
// objects are tracked from birth) of the same size and replica mix as bench/overhead_workload.
//
// Left out, and measured elsewhere: capturing allocation stacks (the agent's libunwind, 0.2 µs each:
// bench/RESULTS.md), the malloc interposition itself, start-up and the exit report (a one-time cost per run:
// bench/agent_overhead.py with a short run), attaching and detaching (once per thread in the agent, here once per
// phase, outside the timed work).
//
//   steady_overhead [--threads N] [--rounds N] [--phase-sweeps N] [--churn N] [--rate R] [--slots N]
//                   [--sampler auto|decode|timer|...] [--reads auto|syscall]
#include "ojx/hardware/profiling_session.hpp"
#include "ojx/random.hpp"

#include <time.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string_view>
#include <thread>
#include <vector>

using namespace ojx;
using namespace ojx::hardware;

namespace {

constexpr std::size_t objects_per_arm = 256;
constexpr std::size_t object_words = 512; // 4 KiB

struct settings {
    int threads = 2;
    int rounds = 60;
    long phase_sweeps = 600'000; // object reads per phase: ≈ 100 ms of CPU here
    long churn = 1024;          // object reads between replacements, as overhead_workload
    double rate = 200;
    std::size_t slots = 4;
    sampler_kind sampler = sampler_kind::automatic;
    bool guarded_reads = true; // --reads auto (guarded loads where allowed) or syscall (process_vm_readv only)
};

enum arm : int { plain, tracked, profiled, arm_count };
constexpr std::array<const char*, arm_count> arm_names{"plain", "tracked", "profiled"};

double thread_cpu_seconds() {
    timespec now{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

class worker {
public:
    worker(profiling_session& session, int thread, const settings& s)
        : session_(session), settings_(s), random_(static_cast<std::uint64_t>(thread) + 1) {
        for (int a = 0; a < arm_count; ++a)
            for (auto& object : objects_[a]) object = allocate(static_cast<arm>(a));
    }
    ~worker() {
        for (int a = 0; a < arm_count; ++a)
            for (auto* object : objects_[a]) release(static_cast<arm>(a), object);
    }
    worker(const worker&) = delete;
    worker& operator=(const worker&) = delete;

    // The CPU seconds of one phase of `a`'s work. Attaching and detaching stay outside the timed part.
    double phase(arm a) {
        if (a == profiled && session_.attach_current_thread()) {
            std::fprintf(stderr, "steady_overhead: cannot attach a thread to the profiler\n");
            std::exit(1);
        }
        const double start = thread_cpu_seconds();
        auto& objects = objects_[a];
        for (long read = 0; read < settings_.phase_sweeps; ++read) {
            sum_ += read_object(objects[cursor_[a]]);
            cursor_[a] = (cursor_[a] + 1) % objects_per_arm;
            if (++reads_[a] % settings_.churn == 0) {
                const std::size_t victim = random_.below(objects_per_arm);
                release(a, objects[victim]);
                objects[victim] = allocate(a);
            }
        }
        const double seconds = thread_cpu_seconds() - start;
        if (a == profiled) session_.detach_current_thread();
        return seconds;
    }

    std::uint64_t checksum() const noexcept { return sum_; }

private:
    [[gnu::noinline]] static std::uint64_t read_object(const std::uint64_t* object) {
        std::uint64_t sum = 0;
        for (std::size_t w = 0; w < object_words; ++w) sum += object[w];
        return sum;
    }

    // Half the objects are copies of one template (replicas), half random, as in overhead_workload. The tracked
    // arms hand each object to the session with a fixed allocation context per arm (stack capture is left out).
    [[gnu::noinline]] std::uint64_t* allocate(arm a) {
        auto* object = static_cast<std::uint64_t*>(std::malloc(object_words * sizeof(std::uint64_t)));
        if (object == nullptr) std::abort();
        const bool replica = random_() & 1;
        for (std::size_t w = 0; w < object_words; ++w) object[w] = replica ? w * 7 : random_();
        if (a != plain) {
            const std::array<std::uint64_t, 3> frames{0x401000 + static_cast<std::uint64_t>(a), 0x402000, 0x403000};
            session_.on_allocation(reinterpret_cast<address>(object), object_words * sizeof(std::uint64_t), frames,
                                   no_type);
        }
        return object;
    }

    void release(arm a, std::uint64_t* object) {
        if (a != plain) session_.on_free(reinterpret_cast<address>(object));
        std::free(object);
    }

    profiling_session& session_;
    const settings& settings_;
    fast_random random_;
    std::array<std::array<std::uint64_t*, objects_per_arm>, arm_count> objects_{};
    std::array<std::size_t, arm_count> cursor_{};
    std::array<long, arm_count> reads_{};
    std::uint64_t sum_ = 0;
};

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    const std::size_t n = values.size();
    return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// Seeded bootstrap 95 % interval of the median.
std::pair<double, double> median_interval(const std::vector<double>& values) {
    std::mt19937_64 rng(1);
    std::uniform_int_distribution<std::size_t> pick(0, values.size() - 1);
    std::vector<double> medians;
    std::vector<double> resample(values.size());
    for (int r = 0; r < 2000; ++r) {
        for (double& v : resample) v = values[pick(rng)];
        medians.push_back(median(resample));
    }
    std::sort(medians.begin(), medians.end());
    return {medians[50], medians[1949]};
}

bool parse(int argc, char** argv, settings& s) {
    for (int i = 1; i < argc; i += 2) {
        const std::string_view name = argv[i];
        if (i + 1 >= argc) {
            std::fprintf(stderr, "steady_overhead: %s needs a value\n", argv[i]);
            return false;
        }
        if (name == "--sampler") {
            const auto kind = parse_sampler_kind(argv[i + 1]);
            if (!kind) {
                std::fprintf(stderr, "steady_overhead: unknown sampler '%s'\n", argv[i + 1]);
                return false;
            }
            s.sampler = *kind;
            continue;
        }
        if (name == "--reads") {
            const std::string_view reads = argv[i + 1];
            if (reads != "auto" && reads != "syscall") {
                std::fprintf(stderr, "steady_overhead: --reads wants auto or syscall, not '%s'\n", argv[i + 1]);
                return false;
            }
            s.guarded_reads = reads == "auto";
            continue;
        }
        char* end = nullptr;
        const double value = std::strtod(argv[i + 1], &end);
        if (end == argv[i + 1] || *end != '\0' || !(value >= 0)) {
            std::fprintf(stderr, "steady_overhead: %s wants a non-negative number, not '%s'\n", argv[i], argv[i + 1]);
            return false;
        }
        if (name == "--threads") s.threads = static_cast<int>(value);
        else if (name == "--rounds") s.rounds = static_cast<int>(value);
        else if (name == "--phase-sweeps") s.phase_sweeps = static_cast<long>(value);
        else if (name == "--churn") s.churn = static_cast<long>(value);
        else if (name == "--rate") s.rate = value;
        else if (name == "--slots") s.slots = static_cast<std::size_t>(value);
        else {
            std::fprintf(stderr, "steady_overhead: unknown option %s\n", argv[i]);
            return false;
        }
    }
    if (s.threads < 1 || s.rounds < 4 || s.phase_sweeps < 1 || s.churn < 1 || s.rate <= 0) {
        std::fprintf(stderr, "steady_overhead: need --threads >= 1, --rounds >= 4, positive --phase-sweeps, "
                             "--churn and --rate\n");
        return false;
    }
    return true;
}

} // namespace

int main(int argc, char** argv) {
    settings s;
    if (!parse(argc, argv, s)) return 2;
    profiling_session session;
    session_options options;
    options.backend.samples_per_second = s.rate;
    options.backend.watchpoint_slots = s.slots;
    options.backend.sampler = s.sampler;
    options.backend.guarded_reads = s.guarded_reads;
    if (auto error = session.start(options)) {
        std::fprintf(stderr, "steady_overhead: %s\n", error->c_str());
        return 1;
    }
    std::printf("sampler: %s\nwatchpoints: %s\nmemory reads: %s\n", session.backend().sampler_description().c_str(),
                session.backend().watchpoint_description().c_str(),
                session.backend().memory_read_description().c_str());

    // times[thread][round][arm]
    std::vector<std::vector<std::array<double, arm_count>>> times(
        static_cast<std::size_t>(s.threads), std::vector<std::array<double, arm_count>>(static_cast<std::size_t>(s.rounds)));
    std::vector<std::uint64_t> checksums(static_cast<std::size_t>(s.threads));
    std::vector<std::thread> threads;
    for (int t = 0; t < s.threads; ++t) {
        threads.emplace_back([&, t] {
            worker w(session, t, s);
            std::mt19937 order_rng(static_cast<unsigned>(t) + 7);
            std::array<arm, arm_count> order{plain, tracked, profiled};
            for (const arm a : order) w.phase(a); // warm-up round, not counted
            for (int r = 0; r < s.rounds; ++r) {
                std::shuffle(order.begin(), order.end(), order_rng);
                for (const arm a : order) times[static_cast<std::size_t>(t)][static_cast<std::size_t>(r)][a] = w.phase(a);
            }
            checksums[static_cast<std::size_t>(t)] = w.checksum();
        });
    }
    for (auto& thread : threads) thread.join();
    session.stop();

    const backend_counters& c = session.backend().counters();
    double profiled_seconds = 0;
    std::array<std::vector<double>, arm_count> ratios;
    for (const auto& rounds : times)
        for (const auto& round : rounds) {
            profiled_seconds += round[profiled];
            for (int a = 0; a < arm_count; ++a) ratios[a].push_back(round[a] / round[plain]);
        }
    const std::uint64_t comparisons = session.with_profiler([](auto& prof) { return prof.report().stats.comparisons; });
    std::vector<double> plain_times;
    for (const auto& rounds : times)
        for (const auto& round : rounds) plain_times.push_back(round[plain]);
    std::printf("%d threads x %d rounds, phases of %.3f s CPU (median plain); %.0f samples/s per profiled second "
                "(requested %.0f), %llu steps, %llu comparisons\n",
                s.threads, s.rounds, median(plain_times), static_cast<double>(c.samples.load()) / profiled_seconds,
                s.rate, static_cast<unsigned long long>(c.steps.load()), static_cast<unsigned long long>(comparisons));
    for (const int a : {tracked, profiled}) {
        const auto [low, high] = median_interval(ratios[a]);
        const double mean = std::accumulate(ratios[a].begin(), ratios[a].end(), 0.0) / static_cast<double>(ratios[a].size());
        std::printf("%-8s vs plain: %+.2f %% (median of %zu phase ratios; 95 %% bootstrap %+.2f..%+.2f %%; mean %+.2f %%; "
                    "ratios %.3f..%.3f)\n",
                    arm_names[static_cast<std::size_t>(a)], 100 * (median(ratios[a]) - 1), ratios[a].size(),
                    100 * (low - 1), 100 * (high - 1), 100 * (mean - 1),
                    *std::min_element(ratios[a].begin(), ratios[a].end()),
                    *std::max_element(ratios[a].begin(), ratios[a].end()));
    }
    return std::accumulate(checksums.begin(), checksums.end(), std::uint64_t{0}) == 42 ? 3 : 0;
}
