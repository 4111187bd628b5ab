// The report for a terminal, the one that `ojx report` prints and the agents print at exit (their top sites):
// which allocation sites hold replicas, ranked, with the numbers that say how sure ojx is (the largest identical
// group's share with its interval, the evidence behind it; θ, α, ω, γ where accesses were compared), what a fix
// would save, and where the replicas are used — what a busy engineer needs to pick the site to fix. Not for
// signal handlers.
#pragma once

#include "ojx/copy_node_names.hpp"
#include "ojx/copy_sources.hpp"
#include "ojx/exact_counts_by_context.hpp"
#include "ojx/exact_counts_view.hpp"
#include "ojx/frame_pools.hpp"
#include "ojx/profile.hpp"
#include "ojx/shared_contents.hpp"
#include "ojx/site_pools.hpp"
#include "ojx/site_selection.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ojx {

namespace report_detail {

inline std::string percent(double value) {
    char buffer[16];
    std::snprintf(buffer, sizeof buffer, "%.0f%%", 100 * value);
    return buffer;
}

inline std::string bytes(double value) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int unit = 0;
    while (value >= 1024 && unit < 4) {
        value /= 1024;
        ++unit;
    }
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, unit == 0 ? "%.0f %s" : "%.1f %s", value, units[unit]);
    return buffer;
}

} // namespace report_detail

// What a report says to do where no site has an estimate: the agents' options that bring more evidence.
inline constexpr const char* more_evidence =
    "Profile longer; track more allocations (track_rate=, or interval=0 for every one), or smaller ones "
    "(threshold=, if the program's objects are smaller); sample accesses more often (rate=).";

// A leaf frame as the function it lies in: "__memmove_avx_unaligned_erms (libc.so.6)" for
// "__memmove_avx_unaligned_erms+0x320 (libc.so.6)". Code with no source lines is named by symbol and offset, so
// each instruction of one function would otherwise be a use of its own; frames without a symbol ("0x7f0012
// (libfoo.so)", "libc.so.6+0x10") and frames with source lines are kept as they are.
inline std::string leaf_function(std::string name) {
    const std::size_t object = name.rfind(" (");
    if (object == std::string::npos) return name;
    const std::size_t offset = name.rfind("+0x", object);
    if (offset == std::string::npos || offset == 0 || offset + 3 == object) return name;
    for (std::size_t i = offset + 3; i < object; ++i)
        if (!std::isxdigit(static_cast<unsigned char>(name[i]))) return name;
    return name.erase(offset, object - offset);
}

// Where a site's objects were used, as reports list it: each access's leaf frame (`leaf_of`) with its samples,
// accesses whose contexts differ only further out summed into one line, most sampled first.
template <class Accesses, class LeafOf>
std::vector<std::pair<std::string, std::uint64_t>> uses_by_leaf(const Accesses& accesses, LeafOf leaf_of) {
    std::vector<std::pair<std::string, std::uint64_t>> uses;
    for (const auto& a : accesses) {
        std::string leaf = leaf_of(a);
        const auto same = std::find_if(uses.begin(), uses.end(), [&](const auto& u) { return u.first == leaf; });
        if (same != uses.end()) same->second += a.samples;
        else uses.emplace_back(std::move(leaf), a.samples);
    }
    std::stable_sort(uses.begin(), uses.end(), [](const auto& x, const auto& y) { return x.second > y.second; });
    return uses;
}

struct text_options {
    std::size_t frames = 3;   // allocation frames shown per site (the site itself and its callers)
    std::size_t accesses = 3; // access contexts shown per site
    double min_share = 0;     // as asked for: the low end of the largest group's share (said when no site has it)
    site_rank rank = site_rank::share; // what the table is ranked by
    // A frame's source line, printed under the line that names it where there is one (ojx report --source).
    std::function<std::optional<std::string>(std::string_view frame)> source_line;
};

