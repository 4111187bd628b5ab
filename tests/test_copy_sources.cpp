// Where a replica context's contents were copied from (ojx/copy_sources.hpp): on a hand-built copy section, the
// bytes copied into a site by source, their shares and intervals, exactly as the copies view's estimates give
// them, and the consumer, other sites and unmatched contexts left out; the text report's "copied from" lines under
// a site's row, and none without a copy section; and on an emulated copy profiling session, a planted clone's
// destination site reports the clone's source as (almost) all of its contents.
#include "ojx/emulation/copy_profiling_session.hpp"
#include "ojx/emulation/copy_programs.hpp"
#include "ojx/copy_sources.hpp"
#include "ojx/text_report.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

using namespace ojx;

namespace {

constexpr double level = 0.95;

// `samples` samples of an edge, each at period 64.
sampled_volume at_period_64(std::uint64_t samples) {
    return {.samples = samples, .weight = 64 * samples, .weight_squares = 64 * 64 * samples, .max_weight = 64};
}

// byte[] objects allocated at serialize() copied into those allocated at toByteArray(), with a static word and
// untracked memory copied too; the serialized arrays are also used by computations, and get a static's value.
struct two_sites {
    copy_profile copies;
    context_id serialized = 0, copied = 0; // the section's sites
    copy_node serialized_elements, copied_elements;
};

two_sites sample_section() {
    const std::vector<copy_site> names = {{"byte[]", {"Codec.toByteArray()", "main()"}},
                                          {"byte[]", {"Codec.serialize()", "main()"}}};
    const copy_node serialize = copy_node::field(1, copy_node::elements);
    const copy_node to_bytes = copy_node::field(0, copy_node::elements);
    sampled_copy_graph graph;
    graph.add({serialize, to_bytes, 8}, at_period_64(22));                        // 11264 bytes
    graph.add({serialize, to_bytes, 4}, at_period_64(2));                         // 512 bytes
    graph.add({copy_node::static_location(0), to_bytes, 8}, at_period_64(2));     // 1024 bytes
    graph.add({to_bytes, copy_node::consumer(), 8}, at_period_64(40));            // a use, not a copy
    graph.add({copy_node::static_location(0x1000), serialize, 8}, at_period_64(5)); // into the other site
    two_sites s;
    s.copies = copy_profile_of(graph, {}, "period 64", [&](context_id c) { return names.at(c); });
    s.serialized = *copy_site_of(s.copies, "byte[]", names[1].frames);
    s.copied = *copy_site_of(s.copies, "byte[]", names[0].frames);
    s.serialized_elements = copy_node::field(s.serialized, copy_node::elements);
    s.copied_elements = copy_node::field(s.copied, copy_node::elements);
    return s;
}

context_profile context_at(std::vector<std::string> frames) {
    context_profile c;
    c.type = "byte[]";
    c.frames = std::move(frames);
    c.objects = 10;
    c.bytes = 10240;
    return c;
}

std::string report_of(const context_profile& c, const copy_profile* copies) {
    run_profile run;
    run.runtime = {"test"};
    std::ostringstream out;
    write_text_report(out, {}, run, {c}, {}, {}, copies);
    return out.str();
}

} // namespace

TEST_CASE("a site's contents are summed by source: shares, bytes and the copies view's intervals") {
    const two_sites s = sample_section();
    const copied_contents into = copied_into(s.copies, s.copied, level);
    REQUIRE(into.sources.size() == 2);
    CHECK(into.copied.bytes == 12800);
    CHECK(into.copied.copies == 26 * 64);
    const copy_source& first = into.sources[0];
    CHECK(first.from == s.serialized_elements);
    CHECK(first.estimate.bytes == 11776); // both widths summed
    CHECK(first.estimate.copies == 24 * 64);
    CHECK(first.share == Approx(0.92).epsilon(1e-12));
    const copy_source& second = into.sources[1];
    CHECK(second.from == copy_node::static_location(0));
    CHECK(second.estimate.bytes == 1024);
    CHECK(second.share == Approx(0.08).epsilon(1e-12));
    // The intervals are the section's own estimates over the same edges.
    const auto from_serialized = s.copies.graph.estimate(
        [&](const copy_edge& e) { return e.from == s.serialized_elements && e.to == s.copied_elements; }, level);
    CHECK(first.estimate.bytes_interval.low == from_serialized.bytes_interval.low);
    CHECK(first.estimate.bytes_interval.high == from_serialized.bytes_interval.high);
    CHECK(first.estimate.bytes_interval.low < 11776);
    CHECK(first.estimate.bytes_interval.high > 11776);
    const auto all = s.copies.graph.estimate([&](const copy_edge& e) { return e.to == s.copied_elements; }, level);
    CHECK(into.copied.bytes_interval.low == all.bytes_interval.low);
    CHECK(into.copied.bytes_interval.high == all.bytes_interval.high);

    // The other site gets only its own static source; a context the section does not name gets nothing.
    const copied_contents other = copied_into(s.copies, s.serialized, level);
    REQUIRE(other.sources.size() == 1);
    CHECK(other.sources[0].from == copy_node::static_location(0x1000));
    CHECK(other.sources[0].share == 1);
    const std::optional<copied_contents> by_context =
        copied_into(s.copies, context_at({"Codec.toByteArray()", "main()"}), level);
    REQUIRE(by_context);
    CHECK(by_context->sources.size() == 2);
    CHECK(by_context->copied.bytes == 12800);
    CHECK_FALSE(copied_into(s.copies, context_at({"Codec.toByteArray()"}), level));
    context_profile other_type = context_at({"Codec.toByteArray()", "main()"});
    other_type.type = "char[]";
    CHECK_FALSE(copied_into(s.copies, other_type, level));
}

