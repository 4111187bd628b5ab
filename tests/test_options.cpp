// The option reader: every kind with its units and defaults, every error path and what its message names, the
// help listings, in both syntaxes (an agent's option string and a command line), and output file name patterns.
#include "ojx/options.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

using namespace ojx;
using namespace std::chrono_literals;

namespace {

const std::vector<option_spec> agent_options = {
    {"start", option_kind::flag, "", "start profiling at once"},
    {"help", option_kind::flag, "", "print this help and exit"},
    {"file", option_kind::text, "replicas-%p.json", "where to write the profile"},
    {"log", option_kind::text, "", "where to write diagnostics"},
    {"threshold", option_kind::size, "1k", "ignore smaller objects"},
    {"slots", option_kind::count, "4", "watchpoint slots to use"},
    {"interval", option_kind::duration, "10ms", "sampling period"},
    {"rate", option_kind::rate, "200/s", "most samples per second per thread"},
    {"pairing", option_kind::choice, "reservoir", "which earlier object a new one is compared with",
     {"reservoir", "recent"}},
};

option_values parsed(std::string_view text) {
    options_result result = parse_options(text, agent_options);
    INFO(result.error);
    REQUIRE(result.ok());
    return result.values;
}

std::string error_of(std::string_view text, const std::vector<option_spec>& specs = agent_options) {
    const options_result result = parse_options(text, specs);
    REQUIRE_FALSE(result.ok());
    REQUIRE_FALSE(result.error.empty());
    return result.error;
}

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

} // namespace

TEST_CASE("an empty option string gives every default", "[options]") {
    const option_values v = parsed("");
    CHECK_FALSE(v.flag("start"));
    CHECK_FALSE(v.flag("help"));
    CHECK(v.text("file") == "replicas-%p.json");
    CHECK(v.text("log").empty());
    CHECK(v.size("threshold") == 1024);
    CHECK(v.count("slots") == 4);
    CHECK(v.duration("interval") == 10ms);
    CHECK(v.rate("rate") == 200);
    CHECK(v.choice("pairing") == "reservoir");
    CHECK_FALSE(v.given("file"));
    CHECK_FALSE(v.given("start"));
}

TEST_CASE("the agent's own example line parses", "[options]") {
    const option_values v = parsed("start,file=replicas.json,interval=10ms");
    CHECK(v.flag("start"));
    CHECK_FALSE(v.flag("help"));
    CHECK(v.text("file") == "replicas.json");
    CHECK(v.duration("interval") == 10ms);
    CHECK(v.given("start"));
    CHECK(v.given("file"));
    CHECK(v.given("interval"));
    CHECK_FALSE(v.given("slots"));
}

TEST_CASE("sizes: bytes, k, m, g, either case", "[options]") {
    CHECK(parsed("threshold=0").size("threshold") == 0);
    CHECK(parsed("threshold=4096").size("threshold") == 4096);
    CHECK(parsed("threshold=1k").size("threshold") == 1024);
    CHECK(parsed("threshold=1K").size("threshold") == 1024);
    CHECK(parsed("threshold=64m").size("threshold") == 64ULL << 20);
    CHECK(parsed("threshold=64M").size("threshold") == 64ULL << 20);
    CHECK(parsed("threshold=3g").size("threshold") == 3ULL << 30);
    CHECK(parsed("threshold=3G").size("threshold") == 3ULL << 30);
    CHECK(parsed("threshold=17179869183g").size("threshold") == 17179869183ULL << 30); // largest that fits
}

TEST_CASE("counts and rates", "[options]") {
    CHECK(parsed("slots=0").count("slots") == 0);
    CHECK(parsed("slots=007").count("slots") == 7);
    CHECK(parsed("slots=18446744073709551615").count("slots") == 18446744073709551615ULL);
    CHECK(parsed("rate=1000").rate("rate") == 1000);
    CHECK(parsed("rate=50/s").rate("rate") == 50);
    CHECK(parsed("rate=50/S").rate("rate") == 50);
}

TEST_CASE("durations: ns, us, ms, s, and a bare number is milliseconds", "[options]") {
    CHECK(parsed("interval=250ns").duration("interval") == 250ns);
    CHECK(parsed("interval=250us").duration("interval") == 250us);
    CHECK(parsed("interval=250ms").duration("interval") == 250ms);
    CHECK(parsed("interval=2s").duration("interval") == 2s);
    CHECK(parsed("interval=2S").duration("interval") == 2s);
    CHECK(parsed("interval=5MS").duration("interval") == 5ms);
    CHECK(parsed("interval=7").duration("interval") == 7ms);
    CHECK(parsed("interval=0").duration("interval") == 0ns);
    CHECK(parsed("interval=9223372036854775807ns").duration("interval").count() == 9223372036854775807LL);
}

