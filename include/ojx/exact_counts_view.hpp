// The text view of a profile's exact counts (exact_counts.hpp), printed after the replica report by `ojx report` and
// the JVM agent's exit report: what was counted and at what cost, then the sites that allocated most, each with its
// exact count. Counts are per bytecode site; a site reached from several calling contexts is one count here, while
// the replica table's objects per context still come from sampling. Where the JVM reported every allocation too,
// what was counted and never allocated (the JIT's escape analysis) is said in total and for the sites with most.
#pragma once

#include "ojx/exact_counts.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

namespace ojx {

// One row per site: `measure` of it (headed `column`), what the JVM allocated there where it reported, and where
// the site is, with an array site's elements.
template <class Measure>
void write_site_rows(std::ostream& out, const exact_counts& c, const std::vector<const counted_site*>& sites,
                     const char* column, Measure measure) {
    if (sites.empty()) return;
    char heading[96];
    std::snprintf(heading, sizeof heading, "%14s%s", column, c.jvm_reported ? "   allocated" : "");
    out << heading << "  allocation site (bytecode index)\n";
    for (const counted_site* s : sites) {
        char count[48];
        if (c.jvm_reported)
            std::snprintf(count, sizeof count, "%14llu%12llu", static_cast<unsigned long long>(measure(*s)),
                          static_cast<unsigned long long>(s->jvm_allocated));
        else
            std::snprintf(count, sizeof count, "%14llu", static_cast<unsigned long long>(measure(*s)));
        out << count << "  " << s->type;
        if (array_site(*s)) out << " (" << s->elements << " elements)";
        out << " at " << s->frame << " (bci " << s->bci << ")\n";
    }
}

inline void write_exact_counts_view(std::ostream& out, const exact_counts& c, std::size_t top) {
    const std::uint64_t objects = objects_counted(c);
    std::string plans;
    for (const std::string& p : c.plans) plans += (plans.empty() ? "" : ", ") + p;
    out << "\nExact allocation counts (count=" << (plans.empty() ? "?" : plans) << "): " << objects << " objects at "
        << c.sites.size() << " bytecode sites, counted with " << c.increments << " counter increments";
    if (objects > 0) {
        char ratio[32];
        std::snprintf(ratio, sizeof ratio, "%.2f", static_cast<double>(c.increments) / static_cast<double>(objects));
        out << " (" << ratio << " per object)";
    }
    out << "; " << c.methods_instrumented << " methods instrumented, " << c.corrections
        << " frames corrected at exceptions\n";
    std::uint64_t left = 0;
    for (const auto& reason : c.left_alone) left += reason.second;
    if (left > 0) {
        std::vector<std::pair<std::string, std::uint64_t>> reasons = c.left_alone;
        std::sort(reasons.begin(), reasons.end(), [](const auto& a, const auto& b) {
            return a.second != b.second ? a.second > b.second : a.first < b.first;
        });
        out << "  ran as loaded: " << left << " (";
        for (std::size_t i = 0; i < reasons.size() && i < 3; ++i)
            out << (i ? "; " : "") << reasons[i].second << " " << reasons[i].first;
        if (reasons.size() > 3) out << "; …";
        out << ")\n";
    }
    const std::uint64_t removed = objects_not_allocated(c);
    if (c.jvm_reported) {
        out << "  the JVM reported every allocation (heap sampling at interval 0): " << removed
            << " objects counted were never allocated";
        if (objects > 0) {
            char percent[32];
            std::snprintf(percent, sizeof percent, "%.1f", 100.0 * static_cast<double>(removed) / static_cast<double>(objects));
            out << " (" << percent << "%)";
        }
        out << ", the JIT's escape analysis having removed them";
        if (const std::uint64_t beyond = objects_reported_beyond_count(c); beyond > 0)
            out << "; " << beyond << " reported at sites beyond their counts";
        out << '\n';
    }
    const std::vector<const counted_site*> most = most_counted(c, top);
    write_site_rows(out, c, most, "objects", [](const counted_site& s) { return s.objects; });
    if (c.sites.size() > most.size()) out << "  (" << c.sites.size() - most.size() << " more sites)\n";
    if (removed > 0) {
        out << "  counted and never allocated, most first:\n";
        write_site_rows(out, c, most_not_allocated(c, top), "removed",
                        [&](const counted_site& s) { return not_allocated(c, s); });
    }
}

} // namespace ojx
