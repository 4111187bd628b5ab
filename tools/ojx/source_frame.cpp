#include "source_frame.hpp"

#include <charconv>

namespace ojx::tool {

source_frame parse_frame(std::string_view frame) {
    source_frame whole{std::string(frame), {}, 0};
    // The location is the last parenthesised group, so that parentheses in the function's own name (a C++
    // signature, `operator()`) stay with the name.
    if (frame.empty() || frame.back() != ')') return whole;
    const std::size_t open = frame.rfind('(');
    if (open == std::string_view::npos || open == 0) return whole;
    const std::string_view location = frame.substr(open + 1, frame.size() - open - 2);
    const std::size_t colon = location.rfind(':');
    if (colon == std::string_view::npos || colon == 0) return whole;
    const std::string_view file = location.substr(0, colon);
    const std::string_view digits = location.substr(colon + 1);
    std::int64_t line = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), line);
    if (digits.empty() || error != std::errc() || end != digits.data() + digits.size() || line <= 0) return whole;

    std::string_view function = frame.substr(0, open);
    if (function.back() == ' ') function.remove_suffix(1); // the native form has a space before the location
    if (function.empty()) return whole;
    return {std::string(function), std::string(file), line};
}

} // namespace ojx::tool