TEST_CASE("text and choices", "[options]") {
    CHECK(parsed("file=/tmp/out dir/r.json").text("file") == "/tmp/out dir/r.json");
    CHECK(parsed("file=a=b.json").text("file") == "a=b.json"); // split at the first '='
    CHECK(parsed("pairing=recent").choice("pairing") == "recent");
    CHECK(parsed("pairing=reservoir").choice("pairing") == "reservoir");
}

TEST_CASE("empty items, a trailing comma and spaces around items are ignored", "[options]") {
    const option_values v = parsed(",start,,  file = x.json ,, slots=2,");
    CHECK(v.flag("start"));
    CHECK(v.text("file") == "x.json");
    CHECK(v.count("slots") == 2);
    CHECK(parsed(",").text("file") == "replicas-%p.json");
    CHECK(parsed(",,,").count("slots") == 4);
    CHECK(parsed(" ").count("slots") == 4);
}

TEST_CASE("a repeated option: the last one wins", "[options]") {
    const option_values v = parsed("interval=1ms,file=a.json,interval=3ms,start,start,file=b.json");
    CHECK(v.duration("interval") == 3ms);
    CHECK(v.text("file") == "b.json");
    CHECK(v.flag("start"));
    // Every occurrence is still checked: an invalid early one is an error even if a later one is fine.
    CHECK_THAT(error_of("interval=fast,interval=3ms"), Contains("'interval=fast'"));
}

TEST_CASE("an unknown option names the item and lists the valid names", "[options]") {
    const std::string e = error_of("start,fiel=x.json");
    CHECK_THAT(e, Contains("unknown option 'fiel=x.json'"));
    for (const option_spec& s : agent_options) CHECK_THAT(e, Contains(std::string(s.name)));
    CHECK_THAT(error_of("Start"), Contains("unknown option 'Start'")); // names are case-sensitive
    CHECK_THAT(error_of("=x"), Contains("option '=x' has no name") && Contains("valid options are: start, help"));
}

TEST_CASE("a bad choice lists the valid choices", "[options]") {
    const std::string e = error_of("pairing=random");
    CHECK_THAT(e, Contains("'pairing=random'") && Contains("expected one of reservoir, recent"));
    CHECK_THAT(error_of("pairing=Recent"), Contains("expected one of reservoir, recent"));
}

TEST_CASE("a bad number says which form was expected", "[options]") {
    CHECK_THAT(error_of("threshold=64x"), Contains("'threshold=64x'") && Contains("expected a size in bytes") &&
                                               Contains("k, m or g"));
    CHECK_THAT(error_of("threshold=k"), Contains("expected a size in bytes"));
    CHECK_THAT(error_of("threshold=-1"), Contains("expected a size in bytes"));
    CHECK_THAT(error_of("threshold=1.5m"), Contains("expected a size in bytes"));
    CHECK_THAT(error_of("threshold=1 k"), Contains("expected a size in bytes"));
    CHECK_THAT(error_of("slots=-1"), Contains("'slots=-1'") && Contains("expected a count: a non-negative integer"));
    CHECK_THAT(error_of("slots=+1"), Contains("expected a count"));
    CHECK_THAT(error_of("slots=4k"), Contains("expected a count"));
    CHECK_THAT(error_of("slots=0x10"), Contains("expected a count"));
    CHECK_THAT(error_of("interval=10m"), Contains("'interval=10m'") && Contains("expected a duration") &&
                                              Contains("ns, us, ms or s (a bare number is ms)"));
    CHECK_THAT(error_of("interval=ms"), Contains("expected a duration"));
    CHECK_THAT(error_of("rate=200/min"), Contains("'rate=200/min'") && Contains("expected a rate") &&
                                             Contains("per second"));
}

TEST_CASE("a number too large for its kind is out of range", "[options]") {
    CHECK_THAT(error_of("slots=18446744073709551616"), Contains("'slots=18446744073709551616': out of range"));
    CHECK_THAT(error_of("threshold=17179869184g"), Contains("out of range") && Contains("a size in bytes"));
    CHECK_THAT(error_of("interval=9223372036854775808ns"), Contains("out of range"));
    CHECK_THAT(error_of("interval=9223372037s"), Contains("out of range"));
}

