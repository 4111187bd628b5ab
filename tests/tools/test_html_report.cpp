// The HTML report's page as text: self-contained (nothing to fetch), the profile's data inert inside its
// <script> element whatever the names in it, complete for the top contexts and only those, the title escaped;
// a copy section's heaviest edges and hot chains as the text report's copies view names and estimates them, where
// each context's contents were copied from as the text report's lines say, and no copies view at all without one.
// What the page does with the data in a browser is html_view_test.py's business.
#include "html_report.hpp"

#include "ojx/copies_view.hpp"
#include "ojx/copy_edge_table.hpp"
#include "ojx/copy_profile.hpp"
#include "ojx/copy_sources.hpp"

#include <catch2/catch.hpp>
#include <rapidjson/document.h>

#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace ojx;
using namespace ojx::tool;

constexpr const char* data_open = R"(<script type="application/json" id="ojx-data">)";

context_profile make_context(std::string type, std::vector<std::string> frames, double theta, bool reported) {
    context_profile c;
    c.type = std::move(type);
    c.frames = std::move(frames);
    c.objects = 300;
    c.bytes = 614'400;
    c.estimate.reported = reported;
    c.estimate.objects = c.objects;
    c.estimate.equal = static_cast<std::uint64_t>(100 * theta);
    c.estimate.different = 100 - c.estimate.equal;
    c.estimate.theta = theta;
    c.estimate.theta_ci = {theta - 0.05, theta + 0.05};
    c.estimate.omega = theta - 0.2;
    c.estimate.gamma = theta + 0.05;
    c.accesses = {{{"pkg.Reader.unpack(Reader.java:96)", "pkg.Main.main(Main.java:10)"}, 1570}, {{}, 3}};
    return c;
}

profile sample_profile() {
    profile p;
    p.run.runtime = {"OpenJDK 17 (G1)"};
    p.run.sampler = {"perf_event"};
    p.run.counters = {{"samples", 16'749}, {"comparisons", 3'189}};
    p.contexts = {
        make_context("byte[]", {"pkg.Reader.readNext(Reader.java:93)", "pkg.Main.main(Main.java:10)"}, 0.87, true),
        make_context("pkg.Tag</script><script>alert(1)</script>", {"pkg.Html.render(Html.java:5) <b>&amp;</b>"}, 0.5,
                     true),
        make_context("int[]", {}, 0.3, true), // no frames at all
        make_context("java.lang.String", {"pkg.\"Quoted\".name(Ünïcödé.java:1) — 日本語"}, 0.2, true),
        make_context("long[]", {"pkg.OnlyInTheFifth.run(OnlyInTheFifth.java:7)"}, 0.1, false),
    };
    // The first site's allocations were sampled: 300 tracked stand for ~1 234.5 allocated.
    ojx::named_allocations sampled;
    sampled.estimated = true;
    sampled.types.push_back({.type = "byte[]"});
    sampled.types.back().counts.seen = 300;
    sampled.types.back().counts.instances = 1234.5;
    sampled.types.back().counts.bytes = 2'528'256;
    p.contexts.front().allocated = sampled;
    return p;
}

