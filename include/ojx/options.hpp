// Agent options: the one syntax both agents accept — the JVMTI agent's `-agentpath:libojx.so=start,file=x.json`
// and the native agent's OJX_OPTIONS environment variable — in async-profiler's style. The caller declares its
// options (name, kind, default, one line of help); parse_options() checks a string against them and returns the
// typed values with defaults applied, or a message fit to show the user. Also the help listing and output file
// name patterns. No OS dependency (the caller passes pid and time); allocates, so not for signal handlers.
//
// The syntax:
//  - items are separated by ','; each is `name=value` or a bare flag `name`. Spaces around names and values are
//    trimmed. A value cannot contain ',' (it may contain '='). Names, choices and text are case-sensitive; unit
//    suffixes are not.
//  - empty items are ignored: ",," and a trailing comma are harmless, and "" gives every default.
//  - an option given twice: the last one wins, so a wrapper can put its defaults first and the user's options
//    after them. Every occurrence must still be valid.
//  - flag: off unless given; the bare name sets it, `name=value` is an error.
//  - size: bytes, an integer with an optional k, m or g suffix (binary: 1k = 1024): 4096, 1k, 64M.
//  - count: a non-negative decimal integer.
//  - duration: an integer with ns, us, ms or s; a bare number is in milliseconds. Read as std::chrono::nanoseconds.
//  - rate: events per second, an integer with an optional "/s": 200 or 200/s.
//  - text: any non-empty value (file names). choice: one of the declared names.
#pragma once

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ojx {

enum class option_kind { flag, size, count, duration, rate, text, choice };

// One declared option. `default_value` is written in the option's own syntax ("10ms", "64m", a choice name) and
// checked by parse_options; it must be empty for flags and may be empty (no value) for text.
struct option_spec {
    std::string_view name;
    option_kind kind = option_kind::flag;
    std::string_view default_value;
    std::string_view help;
    std::vector<std::string_view> choices; // the valid values of a choice option
};

// Parsed values, defaults applied. Reading an undeclared name, or a name with the wrong kind's accessor, is a
// programming error and throws std::logic_error.
class option_values {
public:
    bool flag(std::string_view name) const { return at(name, option_kind::flag).number != 0; }
    std::uint64_t size(std::string_view name) const { return at(name, option_kind::size).number; }
    std::uint64_t count(std::string_view name) const { return at(name, option_kind::count).number; }
    std::chrono::nanoseconds duration(std::string_view name) const {
        return std::chrono::nanoseconds(static_cast<std::int64_t>(at(name, option_kind::duration).number));
    }
    std::uint64_t rate(std::string_view name) const { return at(name, option_kind::rate).number; } // per second
    const std::string& text(std::string_view name) const { return at(name, option_kind::text).text; }
    const std::string& choice(std::string_view name) const { return at(name, option_kind::choice).text; }
    // Whether the option string gave this option (rather than its default applying).
    bool given(std::string_view name) const { return entry_named(name).given; }

private:
    struct entry {
        std::string name;
        option_kind kind;
        std::uint64_t number = 0; // flag (0/1), size (bytes), count, duration (ns), rate (per second)
        std::string text;         // text, choice
        bool given = false;
    };
    std::vector<entry> entries_;

    const entry& entry_named(std::string_view name) const {
        for (const entry& e : entries_)
            if (e.name == name) return e;
        throw std::logic_error("ojx options: no option named '" + std::string(name) + "' was declared");
    }
    const entry& at(std::string_view name, option_kind kind) const {
        const entry& e = entry_named(name);
        if (e.kind != kind) throw std::logic_error("ojx options: '" + std::string(name) + "' read as the wrong kind");
        return e;
    }
    friend struct options_detail;
};

// Either the values (`error` empty) or why the option string was rejected (`values` empty).
struct options_result {
    option_values values;
    std::string error;
    bool ok() const noexcept { return error.empty(); }
};

struct options_detail {
    struct unit {
        std::string_view suffix; // lower case
        std::uint64_t factor;
    };

    static std::string_view trim(std::string_view s) {
        while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
        while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
        return s;
    }

    static std::span<const unit> units(option_kind kind) {
        static constexpr unit size_units[] = {{"", 1}, {"k", 1ULL << 10}, {"m", 1ULL << 20}, {"g", 1ULL << 30}};
        static constexpr unit count_units[] = {{"", 1}};
        static constexpr unit duration_units[] = {
            {"", 1'000'000}, {"ns", 1}, {"us", 1'000}, {"ms", 1'000'000}, {"s", 1'000'000'000}};
        static constexpr unit rate_units[] = {{"", 1}, {"/s", 1}};
        switch (kind) {
        case option_kind::size: return size_units;
        case option_kind::duration: return duration_units;
        case option_kind::rate: return rate_units;
        default: return count_units;
        }
    }

    // How a value of this kind is written: the placeholder in help, and the expected form in error messages.
    static std::string_view placeholder(option_kind kind) {
        constexpr std::string_view names[] = {"", "<size>", "<count>", "<duration>", "<rate>", "<text>", ""};
        return names[static_cast<int>(kind)];
    }
    static std::string_view form(option_kind kind) {
        switch (kind) {
        case option_kind::size: return "a size in bytes: an integer with an optional k, m or g suffix, e.g. 64m";
        case option_kind::count: return "a count: a non-negative integer, e.g. 100";
        case option_kind::duration:
            return "a duration: an integer with ns, us, ms or s (a bare number is ms), e.g. 10ms";
        case option_kind::rate: return "a rate: an integer count per second, e.g. 200 or 200/s";
        default: return "a value";
        }
    }

    static std::string joined(std::span<const std::string_view> names, std::string_view separator = ", ") {
        std::string out;
        for (std::string_view n : names) out += (out.empty() ? "" : std::string(separator)) + std::string(n);
        return out;
    }
    static std::string valid_names(std::span<const option_spec> specs) {
        std::vector<std::string_view> names;
        for (const option_spec& s : specs) names.push_back(s.name);
        return "valid options are: " + joined(names);
    }

    // Sets `e` from `value` (absent for a bare name); returns an error message naming `item`, or "".
    static std::string assign(option_values::entry& e, const option_spec& spec, std::string_view item,
                              const std::string_view* value) {
        const std::string quoted = "option '" + std::string(item) + "'";
        if (spec.kind == option_kind::flag) {
            if (value) return quoted + ": " + std::string(spec.name) + " is a flag and takes no value";
            e.number = 1;
            return "";
        }
        if (!value || value->empty()) {
            const std::string syntax = spec.kind == option_kind::choice
                                           ? joined(spec.choices, "|")
                                           : std::string(placeholder(spec.kind));
            return quoted + " needs a value: " + std::string(spec.name) + "=" + syntax;
        }
        if (spec.kind == option_kind::text) {
            e.text = *value;
            return "";
        }
        if (spec.kind == option_kind::choice) {
            if (std::find(spec.choices.begin(), spec.choices.end(), *value) == spec.choices.end())
                return quoted + ": expected one of " + joined(spec.choices);
            e.text = *value;
            return "";
        }
        // A number: decimal digits, then a unit suffix from the kind's table.
        const std::string_view v = *value;
        const std::size_t digits = static_cast<std::size_t>(
            std::find_if(v.begin(), v.end(), [](char c) { return c < '0' || c > '9'; }) - v.begin());
        std::string suffix(v.substr(digits));
        for (char& c : suffix)
            if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
        const auto table = units(spec.kind);
        const auto u = std::find_if(table.begin(), table.end(), [&](const unit& x) { return x.suffix == suffix; });
        if (digits == 0 || u == table.end()) return quoted + ": expected " + std::string(form(spec.kind));
        std::uint64_t n = 0;
        const auto parsed = std::from_chars(v.data(), v.data() + digits, n);
        std::uint64_t limit = std::numeric_limits<std::uint64_t>::max();
        if (spec.kind == option_kind::duration) limit = std::numeric_limits<std::int64_t>::max(); // ns in int64
        if (parsed.ec != std::errc{} || n > limit / u->factor)
            return quoted + ": out of range for " + std::string(form(spec.kind));
        e.number = n * u->factor;
        return "";
    }

    static options_result failure(std::string message) {
        options_result r;
        r.error = std::move(message);
        return r;
    }

    static options_result parse(std::string_view text, std::span<const option_spec> specs) {
        options_result result;
        auto& entries = result.values.entries_;
        for (const option_spec& spec : specs) {
            for (const auto& e : entries)
                if (e.name == spec.name) return failure("option spec: '" + e.name + "' is declared twice");
            entries.push_back({std::string(spec.name), spec.kind, 0, {}, false});
            if (spec.name.empty() || spec.name.find_first_of("=, \t") != std::string_view::npos)
                return failure("option spec: bad name '" + std::string(spec.name) + "'");
            if (spec.kind == option_kind::choice && spec.choices.empty())
                return failure("option spec: choice '" + std::string(spec.name) + "' lists no choices");
            const bool no_default = spec.default_value.empty() &&
                                    (spec.kind == option_kind::flag || spec.kind == option_kind::text);
            if (spec.kind == option_kind::flag && !spec.default_value.empty())
                return failure("option spec: flag '" + std::string(spec.name) + "' cannot have a default");
            if (!no_default) {
                const std::string item = std::string(spec.name) + "=" + std::string(spec.default_value);
                if (std::string message = assign(entries.back(), spec, item, &spec.default_value); !message.empty())
                    return failure("option spec: bad default: " + message);
            }
        }
        while (!text.empty()) {
            const std::size_t comma = text.find(',');
            const std::string_view item = trim(text.substr(0, comma));
            text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
            if (item.empty()) continue;
            const std::size_t equals = item.find('=');
            const std::string_view name = trim(item.substr(0, equals));
            const std::string_view value = equals == std::string_view::npos ? "" : trim(item.substr(equals + 1));
            const auto spec = std::find_if(specs.begin(), specs.end(), [&](const auto& s) { return s.name == name; });
            if (spec == specs.end())
                return failure((name.empty() ? "option '" + std::string(item) + "' has no name"
                                             : "unknown option '" + std::string(item) + "'") +
                               "; " + valid_names(specs));
            auto& e = entries[static_cast<std::size_t>(spec - specs.begin())];
            if (std::string message = assign(e, *spec, item, equals == std::string_view::npos ? nullptr : &value);
                !message.empty())
                return failure(std::move(message));
            e.given = true;
        }
        return result;
    }
};

// Checks `text` against `specs` (see the syntax at the top of this file). Never throws for a bad option string or
// a bad spec: both come back as `error`.
inline options_result parse_options(std::string_view text, std::span<const option_spec> specs) {
    return options_detail::parse(text, specs);
}

// Every option, one per line, as `name=<kind>  help (default: …)`, then how each kind used is written.
inline std::string help_text(std::span<const option_spec> specs) {
    std::vector<std::string> syntax;
    std::size_t width = 0;
    for (const option_spec& s : specs) {
        std::string head = std::string(s.name);
        if (s.kind == option_kind::choice) head += "=" + options_detail::joined(s.choices, "|");
        else if (s.kind != option_kind::flag) head += "=" + std::string(options_detail::placeholder(s.kind));
        width = std::max(width, head.size());
        syntax.push_back(std::move(head));
    }
    std::string out = "Options, comma-separated (a flag alone, others as name=value; the last of repeats wins):\n";
    bool used[7] = {};
    for (std::size_t i = 0; i < specs.size(); ++i) {
        const option_spec& s = specs[i];
        used[static_cast<int>(s.kind)] = true;
        out += "  " + syntax[i] + std::string(width - syntax[i].size() + 2, ' ') + std::string(s.help);
        if (s.kind == option_kind::flag) out += " (flag, default: off)";
        else if (s.default_value.empty()) out += " (default: none)";
        else out += " (default: " + std::string(s.default_value) + ")";
        out += "\n";
    }
    for (const auto kind : {option_kind::size, option_kind::count, option_kind::duration, option_kind::rate})
        if (used[static_cast<int>(kind)])
            out += std::string(options_detail::placeholder(kind)) + ": " +
                   std::string(options_detail::form(kind)) + "\n";
    return out;
}

// An output file name from a pattern: %p becomes the process id, %t the timestamp the caller formatted, %% a
// single %. Any other % is kept as written.
inline std::string expand_file_name(std::string_view pattern, std::uint64_t pid, std::string_view timestamp) {
    std::string out;
    for (std::size_t i = 0; i < pattern.size(); ++i) {
        const char next = i + 1 < pattern.size() ? pattern[i + 1] : '\0';
        if (pattern[i] != '%' || (next != 'p' && next != 't' && next != '%')) {
            out += pattern[i];
            continue;
        }
        if (next == 'p') out += std::to_string(pid);
        else if (next == 't') out += timestamp;
        else out += '%';
        ++i;
    }
    return out;
}

} // namespace ojx
