// The options both agents share (native and JVM), from OJX_OPTIONS text to a profiling session's settings: every
// option reaches the setting it names, defaults leave choices to the backend, and values that parse but make no
// sense come back as one-line errors naming the option. The files a process of a profiled tree writes: absolute,
// the root's as named, every descendant's its own. What is said about a trace never contradicts itself.
#include "hardware_test_support.hpp"

#include "ojx/agents/agent_options.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

using namespace ojx;
using namespace ojx::agents;
using namespace ojx::hardware;

namespace {

// The settings `text` gives, or the test fails with the error.
agent_settings settings_of(const std::string& text) {
    const auto specs = common_agent_options();
    const options_result parsed = parse_options(text, specs);
    INFO(text << ": " << parsed.error);
    REQUIRE(parsed.ok());
    agent_settings settings;
    const auto error = to_agent_settings(parsed.values, settings);
    INFO(error.value_or(""));
    REQUIRE_FALSE(error.has_value());
    return settings;
}

// The error `text` gives, from parsing or from translating.
std::string error_of(const std::string& text) {
    const auto specs = common_agent_options();
    const options_result parsed = parse_options(text, specs);
    if (!parsed.ok()) return parsed.error;
    agent_settings settings;
    const auto error = to_agent_settings(parsed.values, settings);
    REQUIRE(error.has_value());
    return *error;
}

} // namespace

TEST_CASE("agent options: no access sampling by default; the comparison and the companion probe left to the backend") {
    const agent_settings s = settings_of("");
    CHECK(s.session.backend.sampler == sampler_kind::none);
    CHECK(s.session.backend.watchpoint_slots == 0); // no sample arms one
    CHECK(s.session.backend.compare == comparison_kind::automatic);
    CHECK(s.session.backend.samples_per_second == 200.0);
    CHECK(settings_of("sampler=auto").session.backend.sampler == sampler_kind::automatic);
    CHECK(settings_of("sampler=auto").session.backend.watchpoint_slots == 4);
    CHECK(s.session.profiler.min_object_size == 1024);
    CHECK(s.session.profiler.compare_window == 64);
    CHECK_FALSE(s.session.profiler.companion_probe.has_value());
    CHECK(s.session.backend.guarded_reads);
    CHECK(s.file_pattern == "ojx-%p.json");
    CHECK(s.record_pattern.empty());
    CHECK_FALSE(s.quiet);
    CHECK_FALSE(s.help);
}

TEST_CASE("agent options: companion=on|off forces the probe, auto leaves it to where pairs are compared") {
    CHECK(settings_of("companion=on").session.profiler.companion_probe == std::optional<bool>(true));
    CHECK(settings_of("companion=off").session.profiler.companion_probe == std::optional<bool>(false));
    CHECK_FALSE(settings_of("companion=auto").session.profiler.companion_probe.has_value());
    // What auto becomes is the backend's choice of when to compare.
    const profiler_config unset = settings_of("companion=auto").session.profiler;
    CHECK(resolved_for_backend(unset, true).companion_probe == std::optional<bool>(true));
    CHECK(resolved_for_backend(unset, false).companion_probe == std::optional<bool>(false));
    const profiler_config forced_off = settings_of("companion=off").session.profiler;
    CHECK(resolved_for_backend(forced_off, true).companion_probe == std::optional<bool>(false));
    CHECK(error_of("companion=yes").find("companion") != std::string::npos);
}

TEST_CASE("agent options: each value reaches its setting") {
    const agent_settings s =
        settings_of("file=p-%t.json,record=t.ojxt,sampler=timer,rate=50,threshold=4k,slots=2,compare=sample,"
                    "window=0,seed=7,reads=syscall,quiet");
    CHECK(s.file_pattern == "p-%t.json");
    CHECK(s.record_pattern == "t.ojxt");
    CHECK(s.session.backend.sampler == sampler_kind::decode_timer);
    CHECK(s.session.backend.samples_per_second == 50.0);
    CHECK(s.session.profiler.min_object_size == 4096);
    CHECK(s.session.backend.watchpoint_slots == 2);
    CHECK(s.session.backend.compare == comparison_kind::at_sample);
    CHECK(s.session.profiler.compare_window == 0);
    CHECK(s.session.backend.seed == 7);
    CHECK(s.session.profiler.seed == 7);
    CHECK_FALSE(s.session.backend.guarded_reads);
    CHECK(s.quiet);
    CHECK(settings_of("threshold=0").session.profiler.min_object_size == 1); // every object, none of size 0
}

