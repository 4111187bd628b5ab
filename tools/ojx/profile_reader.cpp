// The streaming profile reader: RapidJSON's SAX events are matched against paths in the profile
// ("contexts[].comparisons.equal") and stored into the context being read; a context is handed over when its
// object closes. The copy section is read whole, each edge checked as it closes, and handed over at the end.
// Fields nobody knows are skipped (docs/profile-format.md: readers ignore unknown fields).
#include "profile_reader.hpp"

#include <rapidjson/error/en.h>
#include <rapidjson/filereadstream.h>
#include <rapidjson/reader.h>

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <set>
#include <string_view>
#include <tuple>

namespace ojx::tool {
namespace {

// The fields a context must have, one bit each.
enum required_field : unsigned {
    has_type = 1u << 0,
    has_frames = 1u << 1,
    has_objects = 1u << 2,
    has_bytes = 1u << 3,
    has_reported = 1u << 4,
    has_equal = 1u << 5,
    has_different = 1u << 6,
    has_theta = 1u << 7,
    has_omega = 1u << 8,
    has_gamma = 1u << 9,
    all_required = (1u << 10) - 1,
};

constexpr std::pair<required_field, const char*> required_names[] = {
    {has_type, "allocation.type"}, {has_frames, "allocation.frames"}, {has_objects, "objects"},
    {has_bytes, "bytes"},          {has_reported, "reported"},        {has_equal, "comparisons.equal"},
    {has_different, "comparisons.different"}, {has_theta, "theta"}, {has_omega, "omega"},
    {has_gamma, "gamma"},
};

// The evidence sums; a context carries them all or none.
constexpr int evidence_fields = 6;

// A JSON scalar as the SAX reader delivers it.
struct scalar {
    enum class kind { null, boolean, unsigned_integer, negative_integer, real, string } what;
    std::uint64_t integer = 0;
    double real = 0;
    bool boolean = false;
    std::string_view text;
};

// What is wrong with a context's estimate, or nothing. The estimator keeps every fraction and interval end in
// [0, 1] with intervals in order, and every sum finite and non-negative; the writers write null (read as NaN)
// for a number that is not finite. A profile outside those ranges was not written by ojx, and every output that
// prints a percentage or converts to an integer relies on them.
std::string estimate_problem(const replica_estimate& e, const evidence_summary& evidence, bool has_evidence) {
    const auto fraction = [](double x) { return std::isnan(x) || (x >= 0 && x <= 1); };
    const auto amount = [](double x) { return std::isnan(x) || (x >= 0 && std::isfinite(x)); };
    const auto in_order = [&](const interval& i) {
        return fraction(i.low) && fraction(i.high) && !(i.low > i.high);
    };
    const std::pair<const char*, double> fractions[] = {
        {"theta", e.theta}, {"alpha", e.alpha}, {"omega", e.omega}, {"gamma", e.gamma}};
    for (const auto& [name, value] : fractions)
        if (!fraction(value)) {
            char shown[32];
            std::snprintf(shown, sizeof shown, "%g", value);
            return "field '" + std::string(name) + "' is " + shown + ", outside [0, 1]";
        }
    if (!in_order(e.theta_ci)) return "field 'theta_ci' is not an interval within [0, 1] (low end first)";
    if (!in_order(e.alpha_ci)) return "field 'alpha_ci' is not an interval within [0, 1] (low end first)";
    if (!amount(e.effective_comparisons)) return "field 'comparisons.effective' should be a non-negative number";
    if (e.equal > std::numeric_limits<std::uint64_t>::max() - e.different)
        return "fields 'comparisons.equal' and 'comparisons.different' add up to more than 2^64";
    if (!has_evidence) return {};
    const std::pair<const char*, double> sums[] = {{"weighted_equal", evidence.weighted_equal},
                                                   {"weighted_total", evidence.weighted_total},
                                                   {"sum_equal_squared", evidence.sum_equal_squared},
                                                   {"sum_equal_times_total", evidence.sum_equal_times_total},
                                                   {"sum_total_squared", evidence.sum_total_squared}};
    for (const auto& [name, value] : sums)
        if (!(value >= 0 && std::isfinite(value)))
            return "field 'evidence." + std::string(name) + "' should be a finite non-negative number";
    if (evidence.alpha_equal > e.alpha_comparisons)
        return "field 'evidence.alpha_equal' is larger than 'alpha_comparisons'";
    return {};
}

class profile_handler : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, profile_handler> {
public:
    // A profile that does not name run.estimator.min_digested_objects means 20 (docs/profile-format.md): such
    // profiles read the same whatever estimator_config's default is.
    static constexpr std::uint64_t min_digested_objects_unnamed = 20;

    profile_handler(run_profile& run, const context_consumer& on_context) : run_(run), on_context_(on_context) {
        run_.estimator.min_digested_objects = min_digested_objects_unnamed;
    }

    // The first problem found; parsing stops there.
    const std::string& problem() const noexcept { return problem_; }
    bool saw_version() const noexcept { return version_ != 0; }
    std::size_t contexts_read() const noexcept { return context_index_; }
    std::optional<copy_profile>& copies() noexcept { return copies_; }
    std::optional<exact_counts>& exact() noexcept { return exact_; }

