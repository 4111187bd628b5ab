// Test-only: a realistic replica profile built in memory — 30 allocation sites with Java and native frames, one of
// them heavily replicated — written both as pprof (by the writer under test) and as the documented JSON profile
// (docs/profile-format.md), so that pprof_consumer_test.py can check what `go tool pprof` reads from the one
// against totals it computes itself from the other. Estimates come from the real estimator, on evidence shaped
// like an agent's.
//
// usage: pprof_fixture --pprof OUT.pb.gz --profile-json OUT.json
#include "pprof_writer.hpp"

#include "ojx/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <string_view>

namespace {

using namespace ojx::tool;

constexpr int site_count = 30;
constexpr int java_sites = 20; // the rest are native

// Evidence as the pairing policy leaves it: `comparisons` spread evenly over sources (earlier objects), a fraction
// `theta` of each source's comparisons equal.
ojx::evidence_summary evidence(std::uint64_t objects, std::uint64_t comparisons, double theta) {
    ojx::evidence_summary s;
    s.sources = std::clamp<std::uint64_t>(comparisons / 25, 1, objects);
    for (std::uint64_t source = 0; source < s.sources; ++source) {
        const std::uint64_t n = comparisons / s.sources + (source < comparisons % s.sources ? 1 : 0);
        const auto e = static_cast<std::uint64_t>(std::llround(theta * static_cast<double>(n)));
        s.equal += e;
        s.different += n - e;
        const auto ed = static_cast<double>(e), nd = static_cast<double>(n);
        s.sum_equal_squared += ed * ed;
        s.sum_equal_times_total += ed * nd;
        s.sum_total_squared += nd * nd;
    }
    s.pairs = comparisons;
    s.weighted_equal = static_cast<double>(s.equal);
    s.weighted_total = static_cast<double>(comparisons);
    s.alpha_comparisons = comparisons / 10;
    return s;
}

context_profile site(int i, const ojx::estimator_config& config) {
    context_profile c;
    const auto n = static_cast<std::uint64_t>(i);
    std::uint64_t object_size = 16 + (n * 97) % 1000;
    std::uint64_t comparisons = i % 5 == 4 ? 8 : 25 + (n * 53) % 300; // every fifth: too few for an estimate
    double theta = static_cast<double>((n * 7) % 10) / 20;            // 0 to 45 %
    c.objects = 20 + (n * 37) % 400;
    if (i < java_sites) {
        const std::string cls = "Class" + std::to_string(i);
        const char* types[] = {"char[]", "java.lang.String", "int[]", "java.util.HashMap$Node", "byte[]"};
        c.type = types[i % 5];
        c.frames = {"pkg.module" + std::to_string(i % 4) + "." + cls + ".build(" + cls + ".java:" +
                        std::to_string(10 + i) + ")",
                    "pkg.Service.handle(Service.java:" + std::to_string(20 + i % 3) + ")", "pkg.Main.main(Main.java:10)"};
        c.accesses = {{{"pkg.module" + std::to_string(i % 4) + "." + cls + ".use(" + cls + ".java:" +
                            std::to_string(50 + i) + ")",
                        "pkg.Service.handle(Service.java:30)"},
                       200 + n}};
    } else {
        c.type = i % 2 ? "std::string" : "uint8_t[]";
        c.frames = {"parse_field_" + std::to_string(i) + " (parser.cpp:" + std::to_string(100 + i) + ")",
                    "Parser::parse_row(std::string_view) (parser.cpp:50)", "main (main.cpp:7)"};
        c.accesses = {{{"checksum (parser.cpp:200)", "main (main.cpp:9)"}, 50 + n}};
    }
    if (i == 0) { // the heavily replicated site: run-length decoded pages, mostly identical
        c.type = "byte[]";
        c.frames = {"pkg.parquet.RunLengthDecoder.readNext(RunLengthDecoder.java:93)",
                    "pkg.parquet.ColumnReader.readPage(ColumnReader.java:211)", "pkg.Service.handle(Service.java:20)",
                    "pkg.Main.main(Main.java:10)"};
        c.accesses = {{{"pkg.parquet.RunLengthDecoder.unpack(RunLengthDecoder.java:96)",
                        "pkg.parquet.ColumnReader.readPage(ColumnReader.java:215)"},
                       1570}};
        c.objects = 3000;
        object_size = 2048;
        comparisons = 900;
        theta = 0.92;
    }
    c.bytes = c.objects * object_size;
    c.has_evidence = true;
    c.evidence = evidence(c.objects, comparisons, theta);
    c.estimate = ojx::estimate_replicas(c.objects, c.evidence, config);
    return c;
}

profile fixture_profile() {
    profile p;
    p.run.runtime = {"pprof_fixture (synthetic)"};
    p.run.sampler = {"synthetic"};
    p.run.watchpoints = {"synthetic"};
    p.run.pairing = {"reservoir"};
    p.run.replacement = {"reservoir"};
    for (int i = 0; i < site_count; ++i) p.contexts.push_back(site(i, p.run.estimator));
    std::sort(p.contexts.begin(), p.contexts.end(),
              [](const context_profile& a, const context_profile& b) { return ranks_before(a, b); });
    return p;
}

// The documented JSON profile, with every number written to round-trip (a reader computes the same bytes saved).
void write_profile_json(std::ostream& out, const profile& p) {
    using ojx::report_detail::exact;
    using ojx::report_detail::json_escape;
    using ojx::report_detail::write_frames;
    const auto text = [&](const char* key, const std::vector<std::string>& values) {
        out << '"' << key << "\": \"" << json_escape(joined(values)) << '"';
    };
    out << "{\n  \"ojx_profile_version\": 1,\n  \"run\": {";
    text("runtime", p.run.runtime);
    out << ", ";
    text("sampler", p.run.sampler);
    out << ", ";
    text("watchpoints", p.run.watchpoints);
    out << ", ";
    text("pairing", p.run.pairing);
    out << ", ";
    text("replacement", p.run.replacement);
    out << ", \"estimator\": {\"min_comparisons\": " << p.run.estimator.min_comparisons
        << ", \"confidence\": " << exact(p.run.estimator.confidence) << "}},\n  \"contexts\": [";
    for (std::size_t i = 0; i < p.contexts.size(); ++i) {
        const context_profile& c = p.contexts[i];
        const ojx::replica_estimate& e = c.estimate;
        const ojx::evidence_summary& v = c.evidence;
        out << (i ? ",\n" : "\n") << "    {\"allocation\": {\"type\": \"" << json_escape(c.type) << "\", \"frames\": ";
        write_frames(out, c.frames);
        out << "},\n     \"objects\": " << c.objects << ", \"bytes\": " << c.bytes
            << ", \"reported\": " << (e.reported ? "true" : "false") << ", \"comparisons\": {\"equal\": " << e.equal
            << ", \"different\": " << e.different << ", \"pairs\": " << e.pairs << ", \"sources\": " << e.sources
            << ", \"effective\": " << exact(e.effective_comparisons) << "},\n     \"theta\": " << exact(e.theta)
            << ", \"theta_ci\": [" << exact(e.theta_ci.low) << ", " << exact(e.theta_ci.high)
            << "], \"alpha\": " << exact(e.alpha) << ", \"alpha_ci\": [" << exact(e.alpha_ci.low) << ", "
            << exact(e.alpha_ci.high) << "], \"alpha_comparisons\": " << e.alpha_comparisons
            << ", \"omega\": " << exact(e.omega) << ", \"gamma\": " << exact(e.gamma) << ",\n";
        out << "     \"evidence\": {\"alpha_equal\": " << v.alpha_equal << ", \"weighted_equal\": "
            << exact(v.weighted_equal) << ", \"weighted_total\": " << exact(v.weighted_total)
            << ", \"sum_equal_squared\": " << exact(v.sum_equal_squared) << ", \"sum_equal_times_total\": "
            << exact(v.sum_equal_times_total) << ", \"sum_total_squared\": " << exact(v.sum_total_squared)
            << "},\n     \"accesses\": [";
        for (std::size_t a = 0; a < c.accesses.size(); ++a) {
            out << (a ? ", " : "") << "{\"frames\": ";
            write_frames(out, c.accesses[a].frames);
            out << ", \"samples\": " << c.accesses[a].samples << '}';
        }
        out << "]}";
    }
    out << "\n  ]\n}\n";
}

bool written(const std::string& path, std::ofstream& out) {
    out.close();
    if (out) return true;
    std::fprintf(stderr, "pprof_fixture: %s: write failed\n", path.c_str());
    return false;
}

} // namespace

int main(int argc, char** argv) {
    std::string pprof_path, json_path;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string_view option = argv[i];
        if (option == "--pprof") pprof_path = argv[i + 1];
        else if (option == "--profile-json") json_path = argv[i + 1];
    }
    if (pprof_path.empty() || json_path.empty() || argc != 5) {
        std::fputs("usage: pprof_fixture --pprof OUT.pb.gz --profile-json OUT.json\n", stderr);
        return 2;
    }
    const profile p = fixture_profile();

    std::ofstream json(json_path);
    write_profile_json(json, p);
    if (!written(json_path, json)) return 1;

    std::ofstream pprof(pprof_path, std::ios::binary);
    if (const auto error = write_pprof(pprof, p)) {
        std::fprintf(stderr, "pprof_fixture: %s: %s\n", pprof_path.c_str(), error->c_str());
        return 1;
    }
    return written(pprof_path, pprof) ? 0 : 1;
}
