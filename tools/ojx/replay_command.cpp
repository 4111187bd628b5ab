// `ojx replay`: analyse a recorded trace again (docs/trace-format.md), with the recorded settings or the settings
// the trace can answer, and write the JSON profile — or replay it through a grid of configurations and compare them
// (policy_comparison.hpp). The replay backend (backends/replay) does the work.
#include "commands.hpp"
#include "output_file.hpp"
#include "policy_comparison.hpp"
#include "whole_file.hpp"

#include "ojx/options.hpp"
#include "ojx/replay/replay_profile.hpp"
#include "ojx/replay/replay_settings.hpp"

#include <cstdio>
#include <iterator>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace ojx::tool {
namespace {

constexpr const char* replay_help = R"(usage: ojx replay TRACE [SETTINGS] -o PROFILE.json
       ojx replay TRACE [SETTINGS] --compare SETTING=V1,V2,... [--compare ...] [--compare-json FILE]

Analyses a recorded run again: feeds the trace, in the recorded order, to a profiler built with the recorded
settings and policies (or the ones given) and writes its JSON profile. With the recorded settings the profile is
byte for byte the one the recording run wrote; the same trace, settings and seeds give the same profile every time.

Two kinds of trace, two kinds of question:
  A trace of samples and traps holds only what the recording profiler took: the agents' record=FILE (the JVM
  agent's -agentpath:libojx.so=start,record=run.ojxt, the native one's OJX_OPTIONS=record=run.ojxt with
  LD_PRELOAD=libojxpreload.so) and ojx_synthetic_demo --record TRACE write one. It
  answers the estimator's settings (--min-comparisons, --confidence): the same evidence judged otherwise. Nothing
  that decides which accesses are sampled, which pairs are watched or when they are compared: those would have
  taken other samples and traps, which the trace does not have; it refuses them, naming the setting.
  A trace of every access (ojx_synthetic_demo --record-accesses TRACE) holds every load, store and allocation and
  every value memory got. The replay rebuilds memory and runs its own emulated sampler, debug registers and
  profiler against the accesses: it answers every setting below, and knows the truth (every object's contents).
  One of a copy program (ojx_synthetic_demo --copy-program --record-accesses TRACE) also holds its value flow: the
  replay rebuilds the copy graphs and the profile has the copy section, sampled by the replay's own sampler.

Settings (default: as recorded; those from --period on need a trace of every access):
)";

constexpr const char* replay_help_tail = R"(
Output:
  -o, --output FILE        where the profile goes (written whole or not at all; '-' is standard output)
  --compare SETTING=V1,V2,...   replay every combination of the values of the --compare axes (each over the
                           settings above) on the same trace, and print a table of their differences instead of
                           writing a profile: per configuration the comparisons, traps, sites with an estimate and,
                           on a trace of every access, at how many sites [ω, γ] covers the true X_N/X and θ's
                           interval the true θ; then per site θ, its interval, [ω, γ] and the truth
  --compare-json FILE      the comparison as JSON as well (with --compare)

Exit status: 0 done; 1 an output could not be written; 2 bad usage, a setting the trace cannot answer, or a
missing, truncated, corrupt or foreign trace (one line naming the file and the problem).

examples: ojx replay run.ojxt --min-comparisons 50 -o strict.json && ojx report strict.json
          ojx replay every.ojxt --compare slots=1,2,4 --compare replacement=reservoir,keep-armed
)";

// Writes `text` to `path` ('-': standard output), whole or not at all.
int write_output(const std::string& path, const std::string& text) {
    if (path == "-") {
        std::fputs(text.c_str(), stdout);
        return std::fflush(stdout) == 0 ? exit_ok : exit_failed;
    }
    output_file out(path);
    if (out.ok()) out.stream() << text;
    if (const auto write_error = out.commit()) {
        std::fprintf(stderr, "ojx replay: %s\n", write_error->c_str());
        return exit_failed;
    }
    return exit_ok;
}

int run_comparison(const std::string& trace_path, std::span<const std::byte> trace,
                   const replay::replay_settings& settings, const std::vector<comparison_axis>& axes,
                   const std::string& json_path) {
    const policy_comparison comparison = compare_policies(trace, trace_path, settings, axes);
    if (!comparison.error.empty()) return input_error("replay", comparison.error);
    std::ostringstream table;
    write_comparison_text(table, comparison, trace_path);
    if (!json_path.empty()) {
        std::ostringstream json;
        write_comparison_json(json, comparison, trace_path);
        if (const int status = write_output(json_path, json.str()); status != exit_ok) return status;
    }
    std::fputs(table.str().c_str(), stdout);
    return std::fflush(stdout) == 0 ? exit_ok : exit_failed;
}