// A copy section as a run at period 64 gives: records copied into arrays and on into other records (a chain), a
// static read into records, arrays used by computations, fresh references stored; site names with markup.
copy_profile sample_copies() {
    const std::vector<copy_site> sites = {
        {"pkg.Record", {"pkg.Decoder.next(Decoder.java:58)", "pkg.Main.main(Main.java:10)"}},
        {"byte[]", {"pkg.Pages.read(Pages.java:7)"}},
        {"pkg.Tag</script><b>&amp;</b>", {"pkg.Html.render(Html.java:5) <script>"}},
        {"java.lang.Object[]", {}}};
    const copy_node record8 = copy_node::field(0, 8), pages = copy_node::field(1, copy_node::elements),
                    tag16 = copy_node::field(2, 16);
    sampled_copy_graph graph;
    for (int i = 0; i < 30; ++i) graph.add({record8, pages, 8}, 64);
    for (int i = 0; i < 20; ++i) graph.add({pages, tag16, 8}, 64);
    for (int i = 0; i < 6; ++i) graph.add({copy_node::static_location(0x7f3a00001000), record8, 4}, 64);
    for (int i = 0; i < 10; ++i) graph.add({pages, copy_node::consumer(), 8}, 64);
    for (int i = 0; i < 4; ++i) graph.add({copy_node::allocation(2), copy_node::field(3, copy_node::elements), 4}, 64);
    sampled_copy_stats counters;
    counters.loads_followed = 80;
    counters.edges = 70;
    return copy_profile_of(graph, counters, "sample <period 64>", [&](context_id c) { return sites.at(c); });
}

std::string html_of(const profile& p, const html_options& options = {}) {
    std::ostringstream out;
    write_html(out, p, options);
    return out.str();
}

// The text of the data element, as the browser's parser sees it: up to the first "</script" after its start.
std::string data_text(const std::string& html) {
    const std::size_t start = html.find(data_open);
    REQUIRE(start != std::string::npos);
    const std::size_t begin = start + std::string(data_open).size();
    const std::size_t end = html.find("</script", begin);
    REQUIRE(end != std::string::npos);
    return html.substr(begin, end - begin);
}

std::vector<std::string> names_of(const rapidjson::Value& indices, const rapidjson::Value& strings) {
    std::vector<std::string> names;
    for (const auto& index : indices.GetArray()) names.emplace_back(strings[index.GetUint()].GetString());
    return names;
}

} // namespace

TEST_CASE("the HTML report loads nothing: no URL but in-page anchors and data:, a policy that forbids requests") {
    const std::string html = html_of(sample_profile());
    const std::regex reference(R"re(\b(?:src|href|action|srcset|poster)\s*=\s*["']?([^"'\s>]*))re",
                               std::regex::icase);
    int references = 0;
    for (auto it = std::sregex_iterator(html.begin(), html.end(), reference); it != std::sregex_iterator(); ++it) {
        const std::string target = (*it)[1].str();
        INFO("reference: " << it->str());
        CHECK((target.starts_with("#") || target.starts_with("data:")));
        ++references;
    }
    CHECK(references >= 1); // the icon is data:, so the browser does not ask for /favicon.ico
    CHECK(html.find("http://") == std::string::npos);
    CHECK(html.find("https://") == std::string::npos);
    CHECK(html.find("url(") == std::string::npos);
    CHECK(html.find("@import") == std::string::npos);
    CHECK(html.find(R"(<meta http-equiv="Content-Security-Policy" content="default-src 'none'; )"
                    R"(script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">)") != std::string::npos);
    CHECK(html.find("@OJX_") == std::string::npos); // every placeholder filled in
}

TEST_CASE("the HTML report's data is JSON that no name can end early") {
    const std::string html = html_of(sample_profile());
    const std::string text = data_text(html);
    CHECK(text.find('<') == std::string::npos);
    CHECK(text.find('>') == std::string::npos);
    CHECK(text.find('&') == std::string::npos);
    // Two script elements (data, code), so exactly two closing tags: the names' "</script>" is not one.
    std::size_t closings = 0;
    for (std::size_t at = html.find("</script>"); at != std::string::npos; at = html.find("</script>", at + 1))
        ++closings;
    CHECK(closings == 2);

    rapidjson::Document data;
    data.Parse(text.c_str(), text.size());
    REQUIRE_FALSE(data.HasParseError());
    const auto& strings = data["strings"];
    const auto& contexts = data["contexts"];
    REQUIRE(contexts.Size() == 5);
    // The escaped names read back exactly: markup, quotes and non-ASCII letters.
    CHECK(strings[contexts[1]["type"].GetUint()].GetString() == std::string("pkg.Tag</script><script>alert(1)</script>"));
    CHECK(names_of(contexts[1]["frames"], strings) == std::vector<std::string>{"pkg.Html.render(Html.java:5) <b>&amp;</b>"});
    CHECK(names_of(contexts[3]["frames"], strings) ==
          std::vector<std::string>{"pkg.\"Quoted\".name(Ünïcödé.java:1) — 日本語"});
    CHECK(contexts[2]["frames"].Size() == 0);
}

