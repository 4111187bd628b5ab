// A fixed amount of native work for measuring the native agent's overhead: each thread keeps 256 objects of
// 4 KiB (half of them copies of one template: replicas for the agent to find), reads them word by word, and
// replaces one object every `--churn` sweeps over an object. No locks and no shared data, so the CPU time it
// takes varies little from run to run; the overhead is the extra CPU time under LD_PRELOAD=libojxpreload.so.
//
//   overhead_workload [--threads N] [--rounds N] [--churn N]
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <thread>
#include <vector>

namespace {

constexpr std::size_t objects_per_thread = 256;
constexpr std::size_t object_words = 512; // 4 KiB

struct settings {
    int threads = 2;
    long rounds = 32000; // ≈ 4 s of CPU per thread here
    long churn = 1024; // object sweeps between replacements: ≈ 2000 new objects per second per thread here
};

std::uint64_t next(std::uint64_t& state) {
    state += 0x9E3779B97F4A7C15ULL;
    std::uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

[[gnu::noinline]] std::uint64_t* allocate_object(std::uint64_t& random) {
    auto* object = static_cast<std::uint64_t*>(std::malloc(object_words * sizeof(std::uint64_t)));
    const bool replica = next(random) & 1;
    for (std::size_t w = 0; w < object_words; ++w) object[w] = replica ? w * 7 : next(random);
    return object;
}

[[gnu::noinline]] std::uint64_t read_object(const std::uint64_t* object) {
    std::uint64_t sum = 0;
    for (std::size_t w = 0; w < object_words; ++w) sum += object[w];
    return sum;
}

std::uint64_t work(int thread, const settings& s) {
    std::uint64_t random = static_cast<std::uint64_t>(thread) + 1;
    std::vector<std::uint64_t*> objects(objects_per_thread);
    for (auto& object : objects) object = allocate_object(random);
    std::uint64_t sum = 0;
    long sweeps = 0;
    for (long round = 0; round < s.rounds; ++round) {
        for (std::size_t i = 0; i < objects_per_thread; ++i) {
            sum += read_object(objects[i]);
            if (++sweeps % s.churn == 0) {
                const std::size_t victim = next(random) % objects_per_thread;
                std::free(objects[victim]);
                objects[victim] = allocate_object(random);
            }
        }
    }
    for (auto* object : objects) std::free(object);
    return sum;
}

} // namespace

int main(int argc, char** argv) {
    settings s;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string_view name = argv[i];
        const long value = std::strtol(argv[i + 1], nullptr, 10);
        if (name == "--threads") s.threads = static_cast<int>(value);
        else if (name == "--rounds") s.rounds = value;
        else if (name == "--churn") s.churn = value;
        else {
            std::fprintf(stderr, "usage: overhead_workload [--threads N] [--rounds N] [--churn N]\n");
            return 2;
        }
    }
    if (s.threads < 1 || s.rounds < 1 || s.churn < 1) {
        std::fprintf(stderr, "overhead_workload: --threads, --rounds and --churn must be positive\n");
        return 2;
    }
    std::vector<std::thread> threads;
    std::vector<std::uint64_t> sums(static_cast<std::size_t>(s.threads));
    for (int t = 0; t < s.threads; ++t) threads.emplace_back([&, t] { sums[static_cast<std::size_t>(t)] = work(t, s); });
    for (auto& thread : threads) thread.join();
    std::uint64_t total = 0;
    for (auto sum : sums) total += sum;
    std::printf("checksum %016llx\n", static_cast<unsigned long long>(total));
    return 0;
}