namespace report_detail {

// With --source, the frame's source line under the line that names it.
inline void write_source(std::ostream& out, const std::string& frame, const text_options& options) {
    if (!options.source_line) return;
    if (const auto line = options.source_line(frame)) out << "             | " << *line << '\n';
}

inline void write_frame_line(std::ostream& out, const char* label, const std::string& frame, const std::string& note,
                      const text_options& options) {
    out << label << frame << note << '\n';
    write_source(out, frame, options);
}

// A count as a whole number, "~" before it when it is an estimate.
inline std::string amount(double value, bool estimated) {
    char text[40];
    std::snprintf(text, sizeof text, "%s%.0f", estimated ? "~" : "", value);
    return text;
}

// JP's metrics, one line per type: "allocated: 300 arrays of byte, 614400 elements, 600.0 KiB".
inline void write_allocation_lines(std::ostream& out, const named_allocations& a) {
    const auto line = [&](const std::string& what, const type_allocations& t) {
        out << "        allocated: " << amount(t.instances, a.estimated);
        if (t.instances_variance > 0) out << " (+-" << amount(std::sqrt(t.instances_variance), false) << ')';
        out << ' ' << what;
        if (t.array) out << ", " << amount(t.elements, a.estimated) << " elements";
        out << ", " << (a.estimated ? "~" : "") << bytes(t.bytes);
        if (a.estimated) out << "   (estimated from " << t.seen << " sampled)";
        out << '\n';
    };
    for (const named_type_allocations& t : a.types) {
        const std::string_view element = array_element_type(t.type);
        line(t.counts.array ? "arrays of " + std::string(element.empty() ? t.type : element) : "instances of " + t.type,
             t.counts);
    }
    if (a.other.seen > 0) line("objects of other types", a.other);
}

// Sources listed under a site's row: the heaviest, and where there are more, the rest summed on the last line.
inline constexpr std::size_t copy_sources_shown = 3;

// Where the site's contents were copied from, where the copy section has copies into it (copy_sources.hpp): one
// line per source, heaviest first, with its bytes, their interval and its share.
inline void write_copy_sources(std::ostream& out, const copied_contents& contents, const copy_profile& copies,
                               const text_options& options) {
    const auto line = [&](const std::string& from, double bytes_copied, std::optional<interval> range, double share) {
        out << "        copied from " << from << "  (~" << bytes(bytes_copied);
        if (range) out << " [" << bytes(range->low) << ", " << bytes(range->high) << ']';
        out << ", " << percent(share) << ")\n";
    };
    const std::size_t named = contents.sources.size() > copy_sources_shown ? copy_sources_shown - 1
                                                                           : contents.sources.size();
    for (std::size_t i = 0; i < named; ++i) {
        const copy_source& s = contents.sources[i];
        line(copy_node_name(copies, s.from), s.estimate.bytes, s.estimate.bytes_interval, s.share);
        if (names_site(s.from) && !copies.sites.at(s.from.site).frames.empty())
            write_source(out, copies.sites.at(s.from.site).frames.front(), options);
    }
    if (named == contents.sources.size()) return;
    double rest = 0, rest_share = 0;
    for (std::size_t i = named; i < contents.sources.size(); ++i) {
        rest += contents.sources[i].estimate.bytes;
        rest_share += contents.sources[i].share;
    }
    line(std::to_string(contents.sources.size() - named) + " other sources", rest, std::nullopt, rest_share);
}

// What sharing would save in the heap at its moment and in churn over the run (per second where the run's
// length is known), each with its interval: two lines under a site.
inline void write_savings(std::ostream& out, const context_profile& c, double seconds, std::uint64_t needed) {
    // Comparisons bound the share (omega..gamma) with no point between: then the saving too.
    const auto range = [](saving s, double per, bool point) {
        return (point ? bytes(s.point / per) + " " : std::string()) + "[" + bytes(s.low / per) + ", " +
               bytes(s.high / per) + "]";
    };
    if (!c.live.empty()) {
        out << "        heap: " << bytes(c.live.bytes) << " in " << amount(c.live.weight, c.allocations_estimated())
            << " objects alive at the heap moment, " << c.live_identical.objects << " digested";
        if (c.heap.reported())
            out << "; largest " << percent(c.heap.largest_share) << " [" << percent(c.heap.largest_share_ci.low)
                << ", " << percent(c.heap.largest_share_ci.high) << "]"
                << (c.live_identical.largest_all_zero ? " (all zeros)" : "")
                << ": sharing saves " << range(c.heap_saving(), 1, true);
        else
            out << " (" << needed << " needed for an estimate)";
        out << '\n';
    }
    if (c.combined.reported()) {
        const type_allocations total = c.allocated_total();
        const bool rate = seconds > 0;
        out << "        churn: sharing saves "
            << range(c.churn_saving(), rate ? seconds : 1, c.combined.basis == evidence_basis::whole_objects)
            << (rate ? "/s" : "")
            << " of the " << bytes(total.bytes / (rate ? seconds : 1)) << (rate ? "/s allocated" : " allocated")
            << '\n';
    }
}

// `copies`: the profile's copy section, if it has one; a site it has copies into says where they came from, with
// intervals at the run's confidence. `run`: also the run's length (churn per second) and what an estimate needs.
// `note`: a last line of the site's own, if any.
inline void write_site(std::ostream& out, std::size_t rank, const context_profile& c, const text_options& options,
                       const copy_profile* copies, const run_profile& run, const std::string& note = {}) {
    const replica_estimate& e = c.estimate;
    const site_estimate& s = c.combined;
    const bool whole = s.basis == evidence_basis::whole_objects;
    // Where allocations were sampled, the objects and the saving are of all the allocations, estimated.
    const type_allocations allocated = c.allocated_total();
    const double mean_size = allocated.instances > 0 ? allocated.bytes / allocated.instances : 0;
    // The site's one estimate: its largest identical group's share with its interval (comparisons bound it,
    // ω..γ, with no point between), and what it rests on, and how much.
    const std::string largest = whole ? percent(s.largest_share) : std::string("-");
    const std::string evidence = whole ? std::to_string(c.identical.objects) + " whole"
                                       : std::to_string(e.comparisons()) + " cmp";
    const std::string heap = c.heap.reported() ? bytes(c.heap_saving().low) : std::string("-");
    char row[256];
    std::snprintf(row, sizeof row, "%3zu %5s [%4s,%5s] %12s %8s %10s %11s %11s  ", rank, largest.c_str(),
                  percent(s.largest_share_ci.low).c_str(), percent(s.largest_share_ci.high).c_str(),
                  evidence.c_str(), amount(allocated.instances, c.allocations_estimated()).c_str(),
                  bytes(mean_size).c_str(), bytes(c.replicated_bytes()).c_str(), heap.c_str());
    out << row << c.type << " at ";
    write_frame_line(out, "", c.frames.empty() ? std::string("(no frames)") : c.frames.front(), "", options);
    for (std::size_t f = 1; f < c.frames.size() && f < options.frames; ++f)
        write_frame_line(out, "        from ", c.frames[f], "", options);
    if (c.frames.size() > options.frames && options.frames > 0)
        out << "        (" << c.frames.size() - options.frames << " more frames)\n";
    if (c.allocated) write_allocation_lines(out, *c.allocated);
    write_savings(out, c, run.seconds, run.estimator.min_digested_objects);
    // θ, α, ω and γ are the comparisons' own detail, only where there were comparisons.
    if (e.comparisons() > 0) {
        out << "        comparisons: " << e.comparisons() << ", theta " << percent(e.theta) << " ["
            << percent(e.theta_ci.low) << ", " << percent(e.theta_ci.high) << "] equal, alpha " << percent(e.alpha);
        if (s.basis == evidence_basis::comparisons)
            out << " (the interval above is their bounds omega..gamma)";
        else
            out << "; omega " << percent(e.omega) << ", gamma " << percent(e.gamma)
                << (e.reported ? "" : " (too few for an estimate of their own)");
        out << '\n';
    }
    if (whole && c.identical.largest_all_zero) out << "        the largest identical group is all zeros\n";
    if (c.near.found)
        out << "        near-replicas (not identical): " << c.near.near << " of " << c.identical.objects
            << " objects digested whole share " << percent(c.near.shared_fraction)
            << " of their contents with one representative\n";
    if (copies)
        if (const std::optional<copied_contents> contents = copied_into(*copies, c, run.estimator.confidence))
            write_copy_sources(out, *contents, *copies, options);
    // The table names only where the objects were used (an access context's leaf).
    const auto uses = uses_by_leaf(c.accesses, [](const named_access_context& a) {
        return a.frames.empty() ? std::string("?") : leaf_function(a.frames.front());
    });
    std::uint64_t sampled = 0;
    for (const named_access_context& a : c.accesses) sampled += a.samples;
    for (std::size_t u = 0; u < uses.size() && u < options.accesses; ++u) {
        char share[64];
        std::snprintf(share, sizeof share, "  (%llu samples, %s)", static_cast<unsigned long long>(uses[u].second),
                      percent(sampled ? static_cast<double>(uses[u].second) / static_cast<double>(sampled) : 0).c_str());
        write_frame_line(out, "        used at ", uses[u].first, share, options);
    }
    if (!note.empty()) out << "        " << note << '\n';
    out << '\n';
}

// The pooled sites' findings (pooled_findings), each row as the table's, with how many contexts it pools.
inline void write_pooled_sites(std::ostream& out, const std::vector<pooled_site>& shown, const text_options& options,
                               const run_profile& run) {
    if (shown.empty()) return;
    out << "Allocation sites pooled over their calling contexts: replicated with their contexts' objects pooled\n"
           "(objects digested whole pool exactly, by their contents' digests), though much of them is in contexts\n"
           "not replicated alone:\n";
    text_options site_only = options;
    site_only.accesses = 0;
    for (std::size_t i = 0; i < shown.size(); ++i) {
        const pooled_site& p = shown[i];
        std::string note = "pooled over " + std::to_string(p.contexts) + " calling contexts, " +
                           std::to_string(p.replicated_contexts) + " of them replicated on their own";
        if (p.concentrated) {
            const site_estimate& e = p.concentrated->pooled.combined;
            note += "\n        most replicated below " + p.concentrated->path.back() + " (" +
                    std::to_string(p.concentrated->contexts) + " of the " + std::to_string(p.contexts) +
                    " contexts): largest " + percent(e.largest_share) + " [" + percent(e.largest_share_ci.low) +
                    ", " + percent(e.largest_share_ci.high) + "], " +
                    std::to_string(p.concentrated->pooled.identical.objects) + " whole";
        }
        write_site(out, i + 1, p.site, site_only, nullptr, run, note);
    }
}

// Pairs of sites holding the same contents whole (shared_contents.hpp), each side on a line of its own.
inline void write_shared_contents(std::ostream& out, const std::vector<shared_contents_pair>& pairs,
                                  const text_options& options) {
    if (pairs.empty()) return;
    out << "\nAllocation sites holding the same contents whole: objects digested whole at one site whose every byte\n"
           "equals an object of the other (a copy, or the same contents built twice; all-zero contents left out):\n"
           "  # contents     objects holding them  share [int.]          bytes  allocation site\n";
    for (std::size_t i = 0; i < pairs.size(); ++i) {
        const shared_contents_pair& p = pairs[i];
        for (const shared_side* side : {&p.first, &p.second}) {
            char row[160];
            const std::string objects = amount(side->objects, true) + " [" + amount(side->objects_ci.low, false) +
                                        ", " + amount(side->objects_ci.high, false) + "]";
            if (side == &p.first)
                std::snprintf(row, sizeof row, "%3zu %8zu ", i + 1, p.contents);
            else
                std::snprintf(row, sizeof row, "%13s", "");
            out << row;
            std::snprintf(row, sizeof row, " %22s %5s [%4s,%5s] %10s  ", objects.c_str(), percent(side->share).c_str(),
                          percent(side->share_ci.low).c_str(), percent(side->share_ci.high).c_str(),
                          bytes(side->bytes).c_str());
            out << row << side->type << " at ";
            write_frame_line(out, "", side->frame.empty() ? std::string("(no frames)") : side->frame, "", options);
        }
    }
    out << "contents: distinct contents both sites hold; objects holding them: the site's objects estimated to hold\n"
           "one of them (share: of its objects digested whole, with its interval), and their bytes.\n";
}

} // namespace report_detail