TEST_CASE("the text report says under a site's row where its contents were copied from") {
    const two_sites s = sample_section();
    const context_profile copied = context_at({"Codec.toByteArray()", "main()"});
    const std::string text = report_of(copied, &s.copies);
    INFO(text);
    const copied_contents into = copied_into(s.copies, s.copied, level);
    const auto range = [](const copy_estimate& e) {
        using report_detail::bytes;
        return "[" + bytes(e.bytes_interval.low) + ", " + bytes(e.bytes_interval.high) + "]";
    };
    CHECK(text.find("        copied from byte[] elements at Codec.serialize()  (~11.5 KiB " +
                    range(into.sources[0].estimate) + ", 92%)\n        copied from untracked memory  (~1.0 KiB " +
                    range(into.sources[1].estimate) + ", 8%)\n") != std::string::npos);
    CHECK(text.find("copied from: where a site's objects' contents were copied from") != std::string::npos);

    // Without a copy section the report is what it was: no line, no legend.
    const std::string without = report_of(copied, nullptr);
    CHECK(without.find("copied from") == std::string::npos);
    // The lines are all that the section adds.
    std::string stripped = text;
    for (const char* line : {"        copied from byte[]", "        copied from untracked", "copied from: ",
                                    "(estimated bytes", "objects).\n"}) {
        const std::size_t at = stripped.find(line);
        REQUIRE(at != std::string::npos);
        stripped.erase(at, stripped.find('\n', at) + 1 - at);
    }
    CHECK(stripped == without);
    // A site the section has no copies into has no line.
    CHECK(report_of(context_at({"Codec.serialize()", "elsewhere()"}), &s.copies).find("        copied from") ==
          std::string::npos);
}

TEST_CASE("beyond three sources the text report names the two heaviest and sums the rest") {
    const std::vector<copy_site> names = {{"long[]", {"sink()"}}};
    const copy_node sink = copy_node::field(0, copy_node::elements);
    sampled_copy_graph graph;
    for (std::uint64_t i = 0; i < 4; ++i)
        graph.add({copy_node::static_location(0x1000 + 8 * i), sink, 8}, at_period_64(4 - i));
    const copy_profile copies = copy_profile_of(graph, {}, "period 64", [&](context_id c) { return names.at(c); });
    context_profile c;
    c.type = "long[]";
    c.frames = {"sink()"};
    const std::string text = report_of(c, &copies);
    INFO(text);
    CHECK(text.find("        copied from static 0x1000  (~2.0 KiB") != std::string::npos);
    CHECK(text.find(", 40%)\n        copied from static 0x1008  (~1.5 KiB") != std::string::npos);
    CHECK(text.find(", 30%)\n        copied from 2 other sources  (~1.5 KiB, 30%)\n") != std::string::npos);
    CHECK(text.find("static 0x1010") == std::string::npos);
}

TEST_CASE("an emulated copy profiling session: a planted clone's site reports its source") {
    using namespace ojx::emulation;
    const report_naming naming{[](std::uint64_t frame) { return "Clones.f" + std::to_string(frame & 0xffff) + "()"; },
                               [](type_id type) { return "Array" + std::to_string(type); }};
    for (const std::uint64_t seed : {3u, 4u}) {
        INFO("seed " << seed);
        session_config config;
        config.profiler.seed = seed;
        config.profiler.min_object_size = 64;
        config.sampler = {.period = 16, .randomized = true, .seed = seed};
        config.heap_bytes = std::size_t{1} << 20;
        copy_profiling_session<> session(config);
        const copy_program_truth truth = run_copy_program(
            session.registers, session.prof.contexts(),
            {.seed = seed, .chains = 1, .clones = 2, .carriers = 1, .controls = 1, .references = 0,
             .min_repetitions = 100, .max_repetitions = 300, .static_area = session.heap.statics()});
        const profile p = session.profile(naming);
        REQUIRE(p.copies);
        const auto name = [&](context_id context) {
            return name_copy_site(session.prof.contexts(), context, session.sampling.type_of(context), naming);
        };
        for (const planted_clone& clone : truth.clones) {
            const copy_site destination = name(clone.to), source = name(clone.from);
            const auto context = std::find_if(p.contexts.begin(), p.contexts.end(), [&](const context_profile& c) {
                return c.type == destination.type && c.frames == destination.frames;
            });
            REQUIRE(context != p.contexts.end());
            const std::optional<copied_contents> into = copied_into(*p.copies, *context, level);
            REQUIRE(into);
            const copy_source& top = into->sources.front();
            const context_id from = *copy_site_of(*p.copies, source.type, source.frames);
            CHECK(top.from == copy_node::field(from, copy_node::elements));
            CHECK(top.share >= 0.9);
            std::ostringstream out;
            write_text_report(out, {}, p.run, {*context}, {}, {}, &*p.copies);
            INFO(out.str());
            const std::string line = "        copied from " + source.type + " elements at " + source.frames.front();
            CHECK(out.str().find(line + "  (~") != std::string::npos);
        }
    }
}
