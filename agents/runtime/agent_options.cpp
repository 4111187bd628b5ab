#include "ojx/agents/agent_options.hpp"

#include "ojx/hardware/agent_output_file.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace ojx::agents {

using hardware::absolute_path;

std::vector<option_spec> common_agent_options() {
    return {
        {"file", option_kind::text, "ojx-%p.json", "where the JSON profile is written (%p: pid, %t: start time)"},
        {"record", option_kind::text, "",
         "also record a trace of the run to this file (%p: pid, %t: start time), which `ojx replay` turns into the "
         "same profile; none by default"},
        // Access sampling is off unless asked for (sampler=, rate= or copies=): whole objects digested at their
        // death are the defaults' evidence, and sampling costs more than it adds there. In the JVM a sample
        // almost never lands on a tracked object at the default tracking (0 to 7 of 260–770 samples a run in
        // seven Java programs, no comparison in any); natively, where each decode sample single-steps and arms
        // watchpoints, the default rate cost Ghostscript 15 %, Lua 4.5 % and sqlite3 4 % of their time on the
        // project's AMD KVM guests, against 1.5–3.5 % without (bench/RESULTS.md, "Access sampling off by
        // default in the native agent too"). With it off the agents also skip what only the sampler needs (per-thread timers and
        // breakpoints; in the JVM, jmethodIDs made at class preparation for AsyncGetCallTrace).
        {"sampler", option_kind::choice, hardware::sampler_kind_name(hardware::sampler_kind::none),
         "how accesses are sampled (where objects are used, comparisons at the sample or by watchpoint, copies); "
         "none by default: whole objects digested at their death are the evidence, and sampling costs a few "
         "percent of runtime. auto picks the best available; rate= or copies= alone turns on auto",
         hardware::sampler_kind_names()},
        {"rate", option_kind::rate, "200", "access samples per second per running thread"},
        {"threshold", option_kind::size, "1k", "smallest object tracked"},
        {"slots", option_kind::count, "4", "watchpoint slots (debug registers) to use; 0: sampling only"},
        {"compare", option_kind::choice, "auto",
         "when a pair is compared: at a debug-register trap as the program next reads the word (watchpoint), at "
         "the sample that chose the pair (sample), or auto: watchpoint where debug registers work, else sample",
         hardware::comparison_kind_names()},
        {"window", option_kind::size, "64", "bytes compared around a probed word; 0: the word only"},
        {"copies", option_kind::count, "8",
         "copy profiling: follow each sampled load from a tracked object for up to this many instructions, "
         "single-stepping, to find where its value is copied (the profile's copies section); 0: off. Wherever "
         "accesses are sampled by decoding (not precise sampling); given alone it turns sampling on"},
        {"companion", option_kind::choice, "auto",
         "also probe each newly remembered object at a second place, read at once, so that pairs are compared at "
         "two places (what the estimate of partial replicas needs): on, off, or auto: on where pairs are compared at "
         "the sample",
         {"auto", "on", "off"}},
        {"reads", option_kind::choice, "auto",
         "how signal handlers read the program's memory: auto (a load guarded by a SIGSEGV/SIGBUS handler that "
         "chains to the program's, a few ns, with process_vm_readv while another handler has replaced it) or "
         "syscall (process_vm_readv only, ≈ 1–2.5 µs, and no SIGSEGV/SIGBUS handler installed)",
         {"auto", "syscall"}},
        {"exact", option_kind::flag, "",
         "exact verification mode, slow, for checking what the defaults report: every allocation at or above "
         "threshold tracked, every tracked object digested whole with no budget and every distinct content kept, "
         "so that each site's identical groups are exact (not with interval= or track_rate=)"},
        {"seed", option_kind::count, "1", "seed of the sampling and pairing randomness"},
        {"quiet", option_kind::flag, "", "nothing on standard error but errors (no start line, no summary at exit)"},
        {"verbose", option_kind::flag, "",
         "the start line names every mechanism and why; processes started by a profiled process speak too (by "
         "default only the first process of a tree does)"},
        {"help", option_kind::flag, "", "print the options and run without profiling"},
    };
}

