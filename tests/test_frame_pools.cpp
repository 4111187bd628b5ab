// Estimates pooled at the frames of the calling-context tree (frame_pools.hpp), on an emulated heap whose replicas
// sit under one of three subsystems: one site (an `Arrays.copyOf`) reached from 30 callers, ten under each of
// three outer frames, all below one thread frame; 5 objects a context, every one digested. Under the first outer
// frame every object holds the same contents, under the other two each object its own, so the site is 1/3
// replicated and the first subsystem's part of it all.
//   - A frame's pool is the site pooled over exactly the contexts below it (every count and share).
//   - A chain's upper frames (one child frame, no context of their own) are not listed; their child is.
//   - locate_concentrations names the first outer frame, and the text report says so under the pooled site.
#include "ojx/emulation/session.hpp"
#include "ojx/frame_pools.hpp"
#include "ojx/random.hpp"
#include "ojx/report.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

using namespace ojx;
using namespace ojx::emulation;

namespace {

constexpr std::size_t subsystems = 3, callers_each = 10, per_context = 5, object_size = 1024;
constexpr std::uint64_t leaf = 0x77, thread_frame = 0x9000, outer_frame = 0x2000, caller_frame = 0x1000;

std::string frame_name(std::uint64_t frame) {
    if (frame == leaf) return "java.util.Arrays.copyOf(Arrays.java:3537)";
    if (frame == thread_frame) return "java.lang.Thread.run(Thread.java:833)";
    if (frame >= outer_frame && frame < outer_frame + subsystems)
        return "Subsystem" + std::to_string(frame - outer_frame) + ".run(Subsystem.java:7)";
    return "Caller" + std::to_string(frame - caller_frame) + ".write(Caller.java:9)";
}

profile planted_profile() {
    session_config config;
    config.profiler.seed = 5;
    config.heap_bytes = std::size_t{4} << 20;
    config.sampler.period = 1u << 30; // no access samples: whole objects only
    session<> s(config);
    fast_random rng(5);
    std::vector<std::uint64_t> common(object_size / 8);
    for (auto& w : common) w = rng() | 1;
    const context_id thread = s.prof.contexts().child(context_tree::root, thread_frame);
    for (std::size_t g = 0; g < subsystems; ++g) {
        const context_id outer = s.prof.contexts().child(thread, outer_frame + g);
        for (std::size_t k = 0; k < callers_each; ++k) {
            const context_id caller = s.prof.contexts().child(outer, caller_frame + g * callers_each + k);
            const context_id context = s.prof.contexts().child(caller, leaf);
            for (std::size_t i = 0; i < per_context; ++i) {
                const address at = *s.machine.allocate(object_size, context, 1);
                std::vector<std::uint64_t> words = common;
                if (g != 0) words[rng.below(words.size())] = rng() | 1; // its own word: no other object has it
                s.heap.write(at, words.data(), object_size);
            }
        }
    }
    s.prof.digest_tracked_objects(0);
    const report_naming naming{frame_name, [](type_id) { return std::string("byte[]"); }};
    return profile_of(s.prof.report(), s.prof.contexts(), naming, s.facts());
}

const frame_pool* node_named(const std::vector<frame_pool>& nodes, const std::vector<context_profile>& contexts,
                             const std::string& frame) {
    for (const frame_pool& n : nodes)
        if (n.depth > 0 && frame_path(contexts, n).back() == frame) return &n;
    return nullptr;
}

} // namespace

