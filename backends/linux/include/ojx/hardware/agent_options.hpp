// The options every ojx agent on real hardware accepts (the native LD_PRELOAD agent and the JVMTI agent), in the
// syntax of ojx/options.hpp, and their translation into a profiling session's settings. An agent adds its own
// options (the JVM agent: heap sampling interval, start/stop) to this list.
#pragma once

#include "ojx/hardware/profiling_session.hpp"
#include "ojx/options.hpp"

#include <optional>
#include <string>
#include <vector>

namespace ojx::hardware {

std::vector<option_spec> common_agent_options();

// Session settings from parsed values (declared with common_agent_options). Error message for values that parse
// but make no sense (e.g. rate=0).
struct agent_settings {
    session_options session;
    std::string file_pattern; // with %p and %t still in it
    std::string record_pattern; // the trace's file (record=), likewise; empty: no recording
    bool quiet = false;
    bool help = false;
};
std::optional<std::string> to_agent_settings(const option_values& values, agent_settings& settings);

// What an agent says at exit about its trace (record=): problems always, one line each; the summary (events,
// bytes per event, records lost) unless `quiet`. To standard error.
void report_recording(const recording_summary& summary, bool quiet);

// The local time as file names show it (`%t` in `file=`): 20261122-071500.
std::string start_time_text();

} // namespace ojx::hardware
