#include "pprof_writer.hpp"

#include "gzip.hpp"
#include "source_frame.hpp"

#include "pprof/profile.pb.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace ojx::tool {

namespace {

namespace pb = perftools::profiles;

// pprof's values are signed; a count beyond int64 (never seen in practice) is shown as the largest one rather
// than as a negative number.
std::int64_t as_value(std::uint64_t count) {
    constexpr auto largest = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    return static_cast<std::int64_t>(count < largest ? count : largest);
}

// The same for an amount the profile holds as a double (an estimate, a sum of fractional bytes): rounded, and
// kept within [0, largest int64] so that no conversion or later difference can overflow. Not a number gives 0.
std::int64_t as_value(double amount) {
    // 2^63 as a double; every double below it converts to an int64.
    constexpr double beyond = 9223372036854775808.0;
    if (!(amount > 0)) return 0;
    if (amount >= beyond) return std::numeric_limits<std::int64_t>::max();
    const double rounded = std::round(amount);
    return rounded >= beyond ? std::numeric_limits<std::int64_t>::max() : static_cast<std::int64_t>(rounded);
}

// The profile being built, with its tables deduplicated: one string table entry per distinct string (index 0 is
// ""), one Function per (name, file), one Location per distinct frame.
class pprof_builder {
public:
    // The message lives in an arena: a profile of 100 000 sites has millions of small parts, and allocating
    // them one by one (and freeing them) took most of the time.
    pprof_builder() : profile_(*google::protobuf::Arena::CreateMessage<pb::Profile>(&arena_)) {
        string(""); // index 0
        // One mapping for every location, saying that the frames are symbolized already: without it pprof looks
        // for a binary to symbolize them with and warns that there is none.
        pb::Mapping& mapping = *profile_.add_mapping();
        mapping.set_id(mapping_id);
        mapping.set_has_functions(true);
        mapping.set_has_filenames(true);
        mapping.set_has_line_numbers(true);
    }

    pb::Profile& message() noexcept { return profile_; }

    std::int64_t string(const std::string& text) {
        if (const auto found = strings_.find(text); found != strings_.end()) return found->second;
        // Keyed by the table's own copy (its strings stay where they are), so each string is held once.
        profile_.add_string_table(text);
        const auto index = static_cast<std::int64_t>(strings_.size());
        strings_.emplace(profile_.string_table(profile_.string_table_size() - 1), index);
        return index;
    }

    void set_value_type(pb::ValueType& type, const std::string& name, const std::string& unit) {
        type.set_type(string(name));
        type.set_unit(string(unit));
    }

    std::uint64_t frame_location(const std::string& frame) {
        const auto found = frame_locations_.find(frame);
        if (found != frame_locations_.end()) return found->second;
        const source_frame parsed = parse_frame(frame);
        const std::uint64_t id = add_location(function(parsed.function, parsed.file), parsed.line);
        frame_locations_.emplace(frame, id);
        return id;
    }

    // A synthetic frame, shown as it is: the allocated type (`[byte[]]`), a copy's location or source.
    std::uint64_t synthetic_location(const std::string& name) {
        const auto found = synthetic_locations_.find(name);
        if (found != synthetic_locations_.end()) return found->second;
        const std::uint64_t id = add_location(function(name, "", name_kind::verbatim), 0);
        synthetic_locations_.emplace(name, id);
        return id;
    }

private:
    static constexpr std::uint64_t mapping_id = 1;

    // pprof shortens a function's name when it equals the system name and looks like C++ (it drops parameter and
    // template lists, as for any C++ profile); a name with no system name is shown as it is. An allocated type
    // is shown whole: std::vector<int> and std::vector<char> are different findings.
    enum class name_kind { code, verbatim };

    std::uint64_t function(const std::string& name, const std::string& file, name_kind kind = name_kind::code) {
        std::string key = name;
        (key += '\0') += file;
        const auto found = functions_.find(key);
        if (found != functions_.end()) return found->second;
        pb::Function& f = *profile_.add_function();
        f.set_id(static_cast<std::uint64_t>(profile_.function_size())); // ids are 1, 2, …
        f.set_name(string(name));
        if (kind == name_kind::code) f.set_system_name(f.name());
        f.set_filename(string(file));
        functions_.emplace(std::move(key), f.id());
        return f.id();
    }

    std::uint64_t add_location(std::uint64_t function_id, std::int64_t line) {
        pb::Location& location = *profile_.add_location();
        location.set_id(static_cast<std::uint64_t>(profile_.location_size()));
        location.set_mapping_id(mapping_id);
        pb::Line& l = *location.add_line();
        l.set_function_id(function_id);
        l.set_line(line);
        return location.id();
    }

