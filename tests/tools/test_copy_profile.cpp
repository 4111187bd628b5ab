// The copy section of profiles (docs/profile-format.md, "copies") end to end on the emulation: a generated copy
// program profiled with the sampled copy graph builder on the analysis host writes a profile whose section reads
// back equal and writes again byte for byte; the planted hot chains are what the report's chain view lists;
// `ojx merge` of two such profiles, sampled at different periods, is exactly the section of both runs' graphs
// merged in memory (sampled_copy_graph::merge), in either order and through merged profiles again; the code that
// copied (copy_code.hpp) round-trips, merges by name in either order and is named under each edge of the copies
// view; bad sections are refused with one line.
#include "profile_merger.hpp"
#include "profile_reader.hpp"
#include "scratch_file.hpp"

#include "ojx/emulation/copy_profiling_session.hpp"
#include "ojx/emulation/copy_programs.hpp"
#include "ojx/copies_view.hpp"
#include "ojx/copy_code.hpp"
#include "ojx/copy_edge_table.hpp"
#include "ojx/copy_node_names.hpp"
#include "ojx/copy_profile.hpp"
#include "ojx/profile_writer.hpp"
#include "ojx/random.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

using namespace ojx;
using namespace ojx::emulation;
using namespace ojx::tool;

namespace {

const report_naming naming{[](std::uint64_t frame) { return "Copies.f" + std::to_string(frame & 0xffff) + "()"; },
                           [](type_id type) { return "Record" + std::to_string(type); }};

using ojx::tool::testing::scratch_file;

std::string json_of(const profile& p) {
    std::ostringstream out;
    write_profile_json(out, p);
    return out.str();
}

struct read_back {
    std::optional<std::string> error;
    std::optional<copy_profile> copies;
    std::size_t contexts = 0;
};

read_back read_json(const std::string& name, const std::string& json) {
    const scratch_file file(name, json);
    read_back r;
    run_profile run;
    r.error = read_profile(file.path.string(), run, [&](context_profile&&) { ++r.contexts; }, &r.copies);
    return r;
}

// `ojx merge` of two profiles, in both orders: the same profile either way, which is returned.
profile merged_both_ways(const profile& first, const profile& second, const std::string& stem) {
    const scratch_file a(stem + "-a.json", json_of(first)), b(stem + "-b.json", json_of(second));
    profile forward, backward;
    REQUIRE_FALSE(load_profiles({a.path.string(), b.path.string()}, forward));
    REQUIRE_FALSE(load_profiles({b.path.string(), a.path.string()}, backward));
    REQUIRE(forward.copies);
    CHECK(json_of(forward) == json_of(backward));
    return forward;
}

// A run of a generated copy program under the profiler and the sampled copy graph builder.
struct copy_run {
    std::unique_ptr<copy_profiling_session<>> session;
    copy_program_truth truth;
};

copy_run profile_copy_program(std::uint64_t program_seed, std::uint64_t period, std::uint64_t sampler_seed) {
    session_config config;
    config.profiler.seed = sampler_seed;
    config.profiler.min_object_size = 64; // the programs' records: the replica side tracks them too
    config.sampler = {.period = period, .randomized = true, .seed = sampler_seed};
    config.heap_bytes = std::size_t{1} << 20;
    copy_run run{std::make_unique<copy_profiling_session<>>(config), {}};
    copy_profiling_session<>& s = *run.session;
    run.truth = run_copy_program(s.registers, s.prof.contexts(),
                                 {.seed = program_seed,
                                  .chains = 2,
                                  .clones = 1,
                                  .carriers = 1,
                                  .controls = 1,
                                  .references = 1,
                                  .min_repetitions = 160,
                                  .max_repetitions = 640,
                                  .collect_every = 13,
                                  .static_area = s.heap.statics()});
    return run;
}

// A context of the run as its profile's copy section names it.
copy_site site_of(const copy_run& run, context_id context) {
    return name_copy_site(run.session->prof.contexts(), context, run.session->sampling.type_of(context), naming);
}

// A node of the run's graph as the section names it: its site by name.
copy_node in_section(const copy_profile& section, const copy_run& run, copy_node node) {
    if (!names_site(node)) return node;
    const copy_site site = site_of(run, node.site);
    const auto at = std::lower_bound(section.sites.begin(), section.sites.end(), site);
    REQUIRE(at != section.sites.end());
    REQUIRE(*at == site);
    node.site = static_cast<context_id>(at - section.sites.begin());
    return node;
}

// The profile's JSON `json` reads back to an equal copy section, which writes the same bytes again.
void check_round_trip(const profile& p, const std::string& json, const std::string& file) {
    const read_back back = read_json(file, json);
    REQUIRE_FALSE(back.error);
    REQUIRE(back.copies);
    CHECK(*back.copies == *p.copies);
    profile again;
    again.run.runtime = p.run.runtime;
    again.copies = back.copies;
    CHECK(json_of(again) == json);
}

// The field node at `offset` of the section's site of `type`.
copy_node in_section_of(const copy_profile& section, const std::string& type, std::uint64_t offset) {
    const auto site = std::find_if(section.sites.begin(), section.sites.end(),
                                   [&](const copy_site& s) { return s.type == type; });
    REQUIRE(site != section.sites.end());
    return copy_node::field(static_cast<context_id>(site - section.sites.begin()), offset);
}

} // namespace

