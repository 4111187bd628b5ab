// The one writer of the documented JSON profile (docs/profile-format.md), version 1, from the profile model
// (profile.hpp): what the agents, the emulation demo and `ojx merge` write, its copy section included where the
// profile has one. Numbers that merging adds up are
// written with 17 digits, so that they read back exactly. Not for signal handlers: allocates freely.
#pragma once

#include "ojx/profile.hpp"

#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace ojx {

namespace report_detail {

inline std::string json_escape(std::string_view text) {
    std::string out;
    out.reserve(text.size() + 2);
    for (const char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        switch (ch) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
            if (c < 0x20) {
                char buffer[8];
                std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
                out += buffer;
            } else {
                out += ch;
            }
        }
    }
    return out;
}

inline std::string number(double value) {
    if (!std::isfinite(value)) return "null";
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.6g", value);
    return buffer;
}

// Round-trips: sums that merging adds up must be read back exactly.
inline std::string exact(double value) {
    if (!std::isfinite(value)) return "null";
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.17g", value);
    return buffer;
}

inline std::string hex_digest(std::uint64_t digest) {
    char buffer[20];
    std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(digest));
    return buffer;
}

inline void write_strings(std::ostream& out, const std::vector<std::string>& values) {
    out << '[';
    for (std::size_t i = 0; i < values.size(); ++i) out << (i ? ", " : "") << '"' << json_escape(values[i]) << '"';
    out << ']';
}

inline void write_interval(std::ostream& out, const interval& i) {
    out << '[' << number(i.low) << ", " << number(i.high) << ']';
}

inline void write_type_counts(std::ostream& out, const type_allocations& t, bool estimated) {
    out << "\"instances\": " << exact(t.instances) << ", \"bytes\": " << exact(t.bytes);
    if (t.array) out << ", \"elements\": " << exact(t.elements);
    out << ", \"seen\": " << t.seen;
    if (estimated) out << ", \"instances_variance\": " << exact(t.instances_variance);
}

inline void write_allocations(std::ostream& out, const named_allocations& a) {
    out << "     \"allocated\": {\"estimated\": " << (a.estimated ? "true" : "false") << ", \"types\": [";
    for (std::size_t i = 0; i < a.types.size(); ++i) {
        const named_type_allocations& t = a.types[i];
        out << (i ? ", " : "") << "{\"type\": \"" << json_escape(t.type) << '"';
        if (t.counts.array)
            out << ", \"array\": true, \"element_type\": \"" << json_escape(array_element_type(t.type)) << '"';
        out << ", ";
        write_type_counts(out, t.counts, a.estimated);
        out << '}';
    }
    out << ']';
    if (a.other.seen > 0) {
        out << ", \"other_types\": {";
        type_allocations other = a.other;
        other.array = true; // their arrays' elements, if any
        write_type_counts(out, other, a.estimated);
        out << '}';
    }
    out << "},\n";
}

// The site's estimate and the evidence it rests on.
inline void write_site_estimate(std::ostream& out, const site_estimate& e) {
    out << "     \"estimate\": {\"evidence\": \"" << evidence_basis_name(e.basis)
        << "\", \"replicated\": " << (called_replicated(e) ? "true" : "false") << ", \"largest_share\": "
        << number(e.largest_share) << ", \"largest_share_ci\": ";
    write_interval(out, e.largest_share_ci);
    out << ", \"identical_pairs\": " << number(e.identical_pairs) << ", \"identical_pairs_ci\": ";
    write_interval(out, e.identical_pairs_ci);
    out << "},\n";
}

