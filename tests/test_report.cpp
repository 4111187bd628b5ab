// The report writers: the JSON profile is well-formed and holds the documented fields (frames leaf first,
// names escaped), and the text report ranks the replicated context first with its allocation and use sites.
#include "ojx/emulation/heap_shapes.hpp"
#include "ojx/emulation/session.hpp"
#include "ojx/report.hpp"

#include <catch2/catch.hpp>

#include <cctype>
#include <sstream>
#include <string>

using namespace ojx;
using namespace ojx::emulation;

namespace {

// A strict JSON syntax checker (RFC 8259 values), enough to prove the writer's output parses.
class json_checker {
public:
    explicit json_checker(std::string_view text) : text_(text) {}
    bool valid() {
        skip();
        if (!value()) return false;
        skip();
        return at_ == text_.size();
    }

private:
    bool value() {
        if (at_ >= text_.size()) return false;
        const char c = text_[at_];
        if (c == '{') return object();
        if (c == '[') return array();
        if (c == '"') return string();
        if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) return number();
        return literal("true") || literal("false") || literal("null");
    }
    bool object() {
        ++at_;
        skip();
        if (peek('}')) return ++at_, true;
        for (;;) {
            skip();
            if (!string()) return false;
            skip();
            if (!peek(':')) return false;
            ++at_;
            skip();
            if (!value()) return false;
            skip();
            if (peek('}')) return ++at_, true;
            if (!peek(',')) return false;
            ++at_;
        }
    }
    bool array() {
        ++at_;
        skip();
        if (peek(']')) return ++at_, true;
        for (;;) {
            skip();
            if (!value()) return false;
            skip();
            if (peek(']')) return ++at_, true;
            if (!peek(',')) return false;
            ++at_;
        }
    }
    bool string() {
        if (!peek('"')) return false;
        for (++at_; at_ < text_.size(); ++at_) {
            const auto c = static_cast<unsigned char>(text_[at_]);
            if (c == '"') return ++at_, true;
            if (c < 0x20) return false;
            if (c == '\\') {
                if (++at_ >= text_.size()) return false;
                if (text_[at_] == 'u') {
                    for (int i = 0; i < 4; ++i)
                        if (++at_ >= text_.size() || !std::isxdigit(static_cast<unsigned char>(text_[at_]))) return false;
                } else if (std::string_view("\"\\/bfnrt").find(text_[at_]) == std::string_view::npos) {
                    return false;
                }
            }
        }
        return false;
    }
    bool number() {
        const std::size_t start = at_;
        if (peek('-')) ++at_;
        while (at_ < text_.size() && (std::isdigit(static_cast<unsigned char>(text_[at_])) ||
                                      std::string_view(".eE+-").find(text_[at_]) != std::string_view::npos))
            ++at_;
        return at_ > start;
    }
    bool literal(std::string_view word) {
        if (text_.substr(at_, word.size()) != word) return false;
        at_ += word.size();
        return true;
    }
    bool peek(char c) const { return at_ < text_.size() && text_[at_] == c; }
    void skip() {
        while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_]))) ++at_;
    }
    std::string_view text_;
    std::size_t at_ = 0;
};

struct profiled {
    std::string json;
    std::string text;
};

profiled profile_two_contexts() {
    const std::vector<context_shape> shapes{
        {.name = "Quote\"Back\\slash", .type = "byte[]", .group_sizes = std::vector<std::uint32_t>(120, 1)},
        {.name = "com.example.Reader.readNext", .type = "byte[]", .object_size = 2048, .group_sizes = {120}},
    };
    session_config config;
    config.profiler.context_tree_capacity = 256;
    session<> s(config);
    run_workload(s.machine, s.prof.contexts(), shapes, {.seed = 3});
    const report_naming naming{[&](std::uint64_t f) { return synthetic_frame_name(f, shapes); },
                               [&](type_id t) { return shapes.at(t).type; }};
    std::ostringstream json, text;
    write_json(json, s.prof.report(), s.prof.contexts(), naming, s.facts());
    write_text(text, s.prof.report(), s.prof.contexts(), naming, s.facts());
    return {json.str(), text.str()};
}

} // namespace

TEST_CASE("the checker itself rejects malformed JSON") {
    CHECK(json_checker(R"({"a": [1, 2.5e3, -3], "b": {"c": "x\"y\u00e9"}, "d": true, "e": null})").valid());
    CHECK_FALSE(json_checker(R"({"a": 1,})").valid());
    CHECK_FALSE(json_checker(R"({"a": "unterminated})").valid());
    CHECK_FALSE(json_checker(R"([1 2])").valid());
    CHECK_FALSE(json_checker("{\"a\": \"raw\nnewline\"}").valid());
}

