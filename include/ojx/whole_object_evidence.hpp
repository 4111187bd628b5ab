// A site's whole-object evidence: every object digested whole at a moment no access sample had to land on it (a
// collection's start, free(), exit) goes into the site's identical-group histogram and near-replica families.
// The summary is what profiles carry and merge; estimates come from it (identical_groups.hpp, near_replicas.hpp).
#pragma once

#include "ojx/identical_groups.hpp"
#include "ojx/near_replicas.hpp"
#include "ojx/object_contents.hpp"

#include <cstddef>
#include <cstdint>

namespace ojx {

struct whole_object_config {
    std::size_t content_groups = 256; // distinct contents kept per site (≈ 40 bytes each)
    std::size_t near_families = 8;    // near-replica families per site (≈ 200 bytes each)
};

struct whole_object_summary {
    identical_groups_summary identical;
    near_replica_summary near;
    std::uint64_t bytes = 0; // digested

    std::uint64_t objects() const noexcept { return identical.objects(); }

    whole_object_summary& operator+=(const whole_object_summary& other) {
        identical += other.identical;
        near += other.near;
        bytes += other.bytes;
        return *this;
    }
};

// Allocated when a site's first object is digested; recording allocates only as the site's identical-group
// table grows (identical_groups.hpp).
class whole_object_evidence {
public:
    explicit whole_object_evidence(const whole_object_config& config)
        : groups_(config.content_groups), near_(config.near_families) {}

    // One object, digested whole, standing for `weight` objects of the site.
    void record(const object_fingerprint& object, double weight) noexcept {
        groups_.record(object.digest, object.all_zero, weight);
        near_.record(object);
        bytes_ += object.size;
    }

    whole_object_summary summary() const {
        return whole_object_summary{groups_.summary(), near_.summary(), bytes_};
    }

    // Bytes this evidence holds for a configuration when it is made (for memory accounting; its identical-group
    // table grows from identical_group_table::initial_room contents as distinct contents arrive).
    static std::size_t bytes_for(const whole_object_config& config) noexcept {
        return sizeof(whole_object_evidence) + identical_group_table::initial_bytes(config.content_groups) +
               config.near_families * sizeof(near_family);
    }

private:
    identical_group_table groups_;
    near_replica_table near_;
    std::uint64_t bytes_ = 0;
};

} // namespace ojx