TEST_CASE("a copy section is written, read back equal and written again byte for byte") {
    sampled_copy_graph graph;
    const copy_node a8 = copy_node::field(7, 8), b_elements = copy_node::field(3, copy_node::elements);
    graph.add({a8, b_elements, 4}, sampled_volume{.samples = 3, .weight = 48, .weight_squares = 768, .max_weight = 16});
    graph.add({copy_node::static_location(0x7f0000001000), a8, 8}, 16);
    graph.add({copy_node::allocation(3), b_elements, 8}, 16);
    graph.add({b_elements, copy_node::consumer(), 8}, 16);
    graph.add({b_elements, copy_node::consumer(), 8}, 64); // two periods: Σ period² ≠ period × Σ period
    sampled_copy_stats counters;
    for (const copy_counter& c : copy_counters) counters.*c.value = 1 + c.name.size(); // all different
    profile p;
    p.run.runtime = {"emulation"};
    p.copies = copy_profile_of(graph, counters, "period 16", [](context_id c) {
        return copy_site{"Record\"" + std::to_string(c), {"f" + std::to_string(c) + "()", "main()"}};
    });
    // Context 7 is named after context 3 ("Record\"3" < "Record\"7"): the section lists its sites in order.
    REQUIRE(p.copies->sites.size() == 2);
    CHECK(p.copies->sites[0].type == "Record\"3");
    CHECK(p.copies->graph.edges().size() == 4);

    const std::string json = json_of(p);
    INFO(json);
    CHECK(json.find("\"offset\": \"elements\"") != std::string::npos);
    CHECK(json.find("{\"kind\": \"static\", \"address\": 139637976731648}") != std::string::npos);
    // Samples that named no code (the emulation's): the section says nothing of it, as before there was any.
    CHECK(json.find("code_contexts") == std::string::npos);
    CHECK(json.find("copied_by") == std::string::npos);
    check_round_trip(p, json, "roundtrip.json");

    // Without a section, none is read, and the profile ends as profiles always have.
    p.copies.reset();
    const std::string plain = json_of(p);
    CHECK(plain.ends_with("\n  ]\n}\n"));
    const read_back none = read_json("plain.json", plain);
    REQUIRE_FALSE(none.error);
    CHECK_FALSE(none.copies);
}

