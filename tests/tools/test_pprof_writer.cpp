// The pprof writer: what it writes is read back (gunzipped with zlib, parsed with the same profile.proto) and
// checked for what pprof's consumers rely on — a well-formed string table, ids that resolve, values that sum to
// the profile's totals, frames split into function, file and line, leaf-first stacks and deduplicated tables.
#include "pprof_writer.hpp"

#include "pprof/profile.pb.h"

#include <catch2/catch.hpp>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace ojx;
using namespace ojx::tool;
namespace pb = perftools::profiles;

std::string gunzip(const std::string& gzipped) {
    z_stream stream{};
    REQUIRE(inflateInit2(&stream, 15 + 16) == Z_OK); // gzip only: a zlib or raw stream is a failure
    stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gzipped.data()));
    stream.avail_in = static_cast<uInt>(gzipped.size());
    std::string out;
    std::array<char, 4096> buffer;
    int code = Z_OK;
    while (code == Z_OK) {
        stream.next_out = reinterpret_cast<Bytef*>(buffer.data());
        stream.avail_out = static_cast<uInt>(buffer.size());
        code = inflate(&stream, Z_NO_FLUSH);
        out.append(buffer.data(), buffer.size() - stream.avail_out);
    }
    inflateEnd(&stream);
    REQUIRE(code == Z_STREAM_END);
    return out;
}

pb::Profile parsed(const std::string& gzipped) {
    pb::Profile message;
    REQUIRE(message.ParseFromString(gunzip(gzipped)));
    return message;
}

pb::Profile written(const profile& p) {
    std::ostringstream out;
    const auto error = write_pprof(out, p);
    INFO(error.value_or(""));
    REQUIRE_FALSE(error);
    return parsed(out.str());
}

context_profile context(std::string type, std::vector<std::string> frames, std::uint64_t objects,
                        std::uint64_t bytes, std::uint64_t equal, std::uint64_t different, double omega) {
    context_profile c;
    c.type = std::move(type);
    c.frames = std::move(frames);
    c.objects = objects;
    c.bytes = bytes;
    c.estimate.objects = objects;
    c.estimate.equal = equal;
    c.estimate.different = different;
    c.estimate.reported = equal + different >= 20;
    c.estimate.theta = equal + different == 0 ? 0 : static_cast<double>(equal) / static_cast<double>(equal + different);
    c.estimate.omega = omega;
    c.estimate.gamma = std::min(1.0, omega + 0.2);
    c.estimate_from_evidence(ojx::estimator_config{}); // the site's estimate, as a reader derives it
    return c;
}

// Java and native sites, sharing frames (the same caller, the same method at other lines) and types.
profile sample_profile() {
    profile p;
    p.run.runtime = {"OpenJDK 17"};
    p.run.sampler = {"perf_event"};
    context_profile reader = context("byte[]",
        {"pkg.Reader.readNext(Reader.java:93)", "pkg.Reader.readAll(Reader.java:40)", "pkg.Main.main(Main.java:10)"},
        300, 614400, 501, 74, 0.70);
    reader.accesses = {{{"pkg.Reader.unpack(Reader.java:96)", "pkg.Main.main(Main.java:10)"}, 1570},
                       {{"pkg.Codec.decode(Codec.java:12)"}, 40}};
    p.contexts.push_back(reader);
    p.contexts.push_back(context("byte[]",
        {"pkg.Reader.readNext(Reader.java:97)", "pkg.Reader.readAll(Reader.java:40)", "pkg.Main.main(Main.java:10)"},
        100, 4096, 30, 10, 0.25));
    p.contexts.push_back(context("std::vector<int>",
        {"parse_row (reader.cpp:42)", "std::vector<int>::push_back(int const&) (stl_vector.h:1187)", "main (main.cpp:7)"},
        50, 1600, 12, 3, 0.9)); // too few comparisons: no estimate
    p.contexts.push_back(context("char[]",
        {"java.lang.Object.clone(Native Method)", "malloc+0x1f (libc.so.6)", "0x7f0012 (libfoo.so)"}, 7, 700, 0, 0, 0));
    return p;
}

const std::string& text(const pb::Profile& p, std::int64_t index) {
    REQUIRE(index >= 0);
    REQUIRE(index < p.string_table_size());
    return p.string_table(static_cast<int>(index));
}