    bool Null() { return value({scalar::kind::null}); }
    bool Bool(bool b) { return value({scalar::kind::boolean, 0, 0, b}); }
    bool Int(int i) { return Int64(i); }
    bool Uint(unsigned u) { return Uint64(u); }
    bool Int64(std::int64_t i) {
        if (i >= 0) return Uint64(static_cast<std::uint64_t>(i));
        return value({scalar::kind::negative_integer, 0, static_cast<double>(i)});
    }
    bool Uint64(std::uint64_t u) {
        return value({scalar::kind::unsigned_integer, u, static_cast<double>(u)});
    }
    bool Double(double d) { return value({scalar::kind::real, 0, d}); }
    // Numbers arrive as their text (kParseNumbersAsStringsFlag) and are converted here, exactly: a number the
    // writer printed with 17 digits must read back to the same double, or a profile read and written again would
    // differ in its last digits. RapidJSON's fast path can be an ulp off, and its full-precision path has
    // undefined behaviour on some inputs (a zero significand reaches __builtin_clzll). The text is JSON's number
    // syntax, which RapidJSON has checked.
    bool RawNumber(const char* text, rapidjson::SizeType length, bool) {
        const std::string_view number(text, length);
        const char* end = text + length;
        if (number.find_first_of(".eE") == std::string_view::npos) {
            if (number.front() == '-') {
                std::int64_t i = 0;
                if (const auto [at, error] = std::from_chars(text, end, i); error == std::errc() && at == end)
                    return Int64(i);
            } else {
                std::uint64_t u = 0;
                if (const auto [at, error] = std::from_chars(text, end, u); error == std::errc() && at == end)
                    return Uint64(u);
            }
            // An integer past 64 bits is a real number, as RapidJSON reads it.
        }
        double d = 0;
        const auto [at, error] = std::from_chars(text, end, d);
        if (error == std::errc::result_out_of_range || !std::isfinite(d))
            return fail("a number out of range: " + std::string(number.substr(0, 40)));
        if (error != std::errc() || at != end) return fail("not a number: " + std::string(number.substr(0, 40)));
        return Double(d);
    }
    bool String(const char* s, rapidjson::SizeType length, bool) {
        return value({scalar::kind::string, 0, 0, false, std::string_view(s, length)});
    }
    bool Key(const char* s, rapidjson::SizeType length, bool) {
        key_.assign(s, length);
        return true;
    }

    bool StartObject() {
        if (depth_ == 0) return enter(false);
        if (depth_ == 1 && key_ == "contexts") return wrong_type("contexts", "a list of contexts");
        if (depth_ == 1 && key_ == "copies") {
            copies_.emplace();
            in_copies_ = true;
        }
        if (in_copies_) {
            if (path_ == "copies.sites[]" && in_array()) copies_->sites.emplace_back();
            if (path_ == "copies.code_contexts[]" && in_array()) copies_->code_contexts.emplace_back();
            if (path_ == "copies.edges[]" && in_array()) edge_ = edge_read{};
            if (path_ == "copies.field_names[]" && in_array()) {
                copies_->field_names.emplace_back();
                field_name_parts_ = 0;
            }
            if (path_ == "copies.edges[].copied_by[]" && in_array()) edge_.copied_by.emplace_back();
        }
        if (depth_ == 1 && key_ == "exact_counts") {
            exact_.emplace();
            in_exact_ = true;
        }
        if (in_exact_ && path_ == "exact_counts.sites[]" && in_array()) {
            exact_->sites.emplace_back();
            site_fields_ = 0;
        }
        if (path_ == "contexts[]" && in_array() && !in_context_) {
            if (!saw_version()) return fail("not an ojx profile (no ojx_profile_version before its contexts)");
            in_context_ = true;
            context_ = context_profile{};
            present_ = 0;
            evidence_present_ = 0;
            theta_ci_ends_ = alpha_ci_ends_ = 0;
            family_blocks_.clear();
        }
        if (path_ == "contexts[].accesses[]" && in_array()) context_.accesses.emplace_back();
        if (in_context_ && path_ == "contexts[]" && !in_array() && key_ == "allocated") context_.allocated.emplace();
        if (path_ == "contexts[].allocated.types[]" && in_array() && context_.allocated)
            context_.allocated->types.emplace_back();
        if (path_ == "contexts[].whole_objects.groups[]" && in_array()) context_.whole.identical.groups.emplace_back();
        if (path_ == "contexts[].heap.groups[]" && in_array()) context_.live.digested.groups.emplace_back();
        if (path_ == "contexts[].whole_objects.near_families[]" && in_array()) {
            context_.whole.near.families.emplace_back();
            family_blocks_.push_back(0);
        }
        return enter(false);
    }

    bool EndObject(rapidjson::SizeType) {
        leave();
        if (path_ == "contexts[]" && in_context_ && depth_ == 2) {
            const bool ok = finish_context();
            in_context_ = false;
            return ok;
        }
        if (in_copies_ && path_ == "copies.edges[]" && depth_ == 3) return finish_edge();
        if (in_copies_ && path_ == "copies.field_names[]" && depth_ == 3 && field_name_parts_ != 7)
            return fail(where() + "a field name needs 'type', 'offset' and 'name'");
        if (in_copies_ && depth_ == 1) {
            in_copies_ = false;
            return finish_copies();
        }
        if (in_exact_ && path_ == "exact_counts.sites[]" && depth_ == 3) {
            if ((site_fields_ & 31) != 31) return fail(where() + "a site needs 'method', 'bci', 'frame', 'type' and 'objects'");
            // jvm_reported comes before the sites: each site has jvm_allocated exactly when it is true.
            if (((site_fields_ & 32) != 0) != exact_->jvm_reported)
                return fail(where() + (exact_->jvm_reported ? "a site needs 'jvm_allocated' where 'jvm_reported' is true"
                                                            : "'jvm_allocated' without 'jvm_reported': true before the sites"));
        }
        if (in_exact_ && depth_ == 1) {
            in_exact_ = false;
            return finish_exact();
        }
        return true;
    }

    bool StartArray() {
        if (depth_ == 0) return fail("not an ojx profile (the top level is an array, not an object)");
        if (depth_ == 1 && key_ == "run") return wrong_type("run", "an object");
        if (depth_ == 1 && key_ == "copies") return wrong_type("copies", "an object");
        if (depth_ == 1 && key_ == "exact_counts") return wrong_type("exact_counts", "an object");
        if (!enter(true)) return false;
        if (in_context_ && path_ == "contexts[].allocation.frames[]") present_ |= has_frames; // may be empty
        return true;
    }

    bool EndArray(rapidjson::SizeType) {
        if (path_ == "run.allocation_sampling.interval_range[]") {
            if (interval_range_.size() != 2 || interval_range_[0] > interval_range_[1])
                return wrong_type("allocation_sampling.interval_range", "[smallest, largest]");
            run_.sampled_interval_range = std::pair{interval_range_[0], interval_range_[1]};
        }
        leave();
        return true;
    }

private:
    // Path bookkeeping: path_ names where a value is ("contexts[].comparisons" for the members of a context's
    // comparisons object): a container that is an object's member appends ".key" ("key" at the top), an array
    // appends "[]" for its elements, and an array's element appends nothing.
    bool in_array() const noexcept { return depth_ > 0 && is_array_[depth_ - 1]; }

