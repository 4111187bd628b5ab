// A replica report as a profile: the profiler's report with its frames and types named (profile_of), written as
// the documented JSON profile (write_json, through profile_writer.hpp) or as a ranked text table for a terminal.
// Frames and types are named by callbacks, because only the backend knows what a frame is (a JVM method and
// bytecode index, a native address, a synthetic id). Not for signal handlers: allocates freely.
#pragma once

#include "ojx/copy_profile.hpp"
#include "ojx/profile.hpp"
#include "ojx/profile_writer.hpp"
#include "ojx/text_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ojx {

struct report_naming {
    std::function<std::string(std::uint64_t frame)> frame;
    std::function<std::string(type_id)> type;
    // The name of the field at `offset` of a type's objects' contents, or "" where none is known; optional (the
    // copy section's field nodes are then named by offset).
    std::function<std::string(type_id, std::uint64_t offset)> field;
};

// Facts about the run that a reader needs to trust the numbers.
struct run_facts {
    std::string runtime;     // e.g. "emulation", "OpenJDK 17.0.15 (G1)"
    std::string sampler;     // the sampling mechanism chosen, and why
    std::string watchpoints; // the watchpoint mechanism and slot count
    std::string pairing;
    std::string replacement;
    // What the agent itself counted (e.g. samples dropped while a collection was relocating objects), written
    // as the profile's run.agent object.
    std::vector<std::pair<std::string, std::uint64_t>> agent_counters;
    double seconds = 0; // the run's wall time from its start to this report (0: unknown)
};

namespace report_detail {

// Frames of a context, leaf first, named (Throwable.printStackTrace order). The root node has no frame.
template <class Tree>
std::vector<std::string> frames(const Tree& tree, context_id id, const report_naming& naming) {
    std::vector<std::string> names;
    if (id == no_context || id >= tree.size()) return names;
    for (context_id at = id; at != Tree::root; at = tree.parent(at)) {
        const auto f = tree.frame_of(at);
        names.push_back(naming.frame ? naming.frame(f) : std::to_string(f));
    }
    return names;
}

inline std::string type_name(type_id type, const report_naming& naming) {
    return naming.type ? naming.type(type) : std::to_string(type);
}

} // namespace report_detail

// A context's metrics with its types named.
inline named_allocations name_allocations(const context_allocations& allocated, bool estimated,
                                          const report_naming& naming) {
    named_allocations named;
    named.estimated = estimated;
    for (const type_allocations& t : allocated) named.types.push_back({report_detail::type_name(t.type, naming), t});
    named.other = allocated.other();
    return named;
}

// The profile of a report: its contexts with frames and types named, the run's facts and counters.
template <class Tree>
profile profile_of(const replica_report& report, const Tree& tree, const report_naming& naming,
                   const run_facts& facts) {
    using namespace report_detail;
    profile p;
    run_profile& run = p.run;
    run.runtime = {facts.runtime};
    run.sampler = {facts.sampler};
    run.watchpoints = {facts.watchpoints};
    run.pairing = {facts.pairing};
    run.replacement = {facts.replacement};
    run.allocation_counts = {
        describe_allocation_counting(report.allocation_sampling_interval,
                                     report.allocations_estimated() ? report.allocation_tracking_target : 0)};
    if (report.allocation_tracking_target != 0) {
        run.tracking_targets = {report.allocation_tracking_target};
        run.sampled_interval_range = report.sampled_interval_range;
    }
    for (const profiler_counter& c : profiler_counters)
        run.counters.push_back({std::string(c.path), report.stats.*c.value});
    for (const auto& [name, value] : facts.agent_counters) run.counters.push_back({"agent." + name, value});
    run.estimator = report.estimator;
    run.heap_moments = {report.live_moment.describe()};
    run.seconds = facts.seconds;
    for (const context_report& c : report.contexts) {
        std::vector<named_access_context> accesses;
        for (const context_report::access& a : c.accesses)
            accesses.push_back({frames(tree, a.context, naming), a.samples});
        p.contexts.push_back({.type = type_name(c.type, naming),
                              .frames = frames(tree, c.context, naming),
                              .objects = c.objects,
                              .bytes = c.bytes,
                              .allocated = name_allocations(c.allocated, report.allocations_estimated(), naming),
                              .has_evidence = true,
                              .evidence = c.evidence,
                              .estimate = c.estimate,
                              .whole = c.whole,
                              .identical = c.identical,
                              .near = c.near,
                              .combined = c.combined,
                              .accesses = std::move(accesses),
                              .live = c.live,
                              .live_identical = {},
                              .heap = {}});
        p.contexts.back().estimate_heap(report.estimator);
    }
    return p;
}

