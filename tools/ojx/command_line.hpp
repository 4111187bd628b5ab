// Reading a subcommand's arguments: options with values (`--top 5`, `--top=5`), flags, and the rest as operands,
// with one-line errors that name the option. Shared by the subcommands so they all read and complain alike.
#pragma once

#include "commands.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ojx::tool {

class command_line {
public:
    command_line(std::string_view command, arguments args) : command_(command), args_(args) {}

    // Steps to the next argument; false at the end. After "--" everything is an operand.
    bool next();
    // The current argument is this option (`--name` or `--name=value`).
    bool is(std::string_view name) const;
    bool is_option() const { return !operands_only_ && current_.size() > 1 && current_.front() == '-'; }
    std::string_view current() const { return current_; }

    // The option's value (after '=' or the next argument); nullopt after printing why there is none.
    std::optional<std::string> value();
    std::optional<std::uint64_t> count();         // a non-negative integer
    std::optional<double> fraction();             // 0.6 or 60%
    // Prints "ojx COMMAND: MESSAGE" to standard error; returns exit_usage for `return line.fail(...)`.
    int fail(const std::string& message) const;
    int unknown() const; // the current option is not one of the command's

    // Everything after "--" (only meaningful once next() returned false).
    std::vector<std::string_view> rest_after_separator() const;

private:
    std::string_view command_;
    arguments args_;
    std::size_t at_ = 0;
    std::string_view current_;
    bool operands_only_ = false;
    std::size_t separator_ = static_cast<std::size_t>(-1);
};

} // namespace ojx::tool