TEST_CASE("a frame's pool is its site pooled over exactly the contexts below it") {
    const profile p = planted_profile();
    REQUIRE(p.contexts.size() == subsystems * callers_each);
    const std::vector<frame_pool> nodes = frame_pools(p.contexts, p.run.estimator);

    // The root has one child frame (the thread's) and no context: its chain is listed at the thread frame.
    for (const frame_pool& n : nodes) CHECK(n.depth != 0);
    const frame_pool* thread = node_named(nodes, p.contexts, frame_name(thread_frame));
    REQUIRE(thread != nullptr);
    CHECK(thread->depth == 1);
    CHECK(thread->contexts == subsystems * callers_each);
    REQUIRE(thread->sites.size() == 1);
    const context_profile& site = thread->sites.front().site;
    CHECK(site.identical.objects == subsystems * callers_each * per_context);
    CHECK(site.combined.largest_share == Approx(1.0 / subsystems).margin(1e-12));

    for (std::size_t g = 0; g < subsystems; ++g) {
        const frame_pool* outer = node_named(nodes, p.contexts, frame_name(outer_frame + g));
        REQUIRE(outer != nullptr);
        CHECK(outer->depth == 2);
        CHECK(outer->contexts == callers_each);
        REQUIRE(outer->sites.size() == 1);
        // The same sum pooling the contexts below it directly gives.
        site_pools direct;
        for (const context_profile& c : p.contexts)
            if (c.frames.size() >= 3 && c.frames[c.frames.size() - 2] == frame_name(outer_frame + g)) direct.add(c);
        const std::vector<pooled_site> expected = direct.finish(p.run.estimator);
        REQUIRE(expected.size() == 1);
        const pooled_site& pooled = outer->sites.front();
        CHECK(pooled.contexts == expected.front().contexts);
        CHECK(pooled.site.objects == expected.front().site.objects);
        CHECK(pooled.site.identical.objects == callers_each * per_context);
        CHECK(pooled.site.combined.largest_share == expected.front().site.combined.largest_share);
        CHECK(pooled.site.combined.largest_share_ci.low == expected.front().site.combined.largest_share_ci.low);
        CHECK(pooled.site.combined.largest_share == Approx(g == 0 ? 1.0 : 1.0 / (callers_each * per_context)));
    }
    // A caller's frame has one context below it: nothing to pool there.
    CHECK(node_named(nodes, p.contexts, frame_name(caller_frame)) == nullptr);
}

TEST_CASE("a pooled site's replicas are located under the frame they concentrate below, in the text report too") {
    const profile p = planted_profile();
    site_pools pools;
    for (const context_profile& c : p.contexts) pools.add(c);
    std::vector<pooled_site> pooled = pools.finish(p.run.estimator);
    REQUIRE(pooled.size() == 1);
    REQUIRE(is_pooled_finding(pooled.front()));
    locate_concentrations(pooled, 1, p.contexts, p.run.estimator);
    REQUIRE(pooled.front().concentrated);
    const site_concentration& at = *pooled.front().concentrated;
    CHECK(at.path == std::vector<std::string>{frame_name(thread_frame), frame_name(outer_frame)});
    CHECK(at.contexts == callers_each);
    CHECK(at.pooled.combined.largest_share == Approx(1.0));

    std::ostringstream out;
    write_text_report(out, {}, p, 10);
    INFO(out.str());
    CHECK(out.str().find("        most replicated below Subsystem0.run(Subsystem.java:7) (10 of the 30 contexts): "
                         "largest 100% [") != std::string::npos);
}

TEST_CASE("replicas spread evenly over the callers are located nowhere narrower") {
    profile p = planted_profile();
    // Keep the first subsystem's contexts only: every frame below the thread pools the same share as the site.
    std::erase_if(p.contexts, [](const context_profile& c) {
        return c.frames.size() < 3 || c.frames[c.frames.size() - 2] != frame_name(outer_frame);
    });
    REQUIRE(p.contexts.size() == callers_each);
    site_pools pools;
    for (const context_profile& c : p.contexts) pools.add(c);
    std::vector<pooled_site> pooled = pools.finish(p.run.estimator);
    REQUIRE(pooled.size() == 1);
    pooled.front().objects_elsewhere = pooled.front().site.objects; // listed, as if no context were replicated alone
    locate_concentrations(pooled, 1, p.contexts, p.run.estimator);
    CHECK_FALSE(pooled.front().concentrated);
}