// An identical-group summary's members "groups" and "unkept", exactly (whole_objects and heap).
inline void write_groups(std::ostream& out, const identical_groups_summary& g) {
    out << "       \"groups\": [";
    for (std::size_t k = 0; k < g.groups.size(); ++k) {
        const content_group& group = g.groups[k];
        out << (k ? ", " : "") << "{\"digest\": \"" << hex_digest(group.digest) << "\", \"objects\": " << group.objects
            << ", \"weight\": " << exact(group.weight) << ", \"weight_squared\": " << exact(group.weight_squared)
            << ", \"heaviest\": " << exact(group.heaviest) << ", \"all_zero\": " << (group.all_zero ? "true" : "false")
            << '}';
    }
    out << "],\n       \"unkept\": {\"objects\": " << g.unkept_objects << ", \"weight\": " << exact(g.unkept_weight)
        << ", \"weight_squared\": " << exact(g.unkept_weight_squared)
        << ", \"largest_weight\": " << exact(g.heaviest_unkept()) << '}';
}

// The heap view (live_heap.hpp): the site's objects alive at the run's heap moment, the estimate and the bytes
// sharing would save then (for readers), then the sums (for merging).
inline void write_heap(std::ostream& out, const context_profile& c) {
    const identical_groups_estimate& i = c.live_identical;
    const saving saved = c.heap_saving();
    out << "     \"heap\": {\"objects\": " << c.live.objects << ", \"weight\": " << exact(c.live.weight)
        << ", \"bytes\": " << exact(c.live.bytes) << ", \"digested\": " << i.objects
        << ", \"replicated\": " << (called_replicated(c.heap) ? "true" : "false")
        << ", \"largest_share\": " << number(c.heap.largest_share) << ", \"largest_share_ci\": ";
    write_interval(out, c.heap.largest_share_ci);
    out << ", \"largest_all_zero\": " << (i.largest_all_zero ? "true" : "false") << ", \"saves\": ["
        << number(saved.low) << ", " << number(saved.high) << "],\n";
    write_groups(out, c.live.digested);
    out << "},\n";
}

// The whole-object evidence: the estimates (for readers), then the sufficient statistics (for merging), exactly.
inline void write_whole_objects(std::ostream& out, const context_profile& c) {
    const identical_groups_estimate& i = c.identical;
    out << "     \"whole_objects\": {\"objects\": " << i.objects << ", \"bytes\": " << c.whole.bytes
        << ", \"effective\": " << number(i.effective_objects) << ", \"largest_share\": " << number(i.largest_share)
        << ", \"largest_share_ci\": ";
    write_interval(out, i.largest_share_ci);
    out << ", \"largest_objects\": " << i.largest_objects << ", \"largest_all_zero\": "
        << (i.largest_all_zero ? "true" : "false") << ", \"largest_certain\": " << (i.largest_certain ? "true" : "false")
        << ", \"identical_pairs\": " << number(i.identical_pairs) << ", \"identical_pairs_ci\": ";
    write_interval(out, i.identical_pairs_ci);
    out << ", \"distinct\": [" << i.distinct_low << ", " << i.distinct_high << "],\n";
    const near_replica_estimate& n = c.near;
    out << "       \"near_replicas\": {\"found\": " << (n.found ? "true" : "false") << ", \"members\": " << n.members
        << ", \"near\": " << n.near << ", \"share\": " << number(n.share) << ", \"shared_fraction\": "
        << number(n.shared_fraction) << "},\n";
    write_groups(out, c.whole.identical);
    out << ",\n       \"near_families\": [";
    bool first = true;
    for (const near_family& f : c.whole.near.families) {
        if (f.members < 2) continue; // a lone object: nothing to merge into another profile's family
        out << (first ? "" : ", ") << "{\"digest\": \"" << hex_digest(f.representative.digest) << "\", \"size\": "
            << f.representative.size << ", \"all_zero\": " << (f.representative.all_zero ? "true" : "false")
            << ", \"members\": " << f.members << ", \"identical\": " << f.identical << ", \"shared_blocks\": "
            << f.shared_blocks << ", \"blocks\": [";
        for (std::size_t b = 0; b < fingerprint_blocks; ++b) out << (b ? "," : "") << f.representative.blocks[b];
        out << "]}";
        first = false;
    }
    out << "]},\n";
}