TEST_CASE("the JSON profile is well-formed and holds the documented fields") {
    const auto out = profile_two_contexts();
    INFO(out.json);
    REQUIRE(json_checker(out.json).valid());
    for (const char* field : {"\"ojx_profile_version\": 1", "\"run\"", "\"sampler\"", "\"watchpoints\"",
                              "\"samples_dropped\"", "\"contexts\"", "\"allocation\"", "\"type\": \"byte[]\"",
                              "\"frames\"", "\"objects\"", "\"comparisons\"", "\"equal\"", "\"different\"", "\"theta\"",
                              "\"theta_ci\"", "\"alpha\"", "\"omega\"", "\"gamma\"", "\"accesses\"", "\"samples\""})
        CHECK(out.json.find(field) != std::string::npos);
    // Leaf frame first, in printStackTrace style; the replicated context is ranked first.
    const auto first = out.json.find("\"frames\": [\"com.example.Reader.readNext.allocate(Workload.java:41)\", "
                                     "\"com.example.Reader.readNext.run(Workload.java:21)\", \"Main.main(Main.java:10)\"]");
    const auto second = out.json.find("Quote\\\"Back\\\\slash.allocate");
    REQUIRE(first != std::string::npos);
    REQUIRE(second != std::string::npos); // escaped, not raw
    CHECK(first < second);
}

TEST_CASE("an agent's own counters go into run.agent, and the profile stays well-formed") {
    session<> s(session_config{});
    run_facts facts = s.facts();
    facts.agent_counters = {{"samples_dropped_during_gc", 17}, {"objects \"moved\"", 4}};
    std::ostringstream json;
    write_json(json, s.prof.report(), s.prof.contexts(), report_naming{}, facts);
    INFO(json.str());
    REQUIRE(json_checker(json.str()).valid());
    CHECK(json.str().find(R"("agent": {"samples_dropped_during_gc": 17, "objects \"moved\"": 4})") != std::string::npos);
    std::ostringstream without;
    write_json(without, s.prof.report(), s.prof.contexts(), report_naming{}, s.facts());
    CHECK(without.str().find("\"agent\"") == std::string::npos);
}

TEST_CASE("the text report ranks the replicated context first with where it is allocated and used") {
    const auto out = profile_two_contexts();
    INFO(out.text);
    // Its estimate rests on comparisons: no point, their bounds as the interval, and their own numbers below.
    const auto first = out.text.find("\n  1     - [");
    const auto reader = out.text.find(" byte[] at com.example.Reader.readNext.allocate(Workload.java:41)\n");
    REQUIRE(first != std::string::npos);
    REQUIRE(reader != std::string::npos);
    CHECK(first < reader);
    CHECK(reader < out.text.find("\n  2 "));
    CHECK(out.text.find("        used at com.example.Reader.readNext.use(Workload.java:81)  (") != std::string::npos);
    const auto detail = out.text.find("        comparisons: ", first);
    CHECK(detail < reader + 400);
    CHECK(out.text.find(" equal, alpha ", detail) < out.text.find("(the interval above is their bounds omega..gamma)\n", detail));
    CHECK(out.text.find(" cmp ", first) < reader);
}

TEST_CASE("a leaf where objects were used is one line, whatever the frames further out") {
    struct access {
        std::string leaf;
        std::uint64_t samples;
    };
    const std::vector<access> accesses{{"A.read", 5}, {"B.scan", 7}, {"A.read", 4}, {"C.copy", 1}, {"B.scan", 1}};
    const auto uses = uses_by_leaf(accesses, [](const access& a) { return a.leaf; });
    REQUIRE(uses.size() == 3);
    CHECK(uses[0] == std::pair<std::string, std::uint64_t>{"A.read", 9});
    CHECK(uses[1] == std::pair<std::string, std::uint64_t>{"B.scan", 8});
    CHECK(uses[2] == std::pair<std::string, std::uint64_t>{"C.copy", 1});
}

TEST_CASE("a leaf in code without source lines is named by its function, not by each of its instructions") {
    CHECK(leaf_function("__memmove_avx512_unaligned_erms+0x320 (libc.so.6)") ==
          "__memmove_avx512_unaligned_erms (libc.so.6)");
    CHECK(leaf_function("operator new(unsigned long)+0x4 (libstdc++.so.6)") ==
          "operator new(unsigned long) (libstdc++.so.6)");
    // Kept: no symbol, source lines, Java frames, and what only looks like an offset.
    for (const char* kept : {"0x7f0012 (libfoo.so)", "libc.so.6+0x10", "+0x10 (libc.so.6)",
                             "copy_by_loop (copy_program.cpp:63)", "java.util.Arrays.copyOf(Arrays.java:3537)",
                             "f+0x (lib.so)", "f+0x1g (lib.so)", "main"}) {
        INFO(kept);
        CHECK(leaf_function(kept) == kept);
    }
    // Two places in one function are one use.
    struct access {
        std::string leaf;
        std::uint64_t samples;
    };
    const std::vector<access> accesses{{"memcmp+0x20 (libc.so.6)", 3}, {"memcmp+0x48 (libc.so.6)", 2}};
    const auto uses = uses_by_leaf(accesses, [](const access& a) { return leaf_function(a.leaf); });
    REQUIRE(uses.size() == 1);
    CHECK(uses[0] == std::pair<std::string, std::uint64_t>{"memcmp (libc.so.6)", 5});
}

