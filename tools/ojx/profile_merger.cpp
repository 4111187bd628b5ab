#include "profile_merger.hpp"

#include "profile_reader.hpp"

#include "ojx/context_sum.hpp"
#include "ojx/profile_writer.hpp"

#include <algorithm>
#include <map>
#include <utility>

namespace ojx::tool {
namespace {

// Identifies a site: its type and allocation frames, with separators no name contains.
std::string site_key(const context_profile& c) {
    std::string key = c.type;
    for (const std::string& frame : c.frames) (key += '\x1f') += frame;
    return key;
}

void add_accesses(std::vector<named_access_context>& into, std::vector<named_access_context>&& more) {
    for (named_access_context& access : more) {
        const auto same = std::find_if(into.begin(), into.end(),
                                       [&](const named_access_context& a) { return a.frames == access.frames; });
        if (same != into.end()) same->samples += access.samples;
        else into.push_back(std::move(access));
    }
}

void sort_accesses(std::vector<named_access_context>& accesses) {
    std::sort(accesses.begin(), accesses.end(), [](const named_access_context& a, const named_access_context& b) {
        if (a.samples != b.samples) return a.samples > b.samples;
        return a.frames < b.frames;
    });
}

// Every distinct value of both, sorted.
void add_values(std::vector<std::string>& into, const std::vector<std::string>& more) {
    into.insert(into.end(), more.begin(), more.end());
    std::sort(into.begin(), into.end());
    into.erase(std::unique(into.begin(), into.end()), into.end());
}

std::string settings(const estimator_config& e) {
    return "min_comparisons " + std::to_string(e.min_comparisons) + ", confidence " +
           report_detail::number(e.confidence) + ", min_digested_objects " + std::to_string(e.min_digested_objects);
}

std::string site_name(const context_profile& c) {
    return c.type + " at " + (c.frames.empty() ? std::string("(no frames)") : c.frames.front());
}

} // namespace

void profile_merger::add_context(context_profile&& context, const std::string& source) {
    const auto [at, inserted] = site_index_.try_emplace(site_key(context), sites_.size());
    if (inserted) {
        site& fresh = sites_.emplace_back();
        fresh.contributions = 1;
        if (!context.has_evidence) fresh.source_without_evidence = source;
        fresh.merged = std::move(context);
        return;
    }
    site& s = sites_[at->second];
    context_profile& m = s.merged;
    if (++s.contributions == 2) {
        // The first profile's list may name one access context twice (two pcs of one source line): fold it
        // first, so that which of its entries the others' counts join does not depend on the order of inputs.
        std::vector<named_access_context> folded;
        add_accesses(folded, std::move(m.accesses));
        m.accesses = std::move(folded);
    }
    if (!context.has_evidence && s.source_without_evidence.empty()) s.source_without_evidence = source;
    add_context_evidence(m, context);
    add_accesses(m.accesses, std::move(context.accesses));
}

std::optional<std::string> profile_merger::add_run(const run_profile& run, const std::string& source) {
    if (profiles_added_++ == 0) {
        run_ = run;
        first_source_ = source;
        return std::nullopt;
    }
    if (run.estimator.min_comparisons != run_.estimator.min_comparisons ||
        run.estimator.confidence != run_.estimator.confidence ||
        run.estimator.min_digested_objects != run_.estimator.min_digested_objects)
        return source + ": estimated with " + settings(run.estimator) + " but " + first_source_ + " with " +
               settings(run_.estimator) + "; merge profiles made with the same settings";
    add_values(run_.runtime, run.runtime);
    add_values(run_.sampler, run.sampler);
    add_values(run_.watchpoints, run.watchpoints);
    add_values(run_.pairing, run.pairing);
    add_values(run_.replacement, run.replacement);
    add_values(run_.allocation_counts, run.allocation_counts);
    add_values(run_.heap_moments, run.heap_moments);
    run_.seconds = std::max(run_.seconds, run.seconds); // the processes of a tree run at once
    for (const std::uint64_t target : run.tracking_targets) {
        const auto at = std::lower_bound(run_.tracking_targets.begin(), run_.tracking_targets.end(), target);
        if (at == run_.tracking_targets.end() || *at != target) run_.tracking_targets.insert(at, target);
    }
    if (run.sampled_interval_range) {
        const auto& [smallest, largest] = *run.sampled_interval_range;
        run_.sampled_interval_range = run_.sampled_interval_range
                                          ? std::pair{std::min(run_.sampled_interval_range->first, smallest),
                                                      std::max(run_.sampled_interval_range->second, largest)}
                                          : *run.sampled_interval_range;
    }
    // Summed by path, in the profile's order: the profiler's counters as profiler_counters lists them, then the
    // others (the agents') by name, whatever order the inputs came in.
    std::map<std::pair<std::size_t, std::string>, std::uint64_t> sums;
    for (const std::vector<run_counter>* counters : {&std::as_const(run_).counters, &run.counters})
        for (const run_counter& c : *counters) sums[{profiler_counter_index(c.path), c.path}] += c.value;
    run_.counters.clear();
    for (const auto& [at, value] : sums) run_.counters.push_back({at.second, value});
    run_.profiles += run.profiles;
    return std::nullopt;
}

void profile_merger::add_copies(const copy_profile& copies) {
    if (copies_) copies_->merge(copies);
    else copies_ = copies; // a single profile's section stays exactly as written
}

void profile_merger::add_exact(const exact_counts& exact) {
    if (exact_) add_counts(*exact_, exact);
    else exact_ = exact;
}

std::optional<std::string> profile_merger::finish(profile& out) {
    out.run = run_;
    out.copies = std::move(copies_);
    copies_.reset();
    out.exact = std::move(exact_);
    exact_.reset();
    out.contexts.clear();
    out.contexts.reserve(sites_.size());
    bool merged_any = profiles_added_ > 1;
    for (site& s : sites_) {
        merged_any |= s.contributions > 1;
        context_profile& c = s.merged;
        if (s.contributions > 1 && !s.source_without_evidence.empty())
            return s.source_without_evidence + ": the context '" + site_name(c) +
                   "' has no evidence sums (the profile was written by an older ojx), so it cannot be merged";
        // A context seen once in a single profile stays exactly as written; anything merged is re-estimated
        // from its summed evidence, with the settings all the inputs share.
        if (c.has_evidence && (s.contributions > 1 || profiles_added_ > 1))
            c.estimate = estimate_replicas(c.objects, c.evidence, run_.estimator);
        c.estimate.objects = c.objects;
        c.estimate_from_evidence(run_.estimator);
        if (s.contributions > 1) sort_accesses(c.accesses);
        out.contexts.push_back(std::move(c));
    }
    // A single profile keeps its own order (the profiler's, ties included); a merge is ordered by rank, ties by
    // site, so that it does not depend on the order of its inputs.
    if (merged_any)
        std::sort(out.contexts.begin(), out.contexts.end(),
                  [](const context_profile& a, const context_profile& b) { return ranks_before(a, b); });
    sites_.clear();
    site_index_.clear();
    return std::nullopt;
}

std::optional<std::string> load_profiles(const std::vector<std::string>& paths, profile& out) {
    profile_merger merger;
    for (const std::string& path : paths) {
        run_profile run;
        std::optional<copy_profile> copies;
        std::optional<exact_counts> exact;
        if (auto error = read_profile(
                path, run, [&](context_profile&& c) { merger.add_context(std::move(c), path); }, &copies, &exact))
            return error;
        if (auto error = merger.add_run(run, path)) return error;
        if (copies) merger.add_copies(*copies);
        if (exact) merger.add_exact(*exact);
    }
    return merger.finish(out);
}

} // namespace ojx::tool
