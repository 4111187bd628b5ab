// Collapsed stacks (Brendan Gregg's flamegraph.pl format, also read by speedscope and most flame graph tools):
// one line per allocation site, `root;…;site;[type] VALUE`, so that replica profiles open in the tools people
// already use. Sites with a value of 0 are left out (a flame graph has nothing to draw for them). Copy volume is
// written the same way, one line per copy stack (copy_stacks.hpp): by destination
// `root;…;site;[location];[copied from …] BYTES`, by the code that copied
// `root;…;code;[into …];[copied from …] BYTES`. Exact counts (`--value exact-objects`, `never-allocated`) are
// written one line per calling context of a counted site, `root;…;site;[type] OBJECTS`, each site's count split
// over its contexts by their sampled allocations (exact_counts_by_context.hpp).
#pragma once

#include "copy_stacks.hpp"

#include "ojx/exact_counts_by_context.hpp"
#include "ojx/profile.hpp"

#include <optional>
#include <ostream>
#include <string_view>

namespace ojx::tool {

// What a site's width is.
enum class stack_value {
    replicated_bytes, // bytes a fix would at least save of the run's allocations (the default: what to fix first)
    heap_replicated_bytes, // the same among the objects alive at the profile's heap moment
    comparisons,      // evidence gathered
    objects,          // objects tracked
    bytes,            // bytes allocated in tracked objects
    copied_bytes,     // bytes copied, from the copy section: its edges are the stacks, sites have none
    copying_code,     // the same bytes, stacked by the code that copied them
    exact_objects,    // objects counted exactly (count=), from the exact counts section
    never_allocated,  // of those, the ones the JVM never allocated (count= with interval=0)
};

// Whether the stacks are the copy section's (copy_stacks.hpp) rather than the sites.
constexpr bool is_copy_volume(stack_value value) noexcept {
    return value == stack_value::copied_bytes || value == stack_value::copying_code;
}

// Whether the stacks are the exact counts' (exact_counts_by_context.hpp) rather than the sites.
constexpr bool is_exact_count(stack_value value) noexcept {
    return value == stack_value::exact_objects || value == stack_value::never_allocated;
}

// Their names, in the enum's order: what `ojx report --value` takes.
inline constexpr std::string_view stack_value_names[] = {
    "replicated-bytes", "heap-replicated-bytes", "comparisons",   "objects",        "bytes",
    "copied-bytes",     "copying-code",          "exact-objects", "never-allocated"};

std::optional<stack_value> parse_stack_value(std::string_view name); // one of stack_value_names

// One site's line (nothing when its value is 0); sites are written as they are read.
void write_collapsed(std::ostream& out, const context_profile& site, stack_value value);

// One copy stack's line, valued at its bytes.
void write_collapsed(std::ostream& out, const copy_stack& copy);

// One calling context's part of a counted site (nothing when it is 0): exact_objects or never_allocated.
void write_collapsed(std::ostream& out, const context_count& count, stack_value value);

} // namespace ojx::tool