TEST_CASE("agent options: every sampler and comparison the backend names is a choice, and reaches its kind") {
    // One list of names, the backend's: the options offer exactly those, and each parses back to its kind.
    const auto specs = common_agent_options();
    const auto choices = [&](std::string_view name) {
        for (const option_spec& spec : specs)
            if (spec.name == name) return spec.choices;
        FAIL("no option " << name);
        return std::vector<std::string_view>{};
    };
    CHECK(choices("sampler") == sampler_kind_names());
    CHECK(choices("compare") == comparison_kind_names());
    for (const std::string_view name : sampler_kind_names()) {
        const auto kind = parse_sampler_kind(name);
        REQUIRE(kind);
        CHECK(sampler_kind_name(*kind) == name);
        CHECK(settings_of("sampler=" + std::string(name)).session.backend.sampler == *kind);
    }
    for (const std::string_view name : comparison_kind_names()) {
        const auto kind = parse_comparison_kind(name);
        REQUIRE(kind);
        CHECK(comparison_kind_name(*kind) == name);
        CHECK(settings_of("compare=" + std::string(name)).session.backend.compare == *kind);
    }
}

TEST_CASE("agent options: values that parse but make no sense are errors naming the option") {
    CHECK(error_of("rate=0").find("rate") != std::string::npos);
    CHECK(error_of("rate=200000").find("rate") != std::string::npos);
    CHECK(error_of("file=a.json,record=a.json").find("record=a.json") != std::string::npos);
    CHECK(error_of("sampler=fast").find("sampler") != std::string::npos);
    CHECK(error_of("compare=later").find("compare") != std::string::npos);
    CHECK(error_of("colour=red").find("colour") != std::string::npos);
    CHECK(error_of("reads=fast").find("reads") != std::string::npos);
}

TEST_CASE("agent options: copy profiling follows 8 instructions wherever loads are sampled; copies= alone samples") {
    // No sampler by default: nothing to follow, and nothing asked for that cannot be done.
    CHECK(settings_of("").session.backend.follow_bound == 0);
    CHECK(settings_of("sampler=auto").session.backend.follow_bound == 8);
    CHECK(settings_of("sampler=auto,copies=0").session.backend.follow_bound == 0);
    CHECK(settings_of("copies=64").session.backend.follow_bound == 64);
    CHECK(error_of("copies=65").find("copies=65") != std::string::npos);
    CHECK(error_of("sampler=none,copies=8").find("copies=") != std::string::npos);
    CHECK(settings_of("sampler=none").session.backend.follow_bound == 0);

    const agent_settings sampling = settings_of("rate=200");
    CHECK(sampling.session.backend.sampler == sampler_kind::automatic);
    CHECK(sampling.session.backend.follow_bound == 8);
    const agent_settings asked = settings_of("copies=4");
    CHECK(asked.session.backend.sampler == sampler_kind::automatic);
    CHECK(asked.session.backend.follow_bound == 4);
    const agent_settings off = settings_of("copies=0");
    CHECK(off.session.backend.sampler == sampler_kind::none);
    CHECK(off.session.backend.follow_bound == 0);
}

namespace {

// An agent's table: the common options and allocation tracking's, which every agent declares with its own defaults.
std::vector<option_spec> agent_table() {
    std::vector<option_spec> specs = common_agent_options();
    for (option_spec& spec : allocation_tracking_options({"700", "tracked allocations a second", "0", "fixed interval"}))
        specs.push_back(std::move(spec));
    return specs;
}

allocation_tracking tracking_of(const std::string& text) {
    parsed_agent_options parsed;
    const auto error = parse_agent_options(text, agent_table(), parsed);
    INFO(text << ": " << error.value_or(""));
    REQUIRE_FALSE(error.has_value());
    return parsed.settings.tracking;
}

} // namespace

