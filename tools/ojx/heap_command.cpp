// `ojx heap`: the heap a trace describes at one point (the start of a collection, or after an event), as a census
// of live objects by allocation context and type, with the trace's consistency checks. The replay backend's
// heap_layout does the work; this file reads the arguments and prints.
#include "commands.hpp"
#include "output_file.hpp"
#include "whole_file.hpp"

#include "ojx/options.hpp"
#include "ojx/replay/heap_layout.hpp"
#include "ojx/report.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace ojx::tool {
namespace {

constexpr const char* heap_help = R"(usage: ojx heap TRACE --at gc:N|event:K|K [--top N] [--json FILE]
       ojx heap TRACE --check-census [--tolerance N]

Rebuilds the heap a recorded trace describes at one point — every live object with its address, size, allocation
context and type — from the trace's allocations, frees, moves and region moves, and prints a census: live objects
and bytes by allocation context and type (frames from the trace's symbols, leaf first), the address range they
cover, and the consistency checks.

  --at gc:N       at the start of collection N: the heap as the collector found it
  --at event:K    after event K (events are numbered from 1 in trace order, symbols and samples included);
                  a bare number K means the same
  --top N         show the N largest contexts (default 20; 0: all)
  --json FILE     write the census as JSON, every context included (written whole or not at all; '-' is
                  standard output); fields in docs/trace-format.md, "ojx heap --json"

Checks, each counted and the first few shown with their event numbers: an allocation overlapping live objects
(they are evicted, as the profiler does), a free of an address where no live object starts, a move of an object
that is not live, a move onto live objects, a region move that cuts an object, and the totals: live objects and
bytes = allocated - freed - evicted.

--check-census compares the heap rebuilt at every census the trace holds (the JVM agent's census= option: a
JVMTI heap walk counting the tracked objects alive just after a collection's survivors were relocated) with that
census, type by type (objects and bytes), and runs the consistency checks above over the whole trace (the totals
at every census). It prints one line per census that differs and a summary.
  --tolerance N   live objects per census that may differ (summed over types) before the check fails (default
                  0: the walk and the trace follow the same objects, so they must agree exactly; see
                  agents/jvm/README.md, "census")

Exit status: 0 census printed (findings are part of it), or every census agreed and no check found anything;
1 the JSON could not be written; 2 bad usage, a missing, truncated or corrupt trace, a point the trace does not
reach, or no census in it (one line naming the file or option); 3 a census differs beyond the tolerance or a
consistency check found something.

example: ojx heap run.ojxt --at gc:3 --top 10
)";

// "1 200 000": digits grouped by three, as in the census line.
std::string grouped(std::uint64_t value) {
    const std::string digits = std::to_string(value);
    std::string text;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i != 0 && (digits.size() - i) % 3 == 0) text += ' ';
        text += digits[i];
    }
    return text;
}

std::string hex(address value) {
    char buffer[24];
    std::snprintf(buffer, sizeof buffer, "0x%llx", static_cast<unsigned long long>(value));
    return buffer;
}

// "gc:3", "event:120" or "120"; nothing when the text is none of them.
std::optional<replay::heap_point> parse_point(std::string_view text) {
    replay::heap_point point;
    if (text.starts_with("gc:")) {
        point.at = replay::heap_point::kind::gc_start;
        text.remove_prefix(3);
    } else if (text.starts_with("event:")) {
        text.remove_prefix(6);
    }
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), point.number);
    if (text.empty() || error != std::errc() || end != text.data() + text.size()) return std::nullopt;
    if (point.at == replay::heap_point::kind::after_event && point.number == 0) return std::nullopt;
    return point;
}

std::string describe(const replay::heap_point& point) {
    return point.at == replay::heap_point::kind::gc_start ? "at the start of GC " + std::to_string(point.number)
                                                          : "after event " + std::to_string(point.number);
}

// "Rec at make ← main": the type at its context's frames, leaf first.
std::string context_label(const replay::heap_reconstruction& heap, const replay::census_entry& entry) {
    constexpr std::size_t frames_shown = 4;
    std::string label = replay::type_name(heap, entry.type);
    const std::vector<std::string> frames = replay::context_frames(heap, entry.context, frames_shown + 1);
    for (std::size_t i = 0; i < frames.size() && i < frames_shown; ++i) label += (i == 0 ? " at " : " ← ") + frames[i];
    if (frames.size() > frames_shown) label += " ← …";
    if (frames.empty() && entry.context == no_context) label += " (no context)";
    return label;
}