TEST_CASE("field names are written, read back equal, name the nodes in the views and merge in any order") {
    sampled_copy_graph graph;
    const copy_node count = copy_node::field(7, 8), unnamed = copy_node::field(7, 16);
    graph.add({count, copy_node::field(3, copy_node::elements), 8}, 16);
    graph.add({unnamed, copy_node::consumer(), 8}, 16);
    const auto named_site = [](context_id c) {
        return copy_site{c == 7 ? "Record" : "long[]", {"f" + std::to_string(c) + "()", "main()"}};
    };
    profile p;
    p.run.runtime = {"OpenJDK"};
    p.copies = copy_profile_of(graph, {}, "period 16", named_site);
    p.copies->field_names = {{"Record", 8, "count"}, {"Record", 24, "next"}};
    CHECK(copy_location_name(*p.copies, in_section_of(*p.copies, "Record", 8)) == "Record.count");
    CHECK(copy_location_name(*p.copies, in_section_of(*p.copies, "Record", 16)) == "Record+16");

    const std::string json = json_of(p);
    INFO(json);
    CHECK(json.find("\"field_names\": [\n      {\"type\": \"Record\", \"offset\": 8, \"name\": \"count\"}") !=
          std::string::npos);
    check_round_trip(p, json, "fields.json");

    // Another run names offset 8 otherwise (a class of the same name from another loader) and offset 16: the union,
    // the first name in order where they differ, whichever profile comes first.
    profile other = p;
    other.copies->field_names = {{"Record", 8, "amount"}, {"Record", 16, "total"}};
    const profile merged = merged_both_ways(p, other, "fields");
    CHECK(merged.copies->field_names == std::vector<copy_field_name>{{"Record", 8, "amount"}, {"Record", 16, "total"},
                                                                      {"Record", 24, "next"}});
    CHECK(copy_location_name(*merged.copies, in_section_of(*merged.copies, "Record", 16)) == "Record.total");

    // A (type, offset) listed twice, or an entry without its name, is refused.
    const std::string twice = json.substr(0, json.find("\"field_names\": [") + 16) +
                              "{\"type\": \"Record\", \"offset\": 24, \"name\": \"last\"}, " +
                              json.substr(json.find("\"field_names\": [") + 16);
    const read_back refused = read_json("twice.json", twice);
    REQUIRE(refused.error);
    CHECK(refused.error->find("copies: 'field_names' names offset 24 of Record twice") != std::string::npos);
    std::string nameless = json;
    const std::string count_name = ", \"name\": \"count\"";
    nameless.erase(nameless.find(count_name), count_name.size());
    const read_back incomplete = read_json("nameless.json", nameless);
    REQUIRE(incomplete.error);
    CHECK(incomplete.error->find("a field name needs 'type', 'offset' and 'name'") != std::string::npos);
}

namespace {

// A run's sampled graph and its code, two edges from site 1 (whose objects' elements are copied into site 2's and
// computed on), sampled in access contexts 10 to 13; `shift` moves which context samples most.
struct run_with_code {
    sampled_copy_graph graph;
    copy_code code;
};

const copy_edge copied_edge{copy_node::field(1, copy_node::elements), copy_node::field(2, copy_node::elements), 8};
const copy_edge used_edge{copy_node::field(1, copy_node::elements), copy_node::consumer(), 8};

run_with_code run_of(std::uint64_t seed, std::uint64_t period) {
    fast_random rng(seed);
    copy_edge_table table(8);
    for (int i = 0; i < 400; ++i) {
        // Context 10 copies most; 12 and 13 name the same code (they differ only in a frame's id, not its name).
        const std::uint64_t pick = rng.below(10);
        const context_id context = pick < 6 ? 10 : pick < 8 ? 11 : pick < 9 ? 12 : 13;
        table.add(rng.below(3) == 0 ? used_edge : copied_edge, period, context);
    }
    return {table.graph(), table.code()};
}

copy_site site_named(context_id c) { return {"Record", {"make" + std::to_string(c) + "()", "main()"}}; }
copy_code_context code_named(context_id c) {
    return {{c == 10 ? "Copier.copy()" : c == 11 ? "Copier.clone()" : "Copier.move()", "main()"}};
}

profile profile_of_run(const run_with_code& run, const std::string& sampling) {
    profile p;
    p.run.runtime = {"native"};
    p.copies = copy_profile_of(run.graph, run.code, {}, sampling, site_named, code_named);
    return p;
}

} // namespace

