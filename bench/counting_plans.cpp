// Counter increments per execution of generated methods (backends/emulation synthetic_cfg.hpp), for each counter
// plan, planned with the static estimate (what a class gets when it loads) and with the method's true frequencies
// (what re-instrumentation with measured counts converges to). Prints a table for bench/RESULTS.md; exactness is the
// test suite's business (tests/test_counting_exactness.cpp), but every run here is checked too.
//
//   counting_plans [methods per shape] [executions per method]
#include "ojx/counting/chord_plan.hpp"
#include "ojx/counting/counter_plan.hpp"
#include "ojx/counting/edge_frequencies.hpp"
#include "ojx/counting/hot_path_plan.hpp"
#include "ojx/emulation/cfg_executor.hpp"
#include "ojx/emulation/synthetic_cfg.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace ojx;
using namespace ojx::counting;
using namespace ojx::emulation;

namespace {

struct shape_row {
    const char* name;
    cfg_shape shape;
};

struct totals {
    double increments = 0, expected = 0, counters = 0;
    std::uint64_t executions = 0, mismatches = 0;
};

template <class Planner>
void measure(const synthetic_method& m, const edge_frequencies& f, const edge_frequencies& truth_f, std::uint64_t seed,
             int executions, totals& t) {
    const auto plan = Planner{}.plan(m.graph, f);
    const cfg_executor run(m, plan);
    fast_random random(seed);
    counting_state state(plan, m.graph.site_count());
    execution_truth truth(m.graph.site_count());
    for (int i = 0; i < executions; ++i) run.run(random, state, truth);
    if (state.counts(plan) != truth.allocated) ++t.mismatches;
    t.increments += static_cast<double>(truth.increments);
    t.expected += plan.expected_increments(m.graph, truth_f) * executions;
    t.counters += static_cast<double>(plan.counters().size());
    t.executions += static_cast<std::uint64_t>(executions);
}

} // namespace

int main(int argc, char** argv) {
    const int methods = argc > 1 ? std::atoi(argv[1]) : 2000;
    const int executions = argc > 2 ? std::atoi(argv[2]) : 50;
    std::vector<shape_row> shapes{{"default", {}},
                                  {"deep", {.statements = 60, .max_depth = 7}},
                                  {"irreducible", {.irreducible_jumps = 2}},
                                  {"no exceptions", {.exceptions = false}},
                                  {"dense sites", {.sites_per_block = 2.0}}};
    std::printf("| methods | frequencies | sites: incr/exec | paths: incr/exec (vs sites) | edges: incr/exec (vs sites) "
                "| counters placed: sites / paths / edges |\n|---|---|---|---|---|---|\n");
    std::uint64_t mismatches = 0;
    for (const auto& row : shapes) {
        for (const bool measured : {false, true}) {
            totals sites, paths, edges;
            for (int i = 0; i < methods; ++i) {
                fast_random random(0xbe9c0000ULL + static_cast<std::uint64_t>(i));
                const auto m = generate_method(random, row.shape);
                const auto truth_f = frequencies_from_probabilities(m.graph, m.take);
                const auto f = measured ? truth_f : estimate_frequencies(m.graph);
                const auto seed = static_cast<std::uint64_t>(i);
                measure<site_counters>(m, f, truth_f, seed, executions, sites);
                measure<hot_path_counters>(m, f, truth_f, seed, executions, paths);
                measure<chord_counters>(m, f, truth_f, seed, executions, edges);
            }
            mismatches += sites.mismatches + paths.mismatches + edges.mismatches;
            const auto per = [](const totals& t) { return t.increments / static_cast<double>(t.executions); };
            const auto saved = [&](const totals& t) { return 100.0 * (1.0 - t.increments / sites.increments); };
            std::printf("| %s | %s | %.2f | %.2f (−%.0f %%) | %.2f (−%.0f %%) | %.1f / %.1f / %.1f |\n", row.name,
                        measured ? "true" : "static estimate", per(sites), per(paths), saved(paths), per(edges),
                        saved(edges), sites.counters / methods, paths.counters / methods, edges.counters / methods);
        }
    }
    std::printf("\n%d methods per shape, %d executions each; counts that differed from the truth: %llu\n", methods,
                executions, static_cast<unsigned long long>(mismatches));
    return mismatches == 0 ? 0 : 1;
}
