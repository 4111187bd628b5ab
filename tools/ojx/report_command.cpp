// `ojx report`: one or more profiles (merged first) as a ranked table, a self-contained HTML page, collapsed
// stacks or pprof. A single profile is read as a stream: each site goes to every output as it is read, the table
// and the page keep only their best sites, collapsed stacks are written at once, and pprof keeps only its own
// deduplicated message — memory for what is written, not for the profile; the table reads the file once more for
// the contexts of the pooled sites it lists (where along their stacks their replicas concentrate). A copy section is printed after the
// table (copies_view.hpp) and shown in the page; with --value copied-bytes or copying-code, collapsed stacks and
// pprof are its copy volume (copy_stacks.hpp, by destination or by the code that copied) instead of the sites,
// written once the section has been read.
#include "collapsed_stacks.hpp"
#include "commands.hpp"
#include "copy_stacks.hpp"
#include "html_report.hpp"
#include "output_file.hpp"
#include "pprof_writer.hpp"
#include "profile_merger.hpp"
#include "profile_reader.hpp"
#include "source_lines.hpp"

#include "ojx/copies_view.hpp"
#include "ojx/frame_pools.hpp"
#include "ojx/options.hpp"
#include "ojx/shared_contents.hpp"
#include "ojx/site_pools.hpp"
#include "ojx/site_selection.hpp"
#include "ojx/text_report.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace ojx::tool {
namespace {


constexpr const char* report_help = R"(usage: ojx report [OPTIONS] PROFILE…

Ranks the allocation sites of one or more profiles (several are merged first, estimates recomputed from the
summed evidence) by how replicated their objects are, and prints a table — or writes the profile for a browser,
a flame graph tool or a continuous-profiling system.

table:
  --top N            sites to list (10)
  --rank KIND        what sites are ranked by: share (default: the low end of the largest identical
                     group's share, which every site with an estimate has), heap (bytes sharing would at
                     least save among the objects alive at the profile's heap moment) or churn (bytes it
                     would at least save of the run's allocations); the page's table starts in this order
  --min-share X      only sites whose largest identical group is at least X of their objects (0.6 or
                     60%), by the low end of its interval (--min-theta: its older name)
  --frames N         allocation frames shown per site, the site included (3)
  --accesses N       access contexts shown per site (3)
  --source DIR       print the source line of each frame found under DIR (its package path, or by file
                     name anywhere below); may be given several times
  --text             print the table even when writing files
files (written whole or not at all):
  --html FILE        one self-contained HTML page: flame view of sites and their access contexts, search,
                     zoom, the numbers and bounds of each site, a sortable table, and the copy section's
                     heaviest edges and hot copy chains where the profile has one; works offline
  --html-top N       sites in the page (500; --min-share applies)
  --title TEXT       the page's title
  --collapsed FILE   collapsed stacks (flamegraph.pl, speedscope), every site; FILE '-' is standard output
  --value KIND       width in collapsed stacks: replicated-bytes (default: of the run's allocations),
                     heap-replicated-bytes (of the objects alive at the heap moment), comparisons, objects, bytes;
                     or copied-bytes or copying-code: collapsed stacks and pprof show copy volume instead of
                     sites (the profile's copy section needed): the bytes each edge into a heap location
                     copied, estimated from its samples, with the source as leaf (`[copied from byte[]
                     elements at FRAME]`). copied-bytes stacks them by destination, under the allocation
                     context of the objects copied into and the location (`[Record+8]`); copying-code by the
                     code that copied, each edge's bytes split over the code contexts its samples were taken
                     in, under the context's frames and the destination (`[into Record+8 at FRAME]`), or
                     `[other code]` where the context was not kept, `[code not recorded]` where the profile
                     has no code (emulation, replay); or exact-objects or never-allocated: collapsed
                     stacks and pprof show the exact counts (the JVM agent's count=): each bytecode site's
                     count, split over its calling contexts by their sampled allocations where it has
                     several, and of those the objects the JVM never allocated (escape analysis; count= with
                     interval=0 measures it)
  --pprof FILE       gzipped pprof profile.proto (go tool pprof, continuous-profiling systems), every site

example: ojx report --top 5 --source src/main/java replicas.json
         ojx report --html replicas.html --pprof replicas.pb.gz host1.json host2.json
         ojx report --value copying-code --collapsed - copies.json | flamegraph.pl > copies.svg
)";

struct report_request {
    std::vector<std::string> profiles;
    std::size_t top = 10;
    double min_share = 0;
    text_options text;
    std::vector<std::string> source_directories;
    bool text_wanted = false;
    std::string html;
    html_options html_settings;
    std::string collapsed;
    stack_value value = stack_value::replicated_bytes;
    std::string pprof;
};

// The options, by the kinds the option reader checks (ojx/options.hpp); report_help says what each does and
// report_request holds the defaults. --source may be repeated, each adding a directory.
const option_spec report_options[] = {
    {"top", option_kind::count, "", ""},
    {"rank", option_kind::choice, "", "", {std::begin(site_rank_names), std::end(site_rank_names)}},
    {"min_share", option_kind::fraction, "", ""},
    {"min_theta", option_kind::fraction, "", ""},
    {"frames", option_kind::count, "", ""},
    {"accesses", option_kind::count, "", ""},
    {"source", option_kind::text, "", ""},
    {"text", option_kind::flag, "", ""},
    {"html", option_kind::text, "", ""},
    {"html_top", option_kind::count, "", ""},
    {"title", option_kind::text, "", ""},
    {"collapsed", option_kind::text, "", ""},
    {"value", option_kind::choice, "", "", {std::begin(stack_value_names), std::end(stack_value_names)}},
    {"pprof", option_kind::text, "", ""},
    {"help", option_kind::flag, "", ""},
};

// Reads the arguments into `request`; returns an exit status when the command should end now.
std::optional<int> parse(arguments args, report_request& r) {
    argument_reader reader(args, report_options);
    while (reader.next()) {
        if (reader.option() == nullptr) {
            r.profiles.emplace_back(reader.operand());
            continue;
        }
        const std::string_view name = reader.option()->name;
        const option_value& value = reader.value();
        if (name == "help") {
            std::fputs(report_help, stdout);
            return exit_ok;
        }
        if (name == "top") r.top = value.number;
        else if (name == "rank") r.text.rank = r.html_settings.rank = *parse_site_rank(value.text);
        else if (name == "min_share" || name == "min_theta") r.min_share = r.text.min_share = value.real;
        else if (name == "frames") r.text.frames = value.number;
        else if (name == "accesses") r.text.accesses = value.number;
        else if (name == "source") r.source_directories.push_back(value.text);
        else if (name == "text") r.text_wanted = true;
        else if (name == "html") r.html = value.text;
        else if (name == "html_top") r.html_settings.top = value.number;
        else if (name == "title") r.html_settings.title = value.text;
        else if (name == "collapsed") r.collapsed = value.text;
        else if (name == "value") r.value = *parse_stack_value(value.text);
        else r.pprof = value.text;
    }
    if (!reader.error().empty()) return usage_error("report", reader.error());
    if (r.profiles.empty()) return usage_error("report", "no profile given");
    if (r.html.empty() && r.collapsed.empty() && r.pprof.empty()) r.text_wanted = true;
    return std::nullopt;
}

// The contexts of the sites the text report lists pooled (the first `top` of pooled_findings), read again from
// `path`: one profile is read as a stream and never held whole, and only the end of the stream says which sites
// those are. None where `path` is not a regular file (a pipe reads once) or no site is listed.
std::vector<context_profile> contexts_of_findings(const std::string& path, const std::vector<pooled_site>& pooled,
                                                  std::size_t top) {
    std::unordered_set<std::string> wanted;
    for (const pooled_site& p : pooled_findings(pooled, top)) wanted.insert(site_key(p.site));
    std::vector<context_profile> kept;
    struct stat file;
    if (wanted.empty() || ::stat(path.c_str(), &file) != 0 || !S_ISREG(file.st_mode)) return kept;
    run_profile again;
    const auto error = read_profile(path, again, [&](context_profile&& c) {
        if (wanted.contains(site_key(c))) kept.push_back(std::move(c));
    });
    if (error) kept.clear(); // changed since the first read: no concentration rather than a wrong one
    return kept;
}

// The exact counts over every context of the profile at `path`, read again (as contexts_of_findings does); none
// where `path` is not a regular file or changed since.
std::vector<context_count> exact_parts_of(const std::string& path, const exact_counts& exact) {
    struct stat file;
    if (::stat(path.c_str(), &file) != 0 || !S_ISREG(file.st_mode)) return {};
    exact_counts_by_context by_context;
    run_profile again;
    if (read_profile(path, again, [&](context_profile&& c) { by_context.add(c); })) return {};
    return by_context.finish(exact);
}

} // namespace

int report_command(arguments args) {
    report_request r;
    if (const std::optional<int> done = parse(args, r)) return *done;

    // What each output lists: the table, sites with an estimate; the page, every site; both from min-share.
    const double min_share = r.min_share;
    const auto shared = [min_share](const context_profile& c) {
        return c.combined.reported() && c.combined.largest_share_ci.low >= min_share;
    };
    site_selection table(r.text_wanted ? r.top : 0, shared, r.text.rank);
    site_selection page(r.html.empty() ? 0 : r.html_settings.top,
                        [&](const context_profile& c) { return min_share == 0 || shared(c); }, r.text.rank);
    const auto failed = [](const std::string& message) {
        std::fprintf(stderr, "ojx report: %s\n", message.c_str());
        return exit_failed;
    };
    // Every file is written to a temporary name and renamed only when all of them were written; a file that is
    // not committed (bad input found half way) is removed.
    std::vector<std::unique_ptr<output_file>> files;
    const auto open = [&](const std::string& path, std::ios::openmode mode) -> std::ostream* {
        files.push_back(std::make_unique<output_file>(path, mode));
        return files.back()->ok() ? &files.back()->stream() : nullptr;
    };
    std::ostream* html = nullptr;
    std::ostream* collapsed = nullptr;
    std::ostream* pprof = nullptr;
    std::unique_ptr<pprof_writer> pprof_sites;
    const bool copy_volume = is_copy_volume(r.value) && !(r.collapsed.empty() && r.pprof.empty());
    const bool exact_stacks = is_exact_count(r.value) && !(r.collapsed.empty() && r.pprof.empty());
    const bool site_stacks = !copy_volume && !exact_stacks;
    exact_counts_by_context by_context; // with exact_stacks: the contexts' stacks and sampled allocations
    if (!r.html.empty() && !(html = open(r.html, std::ios::out))) return failed(files.back()->error());
    if (r.collapsed == "-") collapsed = &std::cout;
    else if (!r.collapsed.empty() && !(collapsed = open(r.collapsed, std::ios::out)))
        return failed(files.back()->error());
    if (!r.pprof.empty()) {
        if (!(pprof = open(r.pprof, std::ios::out | std::ios::binary))) return failed(files.back()->error());
        pprof_sites = std::make_unique<pprof_writer>(
            r.value == stack_value::exact_objects     ? pprof_writer::samples::exact_objects
            : r.value == stack_value::never_allocated ? pprof_writer::samples::never_allocated
            : !copy_volume                            ? pprof_writer::samples::sites
            : r.value == stack_value::copying_code    ? pprof_writer::samples::copying_code
                                                      : pprof_writer::samples::copies);
    }

    // Each site goes to every output as it comes: one profile is read as a stream and never held whole;
    // several are merged first.
    site_pools pools;
    const auto take = [&](context_profile&& c) {
        if (collapsed != nullptr && site_stacks) write_collapsed(*collapsed, c, r.value);
        if (pprof_sites && site_stacks) pprof_sites->add(c);
        if (exact_stacks) by_context.add(c);
        if (html != nullptr) page.add(c);
        if (r.text_wanted || html != nullptr) pools.add(c);
        table.add(std::move(c));
    };
    run_profile run;
    std::optional<copy_profile> copies;
    std::optional<exact_counts> exact;
    profile merged; // several profiles: their sum, its contexts kept for the pooled findings' concentrations
    if (r.profiles.size() > 1) {
        if (const auto error = load_profiles(r.profiles, merged)) return input_error("report", *error);
        run = merged.run;
        copies = std::move(merged.copies);
        exact = std::move(merged.exact);
        for (const context_profile& c : merged.contexts) take(context_profile(c));
    } else if (const auto error = read_profile(r.profiles.front(), run, take, &copies, &exact)) {
        return input_error("report", *error);
    }

    if (copy_volume) {
        const std::string_view value_name = stack_value_names[static_cast<std::size_t>(r.value)];
        if (!copies)
            return input_error("report", joined(r.profiles) + ": no copy section (copies), which --value " +
                                             std::string(value_name) + " shows; copy profiling writes one");
        const std::vector<copy_stack> stacks =
            r.value == stack_value::copying_code ? copying_code_stacks(*copies) : copy_stacks(*copies);
        for (const copy_stack& copy : stacks) {
            if (collapsed != nullptr) write_collapsed(*collapsed, copy);
            if (pprof_sites) pprof_sites->add(copy);
        }
    }
    if (exact_stacks) {
        const std::string value_name(stack_value_names[static_cast<std::size_t>(r.value)]);
        if (!exact)
            return input_error("report", joined(r.profiles) + ": no exact counts section (exact_counts), which --value " +
                                             value_name + " shows; the JVM agent's count= writes one");
        if (r.value == stack_value::never_allocated && !exact->jvm_reported)
            return input_error("report", joined(r.profiles) + ": the exact counts were not compared with the JVM's "
                                             "allocations, which --value never-allocated shows; count= with "
                                             "interval=0 compares them");
        for (const context_count& count : by_context.finish(*exact)) {
            if (collapsed != nullptr) write_collapsed(*collapsed, count, r.value);
            if (pprof_sites) pprof_sites->add(count);
        }
    }
    std::vector<pooled_site> every_site = pools.finish_all(run.estimator);
    const std::vector<shared_contents_pair> shared_pairs =
        shared_contents(every_site, run.estimator.confidence, shared_contents_listed);
    std::vector<pooled_site> pooled = site_pools::reached_from_several(std::move(every_site));
    // Each shown site's part of its exact count: from every context, kept by the merge or the stacks, or read again.
    std::vector<context_count> exact_parts;
    if (exact && (r.text_wanted || html != nullptr)) {
        if (exact_stacks) {
            exact_parts = by_context.finish(*exact);
        } else if (r.profiles.size() > 1) {
            for (const context_profile& c : merged.contexts) by_context.add(c);
            exact_parts = by_context.finish(*exact);
        } else {
            exact_parts = exact_parts_of(r.profiles.front(), *exact);
        }
    }
    if (html != nullptr)
        write_html(*html, profile{run, page.best(), copies, exact}, r.html_settings, pooled, shared_pairs,
                   exact_parts);
    if (pprof_sites)
        if (const auto error = pprof_sites->finish(*pprof, run)) return failed(r.pprof + ": " + *error);
    for (const auto& file : files)
        if (const auto error = file->commit()) return failed(*error);
    if (r.text_wanted) {
        std::unique_ptr<source_lines> sources;
        if (!r.source_directories.empty()) {
            sources = std::make_unique<source_lines>(r.source_directories);
            r.text.source_line = [&lines = *sources](std::string_view frame) { return lines.line_of(frame); };
        }
        const std::vector<context_profile> sites = table.best();
        const std::size_t pooled_shown = std::max<std::size_t>(sites.size(), 1);
        // Where the pooled findings' replicas concentrate: from their contexts, in the merge or read again.
        const std::vector<context_profile> finding_contexts =
            r.profiles.size() == 1 ? contexts_of_findings(r.profiles.front(), pooled, pooled_shown)
                                   : std::move(merged.contexts);
        locate_concentrations(pooled, pooled_shown, finding_contexts, run.estimator);
        write_text_report(std::cout, r.profiles, run, sites, table.totals(), r.text, copies ? &*copies : nullptr,
                          pooled, shared_pairs, exact_parts);
        if (copies) write_copies_view(std::cout, *copies, run.estimator.confidence, r.text);
        if (exact) write_exact_counts_view(std::cout, *exact, r.top);
    }
    for (const std::string& path : {r.html, r.collapsed, r.pprof})
        if (!path.empty() && path != "-") std::fprintf(stderr, "ojx report: wrote %s\n", path.c_str());
    return exit_ok;
}

} // namespace ojx::tool