    google::protobuf::Arena arena_;
    pb::Profile& profile_;
    std::unordered_map<std::string_view, std::int64_t> strings_;
    std::unordered_map<std::string, std::uint64_t> functions_; // name '\0' file
    std::unordered_map<std::string, std::uint64_t> frame_locations_;
    std::unordered_map<std::string, std::uint64_t> synthetic_locations_;
};

void add_label(pprof_builder& builder, pb::Sample& sample, const std::string& key, const std::string& value) {
    pb::Label& label = *sample.add_label();
    label.set_key(builder.string(key));
    label.set_str(builder.string(value));
}

void add_count_label(pprof_builder& builder, pb::Sample& sample, const std::string& key, double count) {
    pb::Label& label = *sample.add_label();
    label.set_key(builder.string(key));
    label.set_num(as_value(count));
    label.set_num_unit(builder.string("count"));
}

// A fraction as a whole percent, rounded as the text report rounds it. (pprof's numeric labels are integers.)
void add_percent_label(pprof_builder& builder, pb::Sample& sample, const std::string& key, double fraction) {
    pb::Label& label = *sample.add_label();
    label.set_key(builder.string(key));
    label.set_num(as_value(100 * fraction));
    label.set_num_unit(builder.string("percent"));
}

void add_comments(pprof_builder& builder, const run_profile& run, pprof_writer::samples kind) {
    pb::Profile& profile = builder.message();
    const auto comment = [&](const std::string& text) { profile.add_comment(builder.string(text)); };
    if (kind == pprof_writer::samples::sites) {
        comment("ojx replica profile: objects allocated at the same calling context whose contents are identical");
        comment("replicated_bytes: at least this many bytes of the run's allocations (churn) would be saved if "
                "each site's identical objects shared one copy");
        comment("heap_replicated_bytes: the same among the objects alive at the heap moment (what the heap would "
                "shrink by then)");
    } else if (kind == pprof_writer::samples::exact_objects || kind == pprof_writer::samples::never_allocated) {
        comment("ojx exact counts: objects each bytecode allocation site allocated, counted exactly (count=)");
        comment("exact_objects: a site's count, split over its calling contexts by their sampled allocations where it "
                "has several (label split: sampled); never_allocated: of those, the ones the JVM never allocated "
                "(escape analysis), where it reported every allocation");
    } else {
        comment("ojx copy profile: bytes copied between heap locations, estimated from sampled copies");
        if (kind == pprof_writer::samples::copies)
            comment("copied_bytes: a copy's stack is the allocation context of the objects copied into, the "
                    "location, and where the value came from");
        else
            comment("copied_bytes: a copy's stack is the code that copied (each edge's copies split over its code "
                    "contexts by their samples), the location copied into, and where the value came from");
    }
    if (!run.runtime.empty()) comment("runtime: " + joined(run.runtime));
    if (!run.sampler.empty()) comment("sampler: " + joined(run.sampler));
    if (!run.watchpoints.empty()) comment("watchpoints: " + joined(run.watchpoints));
    if (!run.allocation_counts.empty()) comment("allocation counts: " + joined(run.allocation_counts));
    if (!run.heap_moments.empty()) comment("heap moment: " + joined(run.heap_moments));
    if (run.profiles > 1) comment("merged from " + std::to_string(run.profiles) + " profiles");
}

} // namespace

struct pprof_writer::state {
    samples kind;
    pprof_builder builder;
    // Replicated bytes are fractional. Each sample gets the change in the rounded running total, so that the
    // samples sum to the rounded total rather than to a sum of per-sample rounding errors.
    struct running_total {
        double so_far = 0;
        std::int64_t rounded_so_far = 0;
        // The change in the rounded total `more` makes. Both rounded totals are in [0, largest int64], so their
        // difference cannot overflow.
        std::int64_t add(double more) {
            so_far += more;
            const std::int64_t rounded = as_value(so_far);
            const std::int64_t change = rounded - rounded_so_far;
            rounded_so_far = rounded;
            return change;
        }
    };
    running_total replicated, heap_replicated;
};

pprof_writer::pprof_writer(samples kind) : state_(std::make_unique<state>(kind)) {
    pprof_builder& builder = state_->builder;
    pb::Profile& profile = builder.message();
    if (kind == samples::exact_objects || kind == samples::never_allocated) {
        // Counted, not sampled: no period scales them.
        builder.set_value_type(*profile.add_sample_type(), "exact_objects", "count");
        builder.set_value_type(*profile.add_sample_type(), "never_allocated", "count");
        profile.set_default_sample_type(
            builder.string(kind == samples::exact_objects ? "exact_objects" : "never_allocated"));
        return;
    }
    if (kind != samples::sites) {
        // Copies are estimated from samples taken at varying periods: no one period scales them.
        builder.set_value_type(*profile.add_sample_type(), "copies", "count");
        builder.set_value_type(*profile.add_sample_type(), "copied_bytes", "bytes");
        profile.set_default_sample_type(builder.string("copied_bytes"));
        return;
    }
    // The event count first, as pprof's convention asks; replicated bytes shown by default, being what a fix saves.
    builder.set_value_type(*profile.add_sample_type(), "objects", "count");
    builder.set_value_type(*profile.add_sample_type(), "allocated", "bytes");
    builder.set_value_type(*profile.add_sample_type(), "comparisons", "count");
    builder.set_value_type(*profile.add_sample_type(), "replicated_bytes", "bytes");
    builder.set_value_type(*profile.add_sample_type(), "heap_replicated_bytes", "bytes");
    profile.set_default_sample_type(builder.string("replicated_bytes"));
    // Every comparison is counted: the values are not scaled up from a sample.
    builder.set_value_type(*profile.mutable_period_type(), "comparisons", "count");
    profile.set_period(1);
}

