#include "ojx/agents/agent_report.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <cstdio>

namespace ojx::agents {

void say(std::string_view text) noexcept { (void)std::fwrite(text.data(), 1, text.size(), stderr); }

std::string start_line(const hardware::hardware_backend& backend, std::string_view runtime, std::string_view allocations,
                       std::string_view details, const agent_files& files, bool verbose) {
    const std::string who = fmt::format("ojx: profiling pid {}{}", getpid(),
                                        runtime.empty() ? std::string() : fmt::format(" ({})", runtime));
    if (verbose)
        return fmt::format("{}; sampler: {}; watchpoints: {}; memory reads: {}; signals: {}; {}; {}\n", who,
                           backend.sampler_description(), backend.watchpoint_description(),
                           backend.memory_read_description(), backend.signal_description(), details,
                           describe_agent_files(files));
    const hardware::sampler_kind sampler = backend.chosen_sampler();
    const std::string accesses =
        sampler == hardware::sampler_kind::none
            ? std::string("accesses not sampled")
            : fmt::format("accesses sampled ({}), {} watchpoint{}", hardware::sampler_kind_name(sampler),
                          backend.slot_count(), backend.slot_count() == 1 ? "" : "s");
    return fmt::format("{}: {}; {}; profile: {}\n", who, allocations, accesses, files.profile);
}

void add_session_counters(const hardware::profiling_session& session, run_facts& facts) {
    const hardware::backend_counters& c = session.backend().counters();
    facts.agent_counters.insert(facts.agent_counters.end(),
                                {{"samples_dropped_profiler_busy", session.samples_dropped_busy()},
                                 {"samples_staged_profiler_busy", session.samples_staged()},
                                 {"traps_dropped_profiler_busy", session.traps_dropped_busy()},
                                 {"single_steps", c.steps.load()},
                                 {"single_steps_refused_at_system_calls", c.steps_refused.load()},
                                 {"sampling_interrupts", c.triggers.load()}});
    if (session.backend().options().follow_bound > 0)
        facts.agent_counters.insert(facts.agent_counters.end(), {{"values_followed", c.values_followed.load()},
                                                                 {"follow_single_steps", c.follow_steps.load()}});
}

std::optional<followed_copies> followed_copies_of(const followed_copy_graph& copies) {
    if (!copies.prepared()) return std::nullopt;
    return followed_copies{copies.graph(), copies.code(), copies.stats(),
                           {{"copy_edges_dropped_table_full", copies.edges_dropped()},
                            {"followed_loads_freed_before_delivery", copies.origins_gone()},
                            {"followed_loads_missed", copies.loads_missed()},
                            {"followings_stopped_early", copies.followings_stopped()},
                            {"followings_with_uses_lost", copies.followings_with_uses_lost()}}};
}

void print_summary(std::string_view report_text, const hardware::profiling_session& session, const std::string& path,
                   const std::optional<std::string>& error, const summary_settings& settings) {
    if (!settings.quiet) {
        const hardware::backend_counters& c = session.backend().counters();
        say(report_text);
        say(fmt::format("ojx: {} samples ({} single steps, {} dropped while the profiler was busy), {} traps ({} "
                        "after their slot was freed)\n",
                        c.samples.load(), c.steps.load(), session.samples_dropped_busy(), c.traps.load(),
                        c.traps_unknown.load()));
        for (const std::string& line : session.health_lines()) say(fmt::format("ojx: {}\n", line));
        for (const std::string& line : settings.agent_lines) say(fmt::format("ojx: {}\n", line));
        if (!error) say(fmt::format("ojx: profile written {} to {}\n", settings.when, path));
    }
    if (error) say(fmt::format("ojx: could not write the profile to {}: {}\n", path, *error));
}

} // namespace ojx::agents