TEST_CASE("agent options: adaptive tracking by default, a fixed interval when given, every allocation when exact") {
    CHECK(tracking_of("").track_rate == 700);
    CHECK(tracking_of("track_rate=300").track_rate == 300);
    const allocation_tracking fixed = tracking_of("interval=32k");
    CHECK(fixed.track_rate == 0);
    CHECK(fixed.interval == 32 * 1024);
    const allocation_tracking every = tracking_of("interval=0");
    CHECK((every.track_rate == 0 && every.interval == 0));
    const allocation_tracking exact = tracking_of("exact");
    CHECK((exact.track_rate == 0 && exact.interval == 0));
}

TEST_CASE("agent options: a string that does not parse, a value that makes no sense and options that clash are "
          "each one message; the agent's own values are read back") {
    const auto specs = agent_table();
    parsed_agent_options parsed;
    CHECK(parse_agent_options("sampler=fast", specs, parsed).value_or("").find("sampler") != std::string::npos);
    CHECK(parse_agent_options("rate=0", specs, parsed).value_or("").starts_with("rate=0"));
    CHECK(parse_agent_options("interval=8k,track_rate=10", specs, parsed).value_or("").find("give one") !=
          std::string::npos);
    CHECK(parse_agent_options("exact,interval=8k", specs, parsed).value_or("").find("exact") != std::string::npos);
    CHECK(parse_agent_options("track_rate=0", specs, parsed).value_or("").find("track nothing") != std::string::npos);
    REQUIRE_FALSE(parse_agent_options("interval=4k,quiet", specs, parsed).has_value());
    CHECK(parsed.values.given("interval"));
    CHECK(parsed.settings.quiet);
}

TEST_CASE("agent options: help names the agent and its syntax, then every option of its table with its default") {
    const auto specs = agent_table();
    const std::string help = agent_help("test agent", "T=name=value,...", specs);
    CHECK(help.starts_with("ojx test agent options (T=name=value,...):\n"));
    CHECK(help == "ojx test agent options (T=name=value,...):\n" + help_text(specs));
    for (const option_spec& spec : specs) CHECK(help.find(spec.name) != std::string::npos);
}

TEST_CASE("agent files: a descendant's name gets its pid before the extension") {
    CHECK(with_process_suffix("replicas.json", 42) == "replicas.42.json");
    CHECK(with_process_suffix("/a.d/run.ojxt", 7) == "/a.d/run.7.ojxt");
    CHECK(with_process_suffix("/a.d/profile", 7) == "/a.d/profile.7");
    CHECK(with_process_suffix("/tmp/.hidden", 7) == "/tmp/.hidden.7");
    CHECK(with_process_suffix("x.tar.gz", 7) == "x.tar.7.gz");
}

namespace {

// The environment variables of a profiled tree, as a test sets them; restored (unset) at the end of the scope.
struct tree_environment {
    tree_environment(const char* pid, const char* directory) {
        if (pid) setenv(agent_root_pid_variable, pid, 1); else unsetenv(agent_root_pid_variable);
        if (directory) setenv(agent_root_directory_variable, directory, 1); else unsetenv(agent_root_directory_variable);
    }
    ~tree_environment() {
        unsetenv(agent_root_pid_variable);
        unsetenv(agent_root_directory_variable);
    }
};

agent_files files_of(const std::string& options, std::uint64_t pid, bool mark = false) {
    agent_files files;
    const auto error = resolve_agent_files(settings_of(options), pid, "20260101-000000", mark, files);
    INFO(error.value_or(""));
    REQUIRE_FALSE(error.has_value());
    return files;
}

std::string current_directory() {
    char* text = getcwd(nullptr, 0);
    REQUIRE(text != nullptr);
    std::string result = text;
    std::free(text);
    return result;
}

} // namespace