// "no overlapping objects, …; 1 200 live objects, 2.3 MiB, sizes add up", or what went wrong.
std::string checks_line(const replay::heap_layout& layout, const replay::heap_census& census) {
    using replay::heap_problem;
    std::string line;
    const auto clause = [&](heap_problem problem, const char* none, const char* some) {
        const std::uint64_t n = layout.count(problem);
        line += line.empty() ? "" : ", ";
        line += n == 0 ? std::string(none) : grouped(n) + " " + some;
    };
    clause(heap_problem::overlapping_allocation, "no overlapping objects", "overlapping allocations (evicted)");
    clause(heap_problem::free_of_unknown, "no free of an unknown address", "frees of unknown addresses");
    clause(heap_problem::move_of_unknown, "no move of a dead object", "moves of dead objects");
    clause(heap_problem::move_onto_live, "no move onto a live object", "moves onto live objects (evicted)");
    clause(heap_problem::region_misfit, "no region move cutting an object", "objects cut by region moves");
    line += "; " + grouped(census.objects) + " live objects, " + report_detail::bytes(static_cast<double>(census.bytes));
    line += layout.count(heap_problem::totals_mismatch) == 0 ? ", sizes add up" : ", sizes DO NOT add up";
    return line;
}

void print_census(const std::string& trace, const replay::heap_point& point, const replay::heap_reconstruction& heap,
                  const replay::heap_census& census, std::uint64_t top) {
    const std::uint64_t gcs = heap.layout.totals().gcs;
    std::printf("heap of %s %s (%s events applied, %s collection%s before)\n", trace.c_str(), describe(point).c_str(),
                grouped(heap.events).c_str(), grouped(gcs).c_str(), gcs == 1 ? "" : "s");
    std::printf("%12s %10s  %s\n", "bytes", "objects", "type at allocation context (leaf first)");
    std::uint64_t shown = 0;
    for (const replay::census_entry& entry : census.entries) {
        if (top != 0 && shown == top) break;
        std::printf("%12s %10s  %s\n", report_detail::bytes(static_cast<double>(entry.bytes)).c_str(),
                    grouped(entry.objects).c_str(), context_label(heap, entry).c_str());
        ++shown;
    }
    if (shown < census.entries.size()) {
        std::uint64_t objects = 0, bytes = 0;
        for (std::size_t i = shown; i < census.entries.size(); ++i) {
            objects += census.entries[i].objects;
            bytes += census.entries[i].bytes;
        }
        const std::uint64_t rest = census.entries.size() - shown;
        std::printf("%12s %10s  (%s more context%s)\n", report_detail::bytes(static_cast<double>(bytes)).c_str(),
                    grouped(objects).c_str(), grouped(rest).c_str(), rest == 1 ? "" : "s");
    }
    if (census.objects != 0)
        std::printf("address range: [%s, %s), %s\n", hex(census.lowest).c_str(), hex(census.highest_end).c_str(),
                    report_detail::bytes(static_cast<double>(census.highest_end - census.lowest)).c_str());
    else
        std::printf("address range: none (no live object)\n");
    std::printf("%s\n", checks_line(heap.layout, census).c_str());
    for (const replay::heap_finding& finding : heap.layout.findings())
        std::printf("  event %s: %s: %s\n", grouped(finding.event).c_str(), replay::heap_problem_name(finding.problem),
                    finding.detail.c_str());
    if (heap.layout.problems() > heap.layout.findings().size())
        std::printf("  (%s more findings not shown)\n",
                    grouped(heap.layout.problems() - heap.layout.findings().size()).c_str());
}