// A site's exact count (count=), as its last line says it: the bytecode site's count and, where several calling
// contexts reached the site, this context's part by its share of the site's sampled allocations.
inline std::string exact_count_note(const context_count& part) {
    std::string note = "exact: " + std::to_string(part.site_objects) + " objects counted at this bytecode site";
    if (part.split)
        note += "; this calling context about " + std::to_string(part.objects) +
                " of them, by its share of the site's sampled allocations";
    return note;
}

// `sources_read` names the profiles read; `sites` are the sites to list, best first; `copies`, the profile's copy
// section where it has one: each site it has copies into says where its contents were copied from.
// `pooled`: the profile's sites pooled over their calling contexts (site_pools), listed after the table where
// pooling finds what the contexts alone do not; `shared`: pairs of sites holding the same contents whole
// (shared_contents), listed last. `exact_parts`: the exact counts over the profile's contexts
// (exact_counts_by_context), each shown site's part said under it.
inline void write_text_report(std::ostream& out, const std::vector<std::string>& sources_read, const run_profile& run,
                       const std::vector<context_profile>& sites, const site_totals& totals,
                       const text_options& options, const copy_profile* copies = nullptr,
                       const std::vector<pooled_site>& pooled = {},
                       const std::vector<shared_contents_pair>& shared = {},
                       const std::vector<context_count>& exact_parts = {}) {
    using namespace report_detail;
    out << "ojx replica report";
    for (std::size_t i = 0; i < sources_read.size() && i < 3; ++i) out << (i ? ", " : ": ") << sources_read[i];
    if (sources_read.size() > 3) out << " and " << sources_read.size() - 3 << " more";
    if (run.profiles > 1) out << " (merged from " << run.profiles << " profiles)";
    out << "\n  runtime:     " << joined(run.runtime) << "\n  sampler:     " << joined(run.sampler)
        << "\n  watchpoints: " << joined(run.watchpoints) << '\n';
    if (!run.allocation_counts.empty()) out << "  allocations: " << joined(run.allocation_counts) << '\n';
    if (!run.tracking_targets.empty()) {
        out << "  tracking:    adaptive, target";
        for (std::size_t i = 0; i < run.tracking_targets.size(); ++i)
            out << (i ? ", " : " ") << run.tracking_targets[i];
        out << " per second";
        if (run.sampled_interval_range)
            out << "; objects sampled at intervals of " << bytes(static_cast<double>(run.sampled_interval_range->first))
                << " to " << bytes(static_cast<double>(run.sampled_interval_range->second)) << " (0: every one)";
        out << '\n';
    }
    if (!run.heap_moments.empty()) out << "  heap moment: " << joined(run.heap_moments) << '\n';
    if (run.seconds > 0) {
        char length[64];
        std::snprintf(length, sizeof length, "%.1f s", run.seconds);
        out << "  run length:  " << length << (run.profiles > 1 ? " (the longest run's)" : "") << '\n';
    }
    const std::uint64_t tracked = run.counter("allocations") - run.counter("allocations_ignored.below_size_threshold") -
                                  run.counter("allocations_ignored.context_table_full");
    const std::uint64_t digested = run.counter("objects_digested");
    out << "  " << run.counter("samples") << " samples, " << run.counter("comparisons") << " comparisons, " << digested
        << " objects digested whole";
    // The share of the evidence the digest budgets left out: the intervals rest on the digested ones (weighted, so
    // the estimates stay unbiased), and are that much wider. Not for runs that digested nothing whole (the
    // emulation demo, profiles older than whole-object evidence).
    const std::uint64_t skipped = run.counter("digests_skipped.budget");
    if (tracked > 0 && digested < tracked && digested + skipped > 0)
        out << " (" << percent(static_cast<double>(digested) / static_cast<double>(tracked)) << " of the " << tracked
            << " tracked; " << skipped << " left out by the digest budgets, which widens the intervals)";
    out << "; " << totals.sites << " allocation sites, "
        << totals.estimated << " with an estimate (at least " << run.estimator.min_comparisons << " comparisons or "
        << run.estimator.min_digested_objects << " objects digested whole), " << totals.replicated
        << " replicated (largest group >= " << percent(replicated_omega) << ")\n\n";
    if (sites.empty()) {
        const std::string watchpoints = joined(run.watchpoints);
        if (totals.estimated == 0 && watchpoints.starts_with("none") && run.counter("objects_digested") == 0)
            out << "This run had no watchpoints (" << watchpoints
                << "), so no object contents were compared. It still shows where objects are allocated and used "
                   "(ojx report --html).\n";
        else if (totals.estimated == 0)
            out << "No allocation site has enough evidence for an estimate yet: the most any site has is "
                << totals.most_digested_unestimated << " objects digested whole (" << run.estimator.min_digested_objects
                << " are needed) and " << totals.most_comparisons_unestimated << " comparisons ("
                << run.estimator.min_comparisons << " are needed). " << more_evidence << '\n';
        else
            out << "No site with an estimate has a largest group of at least " << percent(options.min_share)
                << " (the low end of its interval).\n";
        return;
    }
    char header[128];
    std::snprintf(header, sizeof header,
                  "  # largest [%3s int.]     evidence  objects   obj size    saves >=     heap >=  ",
                  percent(run.estimator.confidence).c_str());
    out << header << "allocation site\n";
    for (std::size_t i = 0; i < sites.size(); ++i) {
        const context_count* part = part_of(exact_parts, sites[i]);
        write_site(out, i + 1, sites[i], options, copies, run, part ? exact_count_note(*part) : std::string());
    }
    write_pooled_sites(out, pooled_findings(pooled, std::max<std::size_t>(sites.size(), 1)), options, run);
    out << "largest: the share of a site's objects in its largest identical group, with its interval; evidence:\n"
           "what it rests on, N whole (objects digested whole: the share measured) or N cmp (sampled comparisons:\n"
           "the interval is their bounds omega..gamma, with no point between). saves >=: bytes that sharing one\n"
           "copy would at least save of the run's allocations (churn); heap >=: of the objects alive at the heap\n"
           "moment (the objects alive at once then: what the heap would shrink by). Near-replicas differ in a few\n"
           "words: a finding of their own, never counted as identical.\n";
    if (copies)
        out << "copied from: where a site's objects' contents were copied from, by the profile's copy section\n"
               "(estimated bytes with their interval, and their share of all the bytes copied into the site's\n"
               "objects).\n";
    if (std::any_of(sites.begin(), sites.end(), [](const context_profile& c) { return c.allocations_estimated(); }))
        out << "~: estimated from sampled allocations (objects and savings are of all the allocations, scaled).\n";
    write_shared_contents(out, shared, options);
}