TEST_CASE("the HTML report carries every number of every top context, in rank order") {
    const profile p = sample_profile();
    const std::string text = data_text(html_of(p));
    rapidjson::Document data;
    data.Parse(text.c_str(), text.size());
    REQUIRE_FALSE(data.HasParseError());
    const auto& strings = data["strings"];
    REQUIRE(data["contexts"].Size() == p.contexts.size());
    CHECK(data["total_contexts"].GetUint() == p.contexts.size());
    CHECK(std::string(data["run"]["runtime"].GetString()) == "OpenJDK 17 (G1)");
    CHECK(data["run"]["counters"].Size() == 2);
    for (std::size_t i = 0; i < p.contexts.size(); ++i) {
        const context_profile& expected = p.contexts[i];
        const auto& c = data["contexts"][static_cast<rapidjson::SizeType>(i)];
        INFO("context " << i);
        CHECK(c["rank"].GetUint() == i + 1);
        CHECK(strings[c["type"].GetUint()].GetString() == expected.type);
        CHECK(names_of(c["frames"], strings) == expected.frames);
        CHECK(c["objects"].GetUint64() == expected.objects);
        CHECK(c["bytes"].GetUint64() == expected.bytes);
        // The objects column is what the text report shows: all the site's allocations, estimated where sampled.
        CHECK(c["allocated_objects"].GetDouble() == Approx(expected.allocated_total().instances));
        CHECK(c["objects_estimated"].GetBool() == expected.allocations_estimated());
        CHECK(c["objects_estimated"].GetBool() == (i == 0));
        CHECK(c["comparisons_reported"].GetBool() == expected.estimate.reported);
        CHECK(c["evidence"].GetString() == std::string(evidence_basis_name(expected.combined.basis)));
        CHECK(c["largest_share_ci"][0].GetDouble() == Approx(expected.combined.largest_share_ci.low));
        CHECK(c["equal"].GetUint64() == expected.estimate.equal);
        CHECK(c["different"].GetUint64() == expected.estimate.different);
        CHECK(c["theta"].GetDouble() == Approx(expected.estimate.theta));
        CHECK(c["theta_ci"][0].GetDouble() == Approx(expected.estimate.theta_ci.low));
        CHECK(c["theta_ci"][1].GetDouble() == Approx(expected.estimate.theta_ci.high));
        CHECK(c["omega"].GetDouble() == Approx(expected.estimate.omega));
        CHECK(c["gamma"].GetDouble() == Approx(expected.estimate.gamma));
        CHECK(c["bytes_saved"].GetDouble() == Approx(expected.replicated_bytes()));
        REQUIRE(c["accesses"].Size() == expected.accesses.size());
        for (std::size_t a = 0; a < expected.accesses.size(); ++a) {
            const auto& access = c["accesses"][static_cast<rapidjson::SizeType>(a)];
            CHECK(names_of(access["frames"], strings) == expected.accesses[a].frames);
            CHECK(access["samples"].GetUint64() == expected.accesses[a].samples);
        }
    }
}

TEST_CASE("the HTML report includes only the top contexts") {
    const std::string html = html_of(sample_profile(), {.top = 3});
    rapidjson::Document data;
    const std::string text = data_text(html);
    data.Parse(text.c_str(), text.size());
    REQUIRE_FALSE(data.HasParseError());
    CHECK(data["contexts"].Size() == 3);
    CHECK(data["total_contexts"].GetUint() == 5); // the page says how many it leaves out
    CHECK(html.find("OnlyInTheFifth") == std::string::npos);

    const std::string none = data_text(html_of(sample_profile(), {.top = 0}));
    data.Parse(none.c_str(), none.size());
    REQUIRE_FALSE(data.HasParseError());
    CHECK(data["contexts"].Size() == 0);
    CHECK(data["strings"].Size() == 0);
}