std::map<std::uint64_t, const pb::Location*> locations_by_id(const pb::Profile& p) {
    std::map<std::uint64_t, const pb::Location*> by_id;
    for (const pb::Location& l : p.location()) REQUIRE(by_id.emplace(l.id(), &l).second);
    return by_id;
}

std::map<std::uint64_t, const pb::Function*> functions_by_id(const pb::Profile& p) {
    std::map<std::uint64_t, const pb::Function*> by_id;
    for (const pb::Function& f : p.function()) REQUIRE(by_id.emplace(f.id(), &f).second);
    return by_id;
}

// What a frame of a sample resolves to: function name, file and line.
struct resolved_frame {
    std::string function, system_name, file;
    std::int64_t line = 0;
    std::uint64_t location_id = 0, function_id = 0;
};

resolved_frame resolve(const pb::Profile& p, std::uint64_t location_id) {
    const auto locations = locations_by_id(p);
    const auto functions = functions_by_id(p);
    REQUIRE(locations.count(location_id) == 1);
    const pb::Location& location = *locations.at(location_id);
    REQUIRE(location.line_size() == 1);
    const std::uint64_t function_id = location.line(0).function_id();
    REQUIRE(functions.count(function_id) == 1);
    const pb::Function& function = *functions.at(function_id);
    return {text(p, function.name()), text(p, function.system_name()), text(p, function.filename()),
            location.line(0).line(), location_id,
            function_id};
}

int value_index(const pb::Profile& p, const std::string& type) {
    for (int i = 0; i < p.sample_type_size(); ++i)
        if (text(p, p.sample_type(i).type()) == type) return i;
    FAIL("no sample type " << type);
    return -1;
}

std::int64_t sum(const pb::Profile& p, const std::string& type) {
    const int index = value_index(p, type);
    std::int64_t total = 0;
    for (const pb::Sample& s : p.sample()) total += s.value(index);
    return total;
}

std::multimap<std::string, std::string> labels(const pb::Profile& p, const pb::Sample& s) {
    std::multimap<std::string, std::string> out;
    for (const pb::Label& l : s.label())
        out.emplace(text(p, l.key()), l.str() != 0 ? text(p, l.str()) : std::to_string(l.num()) + " " + text(p, l.num_unit()));
    return out;
}

} // namespace

TEST_CASE("the string table starts with the empty string and holds each string once", "[pprof]") {
    const pb::Profile p = written(sample_profile());
    REQUIRE(p.string_table_size() > 0);
    CHECK(p.string_table(0).empty());
    const std::set<std::string> distinct(p.string_table().begin(), p.string_table().end());
    CHECK(distinct.size() == static_cast<std::size_t>(p.string_table_size()));
}

TEST_CASE("every id and string index the profile uses exists", "[pprof]") {
    const pb::Profile p = written(sample_profile());
    const auto locations = locations_by_id(p);
    const auto functions = functions_by_id(p);
    CHECK(locations.count(0) == 0); // ids are nonzero
    CHECK(functions.count(0) == 0);
    for (const pb::ValueType& t : p.sample_type()) {
        text(p, t.type());
        text(p, t.unit());
    }
    text(p, p.period_type().type());
    text(p, p.default_sample_type());
    for (const std::int64_t comment : p.comment()) text(p, comment);
    for (const pb::Function& f : p.function()) {
        text(p, f.name());
        text(p, f.system_name());
        text(p, f.filename());
    }
    std::set<std::uint64_t> mappings;
    for (const pb::Mapping& m : p.mapping()) {
        CHECK(m.id() != 0);
        CHECK(mappings.insert(m.id()).second);
        CHECK(m.has_functions()); // symbolized already: pprof must not look for binaries
        text(p, m.filename());
        text(p, m.build_id());
    }
    for (const pb::Location& l : p.location()) {
        CHECK(mappings.count(l.mapping_id()) == 1);
        for (const pb::Line& line : l.line()) CHECK(functions.count(line.function_id()) == 1);
    }
    for (const pb::Sample& s : p.sample()) {
        CHECK(s.value_size() == p.sample_type_size());
        for (const std::uint64_t id : s.location_id()) CHECK(locations.count(id) == 1);
        for (const pb::Label& l : s.label()) {
            text(p, l.key());
            text(p, l.str());
            text(p, l.num_unit());
            CHECK((l.str() == 0 || (l.num() == 0 && l.num_unit() == 0))); // at most one of str and num
        }
    }
}