TEST_CASE("a missing value, or a value for a flag, is an error", "[options]") {
    CHECK_THAT(error_of("file"), Contains("option 'file' needs a value: file=<text>"));
    CHECK_THAT(error_of("file="), Contains("option 'file=' needs a value: file=<text>"));
    CHECK_THAT(error_of("slots"), Contains("needs a value: slots=<count>"));
    CHECK_THAT(error_of("interval= "), Contains("needs a value: interval=<duration>"));
    CHECK_THAT(error_of("pairing"), Contains("needs a value: pairing=reservoir|recent"));
    CHECK_THAT(error_of("start=yes"), Contains("option 'start=yes': start is a flag and takes no value"));
    CHECK_THAT(error_of("start="), Contains("start is a flag and takes no value"));
}

TEST_CASE("mistakes in the declarations come back as errors too", "[options]") {
    const auto spec_error = [](std::vector<option_spec> specs) { return error_of("", specs); };
    CHECK_THAT(spec_error({{"a", option_kind::count, "x", "h"}}),
               Contains("bad default") && Contains("'a=x'") && Contains("expected a count"));
    CHECK_THAT(spec_error({{"a", option_kind::count, "", "h"}}), Contains("bad default"));
    CHECK_THAT(spec_error({{"a", option_kind::choice, "c", "h", {"x", "y"}}}), Contains("expected one of x, y"));
    CHECK_THAT(spec_error({{"a", option_kind::choice, "", "h"}}), Contains("lists no choices"));
    CHECK_THAT(spec_error({{"a", option_kind::flag, "on", "h"}}), Contains("flag 'a' cannot have a default"));
    CHECK_THAT(spec_error({{"a", option_kind::flag}, {"a", option_kind::count, "1"}}),
               Contains("'a' is declared twice"));
    CHECK_THAT(spec_error({{"a=b", option_kind::flag}}), Contains("bad name 'a=b'"));
    CHECK_THAT(spec_error({{"", option_kind::flag}}), Contains("bad name ''"));
}

TEST_CASE("reading an undeclared name or with the wrong kind throws", "[options]") {
    const option_values v = parsed("start");
    CHECK_THROWS_AS(v.flag("stop"), std::logic_error);
    CHECK_THROWS_AS(v.given("stop"), std::logic_error);
    CHECK_THROWS_AS(v.count("start"), std::logic_error);
    CHECK_THROWS_AS(v.text("pairing"), std::logic_error);
    CHECK_THROWS_AS(v.size("interval"), std::logic_error);
    CHECK_THROWS_WITH(v.choice("nope"), Contains("'nope'"));
    CHECK_THROWS_AS(parse_options("nope", agent_options).values.flag("start"), std::logic_error); // failed: no values
}

TEST_CASE("help lists every option with its kind, default and help", "[options]") {
    const std::string help = help_text(agent_options);
    INFO(help);
    for (const option_spec& s : agent_options) CHECK_THAT(help, Contains(std::string(s.help)));
    CHECK_THAT(help, Contains("  start ") && Contains("start profiling at once (flag, default: off)"));
    CHECK_THAT(help, Contains("file=<text>") && Contains("where to write the profile (default: replicas-%p.json)"));
    CHECK_THAT(help, Contains("log=<text>") && Contains("where to write diagnostics (default: none)"));
    CHECK_THAT(help, Contains("threshold=<size>") && Contains("(default: 1k)"));
    CHECK_THAT(help, Contains("slots=<count>") && Contains("(default: 4)"));
    CHECK_THAT(help, Contains("interval=<duration>") && Contains("sampling period (default: 10ms)"));
    CHECK_THAT(help, Contains("rate=<rate>") && Contains("(default: 200/s)"));
    CHECK_THAT(help, Contains("pairing=reservoir|recent") && Contains("(default: reservoir)"));
    // How each kind used is written, so a user can fix a value without reading the manual.
    CHECK_THAT(help, Contains("<size>: a size in bytes") && Contains("<duration>: a duration") &&
                         Contains("<count>: a count") && Contains("<rate>: a rate"));
    // One line per option plus the heading and one line per numeric kind; help columns line up.
    CHECK(std::count(help.begin(), help.end(), '\n') == 1 + 9 + 4);
    const auto column = [&](std::string_view text) { return help.find(text) - help.rfind('\n', help.find(text)); };
    CHECK(column("start profiling") == column("sampling period"));
    CHECK(column("start profiling") == column("which earlier object"));
    // Kinds not used are not explained.
    const std::vector<option_spec> flags_only = {{"start", option_kind::flag, "", "go"}};
    CHECK_THAT(help_text(flags_only), !Contains("<size>") && !Contains("<duration>"));
}

