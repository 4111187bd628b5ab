#include "jvm_options.hpp"

#include "ojx/options.hpp"

#include <algorithm>
#include <charconv>
#include <optional>
#include <string_view>

namespace ojx::tool {

namespace {

// The options of run and attach: the tool's own (agent, file, option) and the agent's typed options of the same
// names and kinds (on ojx's command line spelt with '-' for '_'), read with the agent's own syntax
// (ojx/options.hpp) so that a typo is a usage error naming the option rather than a JVM that refuses to start.
// The defaults are never read: what the agent is not given, it decides.
const option_spec profiling_specs[] = {
    {"agent", option_kind::text, "", ""},
    {"file", option_kind::text, "", ""},
    {"option", option_kind::text, "", ""},
    {"rate", option_kind::rate, "", ""},
    {"track_rate", option_kind::count, "", ""},
    {"interval", option_kind::size, "", ""},
    {"threshold", option_kind::size, "", ""},
    {"duration", option_kind::duration, "", ""},
    {"help", option_kind::flag, "", ""},
};

const option_spec dump_specs[] = {
    {"agent", option_kind::text, "", ""},
    {"file", option_kind::text, "", ""},
    {"stop", option_kind::flag, "", ""},
    {"help", option_kind::flag, "", ""},
};

// The agent's option syntax separates items with ',': a value cannot hold one.
std::string check_agent_value(std::string_view option, std::string_view value) {
    if (value.find(',') != std::string_view::npos)
        return std::string(option) + " '" + std::string(value) + "': the agent's options cannot contain ','";
    return {};
}

// Takes the option `reader` has just read into `options` if it is one of run and attach; `error` set when its
// value cannot go to the agent.
void take_profiling_option(const argument_reader& reader, profiling_options& options, std::string& error) {
    const std::string_view name = reader.option()->name;
    const std::string_view value = reader.text();
    if (name == "agent") {
        options.agent = value;
    } else if (name == "option") {
        options.settings.emplace_back(value);
    } else {
        error = check_agent_value(option_flag(name), value);
        if (name == "file") options.file = value;
        else options.settings.push_back(std::string(name) + "=" + std::string(value));
    }
}

std::optional<pid_t> process_id(std::string_view text) {
    int value = 0;
    const auto [end, code] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (code != std::errc{} || end != text.data() + text.size() || value <= 0) return std::nullopt;
    return static_cast<pid_t>(value);
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
    argument_reader reader(args, profiling_specs);
    bool separated = false;
    while (result.ok() && reader.next()) {
        if (reader.option() == nullptr) {
            if (!reader.separated()) {
                result.error = "unexpected '" + std::string(reader.operand()) + "': the command goes after '--'";
                return result;
            }
            // The command, whole: what follows '--' is the java launcher's, options of ojx's names included.
            separated = true;
            result.line.command.emplace_back(reader.operand());
            for (const std::string_view word : reader.rest()) result.line.command.emplace_back(word);
            break;
        }
        if (reader.option()->name == "help") {
            result.line.help = true;
            return result;
        }
        take_profiling_option(reader, result.line.profiling, result.error);
    }
    if (result.ok()) result.error = reader.error();
    if (!result.ok()) return result;
    if (!separated && !reader.separated()) result.error = "no command: give it after '--'";
    else if (result.line.command.empty()) result.error = "nothing after '--': give the command there";
    return result;
}

parsed<attach_command_line> parse_attach_command_line(arguments args) {
    parsed<attach_command_line> result;
    argument_reader reader(args, profiling_specs);
    while (result.ok() && reader.next()) {
        if (reader.option() == nullptr) {
            read_pid(reader.operand(), result.line.pid, result.error);
        } else if (reader.option()->name == "help") {
            result.line.help = true;
            return result;
        } else {
            take_profiling_option(reader, result.line.profiling, result.error);
        }
    }
    if (result.ok()) result.error = reader.error();
    if (result.ok() && result.line.pid == 0) result.error = "no process id";
    return result;
}

parsed<dump_command_line> parse_dump_command_line(arguments args) {
    parsed<dump_command_line> result;
    argument_reader reader(args, dump_specs);
    while (result.ok() && reader.next()) {
        const option_spec* option = reader.option();
        if (option == nullptr) {
            read_pid(reader.operand(), result.line.pid, result.error);
        } else if (option->name == "help") {
            result.line.help = true;
            return result;
        } else if (option->name == "stop") {
            result.line.stop = true;
        } else if (option->name == "file") {
            result.error = check_agent_value("--file", reader.text());
            result.line.file = reader.text();
        } else {
            result.line.agent = reader.text();
        }
    }
    if (result.ok()) result.error = reader.error();
    if (result.ok() && result.line.pid == 0) result.error = "no process id";
    return result;
}

} // namespace ojx::tool