TEST_CASE("the HTML report's title is escaped, and has a default") {
    const std::string html = html_of(sample_profile(), {.title = R"(Heap <b>"prod" & 'eu'</b>)"});
    CHECK(html.find("<title>Heap &lt;b&gt;&quot;prod&quot; &amp; &#39;eu&#39;&lt;/b&gt;</title>") != std::string::npos);
    CHECK(html.find("<b>\"prod\"") == std::string::npos);
    CHECK(html_of(sample_profile()).find("<title>ojx replica report</title>") != std::string::npos);
}

TEST_CASE("the HTML report of an empty profile is a page all the same") {
    const std::string html = html_of(profile{});
    const std::string text = data_text(html);
    rapidjson::Document data;
    data.Parse(text.c_str(), text.size());
    REQUIRE_FALSE(data.HasParseError());
    CHECK(data["contexts"].Size() == 0);
    CHECK(html.ends_with("</html>\n"));
}

TEST_CASE("the HTML report carries a copy section's heaviest edges and hot chains as the copies view has them") {
    profile p = sample_profile();
    p.copies = sample_copies();
    const copy_profile& copies = *p.copies;
    const double level = p.run.estimator.confidence;
    const std::string html = html_of(p);
    CHECK(html.find(R"(<section id="copies-section">)") != std::string::npos);
    CHECK(html.find("renderCopies();") != std::string::npos);
    CHECK(html.find("@OJX_") == std::string::npos);
    const std::string text = data_text(html);
    CHECK(text.find('<') == std::string::npos); // the sites' markup is as inert as the contexts'
    CHECK(text.find('&') == std::string::npos);
    rapidjson::Document data;
    data.Parse(text.c_str(), text.size());
    REQUIRE_FALSE(data.HasParseError());
    REQUIRE(data.HasMember("copies"));
    const auto& page = data["copies"];
    const auto& strings = data["strings"];
    CHECK(page["sampling"].GetString() == std::string("sample <period 64>"));
    CHECK(page["counters"]["edge_samples"].GetUint64() == 70);
    CHECK(page["counters"]["loads_followed"].GetUint64() == 80);
    const copy_totals totals = estimated_copy_totals(copies, level);
    CHECK(page["copied"]["bytes"].GetDouble() == Approx(totals.copied.bytes));
    CHECK(page["used"]["bytes"].GetDouble() == Approx(totals.used.bytes));
    CHECK(page["used"]["bytes"].GetDouble() == Approx(10 * 64 * 8));

    // The edges, heaviest first, each as the text view estimates and names it.
    const std::vector<estimated_copy_edge> expected = heaviest_copy_edges(copies, level);
    CHECK(page["total_edges"].GetUint() == 5);
    REQUIRE(page["edges"].Size() == expected.size());
    for (rapidjson::SizeType i = 0; i < expected.size(); ++i) {
        const auto& e = page["edges"][i];
        INFO("edge " << i);
        CHECK(e["from"]["name"].GetString() == copy_node_name(copies, expected[i].edge.from));
        CHECK(e["to"]["name"].GetString() == copy_node_name(copies, expected[i].edge.to));
        CHECK(e["width"].GetUint() == expected[i].edge.width);
        CHECK(e["samples"].GetUint64() == expected[i].samples);
        CHECK(e["estimate"]["copies"].GetDouble() == Approx(expected[i].estimate.copies));
        CHECK(e["estimate"]["bytes"].GetDouble() == Approx(expected[i].estimate.bytes));
        const interval& ci = expected[i].estimate.bytes_interval;
        CHECK(e["estimate"]["bytes_ci"][0].GetDouble() == Approx(ci.low).epsilon(1e-5));
        CHECK(e["estimate"]["bytes_ci"][1].GetDouble() == Approx(ci.high).epsilon(1e-5));
    }
    // The top edge: 30 samples at period 64 of 8 bytes, from the record's field at offset 8 into the arrays'
    // elements, its interval around the estimate; a site's frames are there for its whole stack.
    const auto& top = page["edges"][0];
    CHECK(top["from"]["name"].GetString() == std::string("pkg.Record+8 at pkg.Decoder.next(Decoder.java:58)"));
    CHECK(top["to"]["name"].GetString() == std::string("byte[] elements at pkg.Pages.read(Pages.java:7)"));
    CHECK(top["samples"].GetUint64() == 30);
    CHECK(top["estimate"]["copies"].GetDouble() == Approx(30 * 64));
    CHECK(top["estimate"]["bytes"].GetDouble() == Approx(30 * 64 * 8));
    CHECK(top["estimate"]["bytes_ci"][0].GetDouble() < 30 * 64 * 8);
    CHECK(top["estimate"]["bytes_ci"][1].GetDouble() > 30 * 64 * 8);
    CHECK(names_of(top["from"]["frames"], strings) ==
          std::vector<std::string>{"pkg.Decoder.next(Decoder.java:58)", "pkg.Main.main(Main.java:10)"});
    // Nodes that name no site carry no frames; a site without frames carries none, named "(no frames)".
    bool static_seen = false, no_frames_seen = false;
    for (const auto& e : page["edges"].GetArray())
        for (const auto* node : {&e["from"], &e["to"]}) {
            const std::string name = (*node)["name"].GetString();
            if (name == "static 0x7f3a00001000" || name == "(computed on)") {
                static_seen |= name.starts_with("static");
                CHECK_FALSE(node->HasMember("frames"));
            }
            if (name == "java.lang.Object[] elements at (no frames)") {
                no_frames_seen = true;
                CHECK((*node)["frames"].Size() == 0);
            }
            if (name.starts_with("pkg.Tag"))
                CHECK(names_of((*node)["frames"], strings) ==
                      std::vector<std::string>{"pkg.Html.render(Html.java:5) <script>"});
        }
    CHECK(static_seen);
    CHECK(no_frames_seen);

    // The hot chains, in the copies view's order: first the records' values carried through the arrays into the
    // tag's field, its lightest edge the arrays' (20 samples of 8 bytes); the static's edge, too light to
    // extend it backward, starts a chain of its own.
    const std::vector<copy_chain> chains = copy_chains(copies);
    REQUIRE_FALSE(chains.empty());
    CHECK(page["total_chains"].GetUint() == chains.size());
    REQUIRE(page["chains"].Size() == chains.size());
    for (rapidjson::SizeType i = 0; i < chains.size(); ++i) {
        const auto& chain = page["chains"][i];
        INFO("chain " << i);
        CHECK(chain["bytes"].GetUint64() == chains[i].bytes);
        REQUIRE(chain["nodes"].Size() == chains[i].nodes.size());
        for (rapidjson::SizeType n = 0; n < chains[i].nodes.size(); ++n)
            CHECK(chain["nodes"][n]["name"].GetString() == copy_node_name(copies, chains[i].nodes[n]));
    }
    std::vector<std::string> first;
    for (const auto& node : page["chains"][0]["nodes"].GetArray()) first.emplace_back(node["name"].GetString());
    CHECK(first == std::vector<std::string>{
                       "pkg.Record+8 at pkg.Decoder.next(Decoder.java:58)",
                       "byte[] elements at pkg.Pages.read(Pages.java:7)",
                       "pkg.Tag</script><b>&amp;</b>+16 at pkg.Html.render(Html.java:5) <script>"});
    CHECK(page["chains"][0]["bytes"].GetUint64() == 20 * 64 * 8);
    CHECK(page["chains"][1]["nodes"][0]["name"].GetString() == std::string("static 0x7f3a00001000"));
}