    bool enter(bool array) {
        if (depth_ == std::size(lengths_)) return fail("not an ojx profile (nested too deeply)");
        lengths_[depth_] = path_.size();
        if (depth_ > 0 && !in_array()) {
            if (!path_.empty()) path_ += '.';
            path_ += key_;
        }
        if (array) path_ += "[]";
        is_array_[depth_++] = array;
        return true;
    }
    void leave() {
        --depth_;
        path_.resize(lengths_[depth_]);
    }

    bool fail(std::string message) {
        if (problem_.empty()) problem_ = std::move(message);
        return false;
    }

    std::string where() const {
        if (in_context_) return "context " + std::to_string(context_index_ + 1) + ": ";
        if (in_copies_) return "copies: ";
        if (in_exact_) return "exact_counts: ";
        return path_.starts_with("run") ? "run: " : "";
    }

    bool wrong_type(std::string_view field, const char* expected) {
        return fail(where() + "field '" + std::string(field) + "' should be " + expected);
    }

    // Scalar readers: each checks the JSON type and says which field is wrong.
    bool count(const scalar& v, std::string_view field, std::uint64_t& out) {
        if (v.what != scalar::kind::unsigned_integer) return wrong_type(field, "a non-negative integer");
        out = v.integer;
        return true;
    }
    bool real(const scalar& v, std::string_view field, double& out) {
        if (v.what == scalar::kind::null) { // the writers write null for a number that is not finite
            out = NAN;
            return true;
        }
        if (v.what != scalar::kind::unsigned_integer && v.what != scalar::kind::negative_integer &&
            v.what != scalar::kind::real)
            return wrong_type(field, "a number");
        out = v.real;
        return true;
    }
    bool text(const scalar& v, std::string_view field, std::string& out) {
        if (v.what != scalar::kind::string) return wrong_type(field, "a string");
        out.assign(v.text);
        return true;
    }

    bool value(const scalar& v) {
        if (depth_ == 0) return fail("not an ojx profile (the top level is not a JSON object)");
        if (in_context_) return context_value(v);
        if (path_ == "contexts[]") return fail("context " + std::to_string(context_index_ + 1) + ": not an object");
        if (path_.empty()) return top_value(v);
        if (path_.starts_with("run")) return run_value(v, in_array());
        if (in_copies_) return copies_value(v);
        if (in_exact_) return exact_value(v);
        return true;
    }

    bool top_value(const scalar& v) {
        if (key_ == "run") return wrong_type("run", "an object");
        if (key_ == "contexts") return wrong_type("contexts", "a list of contexts");
        if (key_ == "copies") return wrong_type("copies", "an object");
        if (key_ == "exact_counts") return wrong_type("exact_counts", "an object");
        if (key_ != "ojx_profile_version") return true;
        std::uint64_t version = 0;
        if (v.what != scalar::kind::unsigned_integer || v.integer == 0)
            return fail("not an ojx profile (ojx_profile_version is not a positive integer)");
        version = v.integer;
        if (version > newest_profile_version)
            return fail("profile version " + std::to_string(version) + " is newer than this ojx reads (" +
                        std::to_string(newest_profile_version) + "); use a newer ojx");
        version_ = version;
        return true;
    }

    bool run_value(const scalar& v, bool in_array) {
        if (path_ == "run") {
            if (key_ == "runtime") return run_text(v, run_.runtime);
            if (key_ == "sampler") return run_text(v, run_.sampler);
            if (key_ == "watchpoints") return run_text(v, run_.watchpoints);
            if (key_ == "pairing") return run_text(v, run_.pairing);
            if (key_ == "replacement") return run_text(v, run_.replacement);
            if (key_ == "allocation_counts") return run_text(v, run_.allocation_counts);
            if (key_ == "seconds") return amount(v, "seconds", run_.seconds);
            if (v.what == scalar::kind::unsigned_integer) run_.counters.push_back({key_, v.integer});
            return true;
        }
        if (path_ == "run.heap_moments[]") {
            if (v.what != scalar::kind::string) return wrong_type("heap_moments", "a list of strings");
            run_.heap_moments.emplace_back(v.text);
            return true;
        }
        if (path_ == "run.allocation_sampling.targets_per_second[]") {
            std::uint64_t target = 0;
            if (!count(v, "allocation_sampling.targets_per_second", target)) return false;
            const auto at = std::lower_bound(run_.tracking_targets.begin(), run_.tracking_targets.end(), target);
            if (at == run_.tracking_targets.end() || *at != target) run_.tracking_targets.insert(at, target);
            return true;
        }
        if (path_ == "run.allocation_sampling.interval_range[]") {
            std::uint64_t interval = 0;
            if (!count(v, "allocation_sampling.interval_range", interval)) return false;
            interval_range_.push_back(interval);
            return true;
        }
        if (path_ == "run.estimator") {
            if (key_ == "min_comparisons") return count(v, "estimator.min_comparisons", run_.estimator.min_comparisons);
            if (key_ == "min_digested_objects")
                return count(v, "estimator.min_digested_objects", run_.estimator.min_digested_objects);
            if (key_ == "confidence") {
                double level = 0;
                if (!real(v, "estimator.confidence", level)) return false;
                if (!(level > 0 && level < 1)) return wrong_type("estimator.confidence", "between 0 and 1");
                run_.estimator.confidence = level;
            }
            return true;
        }
        if (path_.starts_with("run.merged.") && in_array) {
            // A merged profile lists every value of each descriptive field; they replace the joined text.
            const std::string_view field = std::string_view(path_).substr(11, path_.size() - 13);
            std::vector<std::string>* list = descriptive_field(field);
            if (list == nullptr || v.what != scalar::kind::string) return true;
            if (!merged_lists_seen_.contains(std::string(field))) {
                merged_lists_seen_.insert(std::string(field));
                list->clear();
            }
            list->emplace_back(v.text);
            return true;
        }
        if (path_ == "run.merged") {
            if (key_ == "profiles") {
                if (!count(v, "merged.profiles", run_.profiles)) return false;
                if (run_.profiles == 0) return wrong_type("merged.profiles", "at least 1");
            }
            return true;
        }
        // Nested counter groups: run.samples_dropped.store, run.agent.single_steps, …
        if (!in_array && v.what == scalar::kind::unsigned_integer && path_.find('.') != std::string::npos &&
            std::count(path_.begin(), path_.end(), '.') == 1)
            run_.counters.push_back({path_.substr(4) + "." + key_, v.integer});
        return true;
    }

