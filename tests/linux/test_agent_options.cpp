// The options both agents share (native and JVM), from OJX_OPTIONS text to a profiling session's settings: every
// option reaches the setting it names, defaults leave choices to the backend, and values that parse but make no
// sense come back as one-line errors naming the option. The files a process of a profiled tree writes: absolute,
// the root's as named, every descendant's its own. What is said about a trace never contradicts itself.
#include "ojx/hardware/agent_options.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

using namespace ojx;
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

TEST_CASE("agent options: defaults leave the comparison and the companion probe to the backend") {
    const agent_settings s = settings_of("");
    CHECK(s.session.backend.sampler == sampler_kind::automatic);
    CHECK(s.session.backend.compare == comparison_kind::automatic);
    CHECK(s.session.backend.samples_per_second == 200.0);
    CHECK(s.session.backend.watchpoint_slots == 4);
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

TEST_CASE("agent options: values that parse but make no sense are errors naming the option") {
    CHECK(error_of("rate=0").find("rate") != std::string::npos);
    CHECK(error_of("rate=200000").find("rate") != std::string::npos);
    CHECK(error_of("file=a.json,record=a.json").find("record=a.json") != std::string::npos);
    CHECK(error_of("sampler=fast").find("sampler") != std::string::npos);
    CHECK(error_of("compare=later").find("compare") != std::string::npos);
    CHECK(error_of("colour=red").find("colour") != std::string::npos);
    CHECK(error_of("reads=fast").find("reads") != std::string::npos);
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
    std::fflush(stderr);
    const std::string path = "/tmp/ojx-test-" + std::to_string(getpid()) + "-stderr";
    const int saved = dup(2);
    const int file = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(file, 2);
    ::close(file);
    report_recording(summary, quiet);
    std::fflush(stderr);
    dup2(saved, 2);
    ::close(saved);
    std::ifstream in(path);
    std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    std::remove(path.c_str());
    return text;
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
