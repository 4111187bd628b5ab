// The settings a replay may change, by the names `ojx replay` takes them (`--slots 2`, `--compare slots=1,2,4`),
// and which traces can answer them. A trace of samples and traps answers only the estimator's settings (and, for
// study, another profiler seed); everything that decides which accesses are sampled, which pairs are watched and
// when they are compared needs a trace of every access (trace_replay.hpp and access_replay.hpp say why).
#pragma once

#include "ojx/emulation/emulated_watchpoints.hpp"
#include "ojx/pairing_policy.hpp"
#include "ojx/watchpoint_pool.hpp"

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
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
    std::optional<std::string> trigger;          // loads-and-stores, loads-only, at-sample
    std::optional<std::string> replacement;      // reservoir, oldest-first, keep-armed
    std::optional<std::string> pairing;          // reservoir, recent
    std::optional<std::size_t> window;           // bytes compared around a probed word
};

struct replay_setting_name {
    std::string_view key;
    std::string_view values; // what it takes, for messages
};

inline constexpr replay_setting_name replay_setting_names[] = {
    {"min-comparisons", "a count"},
    {"confidence", "a fraction, e.g. 0.99 or 99%"},
    {"seed", "a count"},
    {"period", "a count >= 1"},
    {"sampling", "randomized or fixed"},
    {"sampler-seed", "a count"},
    {"slots", "0 to 16"},
    {"trigger", "loads-and-stores, loads-only or at-sample"},
    {"replacement", "reservoir, oldest-first or keep-armed"},
    {"pairing", "reservoir or recent"},
    {"window", "bytes, 0 for the word only"},
};

inline const replay_setting_name* find_replay_setting(std::string_view key) {
    for (const auto& name : replay_setting_names)
        if (name.key == key) return &name;
    return nullptr;
}

// Sets `key` from `text`. Returns why not: an unknown key, or a value it does not take.
inline std::optional<std::string> set_replay_setting(replay_settings& settings, std::string_view key,
                                                     std::string_view text) {
    const replay_setting_name* name = find_replay_setting(key);
    if (name == nullptr) {
        std::string known;
        for (const auto& n : replay_setting_names) known += (known.empty() ? "" : ", ") + std::string(n.key);
        return "unknown setting '" + std::string(key) + "' (valid: " + known + ")";
    }
    const auto bad = [&] {
        return std::optional<std::string>(std::string(key) + " takes " + std::string(name->values) + ", not '" +
                                          std::string(text) + "'");
    };
    const auto count = [&]() -> std::optional<std::uint64_t> {
        std::uint64_t value = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (error != std::errc{} || end != text.data() + text.size()) return std::nullopt;
        return value;
    };
    if (key == "confidence") {
        std::string copy(text);
        const bool percent = !copy.empty() && copy.back() == '%';
        if (percent) copy.pop_back();
        char* end = nullptr;
        const double value = std::strtod(copy.c_str(), &end);
        if (copy.empty() || end != copy.c_str() + copy.size()) return bad();
        const double fraction = percent ? value / 100 : value;
        if (!(fraction > 0 && fraction < 1)) return bad();
        settings.confidence = fraction;
    } else if (key == "sampling") {
        if (text != "randomized" && text != "fixed") return bad();
        settings.randomized = text == "randomized";
    } else if (key == "trigger") {
        if (!emulation::parse_watch_trigger(text)) return bad();
        settings.trigger = std::string(text);
    } else if (key == "replacement") {
        if (text != reservoir_replacement::name && text != oldest_first_replacement::name &&
            text != keep_armed_replacement::name)
            return bad();
        settings.replacement = std::string(text);
    } else if (key == "pairing") {
        if (text != reservoir_pairing::name && text != recent_pairing::name) return bad();
        settings.pairing = std::string(text);
    } else {
        const auto value = count();
        if (!value) return bad();
        if (key == "min-comparisons") settings.min_comparisons = *value;
        else if (key == "seed") settings.seed = *value;
        else if (key == "period") {
            if (*value == 0) return bad();
            settings.period = *value;
        } else if (key == "sampler-seed") settings.sampler_seed = *value;
        else if (key == "slots") {
            if (*value > max_watchpoint_slots) return bad();
            settings.slots = static_cast<std::size_t>(*value);
        } else settings.window = static_cast<std::size_t>(*value);
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
