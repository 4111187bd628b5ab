#include "jvm_options.hpp"

#include "ojx/options.hpp"

#include <algorithm>
#include <charconv>
#include <optional>
#include <string_view>

namespace ojx::tool {

namespace {

// The typed options of run and attach, each the agent option of the same name and kind (spelt with '-' for '_'
// on ojx's command line).
struct typed_option {
    std::string_view name;
    option_kind kind;
    std::string_view valid_default; // any value of the kind: parse_options checks the declared default too
    std::string_view flag;
};
constexpr typed_option typed_options[] = {
    {"rate", option_kind::rate, "1", "--rate"},
    {"track_rate", option_kind::count, "1", "--track-rate"},
    {"interval", option_kind::size, "1", "--interval"},
    {"threshold", option_kind::size, "1", "--threshold"},
    {"duration", option_kind::duration, "0", "--duration"},
};

// One `--name VALUE` or `--name=VALUE` (or a bare flag) taken off the front of the arguments.
class argument_reader {
public:
    explicit argument_reader(arguments args) : args_(args) {}

    bool done() const noexcept { return next_ >= args_.size(); }
    std::string_view take() { return args_[next_++]; }
    arguments rest() const { return args_.subspan(next_); }

    // The option's name ("--rate" of "--rate=5") and whether a value was attached with '='.
    static std::string_view name_of(std::string_view argument) {
        return argument.substr(0, argument.find('='));
    }