TEST_CASE("the code that copied is written, read back equal, written again byte for byte and merged by name") {
    const run_with_code one = run_of(1, 1), two = run_of(2, 4);
    const profile first = profile_of_run(one, "period 1"), second = profile_of_run(two, "period 4");
    const copy_profile& section = *first.copies;
    // Contexts 12 and 13 are named alike: one code context, their samples summed; every sample counted once.
    REQUIRE(section.code_contexts.size() == 3);
    CHECK(section.code_contexts[0].frames.front() == "Copier.clone()");
    for (const auto& [edge, volume] : section.graph.edges()) CHECK(section.code.of(edge).samples() == volume.samples);

    const std::string json = json_of(first);
    INFO(json);
    CHECK(json.find("\"code_contexts\": [\n      {\"frames\": [\"Copier.clone()\", \"main()\"]}") != std::string::npos);
    CHECK(json.find("\"copied_by\": [{\"context\": 0, \"samples\": ") != std::string::npos);
    CHECK(json.find("\"copied_by_other\": 0}") != std::string::npos);
    check_round_trip(first, json, "code.json");

    // Merged in either order: the code of both runs merged in memory, named as one run names it.
    sampled_copy_graph both = one.graph;
    both.merge(two.graph);
    copy_code both_code = one.code;
    both_code.merge(two.code);
    copy_profile expected = copy_profile_of(both, both_code, {}, "period 1", site_named, code_named);
    expected.sampling = {"period 1", "period 4"};
    const profile forward = merged_both_ways(first, second, "code");
    CHECK(*forward.copies == expected);
    for (const auto& [edge, volume] : forward.copies->graph.edges())
        CHECK(forward.copies->code.of(edge).samples() == volume.samples);

    // A section whose samples named no code merges with one that did: the edges' code is that one's.
    profile plain = second;
    plain.copies = copy_profile_of(two.graph, {}, "period 4", site_named);
    const profile mixed = merged_both_ways(plain, first, "code-plain");
    CHECK(mixed.copies->code == first.copies->code);
    CHECK(mixed.copies->code_contexts == first.copies->code_contexts);
}

TEST_CASE("the copies view names the heaviest code under each edge, its share of the edge's samples") {
    // Edges into the consumer are introduced as "used by": a computation used the values, nothing copied them.
    copy_edge_table table(8);
    for (int i = 0; i < 6; ++i) table.add(copied_edge, 1, 10);
    for (int i = 0; i < 3; ++i) table.add(copied_edge, 1, 11);
    table.add(copied_edge, 1, 12);
    table.add(copied_edge, 1, 13); // named as 12: "Copier.move()" with 2 samples
    table.add(copied_edge, 1);     // no context: other code, in the shares' whole
    for (int i = 0; i < 4; ++i) table.add(used_edge, 1, 10); // into the consumer: the code that used the values
    const copy_profile section = copy_profile_of(table.graph(), table.code(), {}, "period 1", site_named, code_named);
    std::ostringstream out;
    write_copies_view(out, section, 0.95, {});
    const std::string view = out.str();
    INFO(view);
    const std::string edge_line = "Record elements at make1() -> Record elements at make2()\n";
    const auto at = view.find(edge_line);
    REQUIRE(at != std::string::npos);
    CHECK(view.substr(at + edge_line.size()).starts_with("     copied by Copier.copy() (6 samples, 50%)\n"
                                                         "     copied by Copier.clone() (3 samples, 25%)\n"));
    CHECK(view.find("Copier.move()") == std::string::npos); // third: past what the view names
    const std::string used_line = "Record elements at make1() -> (computed on)\n";
    const auto used = view.find(used_line);
    REQUIRE(used != std::string::npos);
    CHECK(view.substr(used + used_line.size()).starts_with("     used by Copier.copy() (4 samples, 100%)\n"));
    CHECK(view.find("copied by", used) == std::string::npos);

    // Samples that named no code: no line under the edge.
    copy_edge_table unnamed(8);
    unnamed.add(copied_edge, 1);
    std::ostringstream plain;
    write_copies_view(plain, copy_profile_of(unnamed.graph(), unnamed.code(), {}, "", site_named, code_named), 0.95,
                      {});
    INFO(plain.str());
    CHECK(plain.str().find(edge_line + "\nhot copy chains") != std::string::npos);
}

