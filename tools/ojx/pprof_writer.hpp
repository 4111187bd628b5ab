// A profile as pprof's gzipped profile.proto (github.com/google/pprof), so that replica profiles can be viewed
// with `go tool pprof` (top, tree, flame graph) and aggregated across a fleet in continuous-profiling systems.
//
// Each allocation context is one sample. Its stack is the allocation context, leaf first as pprof wants it,
// under a synthetic leaf frame naming the allocated type (`[byte[]]`): -top then ranks types by flat value and
// allocation sites by cumulative value, and a flame graph ends each allocation stack in what it allocated.
// The sample's values, in this order:
//   objects/count           objects tracked in the context
//   allocated/bytes         their total size
//   comparisons/count       comparisons made (equal + different)
//   replicated_bytes/bytes  at least this many bytes would be saved if the replicas shared one copy
//                           (context_profile::replicated_bytes; the default sample type)
// Every value sums over samples to the profile's total; replicated bytes are rounded so that their sum is the
// exact total rounded to a byte. Labels: `type` (the allocated type), `evidence` (what the site's estimate rests
// on), `largest_share` (from whole objects only), `largest_share_low` and `largest_share_high` in whole percent
// as the text report shows them (only when the site has an estimate), `theta`, `omega` and `gamma` (only where
// the comparisons are enough for an estimate of their own), and one `used_at` per access
// context naming its leaf frame, so that -tagfocus can select sites by where their objects are used.
//
// Samples are not split by access context: comparisons and bytes belong to the allocation context, and access
// contexts are only its most-sampled few, so any split would be invented.
//
// A writer for copies writes the copy section's stacks (copy_stacks.hpp) instead, one sample each, leaf first: by
// destination (`ojx report --value copied-bytes`) `[copied from …]`, the destination location, then the
// destination's allocation context; by the code that copied (`--value copying-code`) `[copied from …]`,
// `[into …]`, then the copying code's context (or the frame standing for it, `[other code]`, `[code not
// recorded]`). Values: copies/count (estimated from the samples) and copied_bytes/bytes (the default sample type);
// labels `width` (bytes per copy) and `samples`.
//
// A writer for exact counts (`--value exact-objects` or `never-allocated`) writes one sample per calling context of
// a counted site (exact_counts_by_context.hpp), leaf first `[type]` then the context: values exact_objects/count
// (the default where --value is exact-objects) and never_allocated/count (the JVM's eliminated allocations, 0 where
// it did not report them); label `split: sampled` where the site's count was split over several contexts.
#pragma once

#include "copy_stacks.hpp"

#include "ojx/exact_counts_by_context.hpp"
#include "ojx/profile.hpp"

#include <memory>
#include <optional>
#include <ostream>
#include <string>

namespace ojx::tool {

// Builds the pprof profile one context at a time, so that a profile being read as a stream is never held whole:
// only the pprof message (with its deduplicated tables) grows.
class pprof_writer {
public:
    // What the samples are: the profile's sites, or its copy stacks by destination or by the code that copied.
    enum class samples { sites, copies, copying_code, exact_objects, never_allocated };

    explicit pprof_writer(samples kind = samples::sites);
    ~pprof_writer();
    pprof_writer(const pprof_writer&) = delete;
    pprof_writer& operator=(const pprof_writer&) = delete;

    void add(const context_profile& context); // one sample, of a writer for sites
    void add(const copy_stack& copy);         // one sample, of a writer for copies (either kind)
    void add(const context_count& count);     // one sample, of a writer for exact counts (either kind)
    // Adds the run's facts as comments, serializes and gzips into `out`. Returns the error, if any.
    std::optional<std::string> finish(std::ostream& out, const run_profile& run);

private:
    struct state;
    std::unique_ptr<state> state_;
};

// Writes `p` as a gzipped pprof profile.proto. Returns the error, if any.
std::optional<std::string> write_pprof(std::ostream& out, const profile& p);

} // namespace ojx::tool
