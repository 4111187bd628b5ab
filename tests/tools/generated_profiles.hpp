// Profiles made up from simulated evidence, for testing what reads, merges and writes them. Each site's
// evidence comes from simulated source objects (each compared with some targets, equal with the site's chance),
// so its sums are consistent the way a profiler's are, and a site can be split between several profiles by
// dealing its sources out — the sum of the parts is then exactly the whole.
#pragma once

#include "ojx/profile.hpp"

#include "ojx/random.hpp"

#include <string>
#include <vector>

namespace ojx::tool::testing {

// One simulated source object: its comparisons and their weights.
struct simulated_source {
    std::uint64_t equal = 0, different = 0, alpha_equal = 0, alpha_comparisons = 0, pairs = 0;
    double weighted_equal = 0, weighted_total = 0;
    std::uint64_t objects = 0, bytes = 0;
};

struct simulated_site {
    std::string type;
    std::vector<std::string> frames;
    std::vector<simulated_source> sources;
    std::vector<named_access_context> accesses;
};

inline std::vector<simulated_site> simulate_sites(std::uint64_t seed, std::size_t count) {
    fast_random rng(seed);
    const char* types[] = {"byte[]", "int[]", "java.lang.String", "char[]", "malloc"};
    std::vector<simulated_site> sites(count);
    for (std::size_t i = 0; i < count; ++i) {
        simulated_site& s = sites[i];
        s.type = types[rng.below(5)];
        const std::size_t depth = 1 + rng.below(5);
        for (std::size_t f = 0; f < depth; ++f)
            s.frames.push_back("pkg.C" + std::to_string(rng.below(8)) + ".m" + std::to_string(i) + "_" + std::to_string(f) + "(C.java:" +
                               std::to_string(10 + rng.below(90)) + ")");
        const double theta = static_cast<double>(rng.below(101)) / 100;
        const std::size_t sources = rng.below(12);
        for (std::size_t k = 0; k < sources; ++k) {
            simulated_source src;
            const std::uint64_t n = 1 + rng.below(9);
            const double weight = static_cast<double>(1 + rng.below(30)); // the pairing policy's weights are integers
            for (std::uint64_t c = 0; c < n; ++c) {
                const bool equal = static_cast<double>(rng.below(1000)) < theta * 1000;
                (equal ? src.equal : src.different) += 1;
                src.weighted_total += weight;
                src.weighted_equal += equal ? weight : 0;
            }
            src.alpha_comparisons = rng.below(3);
            src.alpha_equal = src.alpha_comparisons ? rng.below(src.alpha_comparisons + 1) : 0;
            src.pairs = 1 + rng.below(n);
            src.objects = 1 + rng.below(50);
            src.bytes = src.objects * (1024 + 8 * rng.below(100));
            s.sources.push_back(src);
        }
        const std::size_t accesses = rng.below(4);
        for (std::size_t a = 0; a < accesses; ++a)
            s.accesses.push_back({{"pkg.Use" + std::to_string(a) + ".read(Use.java:" + std::to_string(a + 1) + ")"},
                                  1 + rng.below(100)});
    }
    return sites;
}

// The context of the sources `from` (all when empty), with its estimate computed as a profiler would.
inline context_profile context_of(const simulated_site& site, const std::vector<std::size_t>& from,
                                  const estimator_config& config) {
    context_profile c;
    c.type = site.type;
    c.frames = site.frames;
    c.has_evidence = true;
    evidence_summary& e = c.evidence;
    for (const std::size_t k : from) {
        const simulated_source& s = site.sources[k];
        e.equal += s.equal;
        e.different += s.different;
        e.pairs += s.pairs;
        e.alpha_equal += s.alpha_equal;
        e.alpha_comparisons += s.alpha_comparisons;
        e.weighted_equal += s.weighted_equal;
        e.weighted_total += s.weighted_total;
        e.sources += 1;
        e.sum_equal_squared += s.weighted_equal * s.weighted_equal;
        e.sum_equal_times_total += s.weighted_equal * s.weighted_total;
        e.sum_total_squared += s.weighted_total * s.weighted_total;
        c.objects += s.objects;
        c.bytes += s.bytes;
    }
    c.estimate = estimate_replicas(c.objects, e, config);
    c.estimate_from_evidence(config);
    return c;
}

inline run_profile simulated_run(std::uint64_t samples) {
    run_profile run;
    run.runtime = {"simulated"};
    run.sampler = {"simulated sampler"};
    run.watchpoints = {"simulated watchpoints"};
    run.pairing = {"reservoir"};
    run.replacement = {"reservoir"};
    run.counters = {{"samples", samples}, {"comparisons", samples / 3}, {"samples_dropped.store", samples / 7}};
    return run;
}

} // namespace ojx::tool::testing