TEST_CASE("the copies view makes one site of the sites it names alike, their edges summed") {
    // One allocating line reached from two callers: two sites, named alike by their type and leaf frame.
    const auto site = [](context_id c) {
        return c == 2 ? copy_site{"Dest", {"Make.dest()", "main()"}}
                      : copy_site{"Buffer", {"Make.buffer()", c == 0 ? "Reader.fill()" : "Writer.flush()"}};
    };
    copy_edge_table table(8);
    const auto edge = [](context_id from) {
        return copy_edge{copy_node::field(from, copy_node::elements), copy_node::field(2, copy_node::elements), 8};
    };
    for (int i = 0; i < 3; ++i) table.add(edge(0), 1, 10);
    for (int i = 0; i < 2; ++i) table.add(edge(1), 1, 11);
    const copy_profile section = copy_profile_of(table.graph(), table.code(), {}, "period 1", site, code_named);
    REQUIRE(section.sites.size() == 3);
    const copy_profile named = sites_by_leaf(section);
    REQUIRE(named.sites.size() == 2);
    REQUIRE(named.graph.edges().size() == 1);
    CHECK(named.graph.edges().begin()->second.samples == 5);
    CHECK(named.code.of(named.graph.edges().begin()->first).samples() == 5);
    CHECK(named.sampling == section.sampling);

    std::ostringstream out;
    write_copies_view(out, section, 0.95, {});
    const std::string view = out.str();
    INFO(view);
    const std::string line = "Buffer elements at Make.buffer() -> Dest elements at Make.dest()\n";
    const std::size_t at = view.find(line);
    REQUIRE(at != std::string::npos);
    CHECK(view.find(line, at + 1) > view.find("\nhot copy chains")); // one edge listed (and one chain of it)
    CHECK(view.rfind("       5    8 B  ", at) != std::string::npos); // its samples, both callers'
    CHECK(view.find("100%  Buffer at Make.buffer() -> Dest at Make.dest()\n") != std::string::npos);
}