    std::vector<std::string>* descriptive_field(std::string_view name) {
        if (name == "runtime") return &run_.runtime;
        if (name == "sampler") return &run_.sampler;
        if (name == "watchpoints") return &run_.watchpoints;
        if (name == "pairing") return &run_.pairing;
        if (name == "replacement") return &run_.replacement;
        if (name == "allocation_counts") return &run_.allocation_counts;
        return nullptr;
    }

    bool run_text(const scalar& v, std::vector<std::string>& field) {
        if (v.what != scalar::kind::string) return wrong_type(key_, "a string");
        if (merged_lists_seen_.contains(key_)) return true; // run.merged already listed every value
        field.assign(1, std::string(v.text));
        return true;
    }

    bool context_value(const scalar& v) {
        context_profile& c = context_;
        replica_estimate& e = c.estimate;
        const std::string_view p = std::string_view(path_).substr(std::strlen("contexts[]"));
        if (p.empty()) {
            if (key_ == "objects") return mark(has_objects) && count(v, key_, c.objects);
            if (key_ == "bytes") return mark(has_bytes) && count(v, key_, c.bytes);
            if (key_ == "reported") {
                if (v.what != scalar::kind::boolean) return wrong_type(key_, "true or false");
                e.reported = v.boolean;
                return mark(has_reported);
            }
            if (key_ == "theta") return mark(has_theta) && real(v, key_, e.theta);
            if (key_ == "alpha") return real(v, key_, e.alpha);
            if (key_ == "alpha_comparisons") return count(v, key_, e.alpha_comparisons);
            if (key_ == "omega") return mark(has_omega) && real(v, key_, e.omega);
            if (key_ == "gamma") return mark(has_gamma) && real(v, key_, e.gamma);
            return true;
        }
        if (p == ".allocation") {
            if (key_ == "type") return mark(has_type) && text(v, "allocation.type", c.type);
            return true;
        }
        if (p == ".allocation.frames[]") {
            present_ |= has_frames;
            return frame(v, "allocation.frames", c.frames);
        }
        if (p == ".comparisons") {
            if (key_ == "equal") return mark(has_equal) && count(v, "comparisons.equal", e.equal);
            if (key_ == "different") return mark(has_different) && count(v, "comparisons.different", e.different);
            if (key_ == "pairs") return count(v, "comparisons.pairs", e.pairs);
            if (key_ == "sources") return count(v, "comparisons.sources", e.sources);
            if (key_ == "effective") return real(v, "comparisons.effective", e.effective_comparisons);
            return true;
        }
        if (p == ".theta_ci[]") return bound(v, "theta_ci", e.theta_ci, theta_ci_ends_);
        if (p == ".alpha_ci[]") return bound(v, "alpha_ci", e.alpha_ci, alpha_ci_ends_);
        if (p == ".evidence") return evidence_value(v);
        if (p == ".accesses[]") {
            // A value straight in the list, not a member of one of its objects: there is no object to fill.
            if (in_array()) return wrong_type("accesses", "a list of objects");
            if (key_ == "samples") return count(v, "accesses.samples", c.accesses.back().samples);
            return true;
        }
        if (p == ".accesses[].frames[]") return frame(v, "accesses.frames", c.accesses.back().frames);
        if (p.starts_with(".allocated") && c.allocated) return allocated_value(v, p, *c.allocated);
        if (p.starts_with(".whole_objects")) return whole_object_value(v, p.substr(std::strlen(".whole_objects")));
        if (p.starts_with(".heap")) return heap_value(v, p.substr(std::strlen(".heap")));
        return true;
    }

    // The heap view's sums (the estimate and savings written next to them are recomputed, not read).
    bool heap_value(const scalar& v, std::string_view p) {
        live_summary& l = context_.live;
        if (p.empty()) {
            if (key_ == "objects") return count(v, "heap.objects", l.objects);
            if (key_ == "weight") return amount(v, "heap.weight", l.weight);
            if (key_ == "bytes") return amount(v, "heap.bytes", l.bytes);
            return true;
        }
        return groups_value(v, p, l.digested, "heap");
    }

    // An identical-group summary's "groups" and "unkept" members (whole_objects and heap).
    bool groups_value(const scalar& v, std::string_view p, identical_groups_summary& i, std::string_view where) {
        if (p == ".groups[]") {
            if (in_array()) return wrong_type(std::string(where) + ".groups", "a list of objects");
            content_group& g = i.groups.back();
            const std::string field = std::string(where) + ".groups." + key_;
            if (key_ == "digest") return digest(v, field, g.digest);
            if (key_ == "objects") return count(v, field, g.objects);
            if (key_ == "all_zero") return flag(v, field, g.all_zero);
            if (key_ == "weight") return amount(v, field, g.weight);
            if (key_ == "weight_squared") return amount(v, field, g.weight_squared);
            if (key_ == "heaviest") return amount(v, field, g.heaviest);
            return true;
        }
        if (p == ".unkept") {
            const std::string field = std::string(where) + ".unkept." + key_;
            if (key_ == "objects") return count(v, field, i.unkept_objects);
            if (key_ == "weight") return amount(v, field, i.unkept_weight);
            if (key_ == "weight_squared") return amount(v, field, i.unkept_weight_squared);
            if (key_ == "largest_weight") return amount(v, field, i.unkept_largest_weight);
            return true;
        }
        return true;
    }

