// Which sample source a run gets and why (sampler_choice.hpp), and the names of the choices.
#include "sampler_choice.hpp"

#include <cmath>

namespace ojx::hardware {

namespace {

// "250 Hz" for a 4 ms tick.
std::string tick_rate_text(std::uint64_t tick_ns) {
    return std::to_string(std::lround(1e9 / static_cast<double>(tick_ns))) + " Hz";
}

} // namespace

sampler_choice choose_sampler(const backend_options& options, const capabilities& caps) {
    const sampler_kind wanted = options.sampler;
    sampler_choice choice;
    perf_event_attr& attr = choice.attr;
    if ((wanted == sampler_kind::automatic || wanted == sampler_kind::precise) && caps.precise) {
        choice.kind = sampler_kind::precise;
        attr = caps.precise->attr;
        attr.sample_period = 0;
        attr.freq = 1;
        attr.sample_freq = static_cast<std::uint64_t>(options.samples_per_second);
        attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_ADDR;
        attr.wakeup_events = 1;
        attr.exclude_kernel = 1;
        attr.disabled = 1;
        choice.description = "precise: " + caps.precise->name + " with the data address";
    } else if (wanted == sampler_kind::precise) {
        choice.error = "sampler=precise is unavailable: " + caps.precise_reason;
    } else if (wanted == sampler_kind::automatic && caps.perf_events && !caps.hardware_counters &&
               timer_keeps_rate(options.samples_per_second, caps.scheduler_tick_ns)) {
        // Without a hardware counter the trigger is a clock either way. The task clock's overflow is an interrupt
        // of its own (≈ 40 µs on a paravirtualized guest); a CPU-time timer fires on the scheduler tick that
        // interrupts the thread anyway, so it costs about half as much per sample (bench/RESULTS.md).
        choice.kind = sampler_kind::decode_timer;
        choice.description = "precise sampling unavailable: " + caps.precise_reason + "; " +
                             caps.hardware_counters_reason +
                             "; using decode (single-step to the next memory access) on a CPU-time POSIX timer, "
                             "which rides the " + tick_rate_text(caps.scheduler_tick_ns) +
                             " scheduler tick and costs less than a task-clock overflow (sampler=decode forces "
                             "that)";
    } else if ((wanted == sampler_kind::automatic || wanted == sampler_kind::decode) && caps.perf_events) {
        choice.kind = sampler_kind::decode;
        attr.exclude_kernel = 1;
        attr.disabled = 1;
        attr.wakeup_events = 1;
        std::string trigger;
        if (caps.hardware_counters) {
            attr.type = PERF_TYPE_HARDWARE;
            attr.config = PERF_COUNT_HW_INSTRUCTIONS;
            attr.freq = 1;
            attr.sample_freq = static_cast<std::uint64_t>(options.samples_per_second);
            trigger = "instructions-retired overflow";
        } else {
            attr.type = PERF_TYPE_SOFTWARE;
            attr.config = PERF_COUNT_SW_TASK_CLOCK;
            attr.sample_period = static_cast<std::uint64_t>(1e9 / options.samples_per_second);
            trigger = "task-clock overflow (" + caps.hardware_counters_reason +
                      (wanted == sampler_kind::automatic && caps.scheduler_tick_ns > 0
                           ? "; a CPU-time timer, which fires on the " + tick_rate_text(caps.scheduler_tick_ns) +
                                 " scheduler tick, cannot keep " +
                                 std::to_string(std::lround(options.samples_per_second)) + " samples/s"
                           : std::string()) +
                      ")";
        }
        choice.description = (wanted == sampler_kind::automatic
                                  ? "precise sampling unavailable: " + caps.precise_reason + "; using "
                                  : std::string("using ")) +
                             "decode (single-step to the next memory access) on " + trigger;
    } else if (wanted == sampler_kind::decode) {
        choice.error = "sampler=decode is unavailable: " + caps.perf_events_reason + " (sampler=timer works without perf)";
    } else if (wanted == sampler_kind::automatic || wanted == sampler_kind::decode_timer) {
        choice.kind = sampler_kind::decode_timer;
        choice.description = (wanted == sampler_kind::automatic ? caps.perf_events_reason + "; using "
                                                                 : std::string("using ")) +
                             "decode (single-step to the next memory access) on a CPU-time POSIX timer";
    } else {
        choice.kind = sampler_kind::none;
        choice.description = "no access sampling (sampler=none; sampler=auto samples where objects are used)";
    }
    return choice;
}

namespace {

constexpr sampler_kind all_sampler_kinds[] = {sampler_kind::automatic, sampler_kind::precise, sampler_kind::decode,
                                              sampler_kind::decode_timer, sampler_kind::none};
constexpr comparison_kind all_comparison_kinds[] = {comparison_kind::automatic, comparison_kind::watchpoint,
                                                    comparison_kind::at_sample};

template <class Kind, std::size_t N>
std::vector<std::string_view> names_of(const Kind (&kinds)[N], std::string_view (*name)(Kind) noexcept) {
    std::vector<std::string_view> names;
    for (const Kind kind : kinds) names.push_back(name(kind));
    return names;
}

} // namespace

std::optional<sampler_kind> parse_sampler_kind(std::string_view name) noexcept {
    for (const sampler_kind kind : all_sampler_kinds)
        if (sampler_kind_name(kind) == name) return kind;
    return std::nullopt;
}

std::optional<comparison_kind> parse_comparison_kind(std::string_view name) noexcept {
    for (const comparison_kind kind : all_comparison_kinds)
        if (comparison_kind_name(kind) == name) return kind;
    return std::nullopt;
}

std::string_view sampler_kind_name(sampler_kind kind) noexcept {
    switch (kind) {
    case sampler_kind::automatic: return "auto";
    case sampler_kind::precise: return "precise";
    case sampler_kind::decode: return "decode";
    case sampler_kind::decode_timer: return "timer";
    case sampler_kind::none: return "none";
    }
    return "?";
}

std::vector<std::string_view> sampler_kind_names() { return names_of(all_sampler_kinds, sampler_kind_name); }

std::string_view comparison_kind_name(comparison_kind kind) noexcept {
    switch (kind) {
    case comparison_kind::automatic: return "auto";
    case comparison_kind::watchpoint: return "watchpoint";
    case comparison_kind::at_sample: return "sample";
    }
    return "?";
}

std::vector<std::string_view> comparison_kind_names() {
    return names_of(all_comparison_kinds, comparison_kind_name);
}

} // namespace ojx::hardware
