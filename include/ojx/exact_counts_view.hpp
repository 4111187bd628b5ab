// The text view of a profile's exact counts (exact_counts.hpp), printed after the replica report by `ojx report` and
// the JVM agent's exit report: what was counted and at what cost, then the sites that allocated most, each with its
// exact count. Counts are per bytecode site; a site reached from several calling contexts is one count here, while
// the replica table's objects per context still come from sampling.
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
    const std::vector<const counted_site*> most = most_counted(c, top);
    if (most.empty()) return;
    out << "       objects  allocation site (bytecode index)\n";
    for (const counted_site* s : most) {
        char count[24];
        std::snprintf(count, sizeof count, "%14llu", static_cast<unsigned long long>(s->objects));
        out << count << "  " << s->type << " at " << s->frame << " (bci " << s->bci << ")\n";
    }
    if (c.sites.size() > most.size()) out << "  (" << c.sites.size() - most.size() << " more sites)\n";
}

} // namespace ojx
