// Writes a made-up but realistic profile (the documented JSON) for the tests that take `ojx report`'s outputs to
// independent consumers (html_view_test.py in Chromium, pprof_consumer_test.py with go tool pprof) at sizes no
// test program reaches: Java-like stacks that share their outer frames, a few native ones, θ mostly small and up
// to 0.6, contexts with too few comparisons, names with quotes, markup and non-ASCII letters, a context with no
// frames — and one planted replica context (θ ≈ 0.9, allocated at `planted_site`, which
// tests/tools/CMakeLists.txt passes to the browser test), and one site reached from eight callers below one frame,
// each context with a handful of objects digested whole, and a site holding those objects' contents too.
// Estimates come from the real estimator. A copy section (docs/profile-format.md, "copies") too, with the code
// that copied, for the copy volume outputs (`ojx report --value copied-bytes` and `--value copying-code`).
//
// usage: profile_fixture OUT.json [CONTEXTS]   (default 40 contexts)
#include "ojx/copy_profile.hpp"
#include "ojx/profile_writer.hpp"
#include "ojx/whole_object_evidence.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace ojx;

constexpr const char* planted_site = "com.acme.ingest.DictionaryPageReader.readPage(DictionaryPageReader.java:212)";

// Evidence as a profiler would gather it: `comparisons` spread over `sources` source objects, each source's equal
// share scattered around θ (sources disagree, which is what widens the interval).
ojx::evidence_summary simulate_evidence(double theta, std::uint64_t comparisons, std::uint64_t sources,
                                        std::mt19937& random) {
    ojx::evidence_summary s;
    std::normal_distribution<double> scatter(0.0, 0.08);
    for (std::uint64_t source = 0; source < sources; ++source) {
        const std::uint64_t total = comparisons / sources + (source < comparisons % sources ? 1 : 0);
        if (total == 0) continue;
        std::binomial_distribution<std::uint64_t> equal_of(total, std::clamp(theta + scatter(random), 0.0, 1.0));
        const std::uint64_t equal = equal_of(random);
        const auto e = static_cast<double>(equal);
        const auto n = static_cast<double>(total);
        s.equal += equal;
        s.different += total - equal;
        s.weighted_equal += e;
        s.weighted_total += n;
        s.sum_equal_squared += e * e;
        s.sum_equal_times_total += e * n;
        s.sum_total_squared += n * n;
        ++s.sources;
    }
    s.pairs = (s.equal + s.different) * 3 / 5;
    s.alpha_comparisons = s.different / 3;
    s.alpha_equal = s.alpha_comparisons / 40;
    return s;
}

context_profile make_context(std::string type, std::vector<std::string> frames, std::uint64_t objects,
                             std::uint64_t object_size, double theta, std::uint64_t comparisons,
                             std::vector<named_access_context> accesses, const ojx::estimator_config& config,
                             std::mt19937& random) {
    context_profile c;
    c.type = std::move(type);
    c.frames = std::move(frames);
    c.objects = objects;
    c.bytes = objects * object_size;
    c.has_evidence = true;
    c.evidence = simulate_evidence(theta, comparisons, std::max<std::uint64_t>(1, comparisons / 9), random);
    c.estimate = ojx::estimate_replicas(objects, c.evidence, config);
    c.estimate_from_evidence(config);
    c.accesses = std::move(accesses);
    return c;
}

// A context whose objects were digested whole (no comparison): `alike` objects of one content and `own` of their
// own each, as an agent's digests at collections give.
context_profile make_whole_context(std::vector<std::string> frames, std::uint64_t alike, std::uint64_t own,
                                   std::uint64_t object_size, std::uint64_t& next_digest,
                                   const ojx::estimator_config& config) {
    context_profile c;
    c.type = "byte[]";
    c.frames = std::move(frames);
    c.objects = alike + own;
    c.bytes = c.objects * object_size;
    c.has_evidence = true;
    whole_object_evidence evidence(whole_object_config{});
    for (std::uint64_t i = 0; i < alike + own; ++i) {
        object_fingerprint object;
        object.digest = i < alike ? 0xc0ffee : next_digest++;
        object.size = object_size;
        evidence.record(object, 1.0);
    }
    c.whole = evidence.summary();
    c.estimate = ojx::estimate_replicas(c.objects, c.evidence, config);
    c.estimate_from_evidence(config);
    return c;
}

template <class T>
const T& pick(const std::vector<T>& from, std::mt19937& random) {
    return from[std::uniform_int_distribution<std::size_t>(0, from.size() - 1)(random)];
}

