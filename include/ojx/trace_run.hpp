// What a trace says about the run it recorded, beyond its events: how the profiler was configured, how many
// watchpoint slots the backend had, and the run facts a profile prints (runtime, sampler, watchpoints, pairing,
// replacement). A recorder writes these as `run_attribute` records at the start of the trace; a replay reads them
// back to build the same profiler, so that the same events give the same profile. Shared by recorders (in the
// backends) and the replay backend, hence in the core.
#pragma once

#include "ojx/profiler.hpp"
#include "ojx/report.hpp"
#include "ojx/trace_format.hpp"

#include <cerrno>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace ojx {

// How an emulated machine that sees every access was set up: its sampler and its debug registers' trigger. A
// trace of every access carries it, so that a replay runs the same machine (or another) against the accesses.
struct access_machine_description {
    std::uint64_t sampler_period = 64;
    bool sampler_randomized = true;
    std::uint64_t sampler_seed = 1;
    std::string watch_trigger = "loads-and-stores"; // or loads-only, at-sample
};

struct trace_run_description {
    profiler_config profiler{};
    std::size_t watchpoint_slots = 0;
    run_facts facts;
    // events_incompletely_recorded, its latest value (the recorder rewrites it as the count grows): a replay of a
    // trace where it is not 0 would differ from the recording silently (incompletely_recorded_problem).
    std::uint64_t incompletely_recorded_events = 0;
    // The trace holds every load and store the program made (attribute `accesses` = `every`), not only the
    // samples and traps the recording profiler took; `machine` then says how the recording sampled them.
    bool every_access = false;
    access_machine_description machine;
    // The recording's adaptive tracking never left interval 0 (tracking_stayed_exact_attribute): the replay's
    // profiler is told so before its report, as the live one was.
    bool tracking_stayed_exact = false;
    // The trace also holds every value flow event of the run (attribute `value_flow` = `every`: a program with
    // registers, docs/copy-profiling.md), and the recording's sampled copy graph builder followed each sampled load
    // for `copy_bound` events (`copies.bound`): a replay rebuilds the exact and the sampled copy graphs.
    bool every_value_flow = false;
    std::uint32_t copy_bound = 8;
    // The recording's backend followed sampled loads itself (a Linux agent's copies=N) and the trace holds each
    // followed value: how, as the profile's copy section says it (attribute `copies.followed`). Empty: none were
    // followed, and the profile has no copy section.
    std::string followed_copies;
};

namespace trace_run_detail {

// Every profiler setting that changes what the profiler does with the events, by the name its attribute has.
// A replay that met a "profiler." name it does not know could not reproduce the run, so it refuses the trace.
template <class Visit>
void for_each_setting(profiler_config& config, Visit&& visit) {
    visit("profiler.min_object_size", config.min_object_size);
    visit("profiler.remembered_objects", config.remembered_objects);
    visit("profiler.probes_per_object", config.probes_per_object);
    visit("profiler.probes_per_pair", config.probes_per_pair);
    visit("profiler.compare_window", config.compare_window);
    visit("profiler.probe_stores", config.probe_stores);
    visit("profiler.companion_probe", config.companion_probe);
    visit("profiler.compare_at_sample", config.compare_at_sample);
    visit("profiler.max_contexts", config.max_contexts);
    visit("profiler.context_tree_capacity", config.context_tree_capacity);
    visit("profiler.object_map_capacity", config.object_map_capacity);
    visit("profiler.access_contexts_per_context", config.access_contexts_per_context);
    visit("profiler.allocation_sampling_interval", config.allocation_sampling_interval);
    visit("profiler.allocation_tracking_target", config.allocation_tracking_target);
    visit("profiler.seed", config.seed);
    visit("profiler.estimator.min_comparisons", config.estimator.min_comparisons);
    visit("profiler.estimator.confidence", config.estimator.confidence);
    visit("profiler.estimator.min_digested_objects", config.estimator.min_digested_objects);
    visit("profiler.whole_objects.content_groups", config.whole_objects.content_groups);
    visit("profiler.whole_objects.near_families", config.whole_objects.near_families);
}

inline std::string to_text(bool value) { return value ? "true" : "false"; }
// A setting the backend resolves (recorders write it resolved; "auto" only from a config that never ran).
inline std::string to_text(std::optional<bool> value) { return value ? to_text(*value) : "auto"; }
inline std::string to_text(std::uint64_t value) { return std::to_string(value); }
inline std::string to_text(double value) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.17g", value); // round-trips exactly
    return buffer;
}

inline bool from_text(std::string_view text, bool& out) {
    if (text != "true" && text != "false") return false;
    out = text == "true";
    return true;
}
inline bool from_text(std::string_view text, std::optional<bool>& out) {
    if (text == "auto") {
        out.reset();
        return true;
    }
    bool value = false;
    if (!from_text(text, value)) return false;
    out = value;
    return true;
}
template <class Unsigned>
bool from_text(std::string_view text, Unsigned& out) {
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
    return error == std::errc{} && end == text.data() + text.size();
}
inline bool from_text(std::string_view text, double& out) {
    const std::string copy(text);
    char* end = nullptr;
    errno = 0;
    out = std::strtod(copy.c_str(), &end);
    return !copy.empty() && errno == 0 && end == copy.c_str() + copy.size();
}

inline constexpr std::string_view agent_prefix = "agent.";

} // namespace trace_run_detail

// Written at the end of a recording whose adaptive tracking never left interval 0 ("true"; absent otherwise, so
// that traces without it replay in older versions): profiler::note_tracking_stayed_exact. A "profiler." name, so
// that a replay which does not know it refuses the trace rather than give another profile.
inline constexpr std::string_view tracking_stayed_exact_attribute = "profiler.tracking_stayed_exact";

