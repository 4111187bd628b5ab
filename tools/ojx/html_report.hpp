// `ojx report --html`: the profile as one self-contained HTML page — an icicle view of allocation contexts (width
// by replication evidence, colour by θ), a sortable table, a details panel and, for a profile with a copy section,
// its heaviest copy edges and hot copy chains (copies_view.hpp's names and estimates). The page loads nothing: its
// markup, style and script are compiled in (report_template.html) and the profile travels inside it as JSON.
#pragma once

#include "ojx/profile.hpp"

#include <cstddef>
#include <ostream>
#include <string>

namespace ojx::tool {

struct html_options {
    std::size_t top = 500; // contexts included: the first `top` in the profile's (rank) order
    std::string title;     // empty: "ojx replica report"
};

void write_html(std::ostream& out, const profile& p, const html_options& options);

} // namespace ojx::tool
