#include "collapsed_stacks.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <iterator>
#include <string>
#include <vector>

namespace ojx::tool {
namespace {

std::uint64_t value_of(const context_profile& c, stack_value value) {
    switch (value) {
    case stack_value::replicated_bytes: return static_cast<std::uint64_t>(std::llround(c.replicated_bytes()));
    case stack_value::heap_replicated_bytes: return static_cast<std::uint64_t>(std::llround(c.heap_saving().low));
    case stack_value::comparisons: return c.estimate.comparisons();
    case stack_value::objects: return c.objects;
    case stack_value::bytes: return c.bytes;
    case stack_value::copied_bytes:
    case stack_value::copying_code: return 0; // copies are the copy section's (copy_stacks.hpp)
    case stack_value::exact_objects:
    case stack_value::never_allocated: return 0; // exact counts are the exact counts section's
    }
    return 0;
}

// The format separates frames with ';' and ends a line with ' VALUE': a frame keeps its spaces (the value is
// after the last one) but may not contain ';' or a line break.
void write_frame(std::ostream& out, std::string_view frame) {
    for (const char c : frame) out << (c == ';' ? ':' : c == '\n' || c == '\r' ? ' ' : c);
}

// `frames` root first, then the synthetic leaf frames (an empty one is none: a copy stack's code where frames
// name it), then the value.
void write_line(std::ostream& out, const std::vector<std::string>& frames,
                std::initializer_list<std::string_view> leaves, std::uint64_t value) {
    for (auto frame = frames.rbegin(); frame != frames.rend(); ++frame) {
        write_frame(out, *frame);
        out << ';';
    }
    const char* separator = "";
    for (const std::string_view leaf : leaves) {
        if (leaf.empty()) continue;
        out << separator;
        write_frame(out, leaf);
        separator = ";";
    }
    out << ' ' << value << '\n';
}

} // namespace

std::optional<stack_value> parse_stack_value(std::string_view name) {
    const auto found = std::find(std::begin(stack_value_names), std::end(stack_value_names), name);
    if (found == std::end(stack_value_names)) return std::nullopt;
    return static_cast<stack_value>(found - std::begin(stack_value_names));
}

void write_collapsed(std::ostream& out, const context_profile& site, stack_value value) {
    const std::uint64_t v = value_of(site, value);
    if (v != 0) write_line(out, site.frames, {"[" + site.type + "]"}, v);
}

void write_collapsed(std::ostream& out, const context_count& count, stack_value value) {
    const std::uint64_t v = value == stack_value::never_allocated ? count.never_allocated : count.objects;
    if (v != 0) write_line(out, count.frames, {"[" + count.type + "]"}, v);
}

void write_collapsed(std::ostream& out, const copy_stack& copy) {
    if (copy.bytes != 0) write_line(out, copy.frames, {copy.code, copy.location, copy.source}, copy.bytes);
}

} // namespace ojx::tool
