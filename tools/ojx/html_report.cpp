// Writes the HTML report: the page compiled in from report_template.html, with the title and the profile (as
// JSON, for the page's script) filled into its placeholders, and its copies view kept only for a profile with a
// copy section.
#include "html_report.hpp"

#include "report_template.hpp"

#include "ojx/copies_view.hpp"
#include "ojx/copy_sources.hpp"
#include "ojx/frame_pools.hpp"
#include "ojx/report.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ojx::tool {
namespace {

constexpr std::string_view default_title = "ojx replica report";
constexpr std::string_view title_placeholder = "@OJX_TITLE@";
constexpr std::string_view data_placeholder = "@OJX_DATA@";
// Lines of the page between these two marker lines are its copies view (markup, style and script), written only
// for a profile with a copy section: without one the page is what it was before the view existed.
constexpr std::string_view copies_begin = "@OJX_COPIES@\n";
constexpr std::string_view copies_end = "@OJX_END_COPIES@\n";

// The page has room for more of the copy graph than the text view's terminal.
constexpr std::size_t page_copy_edges = 50;
constexpr std::size_t page_copy_chains = 20;
constexpr std::size_t page_copy_sites = 20; // clone pairs, and carrier sites

// Frame and type names repeat across contexts (most stacks share their outer frames), so the page receives each
// name once, in a table, and stacks as indices into it: a profile of hundreds of deep contexts stays small.
class string_table {
public:
    std::size_t index(const std::string& name) {
        const auto [at, added] = indices_.try_emplace(name, names_.size());
        if (added) names_.push_back(&at->first); // unordered_map keeps its keys in place as it grows
        return at->second;
    }
    const std::vector<const std::string*>& names() const noexcept { return names_; }

private:
    std::unordered_map<std::string, std::size_t> indices_;
    std::vector<const std::string*> names_;
};

void append_string(std::string& json, std::string_view text) {
    json += '"';
    json += report_detail::json_escape(text);
    json += '"';
}

void append_key(std::string& json, std::string_view key) {
    json += '"';
    json += key;
    json += "\":";
}

void append_interval(std::string& json, const interval& range) {
    json += '[' + report_detail::number(range.low) + ',' + report_detail::number(range.high) + ']';
}

void append_frames(std::string& json, const std::vector<std::string>& frames, string_table& strings) {
    json += '[';
    for (std::size_t i = 0; i < frames.size(); ++i) json += (i ? "," : "") + std::to_string(strings.index(frames[i]));
    json += ']';
}

void append_type_counts(std::string& json, const type_allocations& t) {
    using report_detail::number;
    json += ",\"instances\":" + number(t.instances) + ",\"bytes\":" + number(t.bytes) + ",\"seen\":" +
            std::to_string(t.seen);
    if (t.array) json += ",\"elements\":" + number(t.elements);
    if (t.instances_variance > 0) json += ",\"stddev\":" + number(std::sqrt(t.instances_variance));
}

// JP's metrics for the details panel: every type's instances (arrays: number and elements), null without them.
void append_allocations(std::string& json, const context_profile& c) {
    if (!c.allocated) {
        json += "null";
        return;
    }
    const named_allocations& a = *c.allocated;
    json += std::string("{\"estimated\":") + (a.estimated ? "true" : "false") + ",\"types\":[";
    for (std::size_t i = 0; i < a.types.size(); ++i) {
        const named_type_allocations& t = a.types[i];
        json += i ? ",{\"type\":" : "{\"type\":";
        append_string(json, t.type.empty() ? std::string_view("?") : std::string_view(t.type));
        if (t.counts.array) {
            json += ",\"element_type\":";
            append_string(json, array_element_type(t.type));
        }
        append_type_counts(json, t.counts);
        json += '}';
    }
    if (a.other.seen > 0) {
        json += std::string(a.types.empty() ? "" : ",") + "{\"type\":\"(other types)\"";
        append_type_counts(json, a.other);
        json += '}';
    }
    json += "]}";
}

// The frames of a site of `copies` for its name's tooltip. Where `copies` is the views' (sites_by_leaf of `whole`),
// the whole stack of the one site of `whole` it stands for, or its leaf frame where it stands for several.
const std::vector<std::string>& site_frames(const copy_profile& copies, context_id site, const copy_profile* whole) {
    const copy_site& named = copies.sites.at(site);
    if (whole == nullptr) return named.frames;
    const copy_site* only = nullptr;
    for (const copy_site& s : whole->sites) {
        if (s.type != named.type || s.frames.empty() != named.frames.empty() ||
            (!s.frames.empty() && s.frames.front() != named.frames.front()))
            continue;
        if (only != nullptr) return named.frames;
        only = &s;
    }
    return only != nullptr ? only->frames : named.frames;
}

// A copy graph's node as the text view names it, and its allocation context's frames where it names one.
void append_copy_node(std::string& json, const copy_profile& copies, const copy_node& node, string_table& strings,
                      const copy_profile* whole = nullptr) {
    json += "{\"name\":";
    append_string(json, copy_node_name(copies, node));
    if (names_site(node)) {
        json += ",\"frames\":";
        append_frames(json, site_frames(copies, node.site, whole), strings);
    }
    json += '}';
}

// An allocation context as the site-level views name it, with its frames.
void append_copy_site(std::string& json, const copy_profile& copies, context_id site, string_table& strings,
                      const copy_profile* whole) {
    json += "{\"name\":";
    append_string(json, copy_site_name(copies, site));
    json += ",\"frames\":";
    append_frames(json, site_frames(copies, site, whole), strings);
    json += '}';
}

void append_copy_estimate(std::string& json, const copy_estimate& e) {
    json += "{\"copies\":" + report_detail::number(e.copies) + ",\"bytes\":" + report_detail::number(e.bytes) +
            ",\"bytes_ci\":";
    append_interval(json, e.bytes_interval);
    json += '}';
}

// Where the context's contents were copied from (copy_sources.hpp), as the text report's "copied from" lines say:
// {"copied", "sources": [{"from", "share", "estimate"}] (heaviest first)}; nothing where the copy section has no
// copies into the context, or no section.
void append_copied_from(std::string& json, const copy_profile& copies, const context_profile& c, double level,
                        string_table& strings) {
    const std::optional<copied_contents> contents = copied_into(copies, c, level);
    if (!contents) return;
    json += ",\"copied_from\":{\"copied\":";
    append_copy_estimate(json, contents->copied);
    json += ",\"sources\":[";
    for (std::size_t i = 0; i < contents->sources.size(); ++i) {
        const copy_source& source = contents->sources[i];
        json += i ? ",{\"from\":" : "{\"from\":";
        append_copy_node(json, copies, source.from, strings);
        json += ",\"share\":" + report_detail::number(source.share) + ",\"estimate\":";
        append_copy_estimate(json, source.estimate);
        json += '}';
    }
    json += "]}";
}

// A saving (live_heap.hpp) as [point, low, high] bytes.
void append_saving(std::string& json, const saving& s) {
    using report_detail::number;
    json += '[' + number(s.point) + ',' + number(s.low) + ',' + number(s.high) + ']';
}

// `copies`: the profile's copy section, if it has one (estimates at `level`); `extra`: more members of the object
// (",\"name\":value…"), written last.
void append_context(std::string& json, const context_profile& c, std::size_t rank, const copy_profile* copies,
                    double level, string_table& strings, std::string_view extra = {}) {
    using report_detail::number;
    const replica_estimate& e = c.estimate;
    json += "{\"rank\":" + std::to_string(rank) + ",\"type\":" + std::to_string(strings.index(c.type));
    json += ",\"frames\":";
    append_frames(json, c.frames, strings);
    json += ",\"objects\":" + std::to_string(c.objects) + ",\"bytes\":" + std::to_string(c.bytes);
    // What the text report's objects column shows: every allocation of the site, estimated where allocations
    // were sampled, not the tracked objects alone.
    json += ",\"allocated_objects\":" + number(c.allocated_total().instances);
    json += std::string(",\"objects_estimated\":") + (c.allocations_estimated() ? "true" : "false");
    // The comparisons' own threshold; the site's estimate is `evidence` and what follows it.
    json += std::string(",\"comparisons_reported\":") + (e.reported ? "true" : "false");
    json += ",\"equal\":" + std::to_string(e.equal) + ",\"different\":" + std::to_string(e.different);
    json += ",\"pairs\":" + std::to_string(e.pairs) + ",\"sources\":" + std::to_string(e.sources);
    json += ",\"effective\":" + number(e.effective_comparisons) + ",\"theta\":" + number(e.theta);
    json += ",\"theta_ci\":";
    append_interval(json, e.theta_ci);
    json += ",\"alpha\":" + number(e.alpha) + ",\"alpha_ci\":";
    append_interval(json, e.alpha_ci);
    json += ",\"alpha_comparisons\":" + std::to_string(e.alpha_comparisons);
    json += ",\"omega\":" + number(e.omega) + ",\"gamma\":" + number(e.gamma);
    // The site's estimate and what it rests on (site_estimate.hpp), and its near-replicas.
    const site_estimate& s = c.combined;
    json += std::string(",\"replicated\":") + (called_replicated(s) ? "true" : "false");
    json += ",\"evidence\":\"" + std::string(evidence_basis_name(s.basis)) + "\",\"whole_objects\":" +
            std::to_string(c.identical.objects) + ",\"largest_share\":" + number(s.largest_share) +
            ",\"largest_share_ci\":";
    append_interval(json, s.largest_share_ci);
    json += ",\"identical_pairs\":" + number(s.identical_pairs) + ",\"identical_pairs_ci\":";
    append_interval(json, s.identical_pairs_ci);
    json += std::string(",\"largest_all_zero\":") + (c.identical.largest_all_zero ? "true" : "false");
    json += ",\"near\":";
    json += c.near.found ? "{\"near\":" + std::to_string(c.near.near) + ",\"share\":" + number(c.near.share) +
                               ",\"shared_fraction\":" + number(c.near.shared_fraction) + '}'
                         : std::string("null");
    json += ",\"bytes_saved\":" + number(c.replicated_bytes()) + ",\"churn\":";
    append_saving(json, c.churn_saving());
    // The heap view (live_heap.hpp): null where the profile has no live objects of the site.
    json += ",\"heap\":";
    if (c.live.empty()) {
        json += "null";
    } else {
        json += "{\"objects\":" + number(c.live.weight) + ",\"bytes\":" + number(c.live.bytes) +
                ",\"digested\":" + std::to_string(c.live_identical.objects) +
                std::string(",\"estimated\":") + (c.heap.reported() ? "true" : "false") +
                ",\"largest_share\":" + number(c.heap.largest_share) +
                std::string(",\"largest_all_zero\":") + (c.live_identical.largest_all_zero ? "true" : "false") +
                ",\"largest_share_ci\":";
        append_interval(json, c.heap.largest_share_ci);
        json += ",\"saves\":";
        append_saving(json, c.heap_saving());
        json += '}';
    }
    json += ",\"allocated\":";
    append_allocations(json, c);
    json += ",\"accesses\":[";
    for (std::size_t i = 0; i < c.accesses.size(); ++i) {
        json += i ? ",{\"frames\":" : "{\"frames\":";
        append_frames(json, c.accesses[i].frames, strings);
        json += ",\"samples\":" + std::to_string(c.accesses[i].samples) + '}';
    }
    json += ']';
    if (copies) append_copied_from(json, *copies, c, level, strings);
    json += extra;
    json += '}';
}

void append_run(std::string& json, const run_profile& run, site_rank rank) {
    const std::pair<std::string_view, const std::vector<std::string>*> facts[] = {
        {"runtime", &run.runtime},   {"sampler", &run.sampler},         {"watchpoints", &run.watchpoints},
        {"pairing", &run.pairing},   {"replacement", &run.replacement},
    };
    json += '{';
    for (const auto& [key, values] : facts) {
        append_key(json, key);
        append_string(json, joined(*values));
        json += ',';
    }
    json += "\"profiles\":" + std::to_string(run.profiles);
    json += ",\"rank\":";
    append_string(json, site_rank_names[static_cast<std::size_t>(rank)]);
    json += ",\"heap_moment\":";
    append_string(json, joined(run.heap_moments));
    json += ",\"seconds\":" + report_detail::number(run.seconds);
    json += ",\"min_comparisons\":" + std::to_string(run.estimator.min_comparisons);
    json += ",\"min_digested_objects\":" + std::to_string(run.estimator.min_digested_objects);
    json += ",\"confidence\":" + report_detail::number(run.estimator.confidence) + ",\"counters\":[";
    for (std::size_t i = 0; i < run.counters.size(); ++i) {
        json += i ? ",[" : "[";
        append_string(json, run.counters[i].path);
        json += ',' + std::to_string(run.counters[i].value) + ']';
    }
    json += "]}";
}

// The code that copied along `edge`, as the copies view names it under the edge: ,"code_label" ("copied by", or
// "used by" for an edge into the consumer), "code_samples" (the samples whose code was counted, the shares'
// whole) and "copied_by": [{"frame" (a leaf frame), "samples"}], heaviest first; nothing where the samples named
// no code.
void append_copying_code(std::string& json, const copy_profile& copies, const copy_edge& edge) {
    const auto code = copying_code(copies, edge);
    if (code.empty()) return;
    json += ",\"code_label\":";
    append_string(json, copying_code_label(edge));
    json += ",\"code_samples\":" + std::to_string(copies.code.of(edge).samples()) + ",\"copied_by\":[";
    for (std::size_t k = 0; k < code.size() && k < copies_view_code; ++k) {
        json += k ? ",{\"frame\":" : "{\"frame\":";
        append_string(json, code[k].first);
        json += ",\"samples\":" + std::to_string(code[k].second) + '}';
    }
    json += ']';
}

// The copies view's data, what copies_view.hpp prints: {"sampling", "counters", "copied", "used", "total_edges",
// "edges" (the heaviest, estimated at `level`, each with the code that copied along it), "total_chains", "chains"
// (the hot copy chains, heaviest first), "clone_pairs" ({"from", "to", "share", "estimate"}, heaviest first),
// "carriers" ({"site", "copied_out", "copied_in"}, heaviest copied out first)}; its sites named alike made one, as
// the text view does (sites_by_leaf).
void append_copies(std::string& json, const copy_profile& whole, double level, string_table& strings) {
    const copy_profile copies = sites_by_leaf(whole);
    json += "{\"sampling\":";
    append_string(json, joined(copies.sampling));
    json += ",\"counters\":{";
    for (std::size_t i = 0; i < std::size(copy_counters); ++i) {
        if (i) json += ',';
        append_key(json, copy_counters[i].name);
        json += std::to_string(copies.counters.*copy_counters[i].value);
    }
    const copy_totals totals = estimated_copy_totals(copies, level);
    json += "},\"copied\":";
    append_copy_estimate(json, totals.copied);
    json += ",\"used\":";
    append_copy_estimate(json, totals.used);
    const std::vector<estimated_copy_edge> edges = heaviest_copy_edges(copies, level);
    json += ",\"total_edges\":" + std::to_string(edges.size()) + ",\"edges\":[";
    for (std::size_t i = 0; i < edges.size() && i < page_copy_edges; ++i) {
        const estimated_copy_edge& e = edges[i];
        json += i ? ",\n{\"from\":" : "\n{\"from\":";
        append_copy_node(json, copies, e.edge.from, strings, &whole);
        json += ",\"to\":";
        append_copy_node(json, copies, e.edge.to, strings, &whole);
        json += ",\"width\":" + std::to_string(e.edge.width) + ",\"samples\":" + std::to_string(e.samples) +
                ",\"estimate\":";
        append_copy_estimate(json, e.estimate);
        append_copying_code(json, copies, e.edge);
        json += '}';
    }
    const std::vector<copy_chain> chains = copy_chains(copies);
    json += "],\"total_chains\":" + std::to_string(chains.size()) + ",\"chains\":[";
    for (std::size_t i = 0; i < chains.size() && i < page_copy_chains; ++i) {
        json += i ? ",\n{\"nodes\":[" : "\n{\"nodes\":[";
        for (std::size_t n = 0; n < chains[i].nodes.size(); ++n) {
            if (n) json += ',';
            append_copy_node(json, copies, chains[i].nodes[n], strings, &whole);
        }
        json += "],\"bytes\":" + std::to_string(chains[i].bytes) + '}';
    }
    json += "],\"clone_pairs\":[";
    const std::vector<estimated_site_pair> pairs = estimated_clone_pairs(copies, level);
    for (std::size_t i = 0; i < pairs.size() && i < page_copy_sites; ++i) {
        json += i ? ",\n{\"from\":" : "\n{\"from\":";
        append_copy_site(json, copies, pairs[i].pair.from, strings, &whole);
        json += ",\"to\":";
        append_copy_site(json, copies, pairs[i].pair.to, strings, &whole);
        json += ",\"share\":" + report_detail::number(pairs[i].pair.share) + ",\"estimate\":";
        append_copy_estimate(json, pairs[i].estimate);
        json += '}';
    }
    json += "],\"carriers\":[";
    const std::vector<estimated_carrier_site> carriers = estimated_carrier_sites(copies, level);
    for (std::size_t i = 0; i < carriers.size() && i < page_copy_sites; ++i) {
        json += i ? ",\n{\"site\":" : "\n{\"site\":";
        append_copy_site(json, copies, carriers[i].site, strings, &whole);
        json += ",\"copied_out\":";
        append_copy_estimate(json, carriers[i].copied_out);
        json += ",\"copied_in\":";
        append_copy_estimate(json, carriers[i].copied_in);
        json += '}';
    }
    json += "]}";
}

// The exact counts section as the page shows it: the totals, and the `top` sites that allocated most, most first
// (exact_counts_view.hpp prints the same in text): {"plans", "objects", "increments", "corrections",
// "methods_instrumented", "sites_total", "jvm_reported", "not_allocated", "sites": [{"frame", "type" (string
// indices), "bci", "objects", "elements" (array sites), "jvm_allocated", "not_allocated"}]} (the JVM's figures 0 where it did not report).
void append_exact(std::string& json, const exact_counts& c, std::size_t top, string_table& strings) {
    json += "{\"plans\":[";
    for (std::size_t i = 0; i < c.plans.size(); ++i) {
        if (i) json += ',';
        append_string(json, c.plans[i]);
    }
    json += "],\"objects\":" + std::to_string(objects_counted(c)) + ",\"increments\":" + std::to_string(c.increments) +
            ",\"corrections\":" + std::to_string(c.corrections) +
            ",\"methods_instrumented\":" + std::to_string(c.methods_instrumented) +
            ",\"sites_total\":" + std::to_string(c.sites.size()) +
            ",\"jvm_reported\":" + (c.jvm_reported ? "true" : "false") +
            ",\"not_allocated\":" + std::to_string(objects_not_allocated(c)) + ",\"sites\":[";
    bool first = true;
    for (const counted_site* site : most_counted(c, top)) {
        json += first ? "" : ",";
        first = false;
        json += "{\"frame\":" + std::to_string(strings.index(site->frame)) +
                ",\"type\":" + std::to_string(strings.index(site->type)) + ",\"bci\":" + std::to_string(site->bci) +
                ",\"objects\":" + std::to_string(site->objects) +
                (array_site(*site) ? ",\"elements\":" + std::to_string(site->elements) : std::string()) +
                ",\"jvm_allocated\":" + std::to_string(site->jvm_allocated) +
                ",\"not_allocated\":" + std::to_string(not_allocated(c, *site)) + '}';
    }
    json += "]}";
}

// The pools of the flame view's frame nodes (frame_pools.hpp) over the contexts the page shows: [{"first",
// "depth" (which name the node in the tree the script builds from "contexts" in their order), "contexts" (below
// it), "sites": [{"type", "frame" (the leaf; string indices), "contexts", "replicated_contexts", "objects",
// "whole_objects", "evidence", "largest_share", "largest_share_ci", "replicated"}]}].
void append_frame_pools(std::string& json, const std::vector<context_profile>& shown, const estimator_config& config,
                        string_table& strings) {
    using report_detail::number;
    const std::vector<frame_pool> nodes = frame_pools(shown, config);
    json += '[';
    for (std::size_t n = 0; n < nodes.size(); ++n) {
        json += n ? ",\n{\"first\":" : "\n{\"first\":";
        json += std::to_string(nodes[n].first_context) + ",\"depth\":" + std::to_string(nodes[n].depth) +
                ",\"contexts\":" + std::to_string(nodes[n].contexts) + ",\"sites\":[";
        for (std::size_t i = 0; i < nodes[n].sites.size(); ++i) {
            const pooled_site& pool = nodes[n].sites[i];
            const context_profile& c = pool.site;
            const site_estimate& e = c.combined;
            json += i ? ",{\"type\":" : "{\"type\":";
            json += std::to_string(strings.index(c.type)) + ",\"frame\":" +
                    (c.frames.empty() ? std::string("null") : std::to_string(strings.index(c.frames.front()))) +
                    ",\"contexts\":" + std::to_string(pool.contexts) +
                    ",\"replicated_contexts\":" + std::to_string(pool.replicated_contexts) +
                    ",\"objects\":" + std::to_string(c.objects) +
                    ",\"whole_objects\":" + std::to_string(c.identical.objects) + ",\"evidence\":\"" +
                    std::string(evidence_basis_name(e.basis)) + "\",\"largest_share\":" + number(e.largest_share) +
                    ",\"largest_share_ci\":";
            append_interval(json, e.largest_share_ci);
            json += std::string(",\"replicated\":") + (called_replicated(e) ? "true" : "false") + '}';
        }
        json += "]}";
    }
    json += ']';
}

// Pairs of sites holding the same contents whole (shared_contents.hpp), as the text report lists them:
// [{"contents", "sides": [{"type", "frame" (string indices), "digested", "share", "share_ci", "objects",
// "objects_ci", "bytes", "bytes_ci"}, ...]}], the side with more bytes shared first.
void append_shared_contents(std::string& json, const std::vector<shared_contents_pair>& shared,
                            string_table& strings) {
    using report_detail::number;
    json += '[';
    for (std::size_t i = 0; i < shared.size(); ++i) {
        json += i ? ",\n{\"contents\":" : "\n{\"contents\":";
        json += std::to_string(shared[i].contents) + ",\"sides\":[";
        for (const shared_side* side : {&shared[i].first, &shared[i].second}) {
            json += side == &shared[i].first ? "{\"type\":" : ",{\"type\":";
            json += std::to_string(strings.index(side->type)) +
                    ",\"frame\":" + std::to_string(strings.index(side->frame)) +
                    ",\"digested\":" + std::to_string(side->digested_shared) + ",\"share\":" + number(side->share) +
                    ",\"share_ci\":";
            append_interval(json, side->share_ci);
            json += ",\"objects\":" + number(side->objects) + ",\"objects_ci\":";
            append_interval(json, side->objects_ci);
            json += ",\"bytes\":" + number(side->bytes) + ",\"bytes_ci\":";
            append_interval(json, side->bytes_ci);
            json += '}';
        }
        json += "]}";
    }
    json += ']';
}

// What the page's script reads: {"run", "total_contexts", "contexts" (the top ones, rank order; with "exact"
// where their site was counted exactly), "frame_pools"
// (append_frame_pools), "pooled" (the pooled sites' findings, each a context with "pooled_contexts" and
// "replicated_contexts"), "shared_contents" (append_shared_contents), "copies" (only with a copy section),
// "exact" (only with exact counts), "strings"}.
std::string page_data(const profile& p, std::size_t top, site_rank rank, const std::vector<pooled_site>& pooled,
                      const std::vector<shared_contents_pair>& shared, const std::vector<context_count>& exact_parts) {
    string_table strings;
    std::string contexts = "[";
    const std::size_t shown = std::min(top, p.contexts.size());
    for (std::size_t i = 0; i < shown; ++i) {
        if (i) contexts += ",\n";
        // Where its site was counted exactly: {"site" (the site's count), "part" (this context's), "split"}.
        std::string exact;
        if (const context_count* part = part_of(exact_parts, p.contexts[i]))
            exact = ",\"exact\":{\"site\":" + std::to_string(part->site_objects) + ",\"part\":" +
                    std::to_string(part->objects) + ",\"split\":" + (part->split ? "true" : "false") + '}';
        append_context(contexts, p.contexts[i], i + 1, p.copies ? &*p.copies : nullptr, p.run.estimator.confidence,
                       strings, exact);
    }
    contexts += ']';

    std::string json = "{\"run\":";
    append_run(json, p.run, rank);
    json += ",\n\"total_contexts\":" + std::to_string(p.contexts.size()) + ",\n\"contexts\":" + contexts;
    json += ",\n\"frame_pools\":";
    if (shown == p.contexts.size())
        append_frame_pools(json, p.contexts, p.run.estimator, strings);
    else
        append_frame_pools(json, {p.contexts.begin(), p.contexts.begin() + static_cast<std::ptrdiff_t>(shown)},
                           p.run.estimator, strings);
    json += ",\n\"pooled\":[";
    const std::vector<pooled_site> findings = pooled_findings(pooled, top);
    for (std::size_t i = 0; i < findings.size(); ++i) {
        if (i) json += ",\n";
        append_context(json, findings[i].site, i + 1, nullptr, p.run.estimator.confidence, strings,
                       ",\"pooled_contexts\":" + std::to_string(findings[i].contexts) +
                           ",\"replicated_contexts\":" + std::to_string(findings[i].replicated_contexts));
    }
    json += ']';
    json += ",\n\"shared_contents\":";
    append_shared_contents(json, shared, strings);
    if (p.copies) {
        json += ",\n\"copies\":";
        append_copies(json, *p.copies, p.run.estimator.confidence, strings);
    }
    if (p.exact) {
        json += ",\n\"exact\":";
        append_exact(json, *p.exact, top, strings);
    }
    json += ",\n\"strings\":[";
    for (std::size_t i = 0; i < strings.names().size(); ++i) {
        if (i) json += ",\n";
        append_string(json, *strings.names()[i]);
    }
    json += "]}";
    return json;
}

// In a <script> element the HTML parser ends the element at "</script" whatever the JSON means, and "<!--"
// changes how it scans; JSON's \u escapes for <, > and & keep the text inert and mean the same characters.
// (They can only occur inside JSON strings, where the escapes are valid.)
void write_inert_in_script(std::ostream& out, std::string_view json) {
    for (const char ch : json) {
        switch (ch) {
        case '<': out << "\\u003c"; break;
        case '>': out << "\\u003e"; break;
        case '&': out << "\\u0026"; break;
        default: out << ch;
        }
    }
}

std::string html_escape(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (const char ch : text) {
        switch (ch) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&#39;"; break;
        default: out += ch;
        }
    }
    return out;
}

} // namespace