// The report of a profile in memory, its `top` best sites with an estimate.
inline void write_text_report(std::ostream& out, const std::vector<std::string>& sources_read, const profile& p,
                              std::size_t top, const text_options& options = {}) {
    site_selection table(top, [](const context_profile& c) { return c.combined.reported(); }, options.rank);
    site_pools pools;
    for (const context_profile& c : p.contexts) {
        table.add(c);
        pools.add(c);
    }
    std::vector<context_profile> sites = table.best();
    std::vector<pooled_site> every_site = pools.finish_all(p.run.estimator);
    const std::vector<shared_contents_pair> shared =
        shared_contents(every_site, p.run.estimator.confidence, shared_contents_listed);
    std::vector<pooled_site> pooled = site_pools::reached_from_several(std::move(every_site));
    locate_concentrations(pooled, std::max<std::size_t>(sites.size(), 1), p.contexts, p.run.estimator);
    std::vector<context_count> exact_parts;
    if (p.exact) {
        exact_counts_by_context by_context;
        for (const context_profile& c : p.contexts) by_context.add(c);
        exact_parts = by_context.finish(*p.exact);
    }
    write_text_report(out, sources_read, p.run, sites, table.totals(), options, p.copies ? &*p.copies : nullptr,
                      pooled, shared, exact_parts);
    if (p.exact) write_exact_counts_view(out, *p.exact, top);
}

} // namespace ojx