// One element of the profile's `contexts` list.
inline void write_context(std::ostream& out, const context_profile& c) {
    out << "    {\"allocation\": {\"type\": \"" << json_escape(c.type) << "\", \"frames\": ";
    write_strings(out, c.frames);
    out << "},\n";
    if (c.allocated) write_allocations(out, *c.allocated);
    const replica_estimate& e = c.estimate;
    out << "     \"objects\": " << c.objects << ", \"bytes\": " << c.bytes << ", \"reported\": "
        << (e.reported ? "true" : "false") << ", \"comparisons\": {\"equal\": " << e.equal
        << ", \"different\": " << e.different << ", \"pairs\": " << e.pairs << ", \"sources\": " << e.sources
        << ", \"effective\": " << number(e.effective_comparisons) << "},\n";
    out << "     \"theta\": " << number(e.theta) << ", \"theta_ci\": [" << number(e.theta_ci.low) << ", "
        << number(e.theta_ci.high) << "], \"alpha\": " << number(e.alpha) << ", \"alpha_ci\": ["
        << number(e.alpha_ci.low) << ", " << number(e.alpha_ci.high) << "], \"alpha_comparisons\": "
        << e.alpha_comparisons << ", \"omega\": " << number(e.omega) << ", \"gamma\": " << number(e.gamma) << ",\n";
    if (c.has_evidence) {
        const evidence_summary& v = c.evidence;
        out << "     \"evidence\": {\"alpha_equal\": " << v.alpha_equal << ", \"weighted_equal\": "
            << exact(v.weighted_equal) << ", \"weighted_total\": " << exact(v.weighted_total)
            << ", \"sum_equal_squared\": " << exact(v.sum_equal_squared) << ", \"sum_equal_times_total\": "
            << exact(v.sum_equal_times_total) << ", \"sum_total_squared\": " << exact(v.sum_total_squared)
            << "},\n";
    }
    write_site_estimate(out, c.combined);
    if (c.whole.objects() > 0) write_whole_objects(out, c);
    if (!c.live.empty()) write_heap(out, c);
    out << "     \"accesses\": [";
    for (std::size_t a = 0; a < c.accesses.size(); ++a) {
        out << (a ? ", " : "") << "{\"frames\": ";
        write_strings(out, c.accesses[a].frames);
        out << ", \"samples\": " << c.accesses[a].samples << '}';
    }
    out << "]}";
}

// The agent's own counters ("agent.…") stand after the estimator settings; the profiler's before.
inline bool agent_counter(const run_counter& c) noexcept { return c.path.starts_with("agent."); }

// Counters as the profile nests them ("samples_dropped.store" goes into a "samples_dropped" object, written
// where the group's first counter stands), the agent's or the others. A line holds the profiler's counters of a
// kind (profiler_counters' starts_line); one the table does not know stands on a line of its own.
inline void write_counters(std::ostream& out, const std::vector<run_counter>& counters, bool agent) {
    std::vector<bool> written(counters.size(), false);
    bool first = true;
    for (std::size_t i = 0; i < counters.size(); ++i) {
        if (written[i] || agent_counter(counters[i]) != agent) continue;
        const std::string& path = counters[i].path;
        const std::size_t index = profiler_counter_index(path);
        const bool new_line = first || index == std::size(profiler_counters) || profiler_counters[index].starts_line;
        out << (new_line ? ",\n    \"" : ", \"");
        first = false;
        const std::size_t dot = path.find('.');
        if (dot == std::string::npos) {
            out << json_escape(path) << "\": " << counters[i].value;
            continue;
        }
        const std::string_view group = std::string_view(path).substr(0, dot + 1);
        out << json_escape(group.substr(0, dot)) << "\": {";
        bool first_member = true;
        for (std::size_t j = i; j < counters.size(); ++j) {
            if (!counters[j].path.starts_with(group)) continue;
            written[j] = true;
            out << (first_member ? "" : ", ") << '"' << json_escape(counters[j].path.substr(dot + 1))
                << "\": " << counters[j].value;
            first_member = false;
        }
        out << '}';
    }
}