// A sampled copy graph as a merge of two runs at periods 64 and 256 gives: decoded records copied into the planted
// arrays (the heaviest copy, by far; `planted_frames`, the planted context's, name them as a profile does), a
// static table read into records, fresh references stored, a site with no frames, and uses by computations, which
// are not copies. The code that copied as the agents record it: two contexts and other code for the planted copy,
// one context for the static table, one with no frames, and none for the fresh references (as where a profile
// that recorded no code was merged in).
// Exact counts (docs/profile-format.md, "exact_counts") as the JVM agent writes them with count=paths: the planted
// site counted most, then sites with fewer objects, more of them than a page lists; at heap sampling interval 0,
// so the JVM's allocations are there too: every third grow site had some of its arrays removed by the JIT.
exact_counts make_exact(const std::string& planted_frame) {
    exact_counts c;
    c.plans = {"paths"};
    c.increments = 987654;
    c.corrections = 12;
    c.methods_instrumented = 3210;
    c.left_alone = {{"no allocation site", 20000}};
    c.jvm_reported = true;
    counted_site planted;
    planted.method = "com.acme.ingest.DictionaryPageReader.readPage(I)[B";
    planted.bci = 41;
    planted.frame = planted_frame;
    planted.type = "byte[]";
    planted.objects = 1234567;
    planted.elements = 4096 * planted.objects;
    planted.jvm_allocated = planted.objects;
    c.sites.push_back(planted);
    for (std::uint32_t i = 0; i < 60; ++i) {
        counted_site s;
        s.method = "com.acme.util.Buffers.grow" + std::to_string(i) + "(I)[J";
        s.bci = 3 + i;
        s.frame = "com.acme.util.Buffers.grow" + std::to_string(i) + "(Buffers.java:" + std::to_string(200 + i) + ")";
        s.type = "long[]";
        s.objects = 1000 + 37 * i;
        s.elements = 16 * s.objects + i;
        s.jvm_allocated = s.objects - (i % 3 == 0 ? 100 + 5 * i : 0);
        c.sites.push_back(s);
    }
    normalise(c);
    return c;
}

copy_profile make_copies(const std::vector<std::string>& planted_frames) {
    const std::vector<copy_site> sites = {
        {"com.acme.ingest.Record", {"com.acme.ingest.Decoder.next(Decoder.java:58)",
                                    "org.apache.spark.executor.Executor$TaskRunner.run(Executor.scala:551)"}},
        {"byte[]", planted_frames},
        {"com.acme.model.Address", {"com.acme.model.Address.<init>(Address.java:23)"}},
        {"java.lang.Object[]", {}}};
    const std::vector<copy_code_context> code_contexts = {
        {{"com.acme.ingest.DictionaryPageReader.decode(DictionaryPageReader.java:240)",
          "com.acme.ingest.DictionaryPageReader.readPage(DictionaryPageReader.java:212)",
          "org.apache.spark.executor.Executor$TaskRunner.run(Executor.scala:551)"}},
        {{"java.util.Arrays.copyOf(Arrays.java:3537)",
          "com.acme.ingest.ColumnChunkLoader.load(ColumnChunkLoader.java:64)",
          "org.apache.spark.executor.Executor$TaskRunner.run(Executor.scala:551)"}},
        {{"com.acme.ingest.Decoder.next(Decoder.java:61)",
          "org.apache.spark.executor.Executor$TaskRunner.run(Executor.scala:551)"}},
        {{}},
        {{"java.util.Arrays.equals(Arrays.java:2646)", "com.acme.ingest.Dedup.seen(Dedup.java:31)"}}};
    const copy_node record8 = copy_node::field(0, 8), pages = copy_node::field(1, copy_node::elements);
    const copy_edge planted{record8, pages, 8}, table{copy_node::static_location(0x7f3a00001000), record8, 4},
        fresh{copy_node::allocation(2), copy_node::field(3, copy_node::elements), 4},
        untraced{copy_node::field(2, 16), copy_node::field(0, 24), 2}, use{pages, copy_node::consumer(), 8};
    sampled_copy_graph graph;
    for (int i = 0; i < 30; ++i) graph.add(planted, i % 3 == 0 ? 256 : 64);
    for (int i = 0; i < 6; ++i) graph.add(table, 64);
    for (int i = 0; i < 4; ++i) graph.add(fresh, 64);
    graph.add(untraced, 256);
    for (int i = 0; i < 20; ++i) graph.add(use, 64);
    copy_code code;
    code.add(planted, {{{0, 17}, {1, 9}}, 4});
    code.add(table, {{{2, 6}}, 0});
    code.add(untraced, {{{3, 1}}, 0});
    code.add(use, {{{4, 20}}, 0});
    sampled_copy_stats counters;
    counters.loads_followed = 55;
    counters.ended = 50;
    counters.bound_reached = 5;
    counters.steps = 400;
    counters.edges = 61;
    return copy_profile_of(graph, code, counters, "fixture (periods 64 and 256)",
                           [&](context_id c) { return sites.at(c); },
                           [&](context_id c) { return code_contexts.at(c); });
}

