// The pure parts of `ojx run/attach/dump`: command lines into the JVM agent's option string (and the usage errors
// that name the option), and reading HotSpot's answer to an attach `load` command from every JDK generation.
#include "jvm_attach.hpp"
#include "jvm_options.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <string_view>
#include <vector>

using namespace ojx::tool;

namespace {

template <typename Parse>
auto parse(Parse parse_function, std::vector<std::string_view> words) {
    return parse_function(arguments(words.data(), words.size()));
}

} // namespace

TEST_CASE("run: typed options become agent options, in order, after start and the file") {
    const auto result = parse(parse_run_command_line, {"--rate", "1000", "--interval=8k", "--threshold", "2k",
                                                       "--duration", "30s", "--", "java", "-cp", "x", "Main"});
    REQUIRE(result.ok());
    CHECK(result.line.profiling.agent_options() == "start,file=ojx-%p.json,rate=1000,interval=8k,threshold=2k,duration=30s");
    CHECK(result.line.command == std::vector<std::string>{"java", "-cp", "x", "Main"});
    CHECK(result.line.profiling.profile_file() == "ojx-%p.json");
}

TEST_CASE("run: --track-rate is the agent's track_rate") {
    const auto result = parse(parse_run_command_line, {"--track-rate", "500", "--", "java", "Main"});
    REQUIRE(result.ok());
    CHECK(result.line.profiling.agent_options() == "start,file=ojx-%p.json,track_rate=500");
    const auto bad = parse(parse_run_command_line, {"--track-rate=many", "--", "java"});
    CHECK_THAT(bad.error, Catch::StartsWith("option '--track-rate=many': expected a count"));
}

TEST_CASE("run: --file and raw --option; the last file= is the profile, as the agent takes the last of repeats") {
    const auto result =
        parse(parse_run_command_line, {"--file", "a.json", "--option", "sampler=timer, file = b.json", "--", "java"});
    REQUIRE(result.ok());
    CHECK(result.line.profiling.agent_options() == "start,file=a.json,sampler=timer, file = b.json");
    CHECK(result.line.profiling.profile_file() == "b.json");
}

TEST_CASE("run: everything after -- is the command, options of ojx included") {
    const auto result = parse(parse_run_command_line, {"--", "java", "--rate", "5", "--", "x"});
    REQUIRE(result.ok());
    CHECK(result.line.command == std::vector<std::string>{"java", "--rate", "5", "--", "x"});
}

TEST_CASE("run: usage errors name the option, in the words of every ojx command (ojx/options.hpp)") {
    const auto error = [](std::vector<std::string_view> words) { return parse(parse_run_command_line, words).error; };
    CHECK_THAT(error({"java"}), Catch::Contains("'java'") && Catch::Contains("'--'"));
    CHECK_THAT(error({}), Catch::Contains("'--'"));
    CHECK_THAT(error({"--"}), Catch::Contains("'--'"));
    CHECK_THAT(error({"--rate", "fast", "--", "java"}), Catch::StartsWith("option '--rate fast': expected a rate"));
    CHECK_THAT(error({"--interval", "8q", "--", "java"}), Catch::StartsWith("option '--interval 8q': expected a size"));
    CHECK_THAT(error({"--duration=soon", "--", "java"}), Catch::StartsWith("option '--duration=soon': expected a duration"));
    CHECK_THAT(error({"--file", "a,b", "--", "java"}), Catch::Contains("--file") && Catch::Contains("','"));
    CHECK_THAT(error({"--rate"}), Catch::Equals("option '--rate' needs a value: --rate <rate>"));
    CHECK_THAT(error({"--file="}), Catch::Equals("option '--file=' needs a value: --file <text>"));
    CHECK_THAT(error({"--verbose", "--", "java"}),
               Catch::StartsWith("unknown option '--verbose'; valid options are: --agent, --file, --option, --rate"));
    CHECK(parse(parse_run_command_line, {"--help"}).line.help);
}

TEST_CASE("attach: one pid, anywhere among the options") {
    const auto result = parse(parse_attach_command_line, {"--file", "/tmp/p.json", "4242", "--rate=500"});
    REQUIRE(result.ok());
    CHECK(result.line.pid == 4242);
    CHECK(result.line.profiling.agent_options() == "start,file=/tmp/p.json,rate=500");

    const auto error = [](std::vector<std::string_view> words) { return parse(parse_attach_command_line, words).error; };
    CHECK(error({}) == "no process id");
    CHECK(error({"12x"}) == "'12x' is not a process id");
    CHECK(error({"0"}) == "'0' is not a process id");
    CHECK_THAT(error({"-5"}), Catch::StartsWith("unknown option '-5'; valid options are: "));
    CHECK_THAT(error({"1", "2"}), Catch::Contains("'2'"));
    CHECK_THAT(error({"1", "--stop"}), Catch::StartsWith("unknown option '--stop'; valid options are: "));
}

TEST_CASE("dump: dump or stop, and a file only when given") {
    auto result = parse(parse_dump_command_line, {"77"});
    REQUIRE(result.ok());
    CHECK(result.line.agent_options() == "dump");
    result = parse(parse_dump_command_line, {"--stop", "77", "--file", "/tmp/now.json"});
    REQUIRE(result.ok());
    CHECK(result.line.agent_options() == "stop,file=/tmp/now.json");
    CHECK(parse(parse_dump_command_line, {"77", "--rate", "5"}).error ==
          "unknown option '--rate'; valid options are: --agent, --file, --stop, --help");
    CHECK(parse(parse_dump_command_line, {"--stop"}).error == "no process id");
}

TEST_CASE("load answers: JDK 9 and later, JDK 8, refusals and failures") {
    auto answer = parse_load_response(7, "0\nreturn code: 0\n");
    REQUIRE(answer.ok());
    CHECK(answer.agent_return_code == 0);
    CHECK(answer.jvm_text.empty());

    answer = parse_load_response(7, "0\nreturn code: -1\n");
    REQUIRE(answer.ok());
    CHECK(answer.agent_return_code == -1);

    answer = parse_load_response(7, "0\n-1\n"); // JDK 8 prints the bare number
    REQUIRE(answer.ok());
    CHECK(answer.agent_return_code == -1);

    answer = parse_load_response(7, "0\nreturn code: 0\nsomething more\n");
    CHECK(answer.jvm_text == "something more");

    // The library could not be opened: the attach status says so, and the JVM's text says why.
    answer = parse_load_response(7, "-1\n/x/libojx.so was not loaded.\n/x/libojx.so: cannot open shared object file\n");
    CHECK_THAT(answer.error, Catch::StartsWith("agent load failed in process 7 (attach status -1): /x/libojx.so was "
                                               "not loaded.; /x/libojx.so: cannot open"));

    CHECK_THAT(parse_load_response(7, "").error, Catch::Contains("process 7"));
    CHECK_THAT(parse_load_response(7, "0\n").error, Catch::Contains("did not say what the agent returned"));
    CHECK_THAT(parse_load_response(7, "hello\n").error, Catch::Contains("'hello'"));
}