TEST_CASE("bad copy sections are refused with one line that says what is wrong") {
    const auto profile_with = [](const std::string& copies) {
        return "{\"ojx_profile_version\": 1, \"run\": {}, \"contexts\": [], \"copies\": " + copies + "}";
    };
    const std::string site = "\"sites\": [{\"type\": \"T\", \"frames\": [\"f()\"]}]";
    const std::string sums =
        "\"width\": 8, \"samples\": 2, \"weight\": 32, \"weight_squares\": 512, \"max_weight\": 16";
    const auto edge = [&](const std::string& from, const std::string& to, const std::string& rest) {
        return "{\"from\": " + from + ", \"to\": " + to + ", " + rest + "}";
    };
    const std::string field = "{\"kind\": \"field\", \"site\": 0, \"offset\": 8}";
    const std::string consumer = "{\"kind\": \"consumer\"}";
    const std::string good = edge(field, consumer, sums);
    const std::pair<std::string, std::string> cases[] = {
        {"[]", "field 'copies' should be an object"},
        {"{" + site + ", \"edges\": [" + edge(field, "{\"kind\": \"heap\"}", sums) + "]}",
         "copies: field 'edges.to.kind' should be field, allocation, static or consumer"},
        {"{" + site + ", \"edges\": [" + edge("{\"kind\": \"field\", \"site\": 0}", consumer, sums) + "]}",
         "copies: field 'edges.from.offset' is missing"},
        {"{\"sites\": [], \"edges\": [" + good + "]}", "copies: an edge names site 0, which 'sites' does not list"},
        {"{" + site + ", \"edges\": [" + edge(consumer, field, sums) + "]}", "copies: an edge from the consumer"},
        {"{" + site + ", \"edges\": [" + edge(field, "{\"kind\": \"allocation\", \"site\": 0}", sums) + "]}",
         "copies: an edge into an allocation node"},
        {"{" + site + ", \"edges\": [" + good + ", " + good + "]}", "copies: an edge is listed twice"},
        {"{" + site + ", \"edges\": [" +
             edge(field, consumer, "\"width\": 8, \"samples\": 2, \"weight\": 32, \"weight_squares\": 600, "
                                   "\"max_weight\": 16") +
             "]}",
         "copies: an edge's sums are inconsistent"},
        {"{" + site + ", \"edges\": [" + edge(field, consumer, "\"width\": 300, \"samples\": 1") + "]}",
         "copies: field 'edges.width' should be an integer from 1 to 255"},
        {"{" + site + ", \"edges\": [" + edge(field, consumer, "\"width\": 8, \"samples\": 1") + "]}",
         "copies: an edge needs samples, weight, weight_squares and max_weight"},
        {"{\"counters\": {\"steps\": -1}}", "copies: field 'counters.steps' should be a non-negative integer"},
        {"{" + site + ", \"edges\": [" + edge(field, consumer, sums + ", \"copied_by\": [{\"context\": 0, \"samples\": 1}], "
                                                                    "\"copied_by_other\": 0") + "]}",
         "copies: an edge names code context 0, which 'code_contexts' does not list"},
        {"{" + site + ", \"code_contexts\": [{\"frames\": [\"g()\"]}], \"edges\": [" +
             edge(field, consumer, sums + ", \"copied_by\": [{\"context\": 0, \"samples\": 2}], \"copied_by_other\": 1") +
             "]}",
         "copies: an edge's 'copied_by' has more samples than the edge"},
        {"{" + site + ", \"code_contexts\": [{\"frames\": [\"g()\"]}], \"edges\": [" +
             edge(field, consumer, sums + ", \"copied_by\": [{\"context\": 0, \"samples\": 1}, {\"context\": 0, "
                                          "\"samples\": 1}], \"copied_by_other\": 0") + "]}",
         "copies: an edge's 'copied_by' lists a context twice"},
        {"{" + site + ", \"code_contexts\": [{\"frames\": [\"g()\"]}], \"edges\": [" +
             edge(field, consumer, sums + ", \"copied_by\": [{\"context\": 0, \"samples\": 1}]") + "]}",
         "copies: an edge with 'copied_by' needs 'copied_by_other'"},
        {"{" + site + ", \"code_contexts\": [{\"frames\": [\"g()\"]}], \"edges\": [" +
             edge(field, consumer, sums + ", \"copied_by\": [{\"context\": 0, \"samples\": 0}], \"copied_by_other\": 0") +
             "]}",
         "copies: each of an edge's 'copied_by' needs a context and at least one sample"},
    };
    for (const auto& [copies, message] : cases) {
        const read_back r = read_json("bad.json", profile_with(copies));
        INFO(copies);
        REQUIRE(r.error);
        CHECK(r.error->find(message) != std::string::npos);
        CHECK(r.error->find('\n') == std::string::npos);
    }
    // A good one, for contrast.
    const read_back r = read_json("good.json", profile_with("{" + site + ", \"edges\": [" + good + "]}"));
    REQUIRE_FALSE(r.error);
    REQUIRE(r.copies);
    CHECK(r.copies->graph.edges().size() == 1);
}

