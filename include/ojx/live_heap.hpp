// The heap view of a site: its objects alive at one moment, the moment the profiler saw the most tracked bytes
// alive (a collection's survivors on a runtime that says which objects survived one; the objects alive at exit
// where every death is seen, as free() shows a native agent), and the identical groups among the ones digested
// then. Sharing the replicas alive at once is what a fix saves in the heap; the whole-object evidence of every
// object at its death (whole_object_evidence.hpp) says what it saves in allocation churn. A site that keeps its
// replicas alive and one that drops each at once rank differently under the two views.
//
// One moment for the whole process, not each site's own peak: sites' live bytes at one moment add up to a heap
// that existed, and a moment chosen by the bytes alive, not by their contents, leaves the estimate unbiased.
// Summaries of different processes add up (each process's moment: their sum is the heap of processes running
// at once only where their moments coincide, which the profile's run facts say).
#pragma once

#include "ojx/identical_groups.hpp"
#include "ojx/object_contents.hpp"
#include "ojx/site_estimate.hpp"
#include "ojx/types.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ojx {

// A site's objects alive at the moment, and the digested among them. Weights are as the whole-object evidence's:
// an object tracked with allocation weight w stands for w objects, and one digested with probability p stands for
// w/p in `digested`.
struct live_summary {
    std::uint64_t objects = 0; // tracked objects alive
    double weight = 0;         // Σ w: the objects they stand for
    double bytes = 0;          // Σ w × size
    identical_groups_summary digested;

    bool empty() const noexcept { return objects == 0; }

    friend bool operator==(const live_summary&, const live_summary&) = default;

    live_summary& operator+=(const live_summary& other) {
        objects += other.objects;
        weight += other.weight;
        bytes += other.bytes;
        digested += other.digested;
        return *this;
    }
};

// Which moment a profile's heap view is of.
struct live_heap_moment {
    enum class kind : std::uint8_t { none, collection, census, exit };
    kind at = kind::none;
    std::uint64_t collection = 0;  // its number, from 1 (kind::collection)
    std::uint64_t collections = 0; // collections the run settled
    double bytes = 0;              // tracked bytes alive then (Σ w × size over every site)

    friend bool operator==(const live_heap_moment&, const live_heap_moment&) = default;

    // How a profile's run facts name it.
    std::string describe() const {
        switch (at) {
        case kind::collection:
            return "the survivors of collection " + std::to_string(collection) + " of " + std::to_string(collections) +
                   " (the most tracked bytes alive after a collection)";
        case kind::census:
            return "the largest census of the run's live heap (one each time the tracked bytes alive grew to half "
                   "again the most seen)";
        case kind::exit: return "exit (the objects alive then)";
        case kind::none: break;
        }
        return "none (no collection settled and no census taken: a JVM that never collected, or a native program "
               "whose tracked heap stayed under 1 MiB and was empty at exit)";
    }
};

// The heap view as a trace keeps it (tag 0x7E, docs/trace-format.md), written when the live run's profile is
// taken: a replay has no memory to take a census of, so it applies the live run's result. One `moment` record
// (also when there is no view: it carries the run's length), then for each site with live objects a `site`
// record followed by one `group` record per kept content.
struct live_heap_event {
    enum class kind : std::uint8_t { moment = 0, site = 1, group = 2 };
    kind what = kind::moment;
    live_heap_moment moment; // moment
    double seconds = 0;      // moment: the run's wall time when its profile was taken
    context_id context = no_context; // site
    live_summary site;       // site: every member but digested.groups (its group records follow)
    content_group group;     // group

    friend bool operator==(const live_heap_event&, const live_heap_event&) = default;
};

// The identical groups among a site's live objects, estimated as the whole-object evidence's are: where every live
// object was tracked with weight 1 (`counted`), the live objects are the population and an interval collapses
// where all of them were digested.
inline identical_groups_estimate estimate_live_groups(const live_summary& live, double confidence, bool counted) {
    const bool known = counted && live.weight <= static_cast<double>(live.objects) * (1 + 1e-6);
    return estimate_identical_groups(live.digested, confidence, known ? live.objects : 0);
}

// Bytes sharing one copy of a site's largest group would save: (share × n − 1) objects of the mean size, n the
// objects the bytes are of, and at least and at most (⌊low × n⌋ − 1) and (⌈high × n⌉ − 1) from the share's
// interval. The lower end is replicated_bytes_lower_bound's, so the heap's and the churn's figures read alike.
struct saving {
    double point = 0;
    double low = 0;
    double high = 0;
};

inline saving saving_of(const site_estimate& e, double objects, double bytes) noexcept {
    if (!e.reported() || !(objects > 0)) return {};
    const double mean = bytes / objects;
    const double high = std::ceil(e.largest_share_ci.high * objects * (1 - 1e-5));
    const double low = replicated_bytes_lower_bound(e, objects, bytes);
    const double point = std::max(e.largest_share * objects - 1, 0.0) * mean;
    return {std::max(point, low), low, high > 1 ? (high - 1) * mean : 0};
}

// Gathers one moment's live objects, site by site, for the profiler: every live object offered (live), the
// digested among them (digested). Allocates; not for a signal handler.
class live_heap_census {
public:
    explicit live_heap_census(std::size_t content_groups) : content_groups_(content_groups) {}

    void live(context_id context, double weight, std::uint64_t size) {
        entry& e = at(context);
        ++e.objects;
        e.weight += weight;
        e.bytes += weight * static_cast<double>(size);
    }

    void digested(context_id context, const object_fingerprint& object, double weight) {
        entry& e = at(context);
        if (!e.groups) e.groups = std::make_unique<identical_group_table>(content_groups_);
        e.groups->record(object.digest, object.all_zero, weight);
    }

    // Each site's summary, by context id.
    std::vector<std::pair<context_id, live_summary>> summaries() const {
        std::vector<std::pair<context_id, live_summary>> out;
        out.reserve(entries_.size());
        for (const auto& [context, e] : entries_) {
            live_summary s{.objects = e.objects, .weight = e.weight, .bytes = e.bytes, .digested = {}};
            if (e.groups) s.digested = e.groups->summary();
            out.emplace_back(context, std::move(s));
        }
        std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        return out;
    }

private:
    struct entry {
        std::uint64_t objects = 0;
        double weight = 0;
        double bytes = 0;
        std::unique_ptr<identical_group_table> groups;
    };
    entry& at(context_id context) {
        // Objects arrive in map order, so a site's objects are scattered: a sorted index would cost as much as
        // this, and sites are few (hundreds).
        const auto found = std::lower_bound(entries_.begin(), entries_.end(), context,
                                            [](const auto& e, context_id c) { return e.first < c; });
        if (found != entries_.end() && found->first == context) return found->second;
        return entries_.insert(found, {context, entry{}})->second;
    }

    std::size_t content_groups_;
    std::vector<std::pair<context_id, entry>> entries_;
};

} // namespace ojx
