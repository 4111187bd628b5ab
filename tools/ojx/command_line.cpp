#include "command_line.hpp"

#include <charconv>
#include <cstdio>

namespace ojx::tool {

bool command_line::next() {
    if (at_ >= args_.size()) return false;
    current_ = args_[at_++];
    if (!operands_only_ && current_ == "--") {
        operands_only_ = true;
        separator_ = at_;
        return next();
    }
    return true;
}

bool command_line::is(std::string_view name) const {
    if (!is_option() || !current_.starts_with(name)) return false;
    return current_.size() == name.size() || current_[name.size()] == '=';
}

std::optional<std::string> command_line::value() {
    const std::size_t equals = current_.find('=');
    if (equals != std::string_view::npos) return std::string(current_.substr(equals + 1));
    const std::string_view option = current_;
    if (at_ >= args_.size()) {
        fail(std::string(option) + " needs a value");
        return std::nullopt;
    }
    return std::string(args_[at_++]);
}

std::optional<std::uint64_t> command_line::count() {
    const std::string_view option = current_.substr(0, current_.find('='));
    const std::optional<std::string> text = value();
    if (!text) return std::nullopt;
    std::uint64_t number = 0;
    const auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), number);
    if (text->empty() || error != std::errc() || end != text->data() + text->size()) {
        fail(std::string(option) + ": '" + *text + "' is not a non-negative whole number");
        return std::nullopt;
    }
    return number;
}

std::optional<double> command_line::fraction() {
    const std::string_view option = current_.substr(0, current_.find('='));
    const std::optional<std::string> text = value();
    if (!text) return std::nullopt;
    std::string_view digits = *text;
    const bool percent = digits.ends_with('%');
    if (percent) digits.remove_suffix(1);
    double number = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), number);
    if (percent) number /= 100;
    if (digits.empty() || error != std::errc() || end != digits.data() + digits.size() || number < 0 || number > 1) {
        fail(std::string(option) + ": '" + *text + "' is not a fraction (0.6) or a percentage (60%)");
        return std::nullopt;
    }
    return number;
}

int command_line::fail(const std::string& message) const {
    std::fprintf(stderr, "ojx %.*s: %s\n", static_cast<int>(command_.size()), command_.data(), message.c_str());
    return exit_usage;
}

int command_line::unknown() const {
    return fail("unknown option '" + std::string(current_) + "' (ojx " + std::string(command_) + " --help)");
}

std::vector<std::string_view> command_line::rest_after_separator() const {
    if (separator_ > args_.size()) return {};
    return {args_.begin() + static_cast<std::ptrdiff_t>(separator_), args_.end()};
}

} // namespace ojx::tool