void write_json(std::ostream& out, const std::string& trace, const replay::heap_point& point,
                const replay::heap_reconstruction& heap, const replay::heap_census& census) {
    using report_detail::json_escape;
    const replay::heap_layout& layout = heap.layout;
    const replay::heap_totals& totals = layout.totals();
    out << "{\n  \"trace\": \"" << json_escape(trace) << "\",\n  \"at\": {\""
        << (point.at == replay::heap_point::kind::gc_start ? "gc" : "event") << "\": " << point.number
        << "},\n  \"events\": " << heap.events << ",\n  \"live\": {\"objects\": " << census.objects
        << ", \"bytes\": " << census.bytes << ", \"begin\": \"" << hex(census.lowest) << "\", \"end\": \""
        << hex(census.highest_end) << "\"},\n";
    out << "  \"totals\": {\"allocated_objects\": " << totals.allocated_objects
        << ", \"allocated_bytes\": " << totals.allocated_bytes << ", \"freed_objects\": " << totals.freed_objects
        << ", \"freed_bytes\": " << totals.freed_bytes << ", \"evicted_objects\": " << totals.evicted_objects
        << ", \"evicted_bytes\": " << totals.evicted_bytes << ", \"moves\": " << totals.moves
        << ", \"gcs\": " << totals.gcs << "},\n";
    out << "  \"checks\": {";
    for (std::size_t i = 0; i < replay::heap_problem_kinds; ++i) {
        const auto problem = static_cast<replay::heap_problem>(i);
        out << (i ? ", " : "") << '"' << json_escape(replay::heap_problem_name(problem)) << "\": " << layout.count(problem);
    }
    out << "},\n  \"findings\": [";
    for (std::size_t i = 0; i < layout.findings().size(); ++i) {
        const replay::heap_finding& f = layout.findings()[i];
        out << (i ? ",\n    " : "\n    ") << "{\"event\": " << f.event << ", \"problem\": \""
            << json_escape(replay::heap_problem_name(f.problem)) << "\", \"detail\": \"" << json_escape(f.detail)
            << "\"}";
    }
    out << (layout.findings().empty() ? "],\n" : "\n  ],\n") << "  \"contexts\": [";
    for (std::size_t i = 0; i < census.entries.size(); ++i) {
        const replay::census_entry& e = census.entries[i];
        out << (i ? ",\n    " : "\n    ") << "{\"type\": \"" << json_escape(replay::type_name(heap, e.type))
            << "\", \"frames\": [";
        const std::vector<std::string> frames = replay::context_frames(heap, e.context);
        for (std::size_t j = 0; j < frames.size(); ++j) out << (j ? ", " : "") << '"' << json_escape(frames[j]) << '"';
        out << "], \"objects\": " << e.objects << ", \"bytes\": " << e.bytes << "}";
    }
    out << (census.entries.empty() ? "]\n}\n" : "\n  ]\n}\n");
}

constexpr int exit_check_failed = 3;

// "1 234 objects, 5.6 MiB"
std::string objects_and_bytes(std::uint64_t objects, std::uint64_t bytes) {
    return grouped(objects) + " objects, " + report_detail::bytes(static_cast<double>(bytes));
}

int check_census(const std::string& trace_path, std::span<const std::byte> trace, std::uint64_t tolerance) {
    const replay::census_check check = replay::check_censuses(trace, trace_path);
    if (!check.error.empty()) return input_error("heap", check.error);
    if (check.comparisons.empty())
        return input_error("heap",
                           trace_path + ": the trace holds no census (record it with the JVM agent's census= option)");
    std::uint64_t exact = 0, tolerated = 0, beyond = 0, worst = 0;
    for (const replay::census_comparison& c : check.comparisons) {
        const std::uint64_t differing = c.objects_differing();
        worst = std::max(worst, differing);
        if (c.differences.empty()) {
            ++exact;
            continue;
        }
        ++(differing <= tolerance ? tolerated : beyond);
        std::printf("GC %s (event %s): census %s; rebuilt heap %s%s\n", grouped(c.gc).c_str(), grouped(c.event).c_str(),
                    objects_and_bytes(c.census_objects, c.census_bytes).c_str(),
                    objects_and_bytes(c.heap_objects, c.heap_bytes).c_str(),
                    differing <= tolerance ? " (within the tolerance)" : "");
        for (const replay::census_difference& d : c.differences)
            std::printf("  %s: census %s, heap %s\n", replay::type_name(check.types, d.type).c_str(),
                        objects_and_bytes(d.census_objects, d.census_bytes).c_str(),
                        objects_and_bytes(d.heap_objects, d.heap_bytes).c_str());
    }
    const replay::census_comparison& last = check.comparisons.back();
    std::printf("%s: %s census%s: %s agree exactly, %s within the tolerance of %s object%s, %s beyond it (most "
                "objects differing in one census: %s); the last, at GC %s: %s\n",
                trace_path.c_str(), grouped(check.comparisons.size()).c_str(),
                check.comparisons.size() == 1 ? "" : "es", grouped(exact).c_str(), grouped(tolerated).c_str(),
                grouped(tolerance).c_str(), tolerance == 1 ? "" : "s", grouped(beyond).c_str(), grouped(worst).c_str(),
                grouped(last.gc).c_str(), objects_and_bytes(last.census_objects, last.census_bytes).c_str());
    const replay::heap_census census = replay::census_of(check.layout);
    std::printf("%s\n", checks_line(check.layout, census).c_str());
    for (const replay::heap_finding& finding : check.layout.findings())
        std::printf("  event %s: %s: %s\n", grouped(finding.event).c_str(), replay::heap_problem_name(finding.problem),
                    finding.detail.c_str());
    if (std::fflush(stdout) != 0) return exit_failed;
    return beyond == 0 && check.layout.problems() == 0 ? exit_ok : exit_check_failed;
}

