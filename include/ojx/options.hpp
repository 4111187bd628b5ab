// The one option reader: a table of options (name, kind, default, one line of help) that parsing, defaults and
// help are generated from, read from either syntax users meet —
//  - an agent's option string, `-agentpath:libojx.so=start,file=x.json` or OJX_OPTIONS, in async-profiler's style
//    (parse_options, help_text);
//  - a command line, `--rate 200`, `--rate=200`, `--quiet` (parse_arguments, argument_help_text) —
// with the same kinds, value syntax and error shape: a bad option is named as the user wrote it, an unknown one
// comes with the list of valid ones. Also output file name patterns. No OS dependency (the caller passes pid and
// time); allocates, so not for signal handlers.
//
// The option string's syntax:
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
//  - fraction: a number from 0 to 1, or a percentage: 0.6 or 60%.
//  - text: any non-empty value (file names). choice: one of the declared names, or an alias of one (a name kept
//    because traces or scripts use it; the value read is the name it stands for).
//
// On a command line an option `name` is `--name` with '-' for '_' (track_rate: --track-rate); `-h` is --help
// where a help flag is declared, and a command may give other options a short spelling (-o for --output). A value
// follows after '=' or as the next argument; a flag takes none. The last of repeats wins, as above. Arguments not
// starting with '-' are operands, and so is everything after "--".
#pragma once

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ojx {

enum class option_kind { flag, size, count, duration, rate, text, choice, fraction };

// Another name: `alias` is read as `value` (a choice's other name; on a command line, an option's short spelling).
struct option_alias {
    std::string_view alias;
    std::string_view value;
};

// One declared option. `default_value` is written in the option's own syntax ("10ms", "64m", a choice name) and
// checked by parse_options; it must be empty for flags and may be empty (no value) for text.
struct option_spec {
    // A constructor, not an aggregate, so that a table of options leaves choices and aliases out without a
    // consumer's -Wmissing-field-initializers.
    option_spec(std::string_view option_name, option_kind option, std::string_view default_text = {},
                std::string_view help_text = {}, std::vector<std::string_view> valid = {},
                std::vector<option_alias> other_names = {})
        : name(option_name), kind(option), default_value(default_text), help(help_text), choices(std::move(valid)),
          aliases(std::move(other_names)) {}

    std::string_view name;
    option_kind kind = option_kind::flag;
    std::string_view default_value;
    std::string_view help;
    std::vector<std::string_view> choices; // the valid values of a choice option
    std::vector<option_alias> aliases;     // other names of choices, accepted and not listed as choices
};

// One option's typed value.
struct option_value {
    std::uint64_t number = 0; // flag (0/1), size (bytes), count, duration (ns), rate (per second)
    double real = 0;          // fraction
    std::string text;         // text, choice
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
    double fraction(std::string_view name) const { return at(name, option_kind::fraction).real; }
    // Whether the option string gave this option (rather than its default applying).
    bool given(std::string_view name) const { return entry_named(name).given; }

private:
    struct entry : option_value {
        std::string name;
        option_kind kind;
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
        constexpr std::string_view names[] = {"", "<size>", "<count>", "<duration>", "<rate>", "<text>", "", "<fraction>"};
        return names[static_cast<int>(kind)];
    }
    static std::string_view form(option_kind kind) {
        switch (kind) {
        case option_kind::size: return "a size in bytes: an integer with an optional k, m or g suffix, e.g. 64m";
        case option_kind::count: return "a count: a non-negative integer, e.g. 100";
        case option_kind::duration:
            return "a duration: an integer with ns, us, ms or s (a bare number is ms), e.g. 10ms";
        case option_kind::rate: return "a rate: an integer count per second, e.g. 200 or 200/s";
        case option_kind::fraction: return "a fraction: a number from 0 to 1, or a percentage, e.g. 0.6 or 60%";
        default: return "a value";
        }
    }
    // The kinds whose form help explains, in the order it does.
    static constexpr option_kind explained_kinds[] = {option_kind::size, option_kind::count, option_kind::duration,
                                                      option_kind::rate, option_kind::fraction};

    static std::string joined(std::span<const std::string_view> names, std::string_view separator = ", ") {
        std::string out;
        for (std::string_view n : names) out += (out.empty() ? "" : std::string(separator)) + std::string(n);
        return out;
    }
    // `--name` with '-' for '_': how a declared name is written on a command line.
    static std::string flag_of(std::string_view name) {
        std::string out = "--" + std::string(name);
        std::replace(out.begin() + 2, out.end(), '_', '-');
        return out;
    }
    static std::string valid_names(std::span<const option_spec> specs, bool command_line) {
        std::string out;
        for (const option_spec& s : specs)
            out += (out.empty() ? "" : ", ") + (command_line ? flag_of(s.name) : std::string(s.name));
        return "valid options are: " + out;
    }
    static std::string value_syntax(const option_spec& spec) {
        return spec.kind == option_kind::choice ? joined(spec.choices, "|") : std::string(placeholder(spec.kind));
    }

    // Sets `e` from `value` (absent for a bare name); returns an error message naming `item`, or "". `name` is the
    // option as the user spells it (rate, --rate).
    static std::string assign(option_value& e, const option_spec& spec, std::string_view name, std::string_view item,
                              const std::string_view* value) {
        const std::string quoted = "option '" + std::string(item) + "'";
        if (spec.kind == option_kind::flag) {
            if (value) return quoted + ": " + std::string(name) + " is a flag and takes no value";
            e.number = 1;
            return "";
        }
        if (!value || value->empty()) {
            const std::string_view equals = name.starts_with('-') ? " " : "="; // a command line's option
            return quoted + " needs a value: " + std::string(name) + std::string(equals) + value_syntax(spec);
        }
        if (spec.kind == option_kind::text) {
            e.text = *value;
            return "";
        }
        if (spec.kind == option_kind::choice) {
            std::string_view chosen = *value;
            for (const option_alias& a : spec.aliases)
                if (a.alias == chosen) chosen = a.value;
            if (std::find(spec.choices.begin(), spec.choices.end(), chosen) == spec.choices.end())
                return quoted + ": expected one of " + joined(spec.choices);
            e.text = chosen;
            return "";
        }
        const std::string_view v = *value;
        if (spec.kind == option_kind::fraction) {
            const std::string_view digits = v.ends_with('%') ? v.substr(0, v.size() - 1) : v;
            double number = 0;
            const auto parsed = std::from_chars(digits.data(), digits.data() + digits.size(), number);
            if (v.ends_with('%')) number /= 100;
            if (digits.empty() || parsed.ec != std::errc{} || parsed.ptr != digits.data() + digits.size() ||
                !(number >= 0 && number <= 1))
                return quoted + ": expected " + std::string(form(spec.kind));
            e.real = number;
            return "";
        }
        // A number: decimal digits, then a unit suffix from the kind's table.
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

    // The table checked, and every option at its default: "" or why the table is wrong.
    static std::string declare(std::span<const option_spec> specs, option_values& values) {
        auto& entries = values.entries_;
        for (const option_spec& spec : specs) {
            for (const auto& e : entries)
                if (e.name == spec.name) return "option spec: '" + e.name + "' is declared twice";
            entries.push_back({});
            entries.back().name = spec.name;
            entries.back().kind = spec.kind;
            if (spec.name.empty() || spec.name.find_first_of("=, \t") != std::string_view::npos)
                return "option spec: bad name '" + std::string(spec.name) + "'";
            if (spec.kind == option_kind::choice && spec.choices.empty())
                return "option spec: choice '" + std::string(spec.name) + "' lists no choices";
            const bool no_default = spec.default_value.empty() &&
                                    (spec.kind == option_kind::flag || spec.kind == option_kind::text);
            if (spec.kind == option_kind::flag && !spec.default_value.empty())
                return "option spec: flag '" + std::string(spec.name) + "' cannot have a default";
            if (!no_default) {
                const std::string item = std::string(spec.name) + "=" + std::string(spec.default_value);
                if (std::string message = assign(entries.back(), spec, spec.name, item, &spec.default_value);
                    !message.empty())
                    return "option spec: bad default: " + message;
            }
        }
        return "";
    }

    static option_values::entry& entry_of(option_values& values, std::span<const option_spec> specs,
                                          const option_spec& spec) {
        return values.entries_[static_cast<std::size_t>(&spec - specs.data())];
    }

    static options_result failure(std::string message) {
        options_result r;
        r.error = std::move(message);
        return r;
    }

    static options_result parse(std::string_view text, std::span<const option_spec> specs) {
        options_result result;
        if (std::string message = declare(specs, result.values); !message.empty()) return failure(message);
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
                               "; " + valid_names(specs, false));
            auto& e = entry_of(result.values, specs, *spec);
            if (std::string message =
                    assign(e, *spec, spec->name, item, equals == std::string_view::npos ? nullptr : &value);
                !message.empty())
                return failure(std::move(message));
            e.given = true;
        }
        return result;
    }

    // Every option, one per line, `head` then its help and default, then how each kind used is written.
    template <class Head>
    static std::string listing(std::span<const option_spec> specs, Head head_of) {
        std::vector<std::string> heads;
        std::size_t width = 0;
        for (const option_spec& s : specs) {
            heads.push_back(head_of(s));
            width = std::max(width, heads.back().size());
        }
        std::string out;
        bool used[8] = {};
        for (std::size_t i = 0; i < specs.size(); ++i) {
            const option_spec& s = specs[i];
            used[static_cast<int>(s.kind)] = true;
            out += "  " + heads[i] + std::string(width - heads[i].size() + 2, ' ') + std::string(s.help);
            // An empty default of a number or choice: a table with no defaults (unset means something the
            // caller's help says), as parse_options and parse_arguments accept none.
            if (s.kind == option_kind::flag) out += " (flag, default: off)";
            else if (!s.default_value.empty()) out += " (default: " + std::string(s.default_value) + ")";
            else if (s.kind == option_kind::text) out += " (default: none)";
            for (const option_alias& a : s.aliases)
                out += " (" + std::string(a.alias) + ": another name of " + std::string(a.value) + ")";
            out += "\n";
        }
        for (const auto kind : explained_kinds)
            if (used[static_cast<int>(kind)])
                out += std::string(placeholder(kind)) + ": " + std::string(form(kind)) + "\n";
        return out;
    }
};