    // The whole-object sums (the estimates written next to them are recomputed from them, not read).
    bool whole_object_value(const scalar& v, std::string_view p) {
        whole_object_summary& w = context_.whole;
        if (p.empty()) return key_ == "bytes" ? count(v, "whole_objects.bytes", w.bytes) : true;
        if (p == ".groups[]" || p == ".unkept") return groups_value(v, p, w.identical, "whole_objects");
        if (p == ".near_families[]") {
            if (in_array()) return wrong_type("whole_objects.near_families", "a list of objects");
            near_family& f = w.near.families.back();
            const std::string field = "whole_objects.near_families." + key_;
            if (key_ == "digest") return digest(v, field, f.representative.digest);
            if (key_ == "size") return count(v, field, f.representative.size);
            if (key_ == "all_zero") return flag(v, field, f.representative.all_zero);
            if (key_ == "members") return count(v, field, f.members);
            if (key_ == "identical") return count(v, field, f.identical);
            if (key_ == "shared_blocks") return count(v, field, f.shared_blocks);
            return true;
        }
        if (p == ".near_families[].blocks[]") {
            std::uint64_t block = 0;
            if (!count(v, "whole_objects.near_families.blocks", block)) return false;
            std::size_t& n = family_blocks_.back();
            if (block > 0xffffffffULL || n == fingerprint_blocks)
                return wrong_type("whole_objects.near_families.blocks",
                                  "32 integers below 2^32");
            w.near.families.back().representative.blocks[n++] = static_cast<std::uint32_t>(block);
            return true;
        }
        return true;
    }

    bool digest(const scalar& v, std::string_view field, std::uint64_t& out) {
        if (v.what != scalar::kind::string || v.text.empty() || v.text.size() > 16 ||
            !std::all_of(v.text.begin(), v.text.end(), [](char ch) { return std::isxdigit(static_cast<unsigned char>(ch)); }))
            return wrong_type(field, "a digest of 1 to 16 hexadecimal digits");
        out = std::stoull(std::string(v.text), nullptr, 16);
        return true;
    }

    bool flag(const scalar& v, std::string_view field, bool& out) {
        if (v.what != scalar::kind::boolean) return wrong_type(field, "true or false");
        out = v.boolean;
        return true;
    }

    bool amount(const scalar& v, std::string_view field, double& out) {
        if (!real(v, field, out)) return false;
        if (!(out >= 0 && std::isfinite(out))) return wrong_type(field, "a finite non-negative number");
        return true;
    }

    // What is wrong with the whole-object sums, or nothing; sorts them the way summaries are kept.
    // What is wrong with an identical-group summary, or nothing; sorts its groups the way summaries are kept.
    static std::string groups_problem(identical_groups_summary& s, const std::string& where) {
        auto& groups = s.groups;
        std::sort(groups.begin(), groups.end(),
                  [](const content_group& a, const content_group& b) { return a.digest < b.digest; });
        for (std::size_t i = 0; i < groups.size(); ++i) {
            const content_group& g = groups[i];
            if (i > 0 && groups[i - 1].digest == g.digest) return "field '" + where + ".groups' lists a digest twice";
            if (g.objects == 0) return "field '" + where + ".groups.objects' should be at least 1";
            if (g.heaviest > g.weight || g.weight_squared > g.weight * g.weight * (1 + 1e-9))
                return "fields '" + where + ".groups' weights are inconsistent (heaviest <= weight, "
                       "weight_squared <= weight^2)";
        }
        if (s.unkept_largest_weight > s.unkept_weight * (1 + 1e-9))
            return "field '" + where + ".unkept.largest_weight' should be at most 'weight'";
        std::uint64_t objects = s.unkept_objects;
        for (const content_group& g : groups) {
            if (objects > std::numeric_limits<std::uint64_t>::max() - g.objects)
                return "field '" + where + ".groups' counts add up to more than 2^64";
            objects += g.objects;
        }
        return {};
    }

    std::string whole_object_problem() {
        whole_object_summary& w = context_.whole;
        if (std::string problem = groups_problem(w.identical, "whole_objects"); !problem.empty()) return problem;
        for (std::size_t i = 0; i < w.near.families.size(); ++i) {
            const near_family& f = w.near.families[i];
            if (family_blocks_[i] != fingerprint_blocks)
                return "field 'whole_objects.near_families.blocks' should be 32 integers below 2^32";
            if (f.identical > f.members || f.members == 0)
                return "field 'whole_objects.near_families.identical' should be at most 'members', which is at least 1";
            if (f.shared_blocks / fingerprint_blocks > f.members - f.identical)
                return "field 'whole_objects.near_families.shared_blocks' is more than 32 per near-replica";
        }
        w.near.sort_by_near();
        return {};
    }

    bool allocated_value(const scalar& v, std::string_view p, named_allocations& a) {
        if (p == ".allocated") {
            if (key_ != "estimated") return true;
            if (v.what != scalar::kind::boolean) return wrong_type("allocated.estimated", "true or false");
            a.estimated = v.boolean;
            return true;
        }
        if (p == ".allocated.types[]") {
            if (in_array()) return wrong_type("allocated.types", "a list of objects");
            named_type_allocations& t = a.types.back();
            if (key_ == "type") return text(v, "allocated.types.type", t.type);
            if (key_ == "array") {
                if (v.what != scalar::kind::boolean) return wrong_type("allocated.types.array", "true or false");
                t.counts.array = v.boolean;
                return true;
            }
            return type_counts(v, "allocated.types.", t.counts);
        }
        if (p == ".allocated.other_types") return type_counts(v, "allocated.other_types.", a.other);
        return true;
    }

    bool type_counts(const scalar& v, std::string_view where, type_allocations& t) {
        const std::string field = std::string(where) + key_;
        if (key_ == "seen") return count(v, field, t.seen);
        double* number = key_ == "instances"            ? &t.instances
                         : key_ == "bytes"              ? &t.bytes
                         : key_ == "elements"           ? &t.elements
                         : key_ == "instances_variance" ? &t.instances_variance
                                                        : nullptr;
        if (number == nullptr) return true;
        if (!real(v, field, *number)) return false;
        if (!(*number >= 0)) return wrong_type(field, "a non-negative number");
        return true;
    }

    bool mark(required_field field) {
        present_ |= field;
        return true;
    }

    bool frame(const scalar& v, std::string_view field, std::vector<std::string>& frames) {
        if (v.what != scalar::kind::string) return wrong_type(field, "a list of strings");
        frames.emplace_back(v.text);
        return true;
    }