TEST_CASE("a context's details say where its contents were copied from, as the text report does") {
    profile p = sample_profile();
    // A context that is the section's array site, fed by the records and by untracked memory.
    p.contexts.insert(p.contexts.begin() + 1, make_context("byte[]", {"pkg.Pages.read(Pages.java:7)"}, 0.6, true));
    p.copies = sample_copies();
    copy_profile& copies = *p.copies;
    const copy_node pages = copy_node::field(*copy_site_of(copies, "byte[]", {"pkg.Pages.read(Pages.java:7)"}),
                                             copy_node::elements);
    for (int i = 0; i < 10; ++i) copies.graph.add({copy_node::static_location(0), pages, 8}, 64);
    const std::string text = data_text(html_of(p));
    rapidjson::Document data;
    data.Parse(text.c_str(), text.size());
    REQUIRE_FALSE(data.HasParseError());
    const auto& contexts = data["contexts"];
    REQUIRE(contexts.Size() == 6);
    REQUIRE(contexts[1].HasMember("copied_from"));
    for (rapidjson::SizeType i = 0; i < contexts.Size(); ++i)
        if (i != 1) CHECK_FALSE(contexts[i].HasMember("copied_from"));
    const auto& copied = contexts[1]["copied_from"];
    const copied_contents expected = *copied_into(copies, p.contexts[1], p.run.estimator.confidence);
    CHECK(copied["copied"]["bytes"].GetDouble() == Approx(40 * 64 * 8));
    CHECK(copied["copied"]["bytes_ci"][0].GetDouble() == Approx(expected.copied.bytes_interval.low));
    CHECK(copied["copied"]["bytes_ci"][1].GetDouble() == Approx(expected.copied.bytes_interval.high));
    const auto& sources = copied["sources"];
    REQUIRE(sources.Size() == 2);
    CHECK(sources[0]["from"]["name"].GetString() == std::string("pkg.Record+8 at pkg.Decoder.next(Decoder.java:58)"));
    CHECK(names_of(sources[0]["from"]["frames"], data["strings"]) ==
          std::vector<std::string>{"pkg.Decoder.next(Decoder.java:58)", "pkg.Main.main(Main.java:10)"});
    CHECK(sources[0]["share"].GetDouble() == Approx(0.75));
    CHECK(sources[0]["estimate"]["bytes"].GetDouble() == Approx(30 * 64 * 8));
    CHECK(sources[0]["estimate"]["bytes_ci"][0].GetDouble() == Approx(expected.sources[0].estimate.bytes_interval.low));
    CHECK(sources[0]["estimate"]["bytes_ci"][1].GetDouble() ==
          Approx(expected.sources[0].estimate.bytes_interval.high));
    CHECK(sources[1]["from"]["name"].GetString() == std::string("untracked memory"));
    CHECK_FALSE(sources[1]["from"].HasMember("frames"));
    CHECK(sources[1]["share"].GetDouble() == Approx(0.25));
    CHECK(sources[1]["estimate"]["bytes"].GetDouble() == Approx(10 * 64 * 8));
}