std::optional<std::string> to_agent_settings(const option_values& values, agent_settings& settings) {
    settings.help = values.flag("help");
    settings.quiet = values.flag("quiet");
    settings.verbose = values.flag("verbose");
    if (settings.quiet && settings.verbose) return std::string("quiet and verbose: give one of them");
    settings.exact = values.flag("exact");
    settings.file_pattern = values.text("file");
    settings.record_pattern = values.text("record");
    if (settings.record_pattern == settings.file_pattern)
        return "record=" + settings.record_pattern + " names the profile's file too (file=); give the trace another name";
    hardware::backend_options& backend = settings.session.backend;
    // rate= or copies= alone asks for samples: with the sampler at its default (none), it turns on auto.
    const bool asks_for_samples = values.given("rate") || (values.given("copies") && values.count("copies") > 0);
    backend.sampler = asks_for_samples && !values.given("sampler")
                          ? hardware::sampler_kind::automatic
                          : *hardware::parse_sampler_kind(values.choice("sampler"));
    if (values.rate("rate") == 0) return std::string("rate=0: the sampling rate must be at least 1 per second");
    if (values.rate("rate") > 100000) return std::string("rate: at most 100000 samples per second per thread");
    backend.samples_per_second = static_cast<double>(values.rate("rate"));
    // Only samples choose pairs to watch: without a sampler no slot could be armed, and each open breakpoint
    // still costs every context switch of its thread (≈ 0.7 µs for four, bench/RESULTS.md).
    backend.watchpoint_slots =
        backend.sampler == hardware::sampler_kind::none ? 0 : static_cast<std::size_t>(values.count("slots"));
    backend.compare = *hardware::parse_comparison_kind(values.choice("compare"));
    if (values.count("copies") > max_follow_bound)
        return fmt::format("copies={}: at most {} instructions are followed", values.count("copies"), max_follow_bound);
    if (values.given("copies") && values.count("copies") > 0 && backend.sampler == hardware::sampler_kind::none)
        return std::string("copies= follows sampled loads, and sampler=none samples none");
    // The default follows wherever loads are sampled, and costs nothing where none are.
    backend.follow_bound =
        backend.sampler == hardware::sampler_kind::none ? 0 : static_cast<std::uint32_t>(values.count("copies"));
    backend.seed = values.count("seed");
    backend.guarded_reads = values.choice("reads") == "auto";
    profiler_config& profiler = settings.session.profiler;
    profiler.min_object_size = values.size("threshold") == 0 ? 1 : values.size("threshold");
    profiler.compare_window = static_cast<std::size_t>(values.size("window"));
    if (values.choice("companion") != "auto") profiler.companion_probe = values.choice("companion") == "on";
    profiler.seed = values.count("seed");
    if (settings.exact) profiler.whole_objects.content_groups = exact_content_groups;
    return std::nullopt;
}

std::vector<option_spec> allocation_tracking_options(const allocation_tracking_words& words) {
    return {{"track_rate", option_kind::count, words.default_track_rate, words.track_rate_help},
            {"interval", option_kind::size, words.default_interval, words.interval_help}};
}

std::optional<std::string> check_allocation_tracking(const option_values& values) {
    if (values.given("interval") && values.given("track_rate"))
        return std::string("interval= and track_rate= both given: interval= fixes the sampling interval (0: every "
                           "allocation), track_rate= moves it to track that many allocations a second; give one");
    if (values.flag("exact") && (values.given("interval") || values.given("track_rate")))
        return std::string("exact tracks every allocation: interval= and track_rate= do not go with it");
    if (!values.given("interval") && values.count("track_rate") == 0)
        return std::string("track_rate=0 would track nothing; interval=0 tracks every allocation");
    return std::nullopt;
}

void report_recording(const recording_summary& summary, bool quiet) {
    // A trace that could not be written whole: its one line says what the file holds; a summary of what was
    // recorded would contradict it.
    if (!summary.error.empty()) {
        std::fprintf(stderr, "ojx: %s\n", summary.error.c_str());
        return;
    }
    if (summary.incomplete_events != 0)
        std::fprintf(stderr,
                     "ojx: the trace %s cannot be replayed: for %llu events the profiler read more memory than the "
                     "recorder could keep (a smaller window= would fit)\n",
                     summary.file.c_str(), static_cast<unsigned long long>(summary.incomplete_events));
    if (quiet) return;
    std::fprintf(stderr, "ojx: trace written to %s: %llu events, %llu bytes (%.1f bytes per event), %llu records lost%s\n",
                 summary.file.c_str(), static_cast<unsigned long long>(summary.events),
                 static_cast<unsigned long long>(summary.bytes),
                 summary.events == 0 ? 0.0 : static_cast<double>(summary.bytes) / static_cast<double>(summary.events),
                 static_cast<unsigned long long>(summary.records_dropped),
                 summary.records_dropped == 0 ? "" : " (no free buffer: the replay misses them)");
}

