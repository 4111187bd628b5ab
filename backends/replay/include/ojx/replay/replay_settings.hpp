// The settings a replay may change, by the names `ojx replay` takes them (`--slots 2`, `--compare slots=1,2,4`),
// and which traces can answer them. A trace of samples and traps answers only the estimator's settings (and, for
// study, another profiler seed); everything that decides which accesses are sampled, which pairs are watched and
// when they are compared needs a trace of every access (trace_replay.hpp and access_replay.hpp say why).
#pragma once

#include "ojx/emulation/emulated_watchpoints.hpp"
#include "ojx/options.hpp"
#include "ojx/pairing_policy.hpp"
#include "ojx/watchpoint_pool.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ojx::replay {

// Unset: as recorded.
struct replay_settings {
    // Any trace.
    std::optional<std::uint64_t> min_comparisons;
    std::optional<double> confidence;
    // The profiler's seed. On a trace of samples and traps another seed makes the profiler pair and watch other
    // objects than the recording did, so the recorded traps no longer match (they count as stale): allowed, for
    // studying exactly that, and reported as watchpoint differences. On a trace of every access it is answered.
    std::optional<std::uint64_t> seed;
    // A trace of every access only.
    std::optional<std::uint64_t> period;         // the sampler's mean accesses between samples
    std::optional<bool> randomized;              // geometric gaps (true) or a fixed period
    std::optional<std::uint64_t> sampler_seed;
    std::optional<std::size_t> slots;            // watchpoint slots
    std::optional<emulation::watch_trigger> trigger;
    std::optional<std::string> replacement;      // reservoir, oldest-first, keep-armed
    std::optional<std::string> pairing;          // reservoir, recent
    std::optional<std::size_t> window;           // bytes compared around a probed word
};

// The settings by the names `ojx replay` takes them (`--slots 2`, and as `--compare` axes `slots=1,2`), in two
// tables: those any trace answers, and those only a trace of every access does. Reading, messages and the help of
// `ojx replay` come from them (ojx/options.hpp); no defaults: unset is as recorded.
//
// The trigger's names are those of the agents' compare= where they mean the same: `sample` compares at the sample
// (the agents' compare=sample). `at-sample`, as traces name it (watchpoints.trigger) and scripts wrote it, is
// accepted as its alias.
inline const std::vector<option_spec>& replay_any_trace_settings() {
    static const std::vector<option_spec> table = {
        {"min-comparisons", option_kind::count, "", "judge each site with this minimum number of comparisons"},
        {"confidence", option_kind::fraction, "", "confidence of the intervals, above 0 and below 1"},
        {"seed", option_kind::count, "",
         "the profiler's seed (pairing, replacement draws). On a trace of samples and traps it runs, but most "
         "recorded traps then match nothing watched (ojx replay says how many watchpoint calls differed)"},
    };
    return table;
}

inline const std::vector<option_spec>& replay_every_access_settings() {
    static const std::vector<option_spec> table = {
        {"period", option_kind::count, "", "the sampler's mean accesses between samples, at least 1"},
        {"sampling", option_kind::choice, "", "geometric gaps with that mean, or exactly every N-th access",
         {"randomized", "fixed"}},
        {"sampler-seed", option_kind::count, "", "the sampler's seed"},
        {"slots", option_kind::count, "", "watchpoint slots (debug registers), 0 to 16"},
        {"trigger", option_kind::choice, "",
         "when a watched pair is compared: at the next access (x86 watchpoints), the next load, or at once as the "
         "sample arrives (the agents' compare=sample)",
         {"loads-and-stores", "loads-only", "sample"},
         {{"at-sample", "sample"}}},
        {"replacement", option_kind::choice, "", "which armed watchpoint a new candidate replaces",
         {reservoir_replacement::name, oldest_first_replacement::name, keep_armed_replacement::name}},
        {"pairing", option_kind::choice, "", "which earlier object a sampled one is compared with",
         {reservoir_pairing::name, recent_pairing::name}},
        {"window", option_kind::size, "", "bytes compared around a probed word; 0: the word only"},
    };
    return table;
}

inline const option_spec* find_replay_setting(std::string_view key) {
    for (const auto* table : {&replay_any_trace_settings(), &replay_every_access_settings()})
        for (const option_spec& spec : *table)
            if (spec.name == key) return &spec;
    return nullptr;
}

// Sets `key` from `text`. Returns why not, in the option reader's shape: an unknown key (with the valid ones), or a
// value it does not take, naming the setting as the user wrote it (`written`: `--slots 99` on a command line;
// empty: `key=text`, as in `--compare slots=1,99`).
inline std::optional<std::string> set_replay_setting(replay_settings& settings, std::string_view key,
                                                     std::string_view text, std::string_view written = {}) {
    const option_spec* spec = find_replay_setting(key);
    if (spec == nullptr) {
        std::string known;
        for (const auto* table : {&replay_any_trace_settings(), &replay_every_access_settings()})
            for (const option_spec& s : *table) known += (known.empty() ? "" : ", ") + std::string(s.name);
        return "unknown setting '" + std::string(key) + "'; valid settings are: " + known;
    }
    const std::string item = written.empty() ? std::string(key) + "=" + std::string(text) : std::string(written);
    option_value value;
    if (std::string error = read_option_value(*spec, item, text, value); !error.empty()) return error;
    const auto out_of_range = [&](const std::string& range) {
        return std::optional<std::string>("option '" + item + "': expected " + range);
    };
    if (key == "confidence") {
        if (!(value.real > 0 && value.real < 1)) return out_of_range("a fraction above 0 and below 1, e.g. 0.99 or 99%");
        settings.confidence = value.real;
    } else if (key == "sampling") {
        settings.randomized = value.text == "randomized";
    } else if (key == "trigger") {
        settings.trigger = value.text == "sample" ? emulation::watch_trigger::at_sample
                                                  : *emulation::parse_watch_trigger(value.text);
    } else if (key == "replacement") {
        settings.replacement = value.text;
    } else if (key == "pairing") {
        settings.pairing = value.text;
    } else if (key == "min-comparisons") {
        settings.min_comparisons = value.number;
    } else if (key == "seed") {
        settings.seed = value.number;
    } else if (key == "period") {
        if (value.number == 0) return out_of_range("a count of at least 1");
        settings.period = value.number;
    } else if (key == "sampler-seed") {
        settings.sampler_seed = value.number;
    } else if (key == "slots") {
        if (value.number > max_watchpoint_slots)
            return out_of_range("0 to " + std::to_string(max_watchpoint_slots) + " slots");
        settings.slots = static_cast<std::size_t>(value.number);
    } else {
        settings.window = static_cast<std::size_t>(value.number);
    }
    return std::nullopt;
}

// The settings given that need a trace of every access, by key.
inline std::vector<std::string_view> every_access_settings(const replay_settings& s) {
    std::vector<std::string_view> given;
    if (s.period) given.push_back("period");
    if (s.randomized) given.push_back("sampling");
    if (s.sampler_seed) given.push_back("sampler-seed");
    if (s.slots) given.push_back("slots");
    if (s.trigger) given.push_back("trigger");
    if (s.replacement) given.push_back("replacement");
    if (s.pairing) given.push_back("pairing");
    if (s.window) given.push_back("window");
    return given;
}

} // namespace ojx::replay