    // An interval's two ends, in order; `ends` counts those read.
    bool bound(const scalar& v, std::string_view field, interval& out, int& ends) {
        double end = 0;
        if (!real(v, field, end)) return false;
        if (ends == 0) out.low = end;
        else if (ends == 1) out.high = end;
        else return wrong_type(field, "two numbers");
        ++ends;
        return true;
    }

    bool evidence_value(const scalar& v) {
        evidence_summary& s = context_.evidence;
        const std::string field = "evidence." + key_;
        bool known = true;
        bool ok = true;
        if (key_ == "alpha_equal") ok = count(v, field, s.alpha_equal);
        else if (key_ == "weighted_equal") ok = real(v, field, s.weighted_equal);
        else if (key_ == "weighted_total") ok = real(v, field, s.weighted_total);
        else if (key_ == "sum_equal_squared") ok = real(v, field, s.sum_equal_squared);
        else if (key_ == "sum_equal_times_total") ok = real(v, field, s.sum_equal_times_total);
        else if (key_ == "sum_total_squared") ok = real(v, field, s.sum_total_squared);
        else known = false;
        if (ok && known) ++evidence_present_;
        return ok;
    }

    // An edge of the copy section as read so far.
    struct node_read {
        std::string kind;
        std::optional<std::uint64_t> site, offset, address;
    };
    struct edge_read {
        node_read from, to;
        std::optional<std::uint64_t> width;
        sampled_volume volume;
        unsigned sums = 0; // one bit each for samples, weight, weight_squares and max_weight, as read
        struct code_read {
            std::optional<std::uint64_t> context, samples;
        };
        std::vector<code_read> copied_by;
        std::optional<std::uint64_t> copied_by_other;
    };

    // The copy section (copy_profile.hpp): its counters, sites and edges' sums, checked as they are read.
    bool copies_value(const scalar& v) {
        copy_profile& c = *copies_;
        if (path_ == "copies.sampling[]") return text(v, "sampling", c.sampling.emplace_back());
        if (path_ == "copies.counters") {
            for (const copy_counter& counter : copy_counters)
                if (key_ == counter.name) return count(v, "counters." + key_, c.counters.*counter.value);
            return true;
        }
        if (path_ == "copies.sites[]") {
            if (in_array()) return wrong_type("sites", "a list of objects");
            return key_ == "type" ? text(v, "sites.type", c.sites.back().type) : true;
        }
        if (path_ == "copies.sites[].frames[]") return frame(v, "sites.frames", c.sites.back().frames);
        if (path_ == "copies.code_contexts[]")
            return in_array() ? wrong_type("code_contexts", "a list of objects") : true;
        if (path_ == "copies.code_contexts[].frames[]")
            return frame(v, "code_contexts.frames", c.code_contexts.back().frames);
        if (path_ == "copies.field_names[]") {
            if (in_array()) return wrong_type("field_names", "a list of objects");
            copy_field_name& f = c.field_names.back();
            if (key_ == "type") return text(v, "field_names.type", f.type) && mark_field_name_part(1);
            if (key_ == "offset") return count(v, "field_names.offset", f.offset) && mark_field_name_part(2);
            if (key_ == "name") return text(v, "field_names.name", f.name) && mark_field_name_part(4);
            return true;
        }
        if (path_ == "copies.edges[]") {
            if (in_array()) return wrong_type("edges", "a list of objects");
            const std::string field = "edges." + key_;
            if (key_ == "width") return count(v, field, edge_.width.emplace());
            if (key_ == "samples") return count(v, field, edge_.volume.samples) && mark_sum(1);
            if (key_ == "weight") return count(v, field, edge_.volume.weight) && mark_sum(2);
            if (key_ == "weight_squares") return count(v, field, edge_.volume.weight_squares) && mark_sum(4);
            if (key_ == "max_weight") return count(v, field, edge_.volume.max_weight) && mark_sum(8);
            if (key_ == "copied_by_other") return count(v, field, edge_.copied_by_other.emplace());
            if (key_ == "copied_by") return wrong_type(field, "a list of objects");
            return true;
        }
        if (path_ == "copies.edges[].copied_by[]") {
            if (in_array()) return wrong_type("edges.copied_by", "a list of objects");
            if (key_ == "context") return count(v, "edges.copied_by.context", edge_.copied_by.back().context.emplace());
            if (key_ == "samples") return count(v, "edges.copied_by.samples", edge_.copied_by.back().samples.emplace());
            return true;
        }
        if (path_ == "copies.edges[].from") return node_value(v, "edges.from.", edge_.from);
        if (path_ == "copies.edges[].to") return node_value(v, "edges.to.", edge_.to);
        return true;
    }

    // The exact counts section (exact_counts.hpp): totals, reasons and sites, checked as they are read.
    bool exact_value(const scalar& v) {
        exact_counts& c = *exact_;
        if (path_ == "exact_counts") {
            if (key_ == "increments") return count(v, key_, c.increments);
            if (key_ == "corrections") return count(v, key_, c.corrections);
            if (key_ == "methods_instrumented") return count(v, key_, c.methods_instrumented);
            if (key_ == "jvm_reported") return flag(v, key_, c.jvm_reported);
            if (key_ == "plans" || key_ == "left_alone" || key_ == "sites")
                return wrong_type(key_, key_ == "left_alone" ? "an object" : "a list");
            return true;
        }
        if (path_ == "exact_counts.plans[]") return text(v, "plans", c.plans.emplace_back());
        if (path_ == "exact_counts.left_alone") {
            c.left_alone.emplace_back(key_, 0);
            return count(v, "left_alone." + key_, c.left_alone.back().second);
        }
        if (path_ == "exact_counts.sites[]") {
            if (in_array()) return wrong_type("sites", "a list of objects");
            counted_site& site = c.sites.back();
            if (key_ == "method") return text(v, "sites.method", site.method) && mark_site_field(1);
            if (key_ == "bci") {
                std::uint64_t bci = 0;
                if (!count(v, "sites.bci", bci)) return false;
                if (bci > 65535) return wrong_type("sites.bci", "a bytecode index (at most 65535)");
                site.bci = static_cast<std::uint32_t>(bci);
                return mark_site_field(2);
            }
            if (key_ == "frame") return text(v, "sites.frame", site.frame) && mark_site_field(4);
            if (key_ == "type") return text(v, "sites.type", site.type) && mark_site_field(8);
            if (key_ == "objects") return count(v, "sites.objects", site.objects) && mark_site_field(16);
            if (key_ == "elements") return count(v, "sites.elements", site.elements);
            if (key_ == "jvm_elements") return count(v, "sites.jvm_elements", site.jvm_elements);
            if (key_ == "jvm_allocated")
                return count(v, "sites.jvm_allocated", site.jvm_allocated) && mark_site_field(32);
            return true;
        }
        return true;
    }