// ojx replay's own options (ojx/options.hpp; replay_help_tail says what they do; -o is --output), then the
// settings a replay may change, whose help comes from their tables (replay_settings.hpp).
const option_spec own_options[] = {
    {"output", option_kind::text, "", ""},
    {"compare", option_kind::text, "", ""}, // SETTING=V1,V2,…: parse_comparison_axis
    {"compare_json", option_kind::text, "", ""},
    {"help", option_kind::flag, "", ""},
};
const option_alias replay_short_names[] = {{"-o", "output"}};

const std::vector<option_spec>& replay_options() {
    static const std::vector<option_spec> table = [] {
        std::vector<option_spec> all(std::begin(own_options), std::end(own_options));
        for (const auto* settings : {&replay::replay_any_trace_settings(), &replay::replay_every_access_settings()})
            all.insert(all.end(), settings->begin(), settings->end());
        return all;
    }();
    return table;
}

} // namespace

int replay_command(arguments args) {
    argument_reader reader(args, replay_options(), replay_short_names);
    std::vector<std::string> inputs;
    std::string output;
    std::string comparison_json;
    std::vector<comparison_axis> axes;
    replay::replay_settings settings;
    while (reader.next()) {
        if (reader.option() == nullptr) {
            inputs.emplace_back(reader.operand());
            continue;
        }
        const std::string_view name = reader.option()->name;
        if (name == "help") {
            const std::span<const option_spec> settings_table =
                std::span(replay_options()).subspan(std::size(own_options));
            std::printf("%s%s%s", replay_help, argument_help_text(settings_table).c_str(), replay_help_tail);
            return exit_ok;
        }
        if (name == "output") {
            output = reader.text();
        } else if (name == "compare_json") {
            comparison_json = reader.text();
        } else if (name == "compare") {
            std::string error;
            auto axis = parse_comparison_axis(reader.text(), error);
            if (!axis) return usage_error("replay", error);
            axes.push_back(std::move(*axis));
        } else if (const auto problem = replay::set_replay_setting(settings, name, reader.text(), reader.item())) {
            return usage_error("replay", *problem); // a value of the setting's kind that it does not take
        }
    }
    if (!reader.error().empty()) return usage_error("replay", reader.error());
    if (inputs.empty()) return usage_error("replay", "no trace given");
    if (inputs.size() > 1)
        return usage_error("replay", "one trace at a time (merge the profiles afterwards: ojx merge)");
    if (!axes.empty() && !output.empty())
        return usage_error("replay", "--compare prints a table of several replays, -o writes one profile: give one or "
                                     "the other");
    if (axes.empty() && !comparison_json.empty()) return usage_error("replay", "--compare-json needs --compare");
    if (axes.empty() && output.empty())
        return usage_error("replay", "no output file: add -o PROFILE.json (or -o - for standard output), or --compare");

    const std::string& trace_path = inputs.front();
    std::string error;
    const auto trace = read_whole_file(trace_path, error);
    if (!trace) return input_error("replay", error);
    if (!axes.empty()) return run_comparison(trace_path, *trace, settings, axes, comparison_json);

    const replay::replayed_profile replayed = replay::replay_profile(*trace, trace_path, settings);
    if (!replayed.error.empty()) return input_error("replay", replayed.error);
    if (const int status = write_output(output, replayed.json); status != exit_ok) return status;
    const replay::replay_result& r = replayed.replay;
    std::fprintf(stderr, "ojx replay: %llu events from %s%s\n", static_cast<unsigned long long>(r.events),
                 trace_path.c_str(), r.complete ? "" : " (no end record: the recording stopped early)");
    if (r.events_lost != 0)
        std::fprintf(stderr, "ojx replay: the recording lost %llu events; the profile misses them\n",
                     static_cast<unsigned long long>(r.events_lost));
    if (r.watchpoint_differences != 0)
        std::fprintf(stderr,
                     "ojx replay: %llu watchpoint arms and disarms differ from the recording's: the recorded traps do "
                     "not all match what this profiler watched (another seed?)\n",
                     static_cast<unsigned long long>(r.watchpoint_differences));
    return exit_ok;
}

} // namespace ojx::tool