inline void write_run(std::ostream& out, const run_profile& run) {
    out << "  \"run\": {\"runtime\": \"" << json_escape(joined(run.runtime)) << "\", \"sampler\": \""
        << json_escape(joined(run.sampler)) << "\", \"watchpoints\": \"" << json_escape(joined(run.watchpoints))
        << "\", \"pairing\": \"" << json_escape(joined(run.pairing)) << "\", \"replacement\": \""
        << json_escape(joined(run.replacement)) << '"';
    write_counters(out, run.counters, false);
    if (!run.allocation_counts.empty())
        out << ",\n    \"allocation_counts\": \"" << json_escape(joined(run.allocation_counts)) << '"';
    if (!run.heap_moments.empty()) {
        out << ",\n    \"heap_moments\": ";
        write_strings(out, run.heap_moments);
    }
    if (run.seconds > 0) {
        // Always with a fraction: a reader that does not know the field skips a real number, where it would sum
        // an integer as a counter.
        char seconds[32];
        std::snprintf(seconds, sizeof seconds, "%.3f", run.seconds);
        out << ",\n    \"seconds\": " << seconds;
    }
    if (!run.tracking_targets.empty()) {
        out << ",\n    \"allocation_sampling\": {\"targets_per_second\": [";
        for (std::size_t i = 0; i < run.tracking_targets.size(); ++i) out << (i ? ", " : "") << run.tracking_targets[i];
        out << ']';
        if (run.sampled_interval_range)
            out << ", \"interval_range\": [" << run.sampled_interval_range->first << ", "
                << run.sampled_interval_range->second << ']';
        out << '}';
    }
    out << ",\n    \"estimator\": {\"min_comparisons\": " << run.estimator.min_comparisons
        << ", \"confidence\": " << exact(run.estimator.confidence)
        << ", \"min_digested_objects\": " << run.estimator.min_digested_objects << '}';
    write_counters(out, run.counters, true);
    if (run.profiles > 1) {
        out << ",\n    \"merged\": {\"profiles\": " << run.profiles << ", \"runtime\": ";
        write_strings(out, run.runtime);
        out << ", \"sampler\": ";
        write_strings(out, run.sampler);
        out << ", \"watchpoints\": ";
        write_strings(out, run.watchpoints);
        out << ", \"pairing\": ";
        write_strings(out, run.pairing);
        out << ", \"replacement\": ";
        write_strings(out, run.replacement);
        if (!run.allocation_counts.empty()) {
            out << ", \"allocation_counts\": ";
            write_strings(out, run.allocation_counts);
        }
        out << '}';
    }
    out << "},\n";
}

inline void write_copy_node(std::ostream& out, const copy_node& node) {
    switch (node.kind) {
    case copy_node_kind::field:
        out << "{\"kind\": \"field\", \"site\": " << node.site << ", \"offset\": ";
        if (node.offset == copy_node::elements) out << "\"elements\"}";
        else out << node.offset << '}';
        break;
    case copy_node_kind::allocation: out << "{\"kind\": \"allocation\", \"site\": " << node.site << '}'; break;
    case copy_node_kind::static_location: out << "{\"kind\": \"static\", \"address\": " << node.offset << '}'; break;
    case copy_node_kind::consumer: out << "{\"kind\": \"consumer\"}"; break;
    }
}

