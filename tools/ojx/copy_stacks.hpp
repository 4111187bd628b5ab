// The copy volume of a profile's copy section (copy_profile.hpp) as stacks, for the collapsed and pprof outputs,
// in two attributions:
//
// - By destination (`ojx report --value copied-bytes`): one stack per edge into a heap location, valued at the
//   bytes its samples say it copied (width × Σ period: unbiased), under the allocation context of the objects
//   copied into, then a frame naming the location (`[Record+8]`, `[long[] elements]`; a static location is a stack
//   of its own, `[static 0x…]`), with the source as the leaf frame (`[copied from byte[] elements at FRAME]`,
//   naming the source site's leaf frame).
// - By the code that copied (`--value copying-code`): each such edge split over the code contexts its samples were
//   taken in (copy_code.hpp), in proportion to their samples: the copying code's calling context, then a frame
//   naming the destination with its site (`[into Record+8 at FRAME]`), then the same source leaf. Samples whose
//   context was not kept go under `[other code]`, samples for which the section counted no code (a section with no
//   code contexts: the emulation's and its replays') under `[code not recorded]`. An edge's copies are apportioned by
//   largest remainder, so its shares sum to its copies exactly and each is within one copy of its exact share.
//
// Edges into the consumer are uses, not copies, and are left out: either way the stacks sum exactly to the copies
// view's "copied into heap locations".
#pragma once

#include "ojx/copy_profile.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace ojx::tool {

struct copy_stack {
    // Code frames, leaf first: the destination's allocation context (by destination; none for a static
    // location), or the context of the code that copied (by code).
    std::vector<std::string> frames;
    // By code, where no context's frames name the code that copied: the frame standing for it (`[other code]`,
    // `[code not recorded]`, `(no frames)`), `frames` then empty; otherwise empty.
    std::string code;
    std::string location;     // the destination's frame, e.g. `[Record+8]`, by code `[into Record+8 at FRAME]`
    std::string source;       // the leaf frame, e.g. `[copied from byte[] elements at FRAME]`
    std::uint64_t copies = 0; // estimated
    std::uint64_t bytes = 0;  // estimated: copies × width
    std::uint64_t samples = 0;
    unsigned width = 0; // bytes per copy
};

// The section's edges into heap locations by destination, in the section's edge order.
std::vector<copy_stack> copy_stacks(const copy_profile& copies);

// The same edges by the code that copied: each edge's shares in the section's edge order, an edge's code contexts
// in context order, then other code, then code not recorded; shares of no samples are left out.
std::vector<copy_stack> copying_code_stacks(const copy_profile& copies);

} // namespace ojx::tool