    bool mark_site_field(unsigned field) {
        site_fields_ |= field;
        return true;
    }

    // A site listed twice would be counted twice on merging: refused, as the writer never writes one.
    bool finish_exact() {
        std::vector<counted_site> sorted = exact_->sites;
        std::sort(sorted.begin(), sorted.end(), site_before);
        for (std::size_t i = 1; i < sorted.size(); ++i)
            if (same_site(sorted[i], sorted[i - 1]))
                return fail("exact_counts: site " + sorted[i].method + " bci " + std::to_string(sorted[i].bci) +
                            " is listed twice");
        normalise(*exact_);
        return true;
    }

    bool mark_sum(unsigned sum) {
        edge_.sums |= sum;
        return true;
    }

    bool mark_field_name_part(unsigned part) {
        field_name_parts_ |= part;
        return true;
    }

    bool node_value(const scalar& v, std::string_view end, node_read& n) {
        const std::string field = std::string(end) + key_;
        if (key_ == "kind") return text(v, field, n.kind);
        if (key_ == "site") return count(v, field, n.site.emplace());
        if (key_ == "address") return count(v, field, n.address.emplace());
        if (key_ != "offset") return true;
        if (v.what == scalar::kind::string && v.text == "elements") {
            n.offset = copy_node::elements;
            return true;
        }
        return count(v, field, n.offset.emplace());
    }

    // The node an edge's end names, or why it names none.
    std::string node_problem(const node_read& n, std::string_view end, copy_node& out) const {
        const std::string field = "field 'edges." + std::string(end);
        const bool in_site = n.kind == "field" || n.kind == "allocation";
        if (in_site && !n.site) return field + ".site' is missing";
        if (in_site && *n.site >= no_context) return field + ".site' is too large";
        if (n.kind == "field") {
            if (!n.offset) return field + ".offset' is missing";
            out = copy_node::field(static_cast<context_id>(*n.site), *n.offset);
        } else if (n.kind == "allocation") {
            out = copy_node::allocation(static_cast<context_id>(*n.site));
        } else if (n.kind == "static") {
            if (!n.address) return field + ".address' is missing";
            out = copy_node::static_location(*n.address);
        } else if (n.kind == "consumer") {
            out = copy_node::consumer();
        } else {
            return field + ".kind' should be field, allocation, static or consumer";
        }
        return {};
    }

    // An edge whose sums could come from samples: at least one, each weighing between 1 and max_weight.
    bool finish_edge() {
        copy_edge edge;
        const std::tuple<const node_read*, const char*, copy_node*> ends[] = {{&edge_.from, "from", &edge.from},
                                                                             {&edge_.to, "to", &edge.to}};
        for (const auto& [n, end, node] : ends)
            if (const std::string problem = node_problem(*n, end, *node); !problem.empty())
                return fail(where() + problem);
        if (edge.from.kind == copy_node_kind::consumer) return fail(where() + "an edge from the consumer");
        if (edge.to.kind == copy_node_kind::allocation) return fail(where() + "an edge into an allocation node");
        if (!edge_.width || *edge_.width == 0 || *edge_.width > 255)
            return wrong_type("edges.width", "an integer from 1 to 255");
        edge.width = static_cast<std::uint8_t>(*edge_.width);
        const sampled_volume& s = edge_.volume;
        if (edge_.sums != 15) return fail(where() + "an edge needs samples, weight, weight_squares and max_weight");
        if (s.samples == 0 || s.max_weight == 0 || s.samples > s.weight || s.max_weight > s.weight ||
            s.weight > s.weight_squares || s.weight_squares / s.max_weight > s.weight ||
            s.max_weight > s.weight_squares / s.max_weight)
            return fail(where() + "an edge's sums are inconsistent (1 <= samples <= weight, max_weight <= weight <= "
                                  "weight_squares <= weight * max_weight, max_weight^2 <= weight_squares)");
        if (copies_->graph.edges().contains(edge)) return fail(where() + "an edge is listed twice");
        copies_->graph.add(edge, s);
        return finish_edge_code(edge);
    }

    // The edge's code: each context once, at least one sample each, no more samples in all than the edge's.
    bool finish_edge_code(const copy_edge& edge) {
        if (edge_.copied_by.empty() && !edge_.copied_by_other) return true;
        if (!edge_.copied_by_other) return fail(where() + "an edge with 'copied_by' needs 'copied_by_other'");
        edge_code code;
        code.other = *edge_.copied_by_other;
        for (const edge_read::code_read& c : edge_.copied_by) {
            if (!c.context || !c.samples || *c.samples == 0)
                return fail(where() + "each of an edge's 'copied_by' needs a context and at least one sample");
            if (*c.context >= no_context) return wrong_type("edges.copied_by.context", "a smaller integer");
            if (!code.contexts.try_emplace(static_cast<context_id>(*c.context), *c.samples).second)
                return fail(where() + "an edge's 'copied_by' lists a context twice");
        }
        const auto too_many = [&] { return fail(where() + "an edge's 'copied_by' has more samples than the edge"); };
        if (code.other > edge_.volume.samples) return too_many();
        std::uint64_t left = edge_.volume.samples - code.other;
        for (const auto& [context, samples] : code.contexts) {
            if (samples > left) return too_many();
            left -= samples;
        }
        copies_->code.add(edge, code);
        return true;
    }

