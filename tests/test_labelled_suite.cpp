// A labelled suite of 56 contexts (24 replicated, 32 not, among them 16 partial replicas that agree almost
// everywhere), each run 10 times with different seeds: 560 decisions. ojx calls a context replicated when its
// lower bound says, at 95 % confidence, that at least 10 % of its objects are one value (ω ≥ 0.1). Required:
// correctness ≥ 95 % and false-positive rate ≤ 5 % — OJXPerf reports 94.9 % and 5.9 %. The same suite is run
// the paper's way (one word compared, the most recent object as partner, "replicated" when θ > 60 %) and both
// confusion tables are printed, so the difference is measured, not claimed: the paper's configuration must show
// the weakness the paper reports (partial replicas taken for replicas), by a margin far outside seed noise
// (measured: 33.9 % correct, 75 % false positives, against ojx's 99.1 % and 0.6 %).
#include "emulation_runs.hpp"

#include <catch2/catch.hpp>

#include <cstdio>
#include <string>
#include <vector>

using namespace ojx;
using namespace ojx::emulation;
using ojx::testing::run_shape;

namespace {

struct labelled {
    context_shape shape;
    bool replicated; // ground truth label
};

std::vector<labelled> suite() {
    std::vector<labelled> contexts;
    const std::uint64_t sizes[] = {1024, 2048, 4096};
    for (int i = 0; i < 8; ++i) {
        const std::uint64_t size = sizes[i % 3];
        const auto x = static_cast<std::uint32_t>(150 + 20 * i);
        // Replicated: one dominant value (shuffled), a dominant value in runs, two large groups.
        contexts.push_back({{.name = "dominant " + std::to_string(i), .object_size = size,
                             .group_sizes = {x * (60 + 4 * static_cast<std::uint32_t>(i)) / 100, x / 5, x / 10}},
                            true});
        contexts.push_back({{.name = "runs " + std::to_string(i), .object_size = size,
                             .group_sizes = {x / 2, x / 4, x / 8, x / 8}, .order = ordering::runs},
                            true});
        contexts.push_back({{.name = "mutated " + std::to_string(i), .object_size = size,
                             .group_sizes = {x * 7 / 10, x * 3 / 10}, .mutated_words = 1 + static_cast<std::uint32_t>(i)},
                            true});
        // Not replicated: random contents, dense partial replicas, sparse partial replicas (the paper's false
        // positives: a sparse row that differs in a few elements), sparse contents that are all different.
        contexts.push_back({{.name = "random " + std::to_string(i), .object_size = size,
                             .group_sizes = std::vector<std::uint32_t>(x, 1)},
                            false});
        contexts.push_back({{.name = "partial " + std::to_string(i), .object_size = size, .group_sizes = {x},
                             .differing_words = 2 + static_cast<std::uint32_t>(i % 4)},
                            false});
        contexts.push_back({{.name = "sparse partial " + std::to_string(i), .object_size = 4096, .group_sizes = {x},
                             .differing_words = 1 + static_cast<std::uint32_t>(i % 3), .zero_fraction = 0.95},
                            false});
        contexts.push_back({{.name = "sparse distinct " + std::to_string(i), .object_size = size,
                             .group_sizes = std::vector<std::uint32_t>(x, 1), .zero_fraction = 0.9},
                            false});
    }
    return contexts;
}

struct confusion {
    int true_positive = 0, false_negative = 0, false_positive = 0, true_negative = 0, unreported = 0;

    void add(bool actual, bool detected) {
        if (actual) (detected ? true_positive : false_negative)++;
        else (detected ? false_positive : true_negative)++;
    }
    int total() const { return true_positive + false_negative + false_positive + true_negative; }
    double correctness() const { return static_cast<double>(true_positive + true_negative) / total(); }
    double false_positive_rate() const {
        return static_cast<double>(false_positive) / (false_positive + true_negative);
    }
    void print(const char* title) const {
        std::printf("%s\n                       detected   not detected\n", title);
        std::printf("  actually replicated   %8d   %12d\n", true_positive, false_negative);
        std::printf("  not replicated        %8d   %12d\n", false_positive, true_negative);
        std::printf("  correctness %.1f%%   false-positive rate %.1f%%   (no estimate: %d)\n\n",
                    100 * correctness(), 100 * false_positive_rate(), unreported);
    }
};

} // namespace

TEST_CASE("labelled suite: correctness >= 95% and false positives <= 5%") {
    constexpr int seeds = 10;
    const auto contexts = suite();
    REQUIRE(contexts.size() >= 50);
    confusion ojx_rule, paper_rule;
    for (int seed = 1; seed <= seeds; ++seed) {
        for (std::size_t i = 0; i < contexts.size(); ++i) {
            const auto& [shape, replicated] = contexts[i];
            const std::uint64_t run_seed = static_cast<std::uint64_t>(seed) * 1000003 + i;
            const auto ours = run_shape(shape, run_seed);
            // A context without an estimate is reported as not replicated (nothing is claimed about it).
            ojx_rule.add(replicated, ours.estimate.reported && ours.estimate.omega >= 0.1);
            ojx_rule.unreported += ours.estimate.reported ? 0 : 1;
            // The labels must be what they say: replicated contexts have a large identical group.
            REQUIRE((ours.truth.largest_group_ratio >= 0.4) == replicated);
            const auto paper = run_shape<recent_pairing>(shape, run_seed, {.compare_window = 0});
            paper_rule.add(replicated, paper.estimate.reported && paper.estimate.theta > 0.6);
            paper_rule.unreported += paper.estimate.reported ? 0 : 1;
        }
    }
    ojx_rule.print("ojx (window digest, reservoir pairing, omega >= 10%):");
    paper_rule.print("paper's configuration (one word, most recent partner, theta > 60%):");
    CHECK(ojx_rule.total() == static_cast<int>(contexts.size()) * seeds);
    CHECK(ojx_rule.correctness() >= 0.95);
    CHECK(ojx_rule.false_positive_rate() <= 0.05);
    CHECK(paper_rule.total() == ojx_rule.total());
    CHECK(paper_rule.false_positive_rate() >= ojx_rule.false_positive_rate() + 0.3);
    CHECK(paper_rule.correctness() <= ojx_rule.correctness() - 0.3);
}

// The same suite compared at the sample (what the Linux backend does where debug registers never trap): the
// same thresholds must hold.
TEST_CASE("labelled suite compared at the sample: correctness >= 95% and false positives <= 5%") {
    constexpr int seeds = 10;
    const auto contexts = suite();
    confusion at_sample;
    for (int seed = 1; seed <= seeds; ++seed) {
        for (std::size_t i = 0; i < contexts.size(); ++i) {
            const auto& [shape, replicated] = contexts[i];
            const std::uint64_t run_seed = static_cast<std::uint64_t>(seed) * 1000003 + i;
            const auto run = run_shape(shape, run_seed, {.trigger = watch_trigger::at_sample});
            at_sample.add(replicated, run.estimate.reported && run.estimate.omega >= 0.1);
            at_sample.unreported += run.estimate.reported ? 0 : 1;
        }
    }
    at_sample.print("ojx compared at the sample (omega >= 10%):");
    CHECK(at_sample.total() == static_cast<int>(contexts.size()) * seeds);
    CHECK(at_sample.correctness() >= 0.95);
    CHECK(at_sample.false_positive_rate() <= 0.05);
}
