// Uses the installed headers through find_package(ojx): profiles a tiny synthetic heap with one fully
// replicated context and checks that the profiler saw it.
#include <ojx/emulation/heap_shapes.hpp>
#include <ojx/emulation/session.hpp>
#include <ojx/profiler.hpp>

#include <cstdio>

int main() {
    using namespace ojx::emulation;
    const context_shape shapes[] = {{.name = "Consumer.site", .object_size = 1024, .group_sizes = {200}}};
    session_config config;
    config.sampler.period = 31;
    session<> s(config);
    run_workload(s.machine, s.prof.contexts(), shapes, {.seed = 7});
    const auto report = s.prof.report();
    if (report.contexts.size() != 1 || !report.contexts[0].estimate.reported) {
        std::puts("consumer: no estimate");
        return 1;
    }
    std::printf("consumer: theta %.2f over %llu comparisons\n", report.contexts[0].estimate.theta,
                static_cast<unsigned long long>(report.contexts[0].estimate.comparisons()));
    return report.contexts[0].estimate.theta > 0.9 ? 0 : 1;
}