// Written by a recorder when the memory the profiler read, or the watchpoints it armed, for some events did not
// all fit its notes (trace_recording.hpp): the number of such events. A replay refuses a trace where it is not 0.
inline constexpr std::string_view incompletely_recorded_attribute = "events_incompletely_recorded";

// The attributes a recorder writes for `run`, in a fixed order.
inline std::vector<run_attribute> run_attributes(const trace_run_description& run) {
    using namespace trace_run_detail;
    std::vector<run_attribute> attributes{
        {"runtime", run.facts.runtime},
        {"sampler", run.facts.sampler},
        {"watchpoints", run.facts.watchpoints},
        {"pairing", run.facts.pairing},
        {"replacement", run.facts.replacement},
        {"watchpoint_slots", std::to_string(run.watchpoint_slots)},
    };
    profiler_config config = run.profiler;
    for_each_setting(config, [&](std::string_view name, auto& value) {
        using field = std::remove_reference_t<decltype(value)>;
        if constexpr (std::is_same_v<field, bool> || std::is_same_v<field, double> ||
                      std::is_same_v<field, std::optional<bool>>)
            attributes.push_back({std::string(name), to_text(value)});
        else
            attributes.push_back({std::string(name), to_text(static_cast<std::uint64_t>(value))});
    });
    if (run.every_access) {
        attributes.push_back({"accesses", "every"});
        attributes.push_back({"sampler.period", to_text(run.machine.sampler_period)});
        attributes.push_back({"sampler.randomized", to_text(run.machine.sampler_randomized)});
        attributes.push_back({"sampler.seed", to_text(run.machine.sampler_seed)});
        attributes.push_back({"watchpoints.trigger", run.machine.watch_trigger});
    }
    if (run.every_value_flow) {
        attributes.push_back({"value_flow", "every"});
        attributes.push_back({"copies.bound", to_text(std::uint64_t{run.copy_bound})});
    }
    if (!run.followed_copies.empty()) attributes.push_back({"copies.followed", run.followed_copies});
    for (const auto& [name, count] : run.facts.agent_counters)
        attributes.push_back({std::string(agent_prefix) + name, std::to_string(count)});
    return attributes;
}

// Why a replay of a run recorded this way cannot reproduce it, or nothing. Once every attribute is applied.
inline std::optional<std::string> incompletely_recorded_problem(const trace_run_description& run) {
    if (run.incompletely_recorded_events == 0) return std::nullopt;
    return "the recorder could not keep all the memory the profiler read (or the watchpoints it armed) for " +
           std::to_string(run.incompletely_recorded_events) + " events: a replay would not reproduce the run";
}

// Applies one attribute to `run`. Returns why it cannot be used: a malformed value, or a profiler setting this
// code does not know. Names outside "profiler." that it does not know describe the run without changing the
// analysis, and are ignored.
inline std::optional<std::string> apply_run_attribute(trace_run_description& run, const run_attribute& attribute) {
    using namespace trace_run_detail;
    const std::string_view name = attribute.name;
    const std::string_view value = attribute.value;
    const auto malformed = [&] {
        return std::optional<std::string>("run attribute " + attribute.name + " has a malformed value '" +
                                          attribute.value + "'");
    };
    if (name == "runtime") run.facts.runtime = attribute.value;
    else if (name == "sampler") run.facts.sampler = attribute.value;
    else if (name == "watchpoints") run.facts.watchpoints = attribute.value;
    else if (name == "pairing") run.facts.pairing = attribute.value;
    else if (name == "replacement") run.facts.replacement = attribute.value;
    else if (name == incompletely_recorded_attribute) {
        if (!from_text(value, run.incompletely_recorded_events)) return malformed();
    } else if (name == "accesses") {
        if (value != "every" && value != "sampled") return malformed();
        run.every_access = value == "every";
    } else if (name == "sampler.period") {
        if (!from_text(value, run.machine.sampler_period)) return malformed();
    } else if (name == "sampler.randomized") {
        if (!from_text(value, run.machine.sampler_randomized)) return malformed();
    } else if (name == "sampler.seed") {
        if (!from_text(value, run.machine.sampler_seed)) return malformed();
    } else if (name == "watchpoints.trigger") {
        run.machine.watch_trigger = attribute.value;
    } else if (name == "value_flow") {
        if (value != "every") return malformed();
        run.every_value_flow = true;
    } else if (name == "copies.bound") {
        if (!from_text(value, run.copy_bound)) return malformed();
    } else if (name == "copies.followed") {
        if (value.empty()) return malformed();
        run.followed_copies = attribute.value;
    } else if (name == "watchpoint_slots") {
        if (!from_text(value, run.watchpoint_slots)) return malformed();
    } else if (name.starts_with(agent_prefix)) {
        std::uint64_t count = 0;
        if (!from_text(value, count)) return malformed();
        std::string counter(name.substr(agent_prefix.size()));
        bool replaced = false;
        for (auto& [known, known_count] : run.facts.agent_counters) {
            if (known == counter) {
                known_count = count;
                replaced = true;
            }
        }
        if (!replaced) run.facts.agent_counters.emplace_back(std::move(counter), count);
    } else if (name == tracking_stayed_exact_attribute) {
        if (!from_text(value, run.tracking_stayed_exact)) return malformed();
    } else if (name.starts_with("profiler.")) {
        bool known = false;
        bool parsed = false;
        for_each_setting(run.profiler, [&](std::string_view setting, auto& field) {
            if (setting != name) return;
            known = true;
            parsed = from_text(value, field);
        });
        if (!known)
            return "run attribute " + attribute.name +
                   " is a profiler setting this replay does not know (the trace is from a newer ojx)";
        if (!parsed) return malformed();
    }
    return std::nullopt;
}

} // namespace ojx