// The options (ojx/options.hpp); heap_help says what they do and heap_command holds the defaults.
const option_spec heap_options[] = {
    {"at", option_kind::text, "", ""}, // gc:N, event:K or K: parse_point
    {"top", option_kind::count, "", ""},
    {"json", option_kind::text, "", ""},
    {"check_census", option_kind::flag, "", ""},
    {"tolerance", option_kind::count, "", ""},
    {"help", option_kind::flag, "", ""},
};

} // namespace

int heap_command(arguments args) {
    argument_reader reader(args, heap_options);
    std::vector<std::string> inputs;
    std::optional<replay::heap_point> point;
    std::uint64_t top = 20;
    std::string json_path;
    bool check = false;
    std::optional<std::uint64_t> tolerance;
    while (reader.next()) {
        if (reader.option() == nullptr) {
            inputs.emplace_back(reader.operand());
            continue;
        }
        const std::string_view name = reader.option()->name;
        const option_value& value = reader.value();
        if (name == "help") {
            std::fputs(heap_help, stdout);
            return exit_ok;
        }
        if (name == "at") {
            if (!(point = parse_point(value.text)))
                return usage_error("heap", "option '" + reader.item() +
                                               "': expected gc:N, event:K or an event number K (from 1)");
        } else if (name == "top") {
            top = value.number;
        } else if (name == "json") {
            json_path = value.text;
        } else if (name == "check_census") {
            check = true;
        } else {
            tolerance = value.number;
        }
    }
    if (!reader.error().empty()) return usage_error("heap", reader.error());
    if (inputs.empty()) return usage_error("heap", "no trace given");
    if (inputs.size() > 1) return usage_error("heap", "one trace at a time");
    if (check && (point || !json_path.empty()))
        return usage_error("heap", "--check-census reads the whole trace: give it without --at and --json");
    if (!check && tolerance) return usage_error("heap", "--tolerance goes with --check-census");
    if (!check && !point) return usage_error("heap", "no point given: add --at gc:N or --at event:K");

    const std::string& trace_path = inputs.front();
    std::string error;
    const auto trace = read_whole_file(trace_path, error);
    if (!trace) return input_error("heap", error);
    if (check) return check_census(trace_path, *trace, tolerance.value_or(0));
    const replay::heap_reconstruction heap = replay::reconstruct_heap(*trace, trace_path, *point);
    if (!heap.error.empty()) return input_error("heap", heap.error);
    const replay::heap_census census = replay::census_of(heap.layout);

    if (json_path == "-") {
        std::ostringstream out;
        write_json(out, trace_path, *point, heap, census);
        std::fputs(out.str().c_str(), stdout);
        return std::fflush(stdout) == 0 ? exit_ok : exit_failed;
    }
    print_census(trace_path, *point, heap, census, top);
    if (!json_path.empty()) {
        output_file out(json_path);
        if (out.ok()) write_json(out.stream(), trace_path, *point, heap, census);
        if (const auto write_error = out.commit()) {
            std::fprintf(stderr, "ojx heap: %s\n", write_error->c_str());
            return exit_failed;
        }
    }
    return std::fflush(stdout) == 0 ? exit_ok : exit_failed;
}

} // namespace ojx::tool