// The copy section: sums only (estimates are derived on reading), so that `ojx merge` adds them exactly.
inline void write_copies(std::ostream& out, const copy_profile& c) {
    out << ",\n  \"copies\": {\"sampling\": ";
    write_strings(out, c.sampling);
    out << ",\n    \"counters\": {";
    for (std::size_t i = 0; i < std::size(copy_counters); ++i)
        out << (i ? ", " : "") << '"' << copy_counters[i].name << "\": " << c.counters.*copy_counters[i].value;
    out << "},\n    \"sites\": [";
    for (std::size_t i = 0; i < c.sites.size(); ++i) {
        out << (i ? ",\n      " : "\n      ") << "{\"type\": \"" << json_escape(c.sites[i].type)
            << "\", \"frames\": ";
        write_strings(out, c.sites[i].frames);
        out << '}';
    }
    // The code that copied, only where the samples named it: a section without keeps its bytes as before.
    if (!c.code_contexts.empty()) {
        out << "],\n    \"code_contexts\": [";
        for (std::size_t i = 0; i < c.code_contexts.size(); ++i) {
            out << (i ? ",\n      " : "\n      ") << "{\"frames\": ";
            write_strings(out, c.code_contexts[i].frames);
            out << '}';
        }
    }
    // Field names, only where the runtime told them: a section without keeps its bytes as before.
    if (!c.field_names.empty()) {
        out << "],\n    \"field_names\": [";
        for (std::size_t i = 0; i < c.field_names.size(); ++i)
            out << (i ? ",\n      " : "\n      ") << "{\"type\": \"" << json_escape(c.field_names[i].type)
                << "\", \"offset\": " << c.field_names[i].offset << ", \"name\": \""
                << json_escape(c.field_names[i].name) << "\"}";
    }
    out << "],\n    \"edges\": [";
    bool first = true;
    for (const auto& [edge, volume] : c.graph.edges()) {
        out << (first ? "\n      " : ",\n      ") << "{\"from\": ";
        write_copy_node(out, edge.from);
        out << ", \"to\": ";
        write_copy_node(out, edge.to);
        out << ", \"width\": " << unsigned{edge.width} << ", \"samples\": " << volume.samples << ", \"weight\": "
            << volume.weight << ", \"weight_squares\": " << volume.weight_squares << ", \"max_weight\": "
            << volume.max_weight;
        if (const edge_code& code = c.code.of(edge); !code.empty()) {
            out << ", \"copied_by\": [";
            bool first_context = true;
            for (const auto& [context, samples] : code.contexts) {
                out << (first_context ? "" : ", ") << "{\"context\": " << context << ", \"samples\": " << samples << '}';
                first_context = false;
            }
            out << "], \"copied_by_other\": " << code.other;
        }
        out << '}';
        first = false;
    }
    out << "]}";
}

// The exact counts section: totals, the reasons code ran unmodified, and each counted site.
inline void write_exact_counts(std::ostream& out, const exact_counts& c) {
    out << ",\n  \"exact_counts\": {\"plans\": ";
    write_strings(out, c.plans);
    out << ", \"increments\": " << c.increments << ", \"corrections\": " << c.corrections
        << ", \"methods_instrumented\": " << c.methods_instrumented;
    if (c.jvm_reported) out << ", \"jvm_reported\": true";
    out << ",\n    \"left_alone\": {";
    for (std::size_t i = 0; i < c.left_alone.size(); ++i)
        out << (i ? ", " : "") << '"' << json_escape(c.left_alone[i].first) << "\": " << c.left_alone[i].second;
    out << "},\n    \"sites\": [";
    for (std::size_t i = 0; i < c.sites.size(); ++i) {
        const counted_site& s = c.sites[i];
        out << (i ? ",\n      " : "\n      ") << "{\"method\": \"" << json_escape(s.method) << "\", \"bci\": " << s.bci
            << ", \"frame\": \"" << json_escape(s.frame) << "\", \"type\": \"" << json_escape(s.type)
            << "\", \"objects\": " << s.objects;
        if (array_site(s)) out << ", \"elements\": " << s.elements;
        if (c.jvm_reported) out << ", \"jvm_allocated\": " << s.jvm_allocated;
        if (c.jvm_reported && array_site(s)) out << ", \"jvm_elements\": " << s.jvm_elements;
        out << '}';
    }
    out << "]}";
}

} // namespace report_detail

// The documented JSON profile, version 1.
inline void write_profile_json(std::ostream& out, const profile& p) {
    out << "{\n  \"ojx_profile_version\": 1,\n";
    report_detail::write_run(out, p.run);
    out << "  \"contexts\": [";
    for (std::size_t i = 0; i < p.contexts.size(); ++i) {
        out << (i ? ",\n" : "\n");
        report_detail::write_context(out, p.contexts[i]);
    }
    out << "\n  ]";
    if (p.copies) report_detail::write_copies(out, *p.copies);
    if (p.exact) report_detail::write_exact_counts(out, *p.exact);
    out << "\n}\n";
}

} // namespace ojx