TEST_CASE("the values are objects, bytes, comparisons and replicated bytes of churn and heap, summing to the "
          "profile's totals", "[pprof]") {
    profile in = sample_profile();
    // One site with a heap view: 40 live objects of 1 KiB, 30 of them one content, every one digested.
    context_profile& kept = in.contexts.front();
    kept.live.objects = 40;
    kept.live.weight = 40;
    kept.live.bytes = 40 * 1024;
    kept.live.digested.groups = {{.digest = 7, .objects = 30, .weight = 30, .weight_squared = 30, .heaviest = 1,
                                  .all_zero = false}};
    for (std::uint64_t d = 8; d < 18; ++d)
        kept.live.digested.groups.push_back(
            {.digest = d, .objects = 1, .weight = 1, .weight_squared = 1, .heaviest = 1, .all_zero = false});
    kept.estimate_heap(in.run.estimator);
    REQUIRE(kept.heap.reported());
    const pb::Profile p = written(in);
    REQUIRE(p.sample_type_size() == 5);
    CHECK(text(p, p.sample_type(0).type()) == "objects");
    CHECK(text(p, p.sample_type(0).unit()) == "count");
    CHECK(text(p, p.sample_type(1).type()) == "allocated");
    CHECK(text(p, p.sample_type(1).unit()) == "bytes");
    CHECK(text(p, p.sample_type(2).type()) == "comparisons");
    CHECK(text(p, p.sample_type(2).unit()) == "count");
    CHECK(text(p, p.sample_type(3).type()) == "replicated_bytes");
    CHECK(text(p, p.sample_type(3).unit()) == "bytes");
    CHECK(text(p, p.sample_type(4).type()) == "heap_replicated_bytes");
    CHECK(text(p, p.sample_type(4).unit()) == "bytes");
    CHECK(text(p, p.default_sample_type()) == "replicated_bytes");
    CHECK(p.sample_size() == static_cast<int>(in.contexts.size()));

    std::uint64_t objects = 0, bytes = 0, comparisons = 0;
    double replicated = 0;
    for (const context_profile& c : in.contexts) {
        objects += c.objects;
        bytes += c.bytes;
        comparisons += c.estimate.comparisons();
        replicated += c.replicated_bytes();
    }
    REQUIRE(replicated > 0);
    CHECK(sum(p, "objects") == static_cast<std::int64_t>(objects));
    CHECK(sum(p, "allocated") == static_cast<std::int64_t>(bytes));
    CHECK(sum(p, "comparisons") == static_cast<std::int64_t>(comparisons));
    CHECK(sum(p, "replicated_bytes") == std::llround(replicated));
    CHECK(sum(p, "heap_replicated_bytes") == std::llround(kept.heap_saving().low));
    CHECK(kept.heap_saving().low > 0);
}

TEST_CASE("replicated bytes sum to the rounded total, not to a sum of rounding errors", "[pprof]") {
    profile in;
    // Each site: 3 objects of 5 bytes, all identical: (3 − 1) · 5/3 = 3.33 bytes replicated.
    for (int site = 0; site < 10; ++site)
        in.contexts.push_back(context("int[]", {"pkg.A.f" + std::to_string(site) + "(A.java:1)"}, 3, 5, 40, 0, 1.0));
    REQUIRE(in.contexts.front().replicated_bytes() == Approx(10.0 / 3));
    const pb::Profile p = written(in);
    CHECK(sum(p, "replicated_bytes") == 33);
    for (const pb::Sample& s : p.sample()) CHECK((s.value(3) == 3 || s.value(3) == 4));
}

