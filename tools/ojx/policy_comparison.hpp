// `ojx replay TRACE --compare KEY=V1,V2 …`: one trace replayed through a grid of configurations (every
// combination of the axes' values, over the options given outside the grid), and the differences between them:
// per configuration the comparisons made, traps, sites with an estimate and how many of them the bounds get right;
// per site θ with its interval and [ω, γ] — next to the truth a trace of every access knows (every object's
// contents: X_N/X and θ), saying whose bounds cover it.
#pragma once

#include "ojx/replay/replay_profile.hpp"
#include "ojx/replay/replica_truth.hpp"

#include <cstddef>
#include <iosfwd>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ojx::tool {

// One axis of the grid: a replay setting (replay_settings.hpp) and the values it takes.
struct comparison_axis {
    std::string key;
    std::vector<std::string> values;
};

// "slots=1,2,4". Nothing, with `error` set to one line, when it is malformed or names a setting or value that
// does not exist.
std::optional<comparison_axis> parse_comparison_axis(std::string_view text, std::string& error);

struct compared_configuration {
    std::string label; // "slots=1 replacement=reservoir"
    replay::replayed_profile replayed;
};

struct policy_comparison {
    std::string error; // one line: a configuration the trace cannot answer, or a damaged trace
    std::vector<compared_configuration> configurations;
    // By compare window (θ's truth depends on it); empty for a trace of samples and traps, which does not know it.
    std::map<std::size_t, replay::replica_truth> truths;
};

policy_comparison compare_policies(std::span<const std::byte> trace, std::string_view name,
                                   const replay::replay_settings& base, const std::vector<comparison_axis>& axes);

void write_comparison_text(std::ostream& out, const policy_comparison& comparison, std::string_view trace);
void write_comparison_json(std::ostream& out, const policy_comparison& comparison, std::string_view trace);

} // namespace ojx::tool
