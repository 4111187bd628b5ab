// A copy profiling session (copy_profiling_session.hpp) whose every access and every value flow event is recorded
// (docs/trace-format.md, "Value flow"): the program's register machine runs on the access recorder, which passes
// each operation on to the live session's machine, and reports its value flow to the live sampled builder and to
// the trace. The live session profiles as it would unrecorded; one recording holds everything a replay needs to
// rebuild the exact copy graph and, with its own sampler at any period, the sampled one (`ojx replay`).
#pragma once

#include "ojx/emulation/access_recorder.hpp"
#include "ojx/emulation/copy_profiling_session.hpp"
#include "ojx/emulation/register_machine.hpp"
#include "ojx/emulation/trace_recorder.hpp"
#include "ojx/emulation/value_flow_recorder.hpp"
#include "ojx/report.hpp"
#include "ojx/sampled_copy_graph_builder.hpp"
#include "ojx/trace_run.hpp"
#include "ojx/value_flow_tee.hpp"

#include <cstdint>
#include <utility>

namespace ojx::emulation {

template <class Policies = policies<>>
class copy_recording_session {
public:
    using live_type = copy_profiling_session<Policies>;
    using recorder_type = access_recorder<typename live_type::machine_type>;
    using flow_type = value_flow_tee<sampled_copy_graph_builder, value_flow_recorder>;

    // The trace starts with the run's attributes: every access, how the machine sampled them, every value flow
    // event, and the live builder's bound.
    copy_recording_session(const session_config& config, report_naming naming, std::uint32_t bound = 8)
        : live(config, bound),
          recorder(live.machine, live.heap, live.prof.contexts(), trace.writer(), std::move(naming)),
          flow_recorder(trace.writer()),
          flow(live.builder, flow_recorder),
          registers(recorder, flow) {
        trace_run_description run = every_access_run(live.prof.config(), live.watchpoints.slot_count(), live.facts(), config);
        run.every_value_flow = true;
        run.copy_bound = bound;
        write_run_header(trace.writer(), run);
    }

    live_type live;
    in_memory_trace trace;
    recorder_type recorder;
    value_flow_recorder flow_recorder;
    flow_type flow;
    // What the program runs on.
    register_machine<recorder_type, flow_type> registers;
};

} // namespace ojx::emulation