namespace {

const std::vector<option_spec> command_options = {
    {"help", option_kind::flag, "", "print this help and exit"},
    {"seed", option_kind::count, "42", "seed of everything random"},
    {"track_rate", option_kind::rate, "700", "tracked allocations a second"},
    {"confidence", option_kind::fraction, "0.95", "confidence of the intervals"},
    {"trigger", option_kind::choice, "loads", "when a pair is compared", {"loads", "sample"}, {{"at-sample", "sample"}}},
    {"json", option_kind::text, "", "where the profile goes"},
};

arguments_result read_arguments(std::vector<std::string_view> words) {
    return parse_arguments(std::span<const std::string_view>(words.data(), words.size()), command_options);
}

std::string argument_error(std::vector<std::string_view> words) {
    const arguments_result result = read_arguments(std::move(words));
    REQUIRE_FALSE(result.ok());
    return result.error;
}

} // namespace

TEST_CASE("a command line: --name value, --name=value, flags, operands and defaults", "[options]") {
    const arguments_result r =
        read_arguments({"in.trace", "--seed", "7", "--track-rate=5/s", "--confidence", "99%", "-h", "more"});
    INFO(r.error);
    REQUIRE(r.ok());
    CHECK(r.values.count("seed") == 7);
    CHECK(r.values.rate("track_rate") == 5);
    CHECK(r.values.fraction("confidence") == Approx(0.99));
    CHECK(r.values.flag("help"));
    CHECK(r.values.choice("trigger") == "loads");
    CHECK_FALSE(r.values.given("trigger"));
    CHECK(r.values.text("json").empty());
    CHECK(r.operands == std::vector<std::string>{"in.trace", "more"});
    // After "--" everything is an operand, and '-' alone (standard output) is one anyway.
    const arguments_result rest = read_arguments({"-", "--", "--seed", "3"});
    REQUIRE(rest.ok());
    CHECK(rest.values.count("seed") == 42);
    CHECK(rest.operands == std::vector<std::string>{"-", "--seed", "3"});
}

TEST_CASE("a command line: repeats, the last one winning, and aliases of choices", "[options]") {
    const arguments_result r = read_arguments({"--seed", "1", "--seed=2", "--trigger", "at-sample"});
    REQUIRE(r.ok());
    CHECK(r.values.count("seed") == 2);
    CHECK(r.values.choice("trigger") == "sample"); // the alias reads as the name it stands for
    // The key=value syntax reads aliases and repeats alike.
    const options_result o = parse_options("trigger=at-sample,seed=1,seed=9", command_options);
    REQUIRE(o.ok());
    CHECK(o.values.choice("trigger") == "sample");
    CHECK(o.values.count("seed") == 9);
    // A repeat must still be valid.
    CHECK_THAT(argument_error({"--seed", "1", "--seed", "x"}), Contains("option '--seed x': expected a count"));
}

TEST_CASE("a command line: one error shape, naming the option as written", "[options]") {
    // Unknown: named, with every valid option as the command line spells it.
    CHECK(argument_error({"--verbose"}) == "unknown option '--verbose'; valid options are: --help, --seed, "
                                           "--track-rate, --confidence, --trigger, --json");
    CHECK_THAT(argument_error({"--track_rate", "5"}), Contains("unknown option '--track_rate'"));
    // Bad values: the option and value as given, then the form expected.
    CHECK(argument_error({"--seed", "many"}) == "option '--seed many': expected a count: a non-negative integer, e.g. 100");
    CHECK_THAT(argument_error({"--confidence=1.5"}), StartsWith("option '--confidence=1.5': expected a fraction"));
    CHECK_THAT(argument_error({"--confidence=x%"}), StartsWith("option '--confidence=x%': expected a fraction"));
    CHECK(argument_error({"--trigger", "never"}) == "option '--trigger never': expected one of loads, sample");
    CHECK(argument_error({"--help=yes"}) == "option '--help=yes': --help is a flag and takes no value");
    // Missing values: at the end, or empty after '='.
    CHECK(argument_error({"--seed"}) == "option '--seed' needs a value: --seed <count>");
    CHECK(argument_error({"--json="}) == "option '--json=' needs a value: --json <text>");
    // The same value read in the option-string syntax fails alike, named as written there.
    CHECK_THAT(error_of("slots=many"), StartsWith("option 'slots=many': expected a count"));
    // A bad table is an error, not a crash.
    const std::vector<option_spec> twice = {{"a", option_kind::flag}, {"a", option_kind::flag}};
    CHECK_THAT(parse_arguments({}, twice).error, Contains("'a' is declared twice"));
}

