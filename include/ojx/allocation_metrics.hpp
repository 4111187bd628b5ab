// JP's allocation metrics (Binder, "Portable profiling of memory allocation in Java"), per allocation context:
// instances (and bytes) per type, and for arrays the number of arrays and their total number of elements.
// They are exact where every allocation above the size threshold is seen (emulation, the native agent), and
// scaled estimates where allocations are sampled (JVMTI's heap sampling): each sampled object then stands for
// 1/p of its kind, p being the chance that an object of its size is sampled — the Horvitz-Thompson estimator,
// unbiased whatever the mix of sizes.
//
// Where the interval moves during a run (adaptive tracking), each object carries the interval in force when it was
// sampled (allocation_shape::sampling_interval) and is weighed by its own 1/p: each term of the sum is still
// unbiased for its object, so the sum is too.
//
// JVMTI samples the allocation that crosses the next sampling point, the points being a Poisson process over
// allocated bytes with mean spacing `interval` (HotSpot draws the gaps from an exponential distribution and carries
// an overshoot into the next gap). An object of s bytes is sampled when at least one point falls in it:
// p(s) = 1 − exp(−s/interval). Small objects thus stand for ≈ interval/s objects each, large ones for ≈ 1.
#pragma once

#include "ojx/types.hpp"

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace ojx {

// What an allocation hook knows about an object beyond its address, size, context and type.
struct allocation_shape {
    // Bytes of the object before the contents the profiler is given (a JVM object's header). The sampler saw
    // size + header_bytes: the sampling probability depends on the whole object.
    std::uint64_t header_bytes = 0;
    // For an array: its number of elements (exact, never derived from a padded size). Nothing for other objects.
    std::optional<std::uint64_t> array_length;
    // Where the sampling interval moves during the run (adaptive tracking, allocation_rate_target.hpp): the mean
    // bytes between samples that were in force when this object was sampled, which its weight must use; 0: it
    // was tracked with certainty. Nothing: the profiler's fixed allocation_sampling_interval applies.
    std::optional<std::uint64_t> sampling_interval;
    // Every object of its type lays its contents out alike, so an offset in it names the same field in each: a JVM
    // instance (not an array, whose elements are alike, nor a native block, whose layout its allocator does not
    // know). Copy profiling keeps a node per offset of such objects, one node for the whole of any other.
    bool typed_layout = false;

    friend bool operator==(const allocation_shape&, const allocation_shape&) = default;
};

// The chance that heap sampling with mean spacing `interval` bytes samples an object of `object_bytes` bytes.
// Interval 0: every allocation is seen.
inline double sampling_probability(std::uint64_t object_bytes, std::uint64_t interval) noexcept {
    if (interval == 0) return 1;
    if (object_bytes == 0) return 0;
    return -std::expm1(-static_cast<double>(object_bytes) / static_cast<double>(interval));
}

// How many allocations one sampled object of `object_bytes` stands for: 1/p (1 when every allocation is seen).
inline double sampling_weight(std::uint64_t object_bytes, std::uint64_t interval) noexcept {
    const double p = sampling_probability(object_bytes, interval);
    return p > 0 ? 1 / p : 0;
}

// One type's allocations in one context. `instances`, `bytes` and `elements` are sums of the objects' weights
// (of weight × size, weight × length): counts when every allocation is seen, estimates when sampled. `seen`
// counts the objects actually observed.
struct type_allocations {
    type_id type = no_type;
    bool array = false;         // allocated as arrays: `instances` is the number of arrays
    std::uint64_t seen = 0;
    double instances = 0;
    double bytes = 0;           // of the contents the profiler tracks
    double elements = 0;        // arrays: total number of elements
    double instances_variance = 0; // of the `instances` estimate: Σ (1 − p)/p² over the seen objects (0 when exact)

    void add(std::uint64_t size, const allocation_shape& shape, double weight) noexcept {
        ++seen;
        instances += weight;
        bytes += weight * static_cast<double>(size);
        if (shape.array_length) elements += weight * static_cast<double>(*shape.array_length);
        instances_variance += weight * (weight - 1); // (1 − p)/p² with weight = 1/p
    }

    // Sums two entries' counts (of one type, or into a total).
    type_allocations& operator+=(const type_allocations& other) noexcept {
        *this = {type, array, seen + other.seen, instances + other.instances, bytes + other.bytes,
                 elements + other.elements, instances_variance + other.instances_variance};
        return *this;
    }
};

// A context's allocations by type: the first `max_types` types seen each have their entry; later ones are summed
// in `other` (type no_type), so memory stays bounded. Allocation sites rarely allocate more than one type.
class context_allocations {
public:
    static constexpr std::size_t max_types = 4;

    void add(type_id type, std::uint64_t size, const allocation_shape& shape, double weight) noexcept {
        const bool array = shape.array_length.has_value();
        for (std::size_t i = 0; i < used_; ++i) {
            if (types_[i].type == type && types_[i].array == array) {
                types_[i].add(size, shape, weight);
                return;
            }
        }
        if (used_ < max_types) {
            types_[used_] = type_allocations{.type = type, .array = array};
            types_[used_++].add(size, shape, weight);
            return;
        }
        other_.add(size, shape, weight);
    }

    const type_allocations* begin() const noexcept { return types_.data(); }
    const type_allocations* end() const noexcept { return types_.data() + used_; }
    // Types beyond the first max_types, summed (their `elements` are those of the arrays among them).
    const type_allocations& other() const noexcept { return other_; }
    // Every type's together (type no_type).
    type_allocations total() const noexcept {
        type_allocations sum = other_;
        sum.array = false;
        for (const type_allocations& t : *this) sum += t;
        return sum;
    }

private:
    std::array<type_allocations, max_types> types_{};
    std::size_t used_ = 0;
    type_allocations other_{};
};

} // namespace ojx
