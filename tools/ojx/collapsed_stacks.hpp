// Collapsed stacks (Brendan Gregg's flamegraph.pl format, also read by speedscope and most flame graph tools):
// one line per allocation site, `root;…;site;[type] VALUE`, so that replica profiles open in the tools people
// already use. Sites with a value of 0 are left out (a flame graph has nothing to draw for them).
#pragma once

#include "ojx/profile.hpp"

#include <optional>
#include <ostream>
#include <string_view>

namespace ojx::tool {

// What a site's width is.
enum class stack_value {
    replicated_bytes, // bytes a fix would at least save (the default: what to fix first)
    comparisons,      // evidence gathered
    objects,          // objects tracked
    bytes,            // bytes allocated in tracked objects
};

// Their names, in the enum's order: what `ojx report --value` takes.
inline constexpr std::string_view stack_value_names[] = {"replicated-bytes", "comparisons", "objects", "bytes"};

std::optional<stack_value> parse_stack_value(std::string_view name); // one of stack_value_names

// One site's line (nothing when its value is 0); sites are written as they are read.
void write_collapsed(std::ostream& out, const context_profile& site, stack_value value);

} // namespace ojx::tool