TEST_CASE("amounts beyond pprof's signed values are shown as the largest one, never wrapped", "[pprof]") {
    profile in;
    const std::uint64_t most = std::numeric_limits<std::uint64_t>::max();
    // Every object identical, 2^64 − 1 of them and of bytes: the replicated bytes (~1.8e19) exceed int64.
    in.contexts.push_back(context("byte[]", {"pkg.A.f(A.java:1)"}, most, most, 40, 0, 1.0));
    in.contexts.push_back(context("int[]", {"pkg.B.g(B.java:2)"}, most, most, 40, 0, 1.0));
    // The second's allocation metrics (as a profile could state them): 1e300 instances of 1e300 bytes.
    ojx::type_allocations& huge = in.contexts[1].allocated.emplace().other;
    huge.seen = 1;
    huge.instances = huge.bytes = 1e300;
    REQUIRE(in.contexts[0].replicated_bytes() > 9.3e18);
    REQUIRE(in.contexts[1].replicated_bytes() > 1e299);
    const pb::Profile p = written(in);
    const std::int64_t largest = std::numeric_limits<std::int64_t>::max();
    REQUIRE(p.sample_size() == 2);
    CHECK(p.sample(0).value(0) == largest);
    CHECK(p.sample(0).value(3) == largest);
    // The running total is already the largest value: the second site adds nothing rather than overflowing.
    CHECK(p.sample(1).value(3) == 0);
    CHECK(labels(p, p.sample(1)).find("instances")->second == std::to_string(largest) + " count");
}

TEST_CASE("stacks are leaf first, under a synthetic frame naming the allocated type", "[pprof]") {
    const profile in = sample_profile();
    const pb::Profile p = written(in);
    for (int i = 0; i < p.sample_size(); ++i) {
        const pb::Sample& s = p.sample(i);
        const context_profile& c = in.contexts[static_cast<std::size_t>(i)];
        REQUIRE(s.location_id_size() == static_cast<int>(c.frames.size()) + 1);
        const resolved_frame type = resolve(p, s.location_id(0));
        CHECK(type.function == "[" + c.type + "]");
        CHECK(type.system_name.empty()); // so that pprof shows a type's template arguments rather than drop them
        CHECK(type.file.empty());
        CHECK(type.line == 0);
        const resolved_frame site = resolve(p, s.location_id(1));
        const resolved_frame root = resolve(p, s.location_id(s.location_id_size() - 1));
        INFO(c.frames.front() << " … " << c.frames.back());
        CHECK(c.frames.front().starts_with(site.function));
        CHECK(c.frames.back().starts_with(root.function));
    }
}

TEST_CASE("Java and native frames become function, file and line; other frames keep their whole name", "[pprof]") {
    const pb::Profile p = written(sample_profile());
    std::map<std::string, resolved_frame> by_function;
    for (const pb::Location& l : p.location()) {
        const resolved_frame f = resolve(p, l.id());
        by_function[f.function + ":" + std::to_string(f.line)] = f;
    }
    const auto expect = [&](const std::string& function, const std::string& file, std::int64_t line) {
        INFO(function);
        REQUIRE(by_function.count(function + ":" + std::to_string(line)) == 1);
        CHECK(by_function.at(function + ":" + std::to_string(line)).file == file);
    };
    expect("pkg.Reader.readNext", "Reader.java", 93);
    expect("pkg.Reader.readNext", "Reader.java", 97);
    expect("pkg.Main.main", "Main.java", 10);
    expect("parse_row", "reader.cpp", 42);
    expect("std::vector<int>::push_back(int const&)", "stl_vector.h", 1187); // parentheses in the name stay
    expect("java.lang.Object.clone(Native Method)", "", 0);
    expect("malloc+0x1f (libc.so.6)", "", 0);
    expect("0x7f0012 (libfoo.so)", "", 0);
}

TEST_CASE("the same frame is one location, the same function at other lines one function", "[pprof]") {
    const pb::Profile p = written(sample_profile());
    const resolved_frame readnext_93 = resolve(p, p.sample(0).location_id(1));
    const resolved_frame readnext_97 = resolve(p, p.sample(1).location_id(1));
    CHECK(readnext_93.line == 93);
    CHECK(readnext_97.line == 97);
    CHECK(readnext_93.location_id != readnext_97.location_id);
    CHECK(readnext_93.function_id == readnext_97.function_id);
    // The shared callers and the shared type.
    CHECK(p.sample(0).location_id(2) == p.sample(1).location_id(2));
    CHECK(p.sample(0).location_id(3) == p.sample(1).location_id(3));
    CHECK(p.sample(0).location_id(0) == p.sample(1).location_id(0));

    std::set<std::pair<std::string, std::string>> functions;
    for (const pb::Function& f : p.function()) CHECK(functions.emplace(text(p, f.name()), text(p, f.filename())).second);
    std::set<std::pair<std::uint64_t, std::int64_t>> locations;
    for (const pb::Location& l : p.location())
        CHECK(locations.emplace(l.line(0).function_id(), l.line(0).line()).second);
}

