// Writing a replica report: a ranked text table for a terminal, and the documented JSON profile
// (docs/profile-format.md) that tools read. Frames and types are named by callbacks, because only the backend
// knows what a frame is (a JVM method and bytecode index, a native address, a synthetic id). Not for signal
// handlers: allocates freely.
#pragma once

#include "ojx/allocation_metrics.hpp"
#include "ojx/profiler.hpp"
#include "ojx/site_estimate.hpp"
#include "ojx/whole_object_evidence.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ojx {

struct report_naming {
    std::function<std::string(std::uint64_t frame)> frame;
    std::function<std::string(type_id)> type;
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
};

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

inline std::string percent(double value) {
    char buffer[16];
    std::snprintf(buffer, sizeof buffer, "%.0f%%", 100 * value);
    return buffer;
}

inline std::string bytes(double value) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int unit = 0;
    while (value >= 1024 && unit < 4) {
        value /= 1024;
        ++unit;
    }
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, unit == 0 ? "%.0f %s" : "%.1f %s", value, units[unit]);
    return buffer;
}

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

inline void write_frames(std::ostream& out, const std::vector<std::string>& names) {
    out << '[';
    for (std::size_t i = 0; i < names.size(); ++i) out << (i ? ", " : "") << '"' << json_escape(names[i]) << '"';
    out << ']';
}

} // namespace report_detail

// An access context by name, and how often it was sampled.
struct named_access_context {
    std::vector<std::string> frames; // leaf first
    std::uint64_t samples = 0;
};

// One type's allocation metrics by name (a context_allocations entry, or a profile's).
struct named_type_allocations {
    std::string type;
    type_allocations counts; // its `type` id is not used: the name is what profiles carry
};

// A context's allocation metrics as a profile carries them: JP's instances per type, arrays and their elements.
struct named_allocations {
    bool estimated = false; // scaled from sampled allocations (else every allocation was counted)
    std::vector<named_type_allocations> types;
    type_allocations other; // types beyond the table, summed (seen == 0: none)

    type_allocations total() const noexcept {
        type_allocations sum = other;
        for (const named_type_allocations& t : types) sum += t.counts;
        return sum;
    }
};

// The element type of an array type by its name ("byte" for "byte[]", "java.lang.String[]" for
// "java.lang.String[][]"); empty when the name does not say.
inline std::string_view array_element_type(std::string_view type) noexcept {
    return type.ends_with("[]") ? type.substr(0, type.size() - 2) : std::string_view{};
}

// How the allocation metrics of a run were counted, for the profile's run.allocation_counts. `tracking_target`:
// tracked allocations per second an adaptive run aimed at (0: the interval was fixed).
inline std::string describe_allocation_counting(std::uint64_t sampling_interval, std::uint64_t tracking_target = 0) {
    if (tracking_target != 0)
        return "estimated from heap sampling at an interval moved to track about " + std::to_string(tracking_target) +
               " allocations per second: each sampled object of s bytes counts 1/(1 - exp(-s/N)) objects, N being "
               "the interval in force when it was sampled (all of them counted while N was 0)";
    if (sampling_interval == 0) return "exact: every allocation of at least the size threshold counted";
    return "estimated from heap sampling every " + std::to_string(sampling_interval) +
           " bytes on average: each sampled object of s bytes counts 1/(1 - exp(-s/" +
           std::to_string(sampling_interval) + ")) objects";
}

// What a report says to do where no site has an estimate: the agents' options that bring more evidence.
inline constexpr const char* more_evidence =
    "Profile longer; track more allocations (track_rate=, or interval=0 for every one), or smaller ones "
    "(threshold=, if the program's objects are smaller); sample accesses more often (rate=).";

// Where a site's objects were used, as reports list it: each access's leaf frame (`leaf_of`) with its samples,
// accesses whose contexts differ only further out summed into one line, most sampled first.
template <class Accesses, class LeafOf>
std::vector<std::pair<std::string, std::uint64_t>> uses_by_leaf(const Accesses& accesses, LeafOf leaf_of) {
    std::vector<std::pair<std::string, std::uint64_t>> uses;
    for (const auto& a : accesses) {
        std::string leaf = leaf_of(a);
        const auto same = std::find_if(uses.begin(), uses.end(), [&](const auto& u) { return u.first == leaf; });
        if (same != uses.end()) same->second += a.samples;
        else uses.emplace_back(std::move(leaf), a.samples);
    }
    std::stable_sort(uses.begin(), uses.end(), [](const auto& x, const auto& y) { return x.second > y.second; });
    return uses;
}

