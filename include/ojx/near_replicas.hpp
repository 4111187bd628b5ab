// Near-replicas: objects of one site that are equal except in a few words — the paper's false positives, a
// sparse row that differs from the others in 8 of its 2048 elements. A comparison of single words finds them
// equal almost everywhere; their full digests differ, so they are not identical. They are a finding of their own
// (one shared copy plus the differences would save most of their memory), reported apart from identical groups so
// that identical estimates are not inflated by them.
//
// Definition. A family is a representative object and the later objects of the same size that share at least
// `near_replica_min_shared_blocks` of the `fingerprint_blocks` block digests with it (half the object: two sparse
// rows that each differ from a common pattern in 8 of 2048 elements differ in at most 16 of 32 blocks). An object
// joins the family whose representative it shares the most blocks with, and founds a new family where it is near
// to none and there is room. Members identical to the representative (equal full digests) are counted apart;
// the others are the near-replicas, with the blocks they share. Family membership depends on which object came
// first (near-ness is not transitive): the counts are those of this greedy clustering, stated as such.
//
// Bounded: at most `capacity` families per site (objects near to none once they are full are not counted in any).
// Recording is allocation-free; summaries allocate.
#pragma once

#include "ojx/object_contents.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <tuple>
#include <vector>

namespace ojx {

inline constexpr std::size_t near_replica_min_shared_blocks = fingerprint_blocks / 2;

struct near_family {
    object_fingerprint representative;
    std::uint64_t members = 0;        // objects in the family, the representative included
    std::uint64_t identical = 0;      // members identical to the representative, itself included
    std::uint64_t shared_blocks = 0;  // Σ blocks shared with the representative over the other members

    std::uint64_t near() const noexcept { return members - identical; }
    // The mean fraction of a near-replica's contents it shares with the representative.
    double shared_fraction() const noexcept {
        return near() == 0 ? 0
                           : static_cast<double>(shared_blocks) /
                                 (static_cast<double>(near()) * static_cast<double>(fingerprint_blocks));
    }
};

// The families of a site, as profiles carry them. Summaries add up by joining families whose representatives
// are near each other (the larger family's representative stays); that is exact where the representatives are
// identical and otherwise the same greedy rule as recording.
struct near_replica_summary {
    std::vector<near_family> families; // most near-replicas first

    // The family with the most near-replicas, or null when no family has any.
    const near_family* largest() const noexcept {
        const near_family* best = nullptr;
        for (const near_family& f : families)
            if (f.near() > 0 && (best == nullptr || f.near() > best->near())) best = &f;
        return best;
    }

    near_replica_summary& operator+=(const near_replica_summary& other) {
        std::vector<near_family> all = families;
        all.insert(all.end(), other.families.begin(), other.families.end());
        // An order that does not depend on which summary came first.
        std::sort(all.begin(), all.end(), [](const near_family& a, const near_family& b) {
            return std::tie(b.members, a.representative.digest) < std::tie(a.members, b.representative.digest);
        });
        families.clear();
        for (const near_family& f : all) {
            near_family* into = nullptr;
            for (near_family& kept : families)
                if (shared_blocks(kept.representative, f.representative) >= near_replica_min_shared_blocks) {
                    into = &kept;
                    break;
                }
            if (into == nullptr) {
                families.push_back(f);
                continue;
            }
            into->members += f.members;
            if (into->representative.digest == f.representative.digest) {
                into->identical += f.identical;
                into->shared_blocks += f.shared_blocks;
            } else {
                // f's members identical to its own representative share as many blocks with ours as it does.
                into->shared_blocks += f.shared_blocks + f.identical * shared_blocks(into->representative, f.representative);
            }
        }
        sort_by_near();
        return *this;
    }

    void sort_by_near() {
        std::sort(families.begin(), families.end(), [](const near_family& a, const near_family& b) {
            return std::tie(b.members, b.identical, a.representative.digest) <
                   std::tie(a.members, a.identical, b.representative.digest);
        });
        std::stable_sort(families.begin(), families.end(),
                         [](const near_family& a, const near_family& b) { return a.near() > b.near(); });
    }
};

// A site's near-replica finding: its family with the most near-replicas.
struct near_replica_estimate {
    bool found = false;          // some digested object is a near-replica (of a representative it is not identical to)
    std::uint64_t members = 0;   // of that family
    std::uint64_t near = 0;      // its members that are near-replicas, not identical to the representative
    double share = 0;            // near / the site's digested objects
    double shared_fraction = 0;  // mean fraction of a near-replica's blocks shared with the representative
};

inline near_replica_estimate estimate_near_replicas(const near_replica_summary& s, std::uint64_t digested) noexcept {
    near_replica_estimate e;
    const near_family* f = s.largest();
    if (f == nullptr || digested == 0) return e;
    e.found = true;
    e.members = f->members;
    e.near = f->near();
    e.share = std::min(1.0, static_cast<double>(f->near()) / static_cast<double>(digested));
    e.shared_fraction = f->shared_fraction();
    return e;
}

class near_replica_table {
public:
    explicit near_replica_table(std::size_t capacity)
        : capacity_(std::max<std::size_t>(capacity, 1)), families_(std::make_unique<near_family[]>(capacity_)) {}

    // One digested object. No allocation.
    void record(const object_fingerprint& object) noexcept {
        near_family* best = nullptr;
        std::size_t best_shared = 0;
        for (std::size_t i = 0; i < used_; ++i) {
            near_family& f = families_[i];
            if (f.representative.digest == object.digest && f.representative.size == object.size) {
                ++f.members;
                ++f.identical;
                return;
            }
            const std::size_t shared = shared_blocks(f.representative, object);
            if (shared >= near_replica_min_shared_blocks && shared > best_shared) {
                best = &f;
                best_shared = shared;
            }
        }
        if (best != nullptr) {
            ++best->members;
            best->shared_blocks += best_shared;
            return;
        }
        if (used_ == capacity_) {
            ++unclustered_;
            return;
        }
        families_[used_++] = near_family{object, 1, 1, 0};
    }

    // Objects near to no family when the table was full.
    std::uint64_t unclustered() const noexcept { return unclustered_; }

    near_replica_summary summary() const {
        near_replica_summary s;
        s.families.assign(families_.get(), families_.get() + used_);
        s.sort_by_near();
        return s;
    }

private:
    std::size_t capacity_;
    std::unique_ptr<near_family[]> families_;
    std::size_t used_ = 0;
    std::uint64_t unclustered_ = 0;
};

} // namespace ojx
