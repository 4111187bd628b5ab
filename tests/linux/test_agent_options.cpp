// The options both agents share (native and JVM), from OJX_OPTIONS text to a profiling session's settings: every
// option reaches the setting it names, defaults leave choices to the backend, and values that parse but make no
// sense come back as one-line errors naming the option.
#include "ojx/hardware/agent_options.hpp"

#include <catch2/catch.hpp>

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