TEST_CASE("a copy section names the field nodes of typed sites where the runtime names the field") {
    const std::vector<context_shape> shapes{
        {.name = "Orders.read", .type = "Record", .group_sizes = {120}},
        {.name = "Orders.copy", .type = "Buffer", .group_sizes = std::vector<std::uint32_t>(120, 1)},
    };
    session_config config;
    config.profiler.context_tree_capacity = 256;
    session<> s(config);
    run_workload(s.machine, s.prof.contexts(), shapes, {.seed = 5});
    const replica_report report = s.prof.report();
    REQUIRE(report.contexts.size() == 2);
    const context_report& record = report.contexts[0].type == 0 ? report.contexts[0] : report.contexts[1];
    const context_report& buffer = report.contexts[0].type == 0 ? report.contexts[1] : report.contexts[0];
    REQUIRE((record.type == 0 && buffer.type == 1));
    const context_id untyped = record.context + buffer.context + 1000; // a site the report does not hold

    sampled_copy_graph graph;
    graph.add({copy_node::field(buffer.context, 16), copy_node::field(record.context, 8), 8}, 1);
    graph.add({copy_node::field(record.context, 8), copy_node::consumer(), 8}, 1);
    graph.add({copy_node::field(record.context, copy_node::elements), copy_node::field(untyped, 4), 4}, 1);
    graph.add({copy_node::allocation(record.context), copy_node::static_location(0x1000), 8}, 1);

    // Each typed field node once, sorted; not the elements node, not the untyped site's, not allocation nodes.
    CHECK(typed_field_nodes(graph, report) ==
          std::vector<std::pair<type_id, std::uint64_t>>{{record.type, 8}, {buffer.type, 16}});

    report_naming naming{[&](std::uint64_t f) { return synthetic_frame_name(f, shapes); },
                         [&](type_id t) { return t < shapes.size() ? shapes[t].type : std::string("?"); }};
    std::vector<std::pair<type_id, std::uint64_t>> asked;
    naming.field = [&](type_id type, std::uint64_t offset) {
        asked.emplace_back(type, offset);
        return type == record.type ? std::string("count") : std::string(); // Buffer's field has no name
    };
    const copy_profile section =
        followed_copy_section(graph, copy_code{}, sampled_copy_stats{}, "test", report, s.prof.contexts(), naming);
    CHECK(asked == typed_field_nodes(graph, report));
    CHECK(section.field_names == std::vector<copy_field_name>{{"Record", 8, "count"}});
    REQUIRE(section.field_name("Record", 8) != nullptr);
    CHECK(*section.field_name("Record", 8) == "count");
    CHECK(section.field_name("Buffer", 16) == nullptr);

    naming.field = nullptr; // a runtime that names no fields: none asked, none written
    CHECK(followed_copy_section(graph, copy_code{}, sampled_copy_stats{}, "test", report, s.prof.contexts(), naming)
              .field_names.empty());
}

TEST_CASE("the text report says how many of the tracked objects were digested whole, and how many budgets left out") {
    session_config config;
    config.profiler.context_tree_capacity = 256;
    config.sampler.period = 1u << 30; // whole objects only
    session<> s(config);
    const std::vector<context_shape> shapes{{.name = "com.example.Buffers.make", .type = "byte[]"}};
    const context_id site = s.prof.contexts().child(context_tree::root, 0x10);
    std::vector<address> objects;
    for (int i = 0; i < 64; ++i) objects.push_back(*s.machine.allocate(4096, site, 0));
    const auto swept = s.prof.digest_tracked_objects(64 << 10); // a quarter of the 256 KiB
    REQUIRE(swept.skipped > 0);
    const report_naming naming{[&](std::uint64_t f) { return synthetic_frame_name(f, shapes); },
                               [&](type_id) { return std::string("byte[]"); }};
    std::ostringstream text;
    write_text(text, s.prof.report(), s.prof.contexts(), naming, s.facts());
    INFO(text.str());
    const std::string expected = std::to_string(swept.digested) + " objects digested whole (" +
                                 report_detail::percent(static_cast<double>(swept.digested) / 64) + " of the 64 tracked; " +
                                 std::to_string(swept.skipped) +
                                 " left out by the digest budgets, which widens the intervals)";
    CHECK(text.str().find(expected) != std::string::npos);

    // Every tracked object digested: no share to state.
    session<> all(config);
    const context_id whole_site = all.prof.contexts().child(context_tree::root, 0x10);
    for (int i = 0; i < 8; ++i) REQUIRE(all.machine.allocate(4096, whole_site, 0).has_value());
    all.prof.digest_tracked_objects();
    std::ostringstream complete;
    write_text(complete, all.prof.report(), all.prof.contexts(), naming, all.facts());
    CHECK(complete.str().find("8 objects digested whole;") != std::string::npos);
}
