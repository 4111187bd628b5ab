// The small vocabulary every ojx component shares: addresses, identifiers of calling contexts and types,
// and the record the profiler keeps for each tracked object. Kept free of any OS or JVM notion so that the
// same core serves the hardware, emulation and replay backends.
#pragma once

#include <cstdint>
#include <limits>

namespace ojx {

// A virtual address in the profiled program. 64 bits even where pointers are smaller, so that traces recorded
// on one machine replay on another.
using address = std::uint64_t;

// Index of a node in a calling context tree. Allocation contexts and access contexts are both node ids.
using context_id = std::uint32_t;
inline constexpr context_id no_context = std::numeric_limits<context_id>::max();

// Opaque identifier of an object's type (a JVM class, a native size class, a synthetic type in emulation).
using type_id = std::uint32_t;
inline constexpr type_id no_type = std::numeric_limits<type_id>::max();

// What the profiler remembers about each tracked object, besides its address range. `serial` numbers objects
// in allocation order across the whole run, so "a later, different object of the same context" is a comparison
// of serials and never confuses a freed object with the one that reuses its memory.
struct object_info {
    context_id allocation_context = no_context;
    type_id type = no_type;
    std::uint64_t serial = 0;
    // How many allocations it stands for: 1/p, p the chance the allocation hook tracked it (allocation sampling at
    // the interval in force for it; allocation_metrics.hpp). A whole-object digest of it carries this weight.
    double allocation_weight = 1;
    // Its allocation shape's typed_layout (allocation_metrics.hpp): an offset in it names a field of its type.
    bool typed_layout = false;

    friend bool operator==(const object_info&, const object_info&) = default;
};

} // namespace ojx
