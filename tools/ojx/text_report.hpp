// The report for a terminal: which allocation sites hold replicas, ranked, with the numbers that say how sure
// ojx is (θ with its interval, the bounds [ω, γ] on the largest identical group, the comparisons behind them),
// what a fix would save, and where the replicas are used — what a busy engineer needs to pick the site to fix.
#pragma once

#include "profile.hpp"
#include "site_selection.hpp"
#include "source_lines.hpp"

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

namespace ojx::tool {

struct text_options {
    std::size_t frames = 3;   // allocation frames shown per site (the site itself and its callers)
    std::size_t accesses = 3; // access contexts shown per site
    double min_theta = 0;     // as asked for (shown in the header when > 0)
    source_lines* sources = nullptr; // print each frame's source line where it is found
};

// `sources_read` names the profiles read; `sites` are the sites to list, best first.
void write_text_report(std::ostream& out, const std::vector<std::string>& sources_read, const run_profile& run,
                       const std::vector<context_profile>& sites, const site_totals& totals,
                       const text_options& options);

} // namespace ojx::tool
