// `ojx report --html`: the profile as one self-contained HTML page — an icicle view of allocation contexts (width
// by replication evidence, colour by each context's estimate), a sortable table, a details panel, the sites pooled
// over their calling contexts and, for a profile with a copy section,
// its heaviest copy edges and hot copy chains (copies_view.hpp's names and estimates). The page loads nothing: its
// markup, style and script are compiled in (report_template.html) and the profile travels inside it as JSON.
#pragma once

#include "ojx/exact_counts_by_context.hpp"
#include "ojx/profile.hpp"
#include "ojx/shared_contents.hpp"
#include "ojx/site_pools.hpp"

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

namespace ojx::tool {

struct html_options {
    std::size_t top = 500; // contexts included: the first `top` in the profile's (rank) order
    std::string title;     // empty: "ojx replica report"
    site_rank rank = site_rank::share; // what that order is (the page says it)
};

// `pooled`: the profile's sites pooled over their calling contexts (site_pools.hpp); the page lists their findings.
// `shared`: pairs of sites holding the same contents whole (shared_contents.hpp), which the page lists too.
// `exact_parts`: the exact counts over every context of the profile (exact_counts_by_context.hpp): a shown
// context's details say its site's count and its part.
void write_html(std::ostream& out, const profile& p, const html_options& options,
                const std::vector<pooled_site>& pooled = {}, const std::vector<shared_contents_pair>& shared = {},
                const std::vector<context_count>& exact_parts = {});

} // namespace ojx::tool