TEST_CASE("agent files: the root writes the names as given, absolute, and tells its descendants") {
    const tree_environment none(nullptr, nullptr);
    const std::string here = current_directory();
    const agent_files files = files_of("file=p.json,record=t-%p.ojxt", 100, true);
    CHECK(files.profile == here + "/p.json");
    CHECK(files.trace == here + "/t-100.ojxt");
    CHECK(files.root_pid == 0);
    REQUIRE(std::getenv(agent_root_pid_variable) != nullptr);
    CHECK(std::string(std::getenv(agent_root_pid_variable)) == "100");
    CHECK(std::string(std::getenv(agent_root_directory_variable)) == here);
    CHECK(describe_agent_files(files) == "profile: " + here + "/p.json; trace: " + here + "/t-100.ojxt");
    // The same process again (exec keeps the pid): still the root, still the name as given.
    CHECK(files_of("file=p.json", 100).profile == here + "/p.json");
    // Absolute names stay as they are; default names carry %p.
    CHECK(files_of("file=/x/p.json", 100).profile == "/x/p.json");
    CHECK(files_of("", 100).profile == here + "/ojx-100.json");
}

TEST_CASE("agent files: a descendant writes a name of its own, in the root's directory") {
    const tree_environment root("100", "/work/root-dir");
    const agent_files files = files_of("file=p.json,record=t.ojxt", 200, true);
    CHECK(files.profile == "/work/root-dir/p.200.json");
    CHECK(files.trace == "/work/root-dir/t.200.ojxt");
    CHECK(files.root_pid == 100);
    CHECK(describe_agent_files(files).find("descends from profiled pid 100") != std::string::npos);
    // It does not claim the tree for itself.
    CHECK(std::string(std::getenv(agent_root_pid_variable)) == "100");
    // Names with %p are already the process's own; absolute names are not moved.
    CHECK(files_of("file=p-%p.json", 200).profile == "/work/root-dir/p-200.json");
    CHECK(files_of("file=/abs/p.json", 200).profile == "/abs/p.200.json");
    CHECK(files_of("", 200).profile == "/work/root-dir/ojx-200.json");
}

TEST_CASE("agent files: a malformed marker is no root") {
    const tree_environment odd("12x", "relative/dir");
    const agent_files files = files_of("file=p.json", 200);
    CHECK(files.root_pid == 0);
    CHECK(files.profile == current_directory() + "/p.json");
}

namespace {

// What `report_recording` writes to standard error.
std::string reported(const recording_summary& summary, bool quiet) {
    return hardware::testing::standard_error_of([&] { report_recording(summary, quiet); });
}

} // namespace

TEST_CASE("a trace that could not be written whole is one line, with no summary to contradict it") {
    recording_summary summary;
    summary.file = "/t/run.ojxt";
    summary.events = 10;
    summary.bytes = 12;
    summary.error = "could not write the whole trace to /t/run.ojxt: No space left on device; it ends after 0 "
                    "blocks (12 bytes)";
    CHECK(reported(summary, false) == "ojx: " + summary.error + "\n");
    CHECK(reported(summary, true) == "ojx: " + summary.error + "\n");
    summary.error.clear();
    CHECK(reported(summary, false) ==
          "ojx: trace written to /t/run.ojxt: 10 events, 12 bytes (1.2 bytes per event), 0 records lost\n");
    CHECK(reported(summary, true).empty());
}

TEST_CASE("agent files: a profile that cannot be written is known at start, in one message naming it") {
    agent_settings settings;
    settings.file_pattern = "/nonexistent-ojx-directory/p.json";
    agent_files files;
    CHECK(prepare_agent_files(settings, false, files).value_or("") ==
          "cannot write the profile to /nonexistent-ojx-directory/p.json: No such file or directory");
    settings.file_pattern = "/tmp/ojx-prepare-%p.json";
    REQUIRE_FALSE(prepare_agent_files(settings, false, files).has_value());
    CHECK(files.profile == "/tmp/ojx-prepare-" + std::to_string(getpid()) + ".json");
    CHECK(access(files.profile.c_str(), F_OK) != 0); // the check leaves nothing behind
}
