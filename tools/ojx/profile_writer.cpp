#include "profile_writer.hpp"

#include "ojx/report.hpp"

#include <string_view>

namespace ojx::tool {
namespace {

using report_detail::exact;
using report_detail::json_escape;

void write_strings(std::ostream& out, const std::vector<std::string>& values) {
    out << '[';
    for (std::size_t i = 0; i < values.size(); ++i) out << (i ? ", " : "") << '"' << json_escape(values[i]) << '"';
    out << ']';
}

// Counters as the profile nests them: "samples_dropped.store" goes into a "samples_dropped" object, written
// where the group's first counter stands.
void write_counters(std::ostream& out, const std::vector<run_counter>& counters) {
    std::vector<bool> written(counters.size(), false);
    for (std::size_t i = 0; i < counters.size(); ++i) {
        if (written[i]) continue;
        const std::string& path = counters[i].path;
        const std::size_t dot = path.find('.');
        out << ",\n    \"";
        if (dot == std::string::npos) {
            out << json_escape(path) << "\": " << counters[i].value;
            continue;
        }
        const std::string_view group = std::string_view(path).substr(0, dot + 1);
        out << json_escape(group.substr(0, dot)) << "\": {";
        bool first = true;
        for (std::size_t j = i; j < counters.size(); ++j) {
            if (!counters[j].path.starts_with(group)) continue;
            written[j] = true;
            out << (first ? "" : ", ") << '"' << json_escape(counters[j].path.substr(dot + 1))
                << "\": " << counters[j].value;
            first = false;
        }
        out << '}';
    }
}

void write_run(std::ostream& out, const run_profile& run) {
    out << "  \"run\": {\"runtime\": \"" << json_escape(joined(run.runtime)) << "\", \"sampler\": \""
        << json_escape(joined(run.sampler)) << "\", \"watchpoints\": \"" << json_escape(joined(run.watchpoints))
        << "\", \"pairing\": \"" << json_escape(joined(run.pairing)) << "\", \"replacement\": \""
        << json_escape(joined(run.replacement)) << '"';
    if (!run.allocation_counts.empty())
        out << ",\n    \"allocation_counts\": \"" << json_escape(joined(run.allocation_counts)) << '"';
    if (!run.tracking_targets.empty()) {
        out << ",\n    \"allocation_sampling\": {\"targets_per_second\": [";
        for (std::size_t i = 0; i < run.tracking_targets.size(); ++i) out << (i ? ", " : "") << run.tracking_targets[i];
        out << ']';
        if (run.sampled_interval_range)
            out << ", \"interval_range\": [" << run.sampled_interval_range->first << ", "
                << run.sampled_interval_range->second << ']';
        out << '}';
    }
    write_counters(out, run.counters);
    out << ",\n    \"estimator\": {\"min_comparisons\": " << run.estimator.min_comparisons
        << ", \"confidence\": " << exact(run.estimator.confidence)
        << ", \"min_digested_objects\": " << run.estimator.min_digested_objects << '}';
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

} // namespace

void write_profile_json(std::ostream& out, const profile& p) {
    out << "{\n  \"ojx_profile_version\": 1,\n";
    write_run(out, p.run);
    out << "  \"contexts\": [";
    for (std::size_t i = 0; i < p.contexts.size(); ++i) {
        const context_profile& c = p.contexts[i];
        out << (i ? ",\n" : "\n");
        const whole_object_view whole{c.whole, c.identical, c.near};
        write_context_json(out, c.type, c.frames, c.objects, c.bytes, c.allocated ? &*c.allocated : nullptr, c.estimate,
                           c.has_evidence ? &c.evidence : nullptr, c.combined, &whole, c.accesses);
    }
    out << "\n  ]\n}\n";
}

} // namespace ojx::tool