    // The value of the option just taken: after its '=', or the next argument. Sets `error` if there is none.
    std::string_view value_of(std::string_view argument, std::string& error) {
        if (const std::size_t equals = argument.find('='); equals != std::string_view::npos)
            return argument.substr(equals + 1);
        if (done()) {
            error = std::string(argument) + " needs a value";
            return {};
        }
        return take();
    }

private:
    arguments args_;
    std::size_t next_ = 0;
};

bool is_help(std::string_view argument) { return argument == "--help" || argument == "-h"; }

// The agent's option syntax separates items with ',': a value cannot hold one.
std::string check_agent_value(std::string_view option, std::string_view value) {
    if (value.empty()) return std::string(option) + " needs a value";
    if (value.find(',') != std::string_view::npos)
        return std::string(option) + " '" + std::string(value) + "': the agent's options cannot contain ','";
    return {};
}

// Checks a typed option's value with the agent's own parser; the agent item ("rate=1000") or an error.
std::string typed_item(const typed_option& option, std::string_view value, std::string& error) {
    error = check_agent_value(option.flag, value);
    if (!error.empty()) return {};
    const option_spec spec{option.name, option.kind, option.valid_default, ""};
    const std::string item = std::string(option.name) + "=" + std::string(value);
    const options_result result = parse_options(item, std::span<const option_spec>(&spec, 1));
    if (!result.ok()) {
        // "option 'rate=fast': expected a rate: …" → "--rate 'fast': expected a rate: …"
        const std::string prefix = "option '" + item + "': ";
        const bool shaped = result.error.rfind(prefix, 0) == 0;
        error = std::string(option.flag) + " '" + std::string(value) +
                "': " + (shaped ? result.error.substr(prefix.size()) : result.error);
        return {};
    }
    return item;
}

// Reads one option of run and attach if `argument` is one: true if it was (error set when its value is bad).
bool read_profiling_option(std::string_view argument, argument_reader& reader, profiling_options& options,
                           std::string& error) {
    const std::string_view name = argument_reader::name_of(argument);
    if (name == "--agent") {
        const std::string_view value = reader.value_of(argument, error);
        if (error.empty() && value.empty()) error = "--agent needs a value";
        options.agent = value;
        return true;
    }
    if (name == "--file") {
        const std::string_view value = reader.value_of(argument, error);
        if (error.empty()) error = check_agent_value("--file", value);
        options.file = value;
        return true;
    }
    if (name == "--option") {
        const std::string_view value = reader.value_of(argument, error);
        if (error.empty() && value.empty()) error = "--option needs a value (agent options, e.g. sampler=timer)";
        options.settings.emplace_back(value);
        return true;
    }
    for (const typed_option& option : typed_options) {
        if (name != option.flag) continue;
        const std::string_view value = reader.value_of(argument, error);
        if (error.empty()) options.settings.push_back(typed_item(option, value, error));
        return true;
    }
    return false;
}

std::optional<pid_t> process_id(std::string_view text) {
    int value = 0;
    const auto [end, code] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (code != std::errc{} || end != text.data() + text.size() || value <= 0) return std::nullopt;
    return static_cast<pid_t>(value);
}

std::string unknown_option(std::string_view argument) {
    return "unknown option '" + std::string(argument) + "'";
}

// The PID argument of attach and dump: exactly one, a positive number.
void read_pid(std::string_view argument, pid_t& pid, std::string& error) {
    if (pid != 0) {
        error = "unexpected argument '" + std::string(argument) + "' (one process id only)";
    } else if (const auto id = process_id(argument)) {
        pid = *id;
    } else {
        error = "'" + std::string(argument) + "' is not a process id";
    }
}

} // namespace

std::string profiling_options::agent_options() const {
    std::string out = "start,file=" + file;
    for (const std::string& setting : settings) out += "," + setting;
    return out;
}

std::string profiling_options::profile_file() const {
    std::string found;
    const std::string options = agent_options();
    for (std::size_t start = 0; start <= options.size();) {
        const std::size_t comma = std::min(options.find(',', start), options.size());
        std::string_view item = std::string_view(options).substr(start, comma - start);
        while (item.starts_with(' ')) item.remove_prefix(1);
        if (const std::size_t equals = item.find('='); equals != std::string_view::npos) {
            std::string_view name = item.substr(0, equals), value = item.substr(equals + 1);
            while (name.ends_with(' ')) name.remove_suffix(1);
            while (value.starts_with(' ')) value.remove_prefix(1);
            while (value.ends_with(' ')) value.remove_suffix(1);
            if (name == "file") found = value;
        }
        start = comma + 1;
    }
    return found;
}

std::string dump_command_line::agent_options() const {
    std::string out = stop ? "stop" : "dump";
    if (!file.empty()) out += ",file=" + file;
    return out;
}

parsed<run_command_line> parse_run_command_line(arguments args) {
    parsed<run_command_line> result;
    argument_reader reader(args);
    bool separated = false;
    while (!reader.done() && result.ok()) {
        const std::string_view argument = reader.take();
        if (argument == "--") {
            separated = true;
            break;
        }
        if (is_help(argument)) {
            result.line.help = true;
            return result;
        }
        if (!read_profiling_option(argument, reader, result.line.profiling, result.error))
            result.error = argument.starts_with("-") ? unknown_option(argument)
                                                     : "unexpected '" + std::string(argument) +
                                                           "': the java command goes after '--'";
    }
    if (!result.ok()) return result;
    if (!separated) {
        result.error = "no java command: give it after '--'";
        return result;
    }
    for (const std::string_view word : reader.rest()) result.line.command.emplace_back(word);
    if (result.line.command.empty()) result.error = "nothing after '--': give the java command there";
    return result;
}

parsed<attach_command_line> parse_attach_command_line(arguments args) {
    parsed<attach_command_line> result;
    argument_reader reader(args);
    while (!reader.done() && result.ok()) {
        const std::string_view argument = reader.take();
        if (is_help(argument)) {
            result.line.help = true;
            return result;
        }
        if (read_profiling_option(argument, reader, result.line.profiling, result.error)) continue;
        if (argument.starts_with("-")) result.error = unknown_option(argument);
        else read_pid(argument, result.line.pid, result.error);
    }
    if (result.ok() && result.line.pid == 0) result.error = "no process id";
    return result;
}

parsed<dump_command_line> parse_dump_command_line(arguments args) {
    parsed<dump_command_line> result;
    argument_reader reader(args);
    while (!reader.done() && result.ok()) {
        const std::string_view argument = reader.take();
        const std::string_view name = argument_reader::name_of(argument);
        if (is_help(argument)) {
            result.line.help = true;
            return result;
        }
        if (argument == "--stop") {
            result.line.stop = true;
        } else if (name == "--file") {
            const std::string_view value = reader.value_of(argument, result.error);
            if (result.ok()) result.error = check_agent_value("--file", value);
            result.line.file = value;
        } else if (name == "--agent") {
            const std::string_view value = reader.value_of(argument, result.error);
            if (result.ok() && value.empty()) result.error = "--agent needs a value";
            result.line.agent = value;
        } else if (argument.starts_with("-")) {
            result.error = unknown_option(argument);
        } else {
            read_pid(argument, result.line.pid, result.error);
        }
    }
    if (result.ok() && result.line.pid == 0) result.error = "no process id";
    return result;
}

} // namespace ojx::tool