TEST_CASE("labels carry the type, the estimate in percent when there is one, and where objects were used",
          "[pprof]") {
    const pb::Profile p = written(sample_profile());
    const auto reader = labels(p, p.sample(0));
    CHECK(reader.find("type")->second == "byte[]");
    CHECK(reader.find("theta")->second == "87 percent"); // 501 / 575
    CHECK(reader.find("omega")->second == "70 percent");
    CHECK(reader.find("gamma")->second == "90 percent");
    const auto [first, last] = reader.equal_range("used_at");
    std::vector<std::string> used_at;
    for (auto it = first; it != last; ++it) used_at.push_back(it->second);
    CHECK(used_at == std::vector<std::string>{"pkg.Reader.unpack(Reader.java:96)", "pkg.Codec.decode(Codec.java:12)"});

    const auto unreported = labels(p, p.sample(2));
    CHECK(unreported.find("type")->second == "std::vector<int>");
    CHECK(unreported.count("theta") == 0);
    CHECK(unreported.count("omega") == 0);
    CHECK(unreported.count("gamma") == 0);
}

TEST_CASE("the profile says what it is", "[pprof]") {
    const pb::Profile p = written(sample_profile());
    std::vector<std::string> comments;
    for (const std::int64_t c : p.comment()) comments.push_back(text(p, c));
    REQUIRE_FALSE(comments.empty());
    CHECK(comments.front().starts_with("ojx replica profile"));
    CHECK(std::find(comments.begin(), comments.end(), "runtime: OpenJDK 17") != comments.end());
    CHECK(text(p, p.period_type().type()) == "comparisons");
    CHECK(p.period() == 1);
}

TEST_CASE("an empty profile is a valid pprof profile with no samples", "[pprof]") {
    const pb::Profile p = written(profile{});
    CHECK(p.sample_size() == 0);
    CHECK(p.sample_type_size() == 5);
    CHECK(p.string_table(0).empty());
}

TEST_CASE("a failed write is reported", "[pprof]") {
    std::ostringstream out;
    out.setstate(std::ios::badbit);
    const auto error = write_pprof(out, sample_profile());
    REQUIRE(error);
    CHECK(error->find("write failed") != std::string::npos);
}

TEST_CASE("labels carry the allocation metrics: every allocation, scaled where sampled, and array elements",
          "[pprof]") {
    profile p = sample_profile();
    p.run.allocation_counts = {ojx::describe_allocation_counting(524288)};
    ojx::named_allocations& sampled = p.contexts[0].allocated.emplace();
    sampled.estimated = true;
    sampled.types.push_back({"byte[]", {.array = true, .seen = 300, .instances = 1234.6, .bytes = 2.5e6,
                                        .elements = 2.4e6, .instances_variance = 900}});
    p.contexts[1].allocated.emplace().types.push_back({"Record", {.seen = 7, .instances = 7, .bytes = 7168}});
    const pb::Profile written_profile = written(p);
    const auto first = labels(written_profile, written_profile.sample(0));
    CHECK(first.find("instances")->second == "1235 count");
    CHECK(first.find("elements")->second == "2400000 count");
    CHECK(first.find("instances_are")->second == "estimated");
    const auto second = labels(written_profile, written_profile.sample(1));
    CHECK(second.find("instances")->second == "7 count");
    CHECK(second.count("elements") == 0);
    CHECK(second.count("instances_are") == 0);
    CHECK(labels(written_profile, written_profile.sample(2)).count("instances") == 0); // an older profile's
    std::vector<std::string> comments;
    for (const std::int64_t c : written_profile.comment()) comments.push_back(text(written_profile, c));
    CHECK(std::any_of(comments.begin(), comments.end(),
                      [](const std::string& c) { return c.starts_with("allocation counts: estimated"); }));
}