void write_html(std::ostream& out, const profile& p, const html_options& options,
                const std::vector<pooled_site>& pooled, const std::vector<shared_contents_pair>& shared,
                const std::vector<context_count>& exact_parts) {
    const std::string title = html_escape(options.title.empty() ? default_title : options.title);
    const std::string data = page_data(p, options.top, options.rank, pooled, shared, exact_parts);
    std::string_view page = report_template();
    for (std::size_t at = page.find('@'); at != std::string_view::npos; at = page.find('@')) {
        out << page.substr(0, at);
        page.remove_prefix(at);
        if (page.starts_with(title_placeholder)) {
            out << title;
            page.remove_prefix(title_placeholder.size());
        } else if (page.starts_with(data_placeholder)) {
            write_inert_in_script(out, data);
            page.remove_prefix(data_placeholder.size());
        } else if (page.starts_with(copies_begin)) {
            page.remove_prefix(copies_begin.size());
            if (!p.copies) page.remove_prefix(std::min(page.find(copies_end), page.size()));
        } else if (page.starts_with(copies_end)) {
            page.remove_prefix(copies_end.size());
        } else {
            out << '@'; // an '@' of the page itself (CSS, text)
            page.remove_prefix(1);
        }
    }
    out << page;
}

} // namespace ojx::tool