// Checks `text` against `specs` (see the syntax at the top of this file). Never throws for a bad option string or
// a bad spec: both come back as `error`.
inline options_result parse_options(std::string_view text, std::span<const option_spec> specs) {
    return options_detail::parse(text, specs);
}

// Every option, one per line, as `name=<kind>  help (default: …)`, then how each kind used is written.
inline std::string help_text(std::span<const option_spec> specs) {
    return "Options, comma-separated (a flag alone, others as name=value; the last of repeats wins):\n" +
           options_detail::listing(specs, [](const option_spec& s) {
               return std::string(s.name) + (s.kind == option_kind::flag ? "" : "=" + options_detail::value_syntax(s));
           });
}

// `--name` with '-' for '_': how an option of a table is written on a command line.
inline std::string option_flag(std::string_view name) { return options_detail::flag_of(name); }

// A command line read against a table, one argument at a time, for commands that act on each option as it comes
// (options whose order matters, operands among them). Each step is an option of the table, read and checked, or
// an operand; an error (an unknown option, a bad value, a missing one) stops the reading.
class argument_reader {
public:
    // `short_names`: short spellings of options of the table, e.g. {"-o", "output"}: read as the option, named as
    // written in messages. Not listed among the valid options, which the command's help names.
    argument_reader(std::span<const std::string_view> args, std::span<const option_spec> specs,
                    std::span<const option_alias> short_names = {})
        : args_(args), specs_(specs), short_names_(short_names) {}

