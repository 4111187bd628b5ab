#include "policy_comparison.hpp"

#include "ojx/report.hpp"

#include <algorithm>
#include <cstdio>
#include <ostream>

namespace ojx::tool {
namespace {

using report_detail::json_escape;

// What one configuration says about one site, next to the truth.
struct site_verdict {
    const context_report* reported = nullptr; // none: the site had no object sampled and paired
    bool estimated = false;
    bool covers_ratio = false;
    bool covers_theta = false;
};

site_verdict verdict(const replay::replayed_profile& replayed, context_id context, const replay::site_truth& truth) {
    site_verdict v;
    for (const context_report& c : replayed.report.contexts)
        if (c.context == context) v.reported = &c;
    if (v.reported == nullptr || !v.reported->estimate.reported) return v;
    const replica_estimate& e = v.reported->estimate;
    v.estimated = true;
    v.covers_ratio = e.omega <= truth.largest_group_ratio && truth.largest_group_ratio <= e.gamma;
    v.covers_theta = e.theta_ci.low <= truth.theta && truth.theta <= e.theta_ci.high;
    return v;
}

const replay::replica_truth* truth_for(const policy_comparison& comparison, const compared_configuration& c) {
    const auto found = comparison.truths.find(c.replayed.run.profiler.compare_window);
    return found != comparison.truths.end() ? &found->second : nullptr;
}

// Sites in the order the tables show them: most replicated first (by the truth), then by name.
std::vector<std::pair<context_id, const replay::site_truth*>> sites_of(const replay::replica_truth& truth) {
    std::vector<std::pair<context_id, const replay::site_truth*>> sites;
    for (const auto& [context, site] : truth.sites)
        if (site.objects >= 2) sites.emplace_back(context, &site);
    std::stable_sort(sites.begin(), sites.end(), [](const auto& a, const auto& b) {
        if (a.second->largest_group_ratio != b.second->largest_group_ratio)
            return a.second->largest_group_ratio > b.second->largest_group_ratio;
        return a.second->site < b.second->site;
    });
    return sites;
}

std::string percent(double value) {
    char text[16];
    std::snprintf(text, sizeof text, "%.1f%%", 100 * value);
    return text;
}

std::string padded(std::string text, std::size_t width, bool right = false) {
    if (text.size() >= width) return text;
    return right ? std::string(width - text.size(), ' ') + text : text + std::string(width - text.size(), ' ');
}

} // namespace

std::optional<comparison_axis> parse_comparison_axis(std::string_view text, std::string& error) {
    const auto equals = text.find('=');
    if (equals == std::string_view::npos || equals == 0 || equals + 1 == text.size()) {
        error = "--compare: expected SETTING=VALUE,VALUE… (e.g. slots=1,2,4), got '" + std::string(text) + "'";
        return std::nullopt;
    }
    comparison_axis axis{std::string(text.substr(0, equals)), {}};
    std::string_view values = text.substr(equals + 1);
    while (true) {
        const auto comma = values.find(',');
        axis.values.emplace_back(values.substr(0, comma));
        replay::replay_settings scratch;
        if (const auto problem = replay::set_replay_setting(scratch, axis.key, axis.values.back())) {
            error = "--compare: " + *problem;
            return std::nullopt;
        }
        if (comma == std::string_view::npos) break;
        values.remove_prefix(comma + 1);
    }
    return axis;
}

policy_comparison compare_policies(std::span<const std::byte> trace, std::string_view name,
                                   const replay::replay_settings& base, const std::vector<comparison_axis>& axes) {
    policy_comparison comparison;
    // Every combination, the first axis varying slowest.
    std::vector<std::size_t> at(axes.size(), 0);
    while (true) {
        compared_configuration c;
        replay::replay_settings settings = base;
        for (std::size_t a = 0; a < axes.size(); ++a) {
            replay::set_replay_setting(settings, axes[a].key, axes[a].values[at[a]]); // checked when parsed
            c.label += (c.label.empty() ? "" : " ") + axes[a].key + "=" + axes[a].values[at[a]];
        }
        if (c.label.empty()) c.label = "as given";
        c.replayed = replay::replay_profile(trace, name, settings);
        if (!c.replayed.error.empty()) {
            comparison.error = c.replayed.error + (axes.empty() ? "" : " (configuration " + c.label + ")");
            return comparison;
        }
        const std::size_t window = c.replayed.run.profiler.compare_window;
        if (c.replayed.run.every_access && !comparison.truths.contains(window)) {
            auto truth = replay::find_replica_truth(trace, name, c.replayed.run.profiler, window);
            if (!truth.error.empty()) {
                comparison.error = truth.error;
                return comparison;
            }
            comparison.truths.emplace(window, std::move(truth));
        }
        comparison.configurations.push_back(std::move(c));
        std::size_t a = axes.size();
        while (a > 0 && ++at[a - 1] == axes[a - 1].values.size()) at[--a] = 0;
        if (a == 0) break;
    }
    return comparison;
}

void write_comparison_text(std::ostream& out, const policy_comparison& comparison, std::string_view trace) {
    std::size_t label_width = std::string_view("configuration").size();
    for (const auto& c : comparison.configurations) label_width = std::max(label_width, c.label.size());
    const bool known = !comparison.truths.empty();
    out << "Replayed " << trace << " through " << comparison.configurations.size() << " configuration"
        << (comparison.configurations.size() == 1 ? "" : "s") << ".\n\n";
    out << padded("configuration", label_width) << "  comparisons      traps  estimates"
        << (known ? "  X_N/X in [ω, γ]  θ in interval" : "") << '\n';
    for (const auto& c : comparison.configurations) {
        std::size_t estimates = 0, sites = 0, ratio_covered = 0, theta_covered = 0;
        for (const context_report& r : c.replayed.report.contexts) estimates += r.estimate.reported ? 1 : 0;
        if (const auto* truth = truth_for(comparison, c)) {
            for (const auto& [context, site] : sites_of(*truth)) {
                const site_verdict v = verdict(c.replayed, context, *site);
                sites += 1;
                ratio_covered += v.covers_ratio ? 1 : 0;
                theta_covered += v.covers_theta ? 1 : 0;
            }
        }
        out << padded(c.label, label_width) << "  " << padded(std::to_string(c.replayed.report.stats.comparisons), 11, true)
            << "  " << padded(std::to_string(c.replayed.traps), 9, true) << "  "
            << padded(std::to_string(estimates), 9, true);
        if (known)
            out << "  " << padded(std::to_string(ratio_covered) + "/" + std::to_string(sites), 15, true) << "  "
                << padded(std::to_string(theta_covered) + "/" + std::to_string(sites), 13, true);
        out << '\n';
    }
    if (!known) {
        out << "\n(No truth: the trace holds only samples and traps, not every object's contents.)\n";
        return;
    }
    out << "\nPer site: the estimates, and the truth from every object's contents (X objects, X_N in the largest\n"
           "group of identical ones); 'yes' where the configuration's bounds cover it.\n";
    const auto& first_truth = *truth_for(comparison, comparison.configurations.front());
    for (const auto& [context, site] : sites_of(first_truth)) {
        out << '\n' << site->site << ": X = " << site->objects << ", true X_N/X = " << percent(site->largest_group_ratio)
            << '\n';
        out << "  " << padded("configuration", label_width)
            << "  comparisons       θ  θ interval         true θ  [ω, γ]             X_N/X  θ\n";
        for (const auto& c : comparison.configurations) {
            const auto* truth = truth_for(comparison, c);
            const auto found = truth->sites.find(context);
            const replay::site_truth& t = found != truth->sites.end() ? found->second : *site;
            const site_verdict v = verdict(c.replayed, context, t);
            out << "  " << padded(c.label, label_width) << "  "
                << padded(std::to_string(v.reported ? v.reported->estimate.comparisons() : 0), 11, true) << "  ";
            if (v.estimated) {
                const replica_estimate& e = v.reported->estimate;
                out << padded(percent(e.theta), 6, true) << "  "
                    << padded("[" + percent(e.theta_ci.low) + ", " + percent(e.theta_ci.high) + "]", 17) << "  "
                    << padded(percent(t.theta), 6, true) << "  "
                    << padded("[" + percent(e.omega) + ", " + percent(e.gamma) + "]", 17) << "  "
                    << padded(v.covers_ratio ? "yes" : "no", 5) << "  " << (v.covers_theta ? "yes" : "no") << '\n';
            } else {
                out << padded("-", 6, true) << "  " << padded("(too few comparisons)", 17) << "  "
                    << padded(percent(t.theta), 6, true) << '\n';
            }
        }
    }
}

void write_comparison_json(std::ostream& out, const policy_comparison& comparison, std::string_view trace) {
    out << "{\n  \"trace\": \"" << json_escape(trace) << "\",\n  \"configurations\": [";
    for (std::size_t i = 0; i < comparison.configurations.size(); ++i) {
        const auto& c = comparison.configurations[i];
        const auto& r = c.replayed;
        out << (i ? "," : "") << "\n    {\"label\": \"" << json_escape(c.label) << "\", \"sampler\": \""
            << json_escape(r.facts.sampler) << "\", \"watchpoints\": \"" << json_escape(r.facts.watchpoints)
            << "\", \"trigger\": \"" << json_escape(r.run.every_access ? r.run.machine.watch_trigger : "as recorded")
            << "\", \"pairing\": \"" << json_escape(r.facts.pairing) << "\", \"replacement\": \""
            << json_escape(r.facts.replacement) << "\", \"compare_window\": " << r.run.profiler.compare_window
            << ", \"comparisons\": " << r.report.stats.comparisons << ", \"traps\": " << r.traps << ", \"sites\": [";
        const auto* truth = truth_for(comparison, c);
        bool first = true;
        for (const context_report& report : r.report.contexts) {
            const replica_estimate& e = report.estimate;
            out << (first ? "" : ",") << "\n      {\"context\": " << report.context << ", \"objects\": " << report.objects
                << ", \"comparisons\": " << e.comparisons() << ", \"estimated\": " << (e.reported ? "true" : "false");
            first = false;
            if (e.reported)
                out << ", \"theta\": " << e.theta << ", \"theta_interval\": [" << e.theta_ci.low << ", "
                    << e.theta_ci.high << "], \"omega\": " << e.omega << ", \"gamma\": " << e.gamma;
            if (truth != nullptr) {
                if (const auto found = truth->sites.find(report.context); found != truth->sites.end()) {
                    const site_verdict v = verdict(r, report.context, found->second);
                    out << ", \"site\": \"" << json_escape(found->second.site)
                        << "\", \"true_largest_group_ratio\": " << found->second.largest_group_ratio
                        << ", \"true_theta\": " << found->second.theta;
                    if (e.reported)
                        out << ", \"covers_largest_group_ratio\": " << (v.covers_ratio ? "true" : "false")
                            << ", \"covers_theta\": " << (v.covers_theta ? "true" : "false");
                }
            }
            out << '}';
        }
        out << "]}";
    }
    out << "\n  ]\n}\n";
}

} // namespace ojx::tool