    // Every site an edge names is listed; the sites are put in order (a no-op for what ojx writes).
    bool finish_copies() {
        for (const auto& [edge, volume] : copies_->graph.edges())
            for (const copy_node& node : {edge.from, edge.to})
                if (names_site(node) && node.site >= copies_->sites.size())
                    return fail("copies: an edge names site " + std::to_string(node.site) +
                                ", which 'sites' does not list");
        for (const auto& [edge, code] : copies_->code.edges())
            for (const auto& [context, samples] : code.contexts)
                if (context >= copies_->code_contexts.size())
                    return fail("copies: an edge names code context " + std::to_string(context) +
                                ", which 'code_contexts' does not list");
        std::vector<copy_field_name> named = copies_->field_names;
        std::sort(named.begin(), named.end());
        for (std::size_t i = 1; i < named.size(); ++i)
            if (named[i].type == named[i - 1].type && named[i].offset == named[i - 1].offset)
                return fail("copies: 'field_names' names offset " + std::to_string(named[i].offset) + " of " +
                            named[i].type + " twice");
        copy_profile ordered;
        ordered.merge(*copies_);
        *copies_ = std::move(ordered);
        return true;
    }

    bool finish_context() {
        if ((present_ & all_required) != all_required) {
            for (const auto& [bit, name] : required_names)
                if (!(present_ & bit)) return fail(where() + "missing field '" + name + "'");
        }
        context_profile& c = context_;
        replica_estimate& e = c.estimate;
        e.objects = c.objects;
        if (evidence_present_ != 0 && evidence_present_ < evidence_fields)
            return fail(where() + "field 'evidence' is incomplete");
        if (theta_ci_ends_ == 1 || alpha_ci_ends_ == 1)
            return wrong_type(theta_ci_ends_ == 1 ? "theta_ci" : "alpha_ci", "two numbers");
        if (const std::string problem = estimate_problem(e, c.evidence, evidence_present_ != 0); !problem.empty())
            return fail(where() + problem);
        if (const std::string problem = whole_object_problem(); !problem.empty()) return fail(where() + problem);
        if (const std::string problem = groups_problem(c.live.digested, "heap"); !problem.empty())
            return fail(where() + problem);
        if (c.live.digested.objects() > c.live.objects)
            return fail(where() + "field 'heap.objects' should be at least the objects its groups count");
        c.has_evidence = evidence_present_ == evidence_fields;
        if (c.has_evidence) {
            // The counts the sums belong with are the comparison counts read above.
            evidence_summary& s = c.evidence;
            s.equal = e.equal;
            s.different = e.different;
            s.pairs = e.pairs;
            s.sources = e.sources;
            s.alpha_comparisons = e.alpha_comparisons;
        }
        c.estimate_from_evidence(run_.estimator);
        ++context_index_;
        on_context_(std::move(c));
        return true;
    }

    run_profile& run_;
    const context_consumer& on_context_;
    std::string problem_;
    std::string key_;
    std::string path_;
    std::size_t lengths_[64]{};
    bool is_array_[64]{};
    std::size_t depth_ = 0;
    std::uint64_t version_ = 0;
    std::vector<std::uint64_t> interval_range_; // run.allocation_sampling.interval_range as read so far
    bool in_context_ = false;
    context_profile context_;
    unsigned present_ = 0;
    int evidence_present_ = 0;
    std::size_t context_index_ = 0;
    int theta_ci_ends_ = 0;
    int alpha_ci_ends_ = 0;
    std::vector<std::size_t> family_blocks_; // blocks read per near family of the context
    std::set<std::string> merged_lists_seen_;

    bool in_copies_ = false;
    std::optional<copy_profile> copies_; // the copy section, when the profile has one
    edge_read edge_;                     // the edge being read in it
    unsigned field_name_parts_ = 0;      // type, offset and name of the field name being read: a bit each

    bool in_exact_ = false;
    std::optional<exact_counts> exact_; // the exact counts section, when the profile has one
    unsigned site_fields_ = 0;          // method, bci, frame, type, objects of the site being read: a bit each
};

struct file_closer {
    void operator()(std::FILE* f) const noexcept { std::fclose(f); }
};

} // namespace

std::optional<std::string> read_profile(const std::string& path, run_profile& run,
                                        const context_consumer& on_context, std::optional<copy_profile>* copies,
                                        std::optional<exact_counts>* exact) {
    if (copies) copies->reset();
    if (exact) exact->reset();
    const std::unique_ptr<std::FILE, file_closer> file(std::fopen(path.c_str(), "rb"));
    if (!file) return path + ": cannot read: " + std::strerror(errno);
    return read_profile(file.get(), path, run, on_context, copies, exact);
}

std::optional<std::string> read_profile(std::FILE* file, const std::string& path, run_profile& run,
                                        const context_consumer& on_context, std::optional<copy_profile>* copies,
                                        std::optional<exact_counts>* exact) {
    run = run_profile{};
    if (copies) copies->reset();
    if (exact) exact->reset();
    profile_handler handler(run, on_context);
    char buffer[1 << 16];
    rapidjson::FileReadStream stream(file, buffer, sizeof buffer);
    rapidjson::Reader reader;
    const rapidjson::ParseResult result =
        reader.Parse<rapidjson::kParseValidateEncodingFlag | rapidjson::kParseIterativeFlag |
                     rapidjson::kParseNumbersAsStringsFlag>(stream, handler); // numbers: RawNumber
    if (std::ferror(file)) return path + ": read error: " + std::strerror(errno);
    if (!handler.problem().empty()) return path + ": " + handler.problem();
    if (result.IsError()) {
        if (result.Code() == rapidjson::kParseErrorDocumentEmpty) return path + ": empty file, not a profile";
        // A stream that is not a file (fmemopen's) has no size: its errors are told as invalid JSON.
        struct stat file_status {};
        const int descriptor = ::fileno(file);
        const bool at_end = descriptor >= 0 && ::fstat(descriptor, &file_status) == 0 &&
                            result.Offset() >= static_cast<std::size_t>(file_status.st_size);
        return path + ": " + (at_end ? std::string("truncated: the JSON ends at byte ") + std::to_string(result.Offset())
                                     : "not valid JSON at byte " + std::to_string(result.Offset()) + ": " +
                                           rapidjson::GetParseError_En(result.Code()));
    }
    if (!handler.saw_version()) return path + ": not an ojx profile (no ojx_profile_version field)";
    if (copies) *copies = std::move(handler.copies());
    if (exact) *exact = std::move(handler.exact());
    return std::nullopt;
}

} // namespace ojx::tool