    // Steps to the next argument; false at the end or at an error.
    bool next() {
        option_ = nullptr;
        if (!error_.empty() || at_ >= args_.size()) return false;
        const std::string_view argument = args_[at_++];
        if (!separated_ && argument == "--") {
            separated_ = true;
            return next();
        }
        if (separated_ || argument.size() < 2 || argument.front() != '-') {
            operand_ = argument;
            return true;
        }
        const std::size_t equals = argument.find('=');
        const std::string_view flag = argument.substr(0, equals);
        const auto is_short = [&](const option_spec& spec) {
            if (flag == "-h" && spec.name == "help" && spec.kind == option_kind::flag) return true;
            return std::any_of(short_names_.begin(), short_names_.end(),
                               [&](const option_alias& a) { return a.alias == flag && a.value == spec.name; });
        };
        for (const option_spec& spec : specs_)
            if (options_detail::flag_of(spec.name) == flag || is_short(spec)) option_ = &spec;
        if (option_ == nullptr) {
            error_ = "unknown option '" + std::string(argument) + "'; " + options_detail::valid_names(specs_, true);
            return false;
        }
        value_ = option_value{};
        item_ = argument;
        std::string_view text;
        const std::string_view* given = nullptr;
        if (equals != std::string_view::npos) {
            text = argument.substr(equals + 1);
            given = &text;
        } else if (option_->kind != option_kind::flag && at_ < args_.size()) {
            text = args_[at_++];
            item_ += " " + std::string(text);
            given = &text;
        }
        text_ = text;
        error_ = options_detail::assign(value_, *option_, flag, item_, given);
        return error_.empty();
    }