TEST_CASE("a writer for copies writes copies and copied bytes, the source as leaf over location and site",
          "[pprof][copies]") {
    const std::vector<copy_stack> stacks = {
        {{"Buffer.grow(Buffer.java:12)", "Job.run(Job.java:40)"}, "", "[long[] elements]",
         "[copied from Record+16 at Decoder.next(Decoder.java:58)]", 448, 3584, 4, 8},
        {{}, "", "[static 0x7f3a00002000]", "[copied from Cell+8 at (no frames)]", 16, 32, 1, 2}};
    pprof_writer writer(pprof_writer::samples::copies);
    for (const copy_stack& s : stacks) writer.add(s);
    run_profile run;
    run.runtime = {"emulation"};
    std::ostringstream out;
    REQUIRE_FALSE(writer.finish(out, run));
    const pb::Profile p = parsed(out.str());

    REQUIRE(p.sample_type_size() == 2);
    CHECK(text(p, p.sample_type(0).type()) == "copies");
    CHECK(text(p, p.sample_type(0).unit()) == "count");
    CHECK(text(p, p.sample_type(1).type()) == "copied_bytes");
    CHECK(text(p, p.sample_type(1).unit()) == "bytes");
    CHECK(text(p, p.default_sample_type()) == "copied_bytes");
    REQUIRE(p.comment_size() > 0);
    CHECK(text(p, p.comment(0)).starts_with("ojx copy profile"));
    REQUIRE(p.sample_size() == 2);
    for (int i = 0; i < p.sample_size(); ++i) {
        const pb::Sample& sample = p.sample(i);
        const copy_stack& s = stacks[static_cast<std::size_t>(i)];
        CHECK(sample.value(0) == static_cast<std::int64_t>(s.copies));
        CHECK(sample.value(1) == static_cast<std::int64_t>(s.bytes));
        REQUIRE(sample.location_id_size() == static_cast<int>(s.frames.size()) + 2);
        CHECK(resolve(p, sample.location_id(0)).function == s.source);
        CHECK(resolve(p, sample.location_id(1)).function == s.location);
        for (std::size_t f = 0; f < s.frames.size(); ++f)
            CHECK(s.frames[f].starts_with(resolve(p, sample.location_id(static_cast<int>(f) + 2)).function));
        std::map<std::string, std::int64_t> labels;
        for (const pb::Label& l : sample.label()) labels[text(p, l.key())] = l.num();
        CHECK(labels == std::map<std::string, std::int64_t>{{"samples", static_cast<std::int64_t>(s.samples)},
                                                           {"width", s.width}});
    }
}

TEST_CASE("a writer for copies by code puts the code that copied, or the frame standing for it, under the "
          "destination", "[pprof][copies]") {
    const std::vector<copy_stack> stacks = {
        {{"Buffer.append(Buffer.java:30)", "Job.run(Job.java:40)"}, "",
         "[into long[] elements at Buffer.grow(Buffer.java:12)]",
         "[copied from Record+16 at Decoder.next(Decoder.java:58)]", 300, 2400, 3, 8},
        {{}, "[other code]", "[into long[] elements at Buffer.grow(Buffer.java:12)]",
         "[copied from Record+16 at Decoder.next(Decoder.java:58)]", 148, 1184, 1, 8}};
    pprof_writer writer(pprof_writer::samples::copying_code);
    for (const copy_stack& s : stacks) writer.add(s);
    std::ostringstream out;
    REQUIRE_FALSE(writer.finish(out, run_profile{}));
    const pb::Profile p = parsed(out.str());

    REQUIRE(p.sample_type_size() == 2);
    CHECK(text(p, p.sample_type(0).type()) == "copies");
    CHECK(text(p, p.default_sample_type()) == "copied_bytes");
    REQUIRE(p.comment_size() > 1);
    CHECK(text(p, p.comment(1)).find("the code that copied") != std::string::npos);
    REQUIRE(p.sample_size() == 2);
    const pb::Sample& named = p.sample(0);
    REQUIRE(named.location_id_size() == 4);
    CHECK(resolve(p, named.location_id(0)).function == stacks[0].source);
    CHECK(resolve(p, named.location_id(1)).function == stacks[0].location);
    CHECK(resolve(p, named.location_id(2)).function == "Buffer.append");
    CHECK(resolve(p, named.location_id(3)).function == "Job.run");
    const pb::Sample& other = p.sample(1);
    REQUIRE(other.location_id_size() == 3);
    CHECK(resolve(p, other.location_id(1)).function == stacks[1].location);
    CHECK(resolve(p, other.location_id(2)).function == "[other code]");
    CHECK(other.value(0) == 148);
    CHECK(other.value(1) == 1184);
}