profile make_profile(std::size_t count) {
    std::mt19937 random(20261122);
    profile p;
    p.run.runtime = {"OpenJDK 17.0.15 (G1)"};
    p.run.sampler = {"perf_event cycles:u, randomized period around 1000003 (precise_ip=2)"};
    p.run.watchpoints = {"perf_event breakpoints, 4 slots"};
    p.run.pairing = {"reservoir"};
    p.run.replacement = {"reservoir"};
    p.run.profiles = 3;
    p.run.heap_moments = {"the survivors of collection 41 of 57 (the most tracked bytes alive after a collection)"};
    p.run.seconds = 62.5;
    p.run.counters = {{"allocations", 1'842'211},      {"samples", 96'118},
                      {"samples_dropped.store", 30'120}, {"samples_dropped.untracked_address", 8'004},
                      {"watchpoints_armed", 21'950},     {"traps", 19'230},
                      {"comparisons", 18'871},           {"agent.samples_dropped_during_gc", 312}};

    const std::vector<std::string> outer = {
        "org.apache.spark.executor.Executor$TaskRunner.run(Executor.scala:551)",
        "org.apache.spark.scheduler.Task.run(Task.scala:141)",
        "org.apache.spark.rdd.RDD.iterator(RDD.scala:328)"};
    const std::vector<std::string> middle = {
        "org.apache.parquet.hadoop.ParquetFileReader.readNextRowGroup(ParquetFileReader.java:937)",
        "org.apache.parquet.column.impl.ColumnReaderBase.readPage(ColumnReaderBase.java:655)",
        "com.fasterxml.jackson.databind.ObjectMapper.readValue(ObjectMapper.java:3629)",
        "com.acme.orders.OrderService.lambda$enrich$3(OrderService.java:188)",
        "com.acme.orders.PricingCache$Loader.load(PricingCache.java:77)",
        "java.util.stream.ReferencePipeline$3$1.accept(ReferencePipeline.java:197)",
        "io.netty.buffer.PooledByteBufAllocator.newHeapBuffer(PooledByteBufAllocator.java:382)",
        "com.acme.util.\"Quoted\"Names.<init>(QuotedNames.java:9)",
        "com.acme.i18n.Übersetzer.übersetze(Übersetzer.java:41) — 翻訳"};
    const std::vector<std::string> leaves = {
        "java.util.Arrays.copyOf(Arrays.java:3537)",
        "java.lang.String.<init>(String.java:1386)",
        "java.util.HashMap.resize(HashMap.java:702)",
        "java.lang.StringBuilder.toString(StringBuilder.java:453)",
        "com.acme.model.Address.<init>(Address.java:23)",
        "com.acme.parse.Tokenizer.next(Tokenizer.java:120)"};
    const std::vector<std::string> types = {"byte[]", "char[]", "java.lang.String", "java.util.HashMap$Node[]",
                                            "com.acme.model.Address", "long[]", "java.lang.Object[]"};
    const std::vector<std::string> users = {
        "java.util.Arrays.equals(Arrays.java:2646)", "java.lang.String.hashCode(String.java:1504)",
        "com.acme.orders.OrderService.total(OrderService.java:240)",
        "org.apache.parquet.column.values.dictionary.DictionaryValuesReader.readBytes(DictionaryValuesReader.java:86)",
        "com.acme.parse.Tokenizer.peek(Tokenizer.java:131)"};
    const ojx::estimator_config config = p.run.estimator;

    auto access_stacks = [&](std::size_t n) {
        std::vector<named_access_context> accesses;
        std::uint64_t samples = 1'600;
        for (std::size_t i = 0; i < n; ++i, samples = samples * 2 / 5 + 3)
            accesses.push_back({{pick(users, random), pick(middle, random), outer[0]}, samples});
        return accesses;
    };

    const std::vector<std::string> planted_frames = {
        planted_site, "com.acme.ingest.ColumnChunkLoader.load(ColumnChunkLoader.java:64)", middle[0], outer[2],
        outer[1], outer[0]};
    p.contexts.push_back(make_context(
        "byte[]", planted_frames,
        40'000, 2'048, 0.9, 600,
        {{{"com.acme.ingest.DictionaryPageReader.decode(DictionaryPageReader.java:240)", middle[0], outer[0]}, 1'570},
         {{"java.util.Arrays.equals(Arrays.java:2646)", "com.acme.ingest.Dedup.seen(Dedup.java:31)", outer[0]}, 310}},
        config, random));
    // One site reached from eight callers below one frame, each context with six objects digested whole, four
    // of them alike: a handful each, pooled at the frame above them (frame_pools.hpp) into one estimate.
    std::uint64_t next_digest = 1;
    for (std::size_t i = 0; i < 8; ++i)
        p.contexts.push_back(make_whole_context(
            {"com.acme.io.ChunkCopier.copy(ChunkCopier.java:30)",
             "com.acme.io.Segment.flush" + std::to_string(i) + "(Segment.java:" + std::to_string(40 + i) + ")",
             "com.acme.io.SegmentWriter.write(SegmentWriter.java:55)", outer[2], outer[1], outer[0]},
            4, 2, 4'096, next_digest, config));
    // A site of its own holding those contents too (a cache keeping copies of the chunks): a pair of sites
    // holding the same contents whole (shared_contents.hpp).
    p.contexts.push_back(make_whole_context({"com.acme.io.ChunkCache.keep(ChunkCache.java:18)", outer[1], outer[0]},
                                            5, 5, 4'096, next_digest, config));
    // The cache keeps its copies: every one of its objects alive at the heap moment (the heap view, live_heap.hpp).
    {
        context_profile& cache = p.contexts.back();
        cache.live = {.objects = cache.objects,
                      .weight = static_cast<double>(cache.objects),
                      .bytes = static_cast<double>(cache.bytes),
                      .digested = cache.whole.identical};
        cache.estimate_from_evidence(config);
    }
    // The names a page must not trip over: markup that would end its data's <script>, and no frames at all.
    p.contexts.push_back(make_context("com.acme.Tag</script><script>alert(1)</script>",
                                      {"com.acme.html.Renderer.render(Renderer.java:5) <b>&amp;</b>", outer[0]}, 900,
                                      64, 0.35, 180, access_stacks(1), config, random));
    p.contexts.push_back(make_context("int[]", {}, 120, 4'096, 0.2, 45, {{{}, 12}}, config, random));
    // Native frames as the native agent names them, with a C++ signature and a runtime frame without a line.
    p.contexts.push_back(make_context(
        "malloc", {"Parser::parse_row(std::basic_string_view<char, std::char_traits<char> >) (parser.cpp:88)",
                   "main (main.cpp:12)", "__libc_start_call_main+0x79 (libc.so.6)"},
        3'000, 1'024, 0.5, 240, {{{"Parser::checksum(Row const&) (parser.cpp:140)", "main (main.cpp:14)"}, 90}},
        config, random));

    // Most sites of a real program are not replicated: θ is small for most of them, up to 0.6 for a few.
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    auto theta_of = [&] { const double u = uniform(random); return 0.6 * u * u * u; };
    std::uniform_int_distribution<std::uint64_t> objects_of(50, 20'000);
    const std::vector<std::uint64_t> sizes = {24, 48, 160, 1'024, 8'192};
    for (std::size_t i = p.contexts.size(); i < count; ++i) {
        std::vector<std::string> frames = {pick(leaves, random), pick(middle, random)};
        frames.push_back("com.acme.jobs.Job" + std::to_string(i % 7) + ".step" + std::to_string(i) + "(Job" +
                         std::to_string(i % 7) + ".java:" + std::to_string(100 + i) + ")");
        frames.insert(frames.end(), outer.rbegin(), outer.rend()); // leaf first: the Executor frame last
        // One context in four has too few comparisons for an estimate.
        const std::uint64_t comparisons = i % 4 == 3 ? 5 + i % 13 : 25 + (i * 37) % 500;
        p.contexts.push_back(make_context(pick(types, random), std::move(frames), objects_of(random),
                                          pick(sizes, random),
                                          theta_of(), comparisons, access_stacks(1 + i % 4), config, random));
    }
    std::sort(p.contexts.begin(), p.contexts.end(),
              [](const context_profile& a, const context_profile& b) { return ranks_before(a, b); });
    p.copies = make_copies(planted_frames);
    p.exact = make_exact(planted_frames.front());
    return p;
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 2 || argc > 3) {
        std::fputs("usage: profile_fixture OUT.json [CONTEXTS]\n", stderr);
        return 2;
    }
    const std::size_t count = argc == 3 ? std::strtoull(argv[2], nullptr, 10) : 40;
    std::ofstream out(argv[1]);
    write_profile_json(out, make_profile(std::max<std::size_t>(count, 4)));
    out.close();
    if (!out) {
        std::fprintf(stderr, "profile_fixture: cannot write %s\n", argv[1]);
        return 1;
    }
    return 0;
}