namespace report_detail {

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
        if (t.counts.array) out << ", \"array\": true, \"element_type\": \"" << json_escape(array_element_type(t.type)) << '"';
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

// A context's whole-object evidence and what is estimated from it, as the profile writes it.
struct whole_object_view {
    const whole_object_summary& summary;
    const identical_groups_estimate& identical;
    const near_replica_estimate& near;
};

namespace report_detail {

inline std::string hex_digest(std::uint64_t digest) {
    char buffer[20];
    std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(digest));
    return buffer;
}

inline void write_interval(std::ostream& out, const interval& i) {
    out << '[' << number(i.low) << ", " << number(i.high) << ']';
}

// The site's estimate and the evidence it rests on.
inline void write_site_estimate(std::ostream& out, const site_estimate& e) {
    out << "     \"estimate\": {\"evidence\": \"" << evidence_basis_name(e.basis) << "\", \"largest_share\": "
        << number(e.largest_share) << ", \"largest_share_ci\": ";
    write_interval(out, e.largest_share_ci);
    out << ", \"identical_pairs\": " << number(e.identical_pairs) << ", \"identical_pairs_ci\": ";
    write_interval(out, e.identical_pairs_ci);
    out << "},\n";
}

// The whole-object evidence: the estimates (for readers), then the sufficient statistics (for merging), exactly.
inline void write_whole_objects(std::ostream& out, const whole_object_view& w) {
    const identical_groups_estimate& i = w.identical;
    out << "     \"whole_objects\": {\"objects\": " << i.objects << ", \"bytes\": " << w.summary.bytes
        << ", \"effective\": " << number(i.effective_objects) << ", \"largest_share\": " << number(i.largest_share)
        << ", \"largest_share_ci\": ";
    write_interval(out, i.largest_share_ci);
    out << ", \"largest_objects\": " << i.largest_objects << ", \"largest_all_zero\": "
        << (i.largest_all_zero ? "true" : "false") << ", \"largest_certain\": " << (i.largest_certain ? "true" : "false")
        << ", \"identical_pairs\": " << number(i.identical_pairs) << ", \"identical_pairs_ci\": ";
    write_interval(out, i.identical_pairs_ci);
    out << ", \"distinct\": [" << i.distinct_low << ", " << i.distinct_high << "],\n";
    const near_replica_estimate& n = w.near;
    out << "       \"near_replicas\": {\"found\": " << (n.found ? "true" : "false") << ", \"members\": " << n.members
        << ", \"near\": " << n.near << ", \"share\": " << number(n.share) << ", \"shared_fraction\": "
        << number(n.shared_fraction) << "},\n       \"groups\": [";
    const identical_groups_summary& g = w.summary.identical;
    for (std::size_t k = 0; k < g.groups.size(); ++k) {
        const content_group& c = g.groups[k];
        out << (k ? ", " : "") << "{\"digest\": \"" << hex_digest(c.digest) << "\", \"objects\": " << c.objects
            << ", \"weight\": " << exact(c.weight) << ", \"weight_squared\": " << exact(c.weight_squared)
            << ", \"heaviest\": " << exact(c.heaviest) << ", \"all_zero\": " << (c.all_zero ? "true" : "false") << '}';
    }
    out << "],\n       \"unkept\": {\"objects\": " << g.unkept_objects << ", \"weight\": " << exact(g.unkept_weight)
        << ", \"weight_squared\": " << exact(g.unkept_weight_squared)
        << ", \"largest_weight\": " << exact(g.heaviest_unkept()) << "},\n       \"near_families\": [";
    bool first = true;
    for (const near_family& f : w.summary.near.families) {
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

} // namespace report_detail

// One element of the profile's `contexts` list. `evidence` may be null (a profile that cannot be merged), and so
// may `allocated` (a profile written before the metrics existed).
inline void write_context_json(std::ostream& out, std::string_view type, const std::vector<std::string>& frames,
                               std::uint64_t objects, std::uint64_t bytes, const named_allocations* allocated,
                               const replica_estimate& e, const evidence_summary* evidence,
                               const site_estimate& combined, const whole_object_view* whole,
                               const std::vector<named_access_context>& accesses) {
    using namespace report_detail;
    out << "    {\"allocation\": {\"type\": \"" << json_escape(type) << "\", \"frames\": ";
    write_frames(out, frames);
    out << "},\n";
    if (allocated != nullptr) write_allocations(out, *allocated);
    out << "     \"objects\": " << objects << ", \"bytes\": " << bytes << ", \"reported\": "
        << (e.reported ? "true" : "false") << ", \"comparisons\": {\"equal\": " << e.equal
        << ", \"different\": " << e.different << ", \"pairs\": " << e.pairs << ", \"sources\": " << e.sources
        << ", \"effective\": " << number(e.effective_comparisons) << "},\n";
    out << "     \"theta\": " << number(e.theta) << ", \"theta_ci\": [" << number(e.theta_ci.low) << ", "
        << number(e.theta_ci.high) << "], \"alpha\": " << number(e.alpha) << ", \"alpha_ci\": ["
        << number(e.alpha_ci.low) << ", " << number(e.alpha_ci.high) << "], \"alpha_comparisons\": "
        << e.alpha_comparisons << ", \"omega\": " << number(e.omega) << ", \"gamma\": " << number(e.gamma) << ",\n";
    if (evidence != nullptr) {
        const evidence_summary& v = *evidence;
        out << "     \"evidence\": {\"alpha_equal\": " << v.alpha_equal << ", \"weighted_equal\": "
            << exact(v.weighted_equal) << ", \"weighted_total\": " << exact(v.weighted_total)
            << ", \"sum_equal_squared\": " << exact(v.sum_equal_squared) << ", \"sum_equal_times_total\": "
            << exact(v.sum_equal_times_total) << ", \"sum_total_squared\": " << exact(v.sum_total_squared)
            << "},\n";
    }
    write_site_estimate(out, combined);
    if (whole != nullptr && whole->summary.objects() > 0) write_whole_objects(out, *whole);
    out << "     \"accesses\": [";
    for (std::size_t a = 0; a < accesses.size(); ++a) {
        out << (a ? ", " : "") << "{\"frames\": ";
        write_frames(out, accesses[a].frames);
        out << ", \"samples\": " << accesses[a].samples << '}';
    }
    out << "]}";
}

// The documented JSON profile, version 1.
template <class Tree>
void write_json(std::ostream& out, const replica_report& report, const Tree& tree, const report_naming& naming,
                const run_facts& facts) {
    using namespace report_detail;
    const profiler_stats& s = report.stats;
    out << "{\n  \"ojx_profile_version\": 1,\n";
    out << "  \"run\": {\"runtime\": \"" << json_escape(facts.runtime) << "\", \"sampler\": \""
        << json_escape(facts.sampler) << "\", \"watchpoints\": \"" << json_escape(facts.watchpoints)
        << "\", \"pairing\": \"" << json_escape(facts.pairing) << "\", \"replacement\": \""
        << json_escape(facts.replacement) << "\",\n";
    out << "    \"allocations\": " << s.allocations << ", \"allocations_ignored\": {\"below_size_threshold\": "
        << s.allocations_ignored_small << ", \"context_table_full\": " << s.allocations_ignored_contexts_full
        << "}, \"frees\": " << s.frees << ", \"moves\": " << s.moves << ", \"objects_evicted_by_overlap\": "
        << s.objects_evicted_by_overlap << ",\n";
    out << "    \"samples\": " << s.samples << ", \"samples_dropped\": {\"untracked_address\": " << s.samples_untracked
        << ", \"object_map_busy\": " << s.samples_busy << ", \"store\": " << s.samples_stores_ignored
        << ", \"unreadable\": " << s.samples_unreadable << "},\n";
    out << "    \"watchpoints_armed\": " << s.watch_armed << ", \"watchpoints_evicted\": " << s.watch_evicted
        << ", \"watchpoints_declined\": " << s.watch_declined << ", \"watchpoints_cancelled\": "
        << s.watch_cancelled << ", \"watchpoint_arm_failures\": " << s.watch_arm_failures << ",\n";
    out << "    \"traps\": " << s.traps << ", \"traps_stale\": " << s.traps_stale
        << ", \"comparisons\": " << s.comparisons << ",\n    \"objects_digested\": " << s.objects_digested
        << ", \"bytes_digested\": " << s.bytes_digested << ", \"digests_skipped\": {\"budget\": "
        << s.digests_skipped_budget << ", \"unreadable\": " << s.digests_unreadable
        << "},\n    \"allocation_counts\": \""
        << describe_allocation_counting(report.allocation_sampling_interval, report.allocation_tracking_target) << '"';
    if (report.allocation_tracking_target != 0) {
        out << ",\n    \"allocation_sampling\": {\"targets_per_second\": [" << report.allocation_tracking_target << ']';
        if (report.sampled_interval_range)
            out << ", \"interval_range\": [" << report.sampled_interval_range->first << ", "
                << report.sampled_interval_range->second << ']';
        out << '}';
    }
    out << ",\n    \"estimator\": {\"min_comparisons\": " << report.estimator.min_comparisons
        << ", \"confidence\": " << exact(report.estimator.confidence)
        << ", \"min_digested_objects\": " << report.estimator.min_digested_objects << '}';
    if (!facts.agent_counters.empty()) {
        out << ",\n    \"agent\": {";
        for (std::size_t i = 0; i < facts.agent_counters.size(); ++i)
            out << (i ? ", " : "") << '"' << json_escape(facts.agent_counters[i].first)
                << "\": " << facts.agent_counters[i].second;
        out << '}';
    }
    out << "},\n";
    out << "  \"contexts\": [";
    for (std::size_t i = 0; i < report.contexts.size(); ++i) {
        const context_report& c = report.contexts[i];
        std::vector<named_access_context> accesses;
        for (const context_report::access& a : c.accesses)
            accesses.push_back({frames(tree, a.context, naming), a.samples});
        out << (i ? ",\n" : "\n");
        const named_allocations allocated = name_allocations(c.allocated, report.allocations_estimated(), naming);
        const whole_object_view whole{c.whole, c.identical, c.near};
        write_context_json(out, type_name(c.type, naming), frames(tree, c.context, naming), c.objects, c.bytes,
                           &allocated, c.estimate, &c.evidence, c.combined, &whole, accesses);
    }
    out << "\n  ]\n}\n";
}

// A ranked table for a terminal: the contexts with an estimate, most replicated first.
template <class Tree>
void write_text(std::ostream& out, const replica_report& report, const Tree& tree, const report_naming& naming,
                const run_facts& facts, std::size_t top = 10) {
    using namespace report_detail;
    const profiler_stats& s = report.stats;
    out << "ojx replica report  (" << facts.runtime << "; sampler: " << facts.sampler << "; watchpoints: "
        << facts.watchpoints << "; pairing: " << facts.pairing << ")\n";
    out << "samples " << s.samples << ", comparisons " << s.comparisons << ", objects tracked "
        << s.allocations - s.allocations_ignored_small - s.allocations_ignored_contexts_full << "\n\n";
    std::size_t shown = 0;
    for (const context_report& c : report.contexts) {
        if (!c.combined.reported() || shown == top) continue;
        const replica_estimate& e = c.estimate;
        const site_estimate& combined = c.combined;
        const auto alloc = frames(tree, c.context, naming);
        char line[256];
        if (combined.basis == evidence_basis::whole_objects)
            std::snprintf(line, sizeof line,
                          "#%zu  largest identical group %s [%s, %s] of %llu objects digested whole%s   identical "
                          "pairs %s   (whole objects)\n",
                          ++shown, percent(combined.largest_share).c_str(),
                          percent(combined.largest_share_ci.low).c_str(), percent(combined.largest_share_ci.high).c_str(),
                          static_cast<unsigned long long>(c.identical.objects),
                          c.identical.largest_all_zero ? " (all zeros)" : "", percent(combined.identical_pairs).c_str());
        else
            std::snprintf(line, sizeof line,
                          "#%zu  theta %s [%s, %s]   largest identical group %s..%s of %llu objects   "
                          "(%llu comparisons, alpha %s)\n",
                          ++shown, percent(e.theta).c_str(), percent(e.theta_ci.low).c_str(),
                          percent(e.theta_ci.high).c_str(), percent(e.omega).c_str(), percent(e.gamma).c_str(),
                          static_cast<unsigned long long>(c.objects), static_cast<unsigned long long>(e.comparisons()),
                          percent(e.alpha).c_str());
        out << line;
        const type_allocations allocated = c.allocated.total();
        out << "    " << type_name(c.type, naming) << " allocated at " << (alloc.empty() ? "?" : alloc.front())
            << "   " << (report.allocations_estimated() ? "~" : "") << bytes(allocated.bytes)
            << " allocated, at least "
            << bytes(replicated_bytes_lower_bound(combined, allocated.instances, allocated.bytes)) << " in replicas\n";
        if (c.near.found)
            out << "    near-replicas (not identical): " << c.near.near << " objects (" << percent(c.near.share)
                << " of those digested) share " << percent(c.near.shared_fraction)
                << " of their contents with one representative\n";
        for (std::size_t f = 1; f < alloc.size(); ++f) out << "        from " << alloc[f] << '\n';
        const auto uses = uses_by_leaf(c.accesses, [&](const context_report::access& a) {
            const auto used = frames(tree, a.context, naming);
            return used.empty() ? std::string("?") : used.front();
        });
        for (std::size_t u = 0; u < uses.size() && u < 3; ++u)
            out << "    used at " << uses[u].first << "  (" << uses[u].second << " samples)\n";
        out << '\n';
    }
    if (shown == 0) {
        std::uint64_t most_digested = 0, most_compared = 0;
        for (const context_report& c : report.contexts) {
            most_digested = std::max(most_digested, c.identical.objects);
            most_compared = std::max(most_compared, c.estimate.comparisons());
        }
        out << "no site has enough evidence for an estimate yet: the most any site has is " << most_digested
            << " objects digested whole (" << report.estimator.min_digested_objects << " needed) and " << most_compared
            << " comparisons (" << report.estimator.min_comparisons << " needed). " << more_evidence << '\n';
    }
}

} // namespace ojx