    // The option just read (null for an operand), its value and its value as written.
    const option_spec* option() const noexcept { return option_; }
    const option_value& value() const noexcept { return value_; }
    std::string_view text() const noexcept { return text_; }
    // The option and its value as written (`--at gc:3`, `--at=gc:3`): what a caller's own check of a value names,
    // as `option '…': expected …`.
    const std::string& item() const noexcept { return item_; }
    std::string_view operand() const noexcept { return operand_; }
    // Whether "--" was passed: what follows it is operands only.
    bool separated() const noexcept { return separated_; }
    // Why the reading stopped early; empty when it did not.
    const std::string& error() const noexcept { return error_; }
    // The arguments not read yet.
    std::span<const std::string_view> rest() const noexcept { return args_.subspan(at_); }

private:
    std::span<const std::string_view> args_;
    std::span<const option_spec> specs_;
    std::span<const option_alias> short_names_;
    std::size_t at_ = 0;
    const option_spec* option_ = nullptr;
    option_value value_;
    std::string item_;
    std::string_view text_, operand_;
    bool separated_ = false;
    std::string error_;
};

// A whole command line read against a table: the values (defaults applied, the last of repeats winning) and the
// operands in order, or the one error.
struct arguments_result {
    option_values values;
    std::vector<std::string> operands;
    std::string error;
    bool ok() const noexcept { return error.empty(); }
};

inline arguments_result parse_arguments(std::span<const std::string_view> args, std::span<const option_spec> specs) {
    arguments_result result;
    result.error = options_detail::declare(specs, result.values);
    argument_reader reader(args, specs);
    while (result.ok() && reader.next()) {
        if (reader.option() == nullptr) {
            result.operands.emplace_back(reader.operand());
            continue;
        }
        auto& e = options_detail::entry_of(result.values, specs, *reader.option());
        static_cast<option_value&>(e) = reader.value();
        e.given = true;
    }
    if (result.ok()) result.error = reader.error();
    if (!result.ok()) result.values = option_values{};
    return result;
}

// Every option, one per line, as `--name <kind>  help (default: …)`, then how each kind used is written.
inline std::string argument_help_text(std::span<const option_spec> specs) {
    return options_detail::listing(specs, [](const option_spec& s) {
        return option_flag(s.name) + (s.kind == option_kind::flag ? "" : " " + options_detail::value_syntax(s));
    });
}

// One value of `spec`'s kind read from `text` (an option's value found by other means than the readers above,
// e.g. one of a list): "" or the error, naming `item`.
inline std::string read_option_value(const option_spec& spec, std::string_view item, std::string_view text,
                                     option_value& into) {
    return options_detail::assign(into, spec, spec.name, item, &text);
}

// The timestamp %t stands for in file names, from a local time the caller broke down (localtime_r): YYYYmmdd-HHMMSS,
// the same wherever a name is made (an agent naming its profile, `ojx run` naming a merged one).
inline std::string file_timestamp(const std::tm& local) {
    char text[32];
    const std::size_t length = std::strftime(text, sizeof text, "%Y%m%d-%H%M%S", &local);
    return std::string(text, length);
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