TEST_CASE("the HTML report of a profile without a copy section has no copies view") {
    profile p = sample_profile();
    const std::string html = html_of(p);
    for (const char* part : {"copies-section", "copy-edges", "copy-chains", "renderCopies", "@OJX_"}) {
        INFO(part);
        CHECK(html.find(part) == std::string::npos);
    }
    const std::string text = data_text(html);
    rapidjson::Document data;
    data.Parse(text.c_str(), text.size());
    REQUIRE_FALSE(data.HasParseError());
    CHECK_FALSE(data.HasMember("copies"));
    // The view's lines are all that a copy section adds to the page around the data.
    p.copies = sample_copies();
    const std::string with = html_of(p);
    CHECK(with.size() > html.size());
    CHECK(with.substr(0, with.find("<style>")) == html.substr(0, html.find("<style>")));
    CHECK(with.ends_with(html.substr(html.rfind("document.body.dataset.ready"))));
}

TEST_CASE("the HTML report names the code that copied under each edge, as the copies view does") {
    const copy_edge copied{copy_node::field(0, 8), copy_node::field(1, copy_node::elements), 8};
    const copy_edge used{copy_node::field(1, copy_node::elements), copy_node::consumer(), 8};
    const copy_edge unnamed{copy_node::static_location(0), copy_node::field(1, copy_node::elements), 8};
    copy_edge_table table(8);
    for (int i = 0; i < 6; ++i) table.add(copied, 64, 20);
    for (int i = 0; i < 2; ++i) table.add(copied, 64, 21);
    table.add(copied, 64, 22);
    table.add(copied, 64); // other code: in the shares' whole, not named
    for (int i = 0; i < 5; ++i) table.add(used, 64, 21);
    table.add(unnamed, 64);
    profile p = sample_profile();
    p.copies = copy_profile_of(
        table.graph(), table.code(), {}, "sample <period 64>",
        [](context_id c) { return copy_site{"pkg.Record" + std::to_string(c), {"pkg.Make.f" + std::to_string(c) + "()"}}; },
        [](context_id c) { return copy_code_context{{c == 20 ? "pkg.Copier.copy() <b>" : "pkg.Sum.of()", "main()"}}; });
    const std::string text = data_text(html_of(p));
    CHECK(text.find('<') == std::string::npos); // a frame's markup is as inert as the sites'
    rapidjson::Document data;
    data.Parse(text.c_str(), text.size());
    REQUIRE_FALSE(data.HasParseError());
    const auto& edges = data["copies"]["edges"];
    REQUIRE(edges.Size() == 3);
    // Heaviest first: the copied edge (10 samples), the used one (5), the one whose samples named no code.
    const auto& top = edges[0];
    CHECK(top["code_label"].GetString() == std::string("copied by"));
    CHECK(top["code_samples"].GetUint64() == 10);
    REQUIRE(top["copied_by"].Size() == copies_view_code); // the heaviest two of three
    CHECK(top["copied_by"][0]["frame"].GetString() == std::string("pkg.Copier.copy() <b>"));
    CHECK(top["copied_by"][0]["samples"].GetUint64() == 6);
    CHECK(top["copied_by"][1]["frame"].GetString() == std::string("pkg.Sum.of()"));
    CHECK(top["copied_by"][1]["samples"].GetUint64() == 3); // contexts 21 and 22, named alike
    CHECK(edges[1]["code_label"].GetString() == std::string("used by"));
    CHECK(edges[1]["copied_by"][0]["samples"].GetUint64() == 5);
    CHECK_FALSE(edges[2].HasMember("copied_by"));
    CHECK_FALSE(edges[2].HasMember("code_label"));
}