TEST_CASE("a generated copy program's profile carries its sampled copy graph; the views find the planted chains, "
          "clone pair and carrier site") {
    const copy_run run = profile_copy_program(5, 16, 5);
    const copy_profiling_session<>& s = *run.session;
    REQUIRE(s.builder.stats().unmatched_samples == 0);
    REQUIRE(s.builder.stats().loads_followed > 1000);
    const profile live = s.profile(naming);
    REQUIRE(live.copies);
    CHECK(live.contexts.size() > 5); // the replica side tracked the programs' records too

    const std::string json = json_of(live);
    const read_back back = read_json("program.json", json);
    REQUIRE_FALSE(back.error);
    CHECK(back.contexts == live.contexts.size());
    REQUIRE(back.copies);
    const copy_profile& copies = *back.copies;
    CHECK(copies == *live.copies);
    CHECK(copies.counters == s.builder.stats());
    CHECK(copies.sampling == std::vector<std::string>{s.copy_sampling_note()});
    // Every edge of the section is an edge the program made, its sites named as the program's contexts.
    std::map<copy_site, context_id> context_named;
    for (const auto& [edge, volume] : run.truth.graph.edges())
        for (const copy_node& node : {edge.from, edge.to})
            if (names_site(node)) context_named.emplace(site_of(run, node.site), node.site);
    const auto in_run = [&](copy_node node) {
        if (names_site(node)) node.site = context_named.at(copies.sites.at(node.site));
        return node;
    };
    for (const auto& [edge, volume] : copies.graph.edges())
        CHECK(run.truth.graph.edges().contains({in_run(edge.from), in_run(edge.to), edge.width}));

    std::ostringstream view;
    write_copies_view(view, copies, 0.95, {});
    INFO(view.str());
    const std::vector<copy_chain> chains = copy_chains(copies);
    REQUIRE(run.truth.chains.size() == 3); // two chains through a temporary, one carrier from a static
    for (const copy_chain& truth : run.truth.chains) {
        copy_chain expected{{}, truth.bytes};
        for (const copy_node& node : truth.nodes) expected.nodes.push_back(in_section(copies, run, node));
        const auto found = std::find_if(chains.begin(), chains.end(),
                                        [&](const copy_chain& c) { return c.nodes == expected.nodes; });
        REQUIRE(found != chains.end());
        CHECK(found - chains.begin() < static_cast<std::ptrdiff_t>(copies_view_chains));
        CHECK(view.str().find(copy_chain_name(copies, expected)) != std::string::npos);
    }
    CHECK(view.str().find("hot copy chains") != std::string::npos);

    // The planted clone pair among the view's clone pairs, listed with its estimate inside its interval.
    const auto site_in_section = [&](context_id context) {
        return in_section(copies, run, copy_node::allocation(context)).site;
    };
    const std::size_t pairs_at = view.str().find("\nclone pairs");
    const std::size_t carriers_at = view.str().find("\ncarrier sites");
    REQUIRE(pairs_at != std::string::npos);
    REQUIRE(carriers_at > pairs_at);
    const std::vector<estimated_site_pair> pairs = estimated_clone_pairs(copies, 0.95);
    REQUIRE(run.truth.clones.size() == 1);
    const planted_clone& clone = run.truth.clones.front();
    const auto pair = std::find_if(pairs.begin(), pairs.end(), [&](const estimated_site_pair& p) {
        return p.pair.from == site_in_section(clone.from) && p.pair.to == site_in_section(clone.to);
    });
    REQUIRE(pair != pairs.end());
    CHECK(pair - pairs.begin() < static_cast<std::ptrdiff_t>(copies_view_sites));
    CHECK(pair->estimate.bytes_interval.low <= pair->estimate.bytes);
    CHECK(pair->estimate.bytes <= pair->estimate.bytes_interval.high);
    const std::string pair_name =
        copy_site_name(copies, pair->pair.from) + " -> " + copy_site_name(copies, pair->pair.to) + "\n";
    const std::size_t pair_line = view.str().find(pair_name, pairs_at);
    CHECK(pair_line < carriers_at);
    // The carrier sites are the program's (its sites whose objects are copied out of and never computed on: the
    // planted carrier and the chains' sources and temporaries), the view listing the heaviest.
    const std::vector<estimated_carrier_site> carriers = estimated_carrier_sites(copies, 0.95);
    std::set<copy_site> expected_carriers, found_carriers;
    for (const context_id c : run.truth.carriers) expected_carriers.insert(site_of(run, c));
    for (const estimated_carrier_site& c : carriers) found_carriers.insert(copies.sites.at(c.site));
    CHECK(found_carriers == expected_carriers);
    for (std::size_t i = 0; i < carriers.size() && i < copies_view_sites; ++i) {
        CHECK(carriers[i].copied_out.bytes > 0);
        CHECK(view.str().find(copy_site_name(copies, carriers[i].site) + "\n", carriers_at) != std::string::npos);
    }
}