// A copy graph's context as a profile's copy section names it (copy_profile.hpp): `type` is the type allocated
// there, as the backend knows it.
template <class Tree>
copy_site name_copy_site(const Tree& tree, context_id context, type_id type, const report_naming& naming) {
    return {report_detail::type_name(type, naming), report_detail::frames(tree, context, naming)};
}

// An access context that copied, as a profile's copy section names it: its frames, as "used at" names them.
template <class Tree>
copy_code_context name_copy_code(const Tree& tree, context_id context, const report_naming& naming) {
    return {report_detail::frames(tree, context, naming)};
}

// The field nodes of a graph's edges (not an array's elements node) as (type, offset), their sites typed as `report`
// types them: sorted, each once; nodes of sites `report` gives no type are left out. What a runtime is asked to
// name fields for.
inline std::vector<std::pair<type_id, std::uint64_t>> typed_field_nodes(const sampled_copy_graph& graph,
                                                                        const replica_report& report) {
    std::map<context_id, type_id> types;
    for (const context_report& context : report.contexts) types.emplace(context.context, context.type);
    std::vector<std::pair<type_id, std::uint64_t>> fields;
    for (const auto& [edge, volume] : graph.edges())
        for (const copy_node& node : {edge.from, edge.to}) {
            if (node.kind != copy_node_kind::field || node.offset == copy_node::elements) continue;
            if (const auto type = types.find(node.site); type != types.end() && type->second != no_type)
                fields.emplace_back(type->second, node.offset);
        }
    std::sort(fields.begin(), fields.end());
    fields.erase(std::unique(fields.begin(), fields.end()), fields.end());
    return fields;
}

// The copy section of a graph of followed values (followed_copy_graph.hpp: its graph, code and counters): its sites
// named as `report` types them, the code that copied as "used at" names it. What an agent writes, and a replay of
// its trace writes again.
template <class Tree>
copy_profile followed_copy_section(const sampled_copy_graph& graph, const copy_code& code,
                                   const sampled_copy_stats& counters, std::string sampling,
                                   const replica_report& report, const Tree& tree, const report_naming& naming) {
    std::map<context_id, type_id> types;
    for (const context_report& context : report.contexts) types.emplace(context.context, context.type);
    const auto type_of = [&](context_id context) {
        const auto type = types.find(context);
        return type == types.end() ? no_type : type->second;
    };
    copy_profile section = copy_profile_of(
        graph, code, counters, std::move(sampling),
        [&](context_id context) { return name_copy_site(tree, context, type_of(context), naming); },
        [&](context_id context) { return name_copy_code(tree, context, naming); });
    if (!naming.field) return section;
    // The fields the nodes lie at, where the runtime names them.
    copy_profile fields;
    for (const auto& [type, offset] : typed_field_nodes(graph, report))
        if (std::string name = naming.field(type, offset); !name.empty())
            fields.field_names.push_back({report_detail::type_name(type, naming), offset, std::move(name)});
    section.merge(fields); // sorts them by type name, each (type, offset) once
    return section;
}

// The documented JSON profile of a report (profile_writer.hpp).
template <class Tree>
void write_json(std::ostream& out, const replica_report& report, const Tree& tree, const report_naming& naming,
                const run_facts& facts) {
    write_profile_json(out, profile_of(report, tree, naming, facts));
}

// The text report of a report (text_report.hpp), its `top` best sites.
template <class Tree>
void write_text(std::ostream& out, const replica_report& report, const Tree& tree, const report_naming& naming,
                const run_facts& facts, std::size_t top = 10) {
    write_text_report(out, {}, profile_of(report, tree, naming, facts), top);
}

} // namespace ojx