TEST_CASE("the HTML report lists the clone pairs and carrier sites that the copies view lists") {
    const copy_edge clone{copy_node::field(0, 8), copy_node::field(1, 8), 8};
    const copy_edge relay{copy_node::field(2, copy_node::elements), copy_node::field(1, 16), 8};
    const copy_edge used{copy_node::field(1, 8), copy_node::consumer(), 8};
    copy_edge_table table(8);
    for (int i = 0; i < 9; ++i) table.add(clone, 64);
    for (int i = 0; i < 3; ++i) table.add(relay, 64);
    for (int i = 0; i < 4; ++i) table.add(used, 64);
    profile p = sample_profile();
    p.copies = copy_profile_of(table.graph(), sampled_copy_stats{}, "sample <period 64>", [](context_id c) {
        return copy_site{"pkg.Record" + std::to_string(c), {"pkg.Make.f" + std::to_string(c) + "()"}};
    });
    const std::string text = data_text(html_of(p));
    rapidjson::Document data;
    data.Parse(text.c_str(), text.size());
    REQUIRE_FALSE(data.HasParseError());
    const double level = p.run.estimator.confidence;

    const auto& pairs = data["copies"]["clone_pairs"];
    const std::vector<estimated_site_pair> expected_pairs = estimated_clone_pairs(*p.copies, level);
    REQUIRE(expected_pairs.size() == 2);
    REQUIRE(pairs.Size() == 2);
    for (rapidjson::SizeType i = 0; i < pairs.Size(); ++i) {
        CHECK(pairs[i]["from"]["name"].GetString() == copy_site_name(*p.copies, expected_pairs[i].pair.from));
        CHECK(pairs[i]["to"]["name"].GetString() == copy_site_name(*p.copies, expected_pairs[i].pair.to));
        CHECK(pairs[i]["share"].GetDouble() == Approx(expected_pairs[i].pair.share));
        CHECK(pairs[i]["estimate"]["bytes"].GetDouble() == Approx(expected_pairs[i].estimate.bytes));
    }
    CHECK(pairs[0]["from"]["name"].GetString() == std::string("pkg.Record0 at pkg.Make.f0()"));
    CHECK(pairs[0]["to"]["name"].GetString() == std::string("pkg.Record1 at pkg.Make.f1()"));
    CHECK(pairs[0]["share"].GetDouble() == Approx(0.75));

    // Sites 0 and 2 only carry their contents onward; site 1's are computed on.
    const auto& carriers = data["copies"]["carriers"];
    REQUIRE(carriers.Size() == 2);
    CHECK(carriers[0]["site"]["name"].GetString() == std::string("pkg.Record0 at pkg.Make.f0()"));
    CHECK(carriers[1]["site"]["name"].GetString() == std::string("pkg.Record2 at pkg.Make.f2()"));
    CHECK(carriers[0]["copied_out"]["bytes"].GetDouble() ==
          Approx(estimated_carrier_sites(*p.copies, level)[0].copied_out.bytes));
    CHECK(carriers[0]["copied_in"]["bytes"].GetDouble() == 0);
}