std::string start_time_text() {
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    return file_timestamp(local);
}

std::string with_process_suffix(const std::string& name, std::uint64_t pid) {
    const std::size_t last = name.rfind('/') + 1; // 0 when there is no slash
    std::size_t dot = name.rfind('.');
    if (dot == std::string::npos || dot <= last) dot = name.size();
    return name.substr(0, dot) + "." + std::to_string(pid) + name.substr(dot);
}

namespace {

// The pid in the root variable, 0 when unset or not a number.
std::uint64_t inherited_root_pid() {
    const char* text = std::getenv(agent_root_pid_variable);
    if (text == nullptr) return 0;
    std::uint64_t pid = 0;
    const char* end = text + std::strlen(text);
    const auto [stop, error] = std::from_chars(text, end, pid);
    return error == std::errc() && stop == end ? pid : 0;
}

} // namespace

std::optional<std::string> resolve_agent_files(const agent_settings& settings, std::uint64_t pid,
                                               const std::string& start_time, bool mark_environment,
                                               agent_files& into) {
    into = agent_files{};
    const std::uint64_t root = inherited_root_pid();
    const bool descendant = root != 0 && root != pid;
    std::string directory;
    if (const char* inherited = std::getenv(agent_root_directory_variable); descendant && inherited != nullptr &&
                                                                             inherited[0] == '/')
        directory = inherited;
    else
        directory = absolute_path(".");
    if (directory.empty()) return "the current directory cannot be named: " + std::string(std::strerror(errno));
    if (directory.size() > 2 && directory.ends_with("/.")) directory.resize(directory.size() - 2);
    const auto name = [&](const std::string& pattern) -> std::string {
        if (pattern.empty()) return {};
        std::string expanded = expand_file_name(pattern, pid, start_time);
        // A pattern with %p already gives every process its own name.
        const bool per_process = expanded != expand_file_name(pattern, pid + 1, start_time);
        if (descendant && !per_process) expanded = with_process_suffix(expanded, pid);
        return absolute_path(expanded, directory);
    };
    into.profile = name(settings.file_pattern);
    into.trace = name(settings.record_pattern);
    into.root_pid = descendant ? root : 0;
    if (mark_environment && !descendant) {
        ::setenv(agent_root_pid_variable, std::to_string(pid).c_str(), 1);
        ::setenv(agent_root_directory_variable, directory.c_str(), 1);
    }
    return std::nullopt;
}

std::string describe_agent_files(const agent_files& files) {
    std::string text = "profile: " + files.profile;
    if (!files.trace.empty()) text += "; trace: " + files.trace;
    if (files.root_pid != 0)
        text += " (this process descends from profiled pid " + std::to_string(files.root_pid) +
                ", which writes the name as given)";
    return text;
}

std::optional<std::string> parse_agent_options(std::string_view text, std::span<const option_spec> specs,
                                               parsed_agent_options& into) {
    options_result parsed = parse_options(text, specs);
    if (!parsed.ok()) return parsed.error;
    into.values = std::move(parsed.values);
    const option_values& values = into.values;
    if (auto error = to_agent_settings(values, into.settings)) return error;
    if (auto error = check_allocation_tracking(values)) return error;
    allocation_tracking& tracking = into.settings.tracking;
    if (into.settings.exact)
        tracking = allocation_tracking{}; // every allocation
    else if (values.given("interval"))
        tracking.interval = values.size("interval");
    else
        tracking.track_rate = values.count("track_rate");
    return std::nullopt;
}

std::string agent_help(std::string_view agent, std::string_view syntax, std::span<const option_spec> specs) {
    return fmt::format("ojx {} options ({}):\n{}", agent, syntax, help_text(specs));
}

std::optional<std::string> prepare_agent_files(const agent_settings& settings, bool mark_environment,
                                               agent_files& into) {
    if (auto error = resolve_agent_files(settings, static_cast<std::uint64_t>(getpid()), start_time_text(),
                                         mark_environment, into))
        return error;
    // A profile that cannot be written is known now: no fallback name, which would be one the user did not ask
    // for (and, in a shared directory, one another user could predict).
    if (auto error = hardware::check_output_file(into.profile))
        return fmt::format("cannot write the profile to {}: {}", into.profile, *error);
    return std::nullopt;
}

} // namespace ojx::agents
