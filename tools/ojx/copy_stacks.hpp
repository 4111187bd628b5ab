// The copy volume of a profile's copy section (copy_profile.hpp) as stacks, for the collapsed and pprof outputs
// (`ojx report --value copied-bytes`): one stack per edge into a heap location, valued at the bytes its samples
// say it copied (width × Σ period: unbiased). The section records where values were copied between, not the code
// that copied them, so an edge is attributed to its destination: the allocation context of the objects copied
// into, under a frame naming the location (`[Record+8]`, `[long[] elements]`; a static location is a stack of
// its own, `[static 0x…]`), with the source as the leaf frame (`[copied from byte[] elements at FRAME]`, naming
// the source site's leaf frame). Edges into the consumer are uses, not copies, and are left out: the stacks sum
// to the copies view's "copied into heap locations".
#pragma once

#include "ojx/copy_profile.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace ojx::tool {

struct copy_stack {
    std::vector<std::string> frames; // the destination's allocation context, leaf first; none for a static location
    std::string location;            // the destination's frame, e.g. `[Record+8]`
    std::string source;              // the leaf frame, e.g. `[copied from byte[] elements at FRAME]`
    std::uint64_t copies = 0;        // estimated
    std::uint64_t bytes = 0;         // estimated: copies × width
    std::uint64_t samples = 0;
    unsigned width = 0; // bytes per copy
};

// The section's edges into heap locations, in the section's edge order.
std::vector<copy_stack> copy_stacks(const copy_profile& copies);

} // namespace ojx::tool