TEST_CASE("the HTML report makes one site of sites named alike, whose tooltip then has their leaf frame") {
    // Two sites that differ only in their callers, and one of its own.
    const auto site = [](context_id c) {
        if (c == 2) return copy_site{"pkg.Dest", {"pkg.Make.dest()", "main()"}};
        return copy_site{"pkg.Buffer", {"pkg.Make.buffer()", c == 0 ? "pkg.Reader.fill()" : "pkg.Writer.flush()"}};
    };
    copy_edge_table table(8);
    for (context_id from : {0u, 1u, 1u})
        table.add({copy_node::field(from, copy_node::elements), copy_node::field(2, copy_node::elements), 8}, 64);
    profile p = sample_profile();
    p.copies = copy_profile_of(table.graph(), sampled_copy_stats{}, "sample <period 64>", site);
    const std::string text = data_text(html_of(p));
    rapidjson::Document data;
    data.Parse(text.c_str(), text.size());
    REQUIRE_FALSE(data.HasParseError());
    const auto& edges = data["copies"]["edges"];
    REQUIRE(edges.Size() == 1);
    CHECK(edges[0]["samples"].GetUint64() == 3);
    CHECK(edges[0]["from"]["name"].GetString() == std::string("pkg.Buffer elements at pkg.Make.buffer()"));
    CHECK(edges[0]["from"]["frames"].Size() == 1); // two stacks: their leaf frame
    CHECK(edges[0]["to"]["frames"].Size() == 2);   // one: its whole stack
    REQUIRE(data["copies"]["clone_pairs"].Size() == 1);
    CHECK(data["copies"]["clone_pairs"][0]["share"].GetDouble() == Approx(1.0));
}
