// Merging profiles. Contexts of the same site — the same allocated type and allocation frames — from any number
// of profiles (threads, processes, hosts) become one context whose evidence is the sum of theirs and whose
// estimate is recomputed from that sum, never averaged: θ, its interval, α, ω and γ are what one profile with all
// the comparisons would have said. Counters add up; descriptive fields keep every distinct value. Copy sections
// add up too (copy_profile::merge: edges and the code that made them by their sample sums, sites and code contexts
// by name), exactly, at any periods. The result does not depend on the order or grouping of the inputs (merging
// is commutative and associative).
#pragma once

#include "ojx/profile.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace ojx::tool {

class profile_merger {
public:
    // One profile's contexts are added (add_context) and then its run (add_run), the order a streaming reader
    // delivers them in. `source` names the profile in error messages.
    void add_context(context_profile&& context, const std::string& source);
    std::optional<std::string> add_run(const run_profile& run, const std::string& source);
    // A profile's copy section, if it has one.
    void add_copies(const copy_profile& copies);
    // Adds a profile's exact counts section: counts summed site by site (exact_counts.hpp).
    void add_exact(const exact_counts& exact);

    // The merged profile, contexts in rank order. Fails if a site seen more than once has no evidence sums to
    // add (a profile written before profiles carried them).
    std::optional<std::string> finish(profile& out);

private:
    struct site {
        context_profile merged;
        std::size_t contributions = 0;
        std::string source_without_evidence; // a profile whose context had no evidence sums
    };

    std::vector<site> sites_;
    std::unordered_map<std::string, std::size_t> site_index_;
    run_profile run_;
    std::optional<copy_profile> copies_; // none until a profile with a copy section is added
    std::optional<exact_counts> exact_;  // none until a profile with exact counts is added
    std::string first_source_;
    std::size_t profiles_added_ = 0;
};

// Reads and merges the profiles at `paths`; a single profile comes back as it is.
std::optional<std::string> load_profiles(const std::vector<std::string>& paths, profile& out);

} // namespace ojx::tool