TEST_CASE("merging profiles' copy sections is exactly the runs' graphs merged in memory, at two periods") {
    // Two programs of the same shape (so their contexts are the same), sampled at periods 8 and 32.
    const copy_run one = profile_copy_program(21, 8, 1), two = profile_copy_program(22, 32, 2);
    const profile first = one.session->profile(naming), second = two.session->profile(naming);
    for (const auto& [edge, volume] : two.session->builder.graph().edges())
        for (const copy_node& node : {edge.from, edge.to})
            if (names_site(node)) REQUIRE(site_of(one, node.site) == site_of(two, node.site));

    sampled_copy_graph both = one.session->builder.graph();
    both.merge(two.session->builder.graph());
    sampled_copy_stats counters = one.session->builder.stats();
    counters += two.session->builder.stats();
    copy_profile expected = copy_profile_of(both, counters, "", [&](context_id c) { return site_of(one, c); });
    expected.sampling = {one.session->copy_sampling_note(), two.session->copy_sampling_note()};
    std::sort(expected.sampling.begin(), expected.sampling.end());
    REQUIRE(expected.sampling[0] != expected.sampling[1]);

    const profile forward = merged_both_ways(first, second, "graph");
    CHECK(*forward.copies == expected);
    const scratch_file a("a.json", json_of(first)), b("b.json", json_of(second));
    // Some edges were seen in both runs, at both periods: their sums are the sums of the two.
    std::size_t mixed = 0;
    for (const auto& [edge, volume] : forward.copies->graph.edges())
        mixed += volume.max_weight == 32 && volume.weight % 32 != 0;
    CHECK(mixed > 0);

    // Merged profiles merge again to the same section: with a third profile, at once or in two steps.
    const scratch_file merged("ab.json", json_of(forward));
    profile again, at_once;
    REQUIRE_FALSE(load_profiles({merged.path.string(), a.path.string()}, again));
    REQUIRE_FALSE(load_profiles({a.path.string(), b.path.string(), a.path.string()}, at_once));
    REQUIRE(again.copies);
    CHECK(*again.copies == *at_once.copies);
    CHECK(again.copies->counters.loads_followed ==
          2 * one.session->builder.stats().loads_followed + two.session->builder.stats().loads_followed);

    // A profile without a section merges with one that has it: the section is that one's.
    profile no_copies = first;
    no_copies.copies.reset();
    const scratch_file plain("plain.json", json_of(no_copies));
    profile with_plain;
    REQUIRE_FALSE(load_profiles({plain.path.string(), b.path.string()}, with_plain));
    REQUIRE(with_plain.copies);
    CHECK(*with_plain.copies == *second.copies);
}