TEST_CASE("a command line read step by step: short spellings, and each option as written", "[options]") {
    const option_alias short_names[] = {{"-o", "json"}};
    const std::vector<std::string_view> words = {"-o", "out.json", "--seed=3", "in", "-o=x", "-h", "--json", "a"};
    argument_reader reader(words, command_options, short_names);
    std::vector<std::string> seen;
    while (reader.next())
        seen.push_back(reader.option() == nullptr ? std::string(reader.operand())
                                                  : std::string(reader.option()->name) + " <" + reader.item() + ">");
    CHECK(reader.error().empty());
    CHECK(seen == std::vector<std::string>{"json <-o out.json>", "seed <--seed=3>", "in", "json <-o=x>", "help <-h>",
                                           "json <--json a>"});
    const auto error = [&](std::vector<std::string_view> line, std::span<const option_alias> shorts) {
        argument_reader r(line, command_options, shorts);
        while (r.next()) {
        }
        return r.error();
    };
    // A short spelling is named as written; it spells only its own option, and only where the command gives it.
    CHECK(error({"-o"}, short_names) == "option '-o' needs a value: -o <text>");
    CHECK(error({"-s", "1"}, short_names) == "unknown option '-s'; valid options are: --help, --seed, --track-rate, "
                                              "--confidence, --trigger, --json");
    CHECK_THAT(error({"-o", "x"}, {}), StartsWith("unknown option '-o'; "));
}

TEST_CASE("a command line's help is generated from the same table", "[options]") {
    const std::string help = argument_help_text(command_options);
    INFO(help);
    for (const option_spec& s : command_options) CHECK_THAT(help, Contains(std::string(s.help)));
    CHECK_THAT(help, Contains("  --help ") && Contains("print this help and exit (flag, default: off)"));
    CHECK_THAT(help, Contains("--track-rate <rate>") && Contains("(default: 700)"));
    CHECK_THAT(help, Contains("--confidence <fraction>") && Contains("(default: 0.95)"));
    CHECK_THAT(help, Contains("--trigger loads|sample") && Contains("(at-sample: another name of sample)"));
    CHECK_THAT(help, Contains("--json <text>") && Contains("(default: none)"));
    CHECK_THAT(help, Contains("<fraction>: a fraction") && Contains("<count>: a count") && !Contains("<size>:"));
    CHECK(std::count(help.begin(), help.end(), '\n') == 6 + 3);
    const auto column = [&](std::string_view text) { return help.find(text) - help.rfind('\n', help.find(text)); };
    CHECK(column("print this help") == column("where the profile goes"));
    // A table without defaults (settings unset unless given) says no default.
    const std::vector<option_spec> no_defaults = {{"slots", option_kind::count, "", "watchpoint slots"}};
    CHECK_THAT(argument_help_text(no_defaults), Contains("  --slots <count>  watchpoint slots\n"));
    // The value reader alone, for values found by other means (a list of them).
    option_value value;
    CHECK(read_option_value(command_options[3], "confidence=0.9", "0.9", value).empty());
    CHECK(value.real == Approx(0.9));
    CHECK(read_option_value(command_options[1], "seed=x", "x", value) ==
          "option 'seed=x': expected a count: a non-negative integer, e.g. 100");
}

TEST_CASE("file name patterns: %p, %t and %%", "[options]") {
    CHECK(expand_file_name("replicas-%p.json", 4242, "20240501-120000") == "replicas-4242.json");
    CHECK(expand_file_name("r-%t-%p.json", 7, "20240501-120000") == "r-20240501-120000-7.json");
    CHECK(expand_file_name("%p%p", 12, "") == "1212");
    CHECK(expand_file_name("100%%-%p", 1, "t") == "100%-1");
    CHECK(expand_file_name("%%p", 1, "t") == "%p"); // an escaped % does not start a pattern
    CHECK(expand_file_name("plain.json", 1, "t") == "plain.json");
    CHECK(expand_file_name("", 1, "t").empty());
    CHECK(expand_file_name("a%xb%", 1, "t") == "a%xb%"); // unknown patterns and a lone trailing % stay as written
    CHECK(expand_file_name("%p", 18446744073709551615ULL, "") == "18446744073709551615");
}