pprof_writer::~pprof_writer() = default;

void pprof_writer::add(const context_profile& context) {
    pprof_builder& builder = state_->builder;
    pb::Sample& sample = *builder.message().add_sample();
    sample.add_location_id(builder.synthetic_location("[" + context.type + "]"));
    for (const std::string& frame : context.frames) sample.add_location_id(builder.frame_location(frame));
    sample.add_value(as_value(context.objects));
    sample.add_value(as_value(context.bytes));
    sample.add_value(as_value(context.estimate.comparisons()));
    sample.add_value(state_->replicated.add(context.replicated_bytes()));
    sample.add_value(state_->heap_replicated.add(context.heap_saving().low));
    add_label(builder, sample, "type", context.type);
    // JP's metrics: every allocation of the site (scaled where allocations were sampled; rounded), and the
    // elements of its arrays. The values above stay the objects ojx tracked.
    if (context.allocated) {
        const type_allocations total = context.allocated->total();
        add_count_label(builder, sample, "instances", total.instances);
        if (total.elements > 0) add_count_label(builder, sample, "elements", total.elements);
        if (context.allocated->estimated) add_label(builder, sample, "instances_are", "estimated");
    }
    // The site's one estimate, as every report shows it: the largest identical group's share (a point from whole
    // objects only) and its interval; then the comparisons' own numbers where they are enough for theirs.
    const site_estimate& site = context.combined;
    add_label(builder, sample, "evidence", evidence_basis_name(site.basis));
    if (site.reported()) {
        if (site.basis == evidence_basis::whole_objects)
            add_percent_label(builder, sample, "largest_share", site.largest_share);
        add_percent_label(builder, sample, "largest_share_low", site.largest_share_ci.low);
        add_percent_label(builder, sample, "largest_share_high", site.largest_share_ci.high);
    }
    if (context.heap.reported()) {
        add_percent_label(builder, sample, "heap_largest_share", context.heap.largest_share);
        add_percent_label(builder, sample, "heap_largest_share_low", context.heap.largest_share_ci.low);
        add_percent_label(builder, sample, "heap_largest_share_high", context.heap.largest_share_ci.high);
    }
    if (context.estimate.reported) {
        add_percent_label(builder, sample, "theta", context.estimate.theta);
        add_percent_label(builder, sample, "omega", context.estimate.omega);
        add_percent_label(builder, sample, "gamma", context.estimate.gamma);
    }
    for (const named_access_context& access : context.accesses)
        if (!access.frames.empty()) add_label(builder, sample, "used_at", access.frames.front());
}

void pprof_writer::add(const copy_stack& copy) {
    pprof_builder& builder = state_->builder;
    pb::Sample& sample = *builder.message().add_sample();
    sample.add_location_id(builder.synthetic_location(copy.source));
    sample.add_location_id(builder.synthetic_location(copy.location));
    if (!copy.code.empty()) sample.add_location_id(builder.synthetic_location(copy.code));
    for (const std::string& frame : copy.frames) sample.add_location_id(builder.frame_location(frame));
    sample.add_value(as_value(copy.copies));
    sample.add_value(as_value(copy.bytes));
    pb::Label& width = *sample.add_label();
    width.set_key(builder.string("width"));
    width.set_num(copy.width);
    width.set_num_unit(builder.string("bytes"));
    add_count_label(builder, sample, "samples", static_cast<double>(copy.samples));
}

void pprof_writer::add(const context_count& count) {
    pprof_builder& builder = state_->builder;
    pb::Sample& sample = *builder.message().add_sample();
    sample.add_location_id(builder.synthetic_location("[" + count.type + "]"));
    for (const std::string& frame : count.frames) sample.add_location_id(builder.frame_location(frame));
    sample.add_value(as_value(count.objects));
    sample.add_value(as_value(count.never_allocated));
    add_label(builder, sample, "type", count.type);
    if (count.split) add_label(builder, sample, "split", "sampled");
}

std::optional<std::string> pprof_writer::finish(std::ostream& out, const run_profile& run) {
    add_comments(state_->builder, run, state_->kind);
    std::string bytes;
    if (!state_->builder.message().SerializeToString(&bytes))
        return "pprof: the profile is too large to serialize (over 2 GiB)";
    state_.reset(); // the message's memory goes before the compressed copy is made
    return write_gzip(out, bytes);
}

std::optional<std::string> write_pprof(std::ostream& out, const profile& p) {
    pprof_writer writer;
    for (const context_profile& context : p.contexts) writer.add(context);
    return writer.finish(out, p.run);
}

} // namespace ojx::tool
