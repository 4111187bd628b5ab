// What one whole-object digest moment decided, as a replay needs it: a digested object's fingerprint and the
// weight its subsampling gave it, or how many objects a budget skipped or could not be read. A replay has no heap
// contents to read, so the live run records these (trace tag 0x7F, docs/trace-format.md) and the replayed
// profiler does the same bookkeeping from them (profiler::apply_recorded_digest) as the live one did from memory.
#pragma once

#include "ojx/object_contents.hpp"
#include "ojx/types.hpp"

#include <cstdint>

namespace ojx {

struct whole_object_digest {
    enum class kind : std::uint8_t {
        digested = 0,   // the tracked object at `where` was digested: `fingerprint`, `weight`
        skipped = 1,    // `count` objects were not drawn by a budget
        unreadable = 2, // `count` objects could not be read
        // digested, and the object's entry was gone from the map when it was counted (an allocation over its
        // stale address evicted it between its collection and that collection's relocation): `context` names
        // its site, `fingerprint`, `weight`
        digested_gone = 3,
    };
    kind outcome = kind::digested;
    address where = 0;        // digested: the object's first byte
    context_id context = no_context; // digested_gone: the object's allocation context
    std::uint64_t count = 1;  // skipped, unreadable
    double weight = 1;        // digested: the inverse of the chance it was drawn, times the allocations it stands for
    object_fingerprint fingerprint; // digested

    // `count` objects counted without a digest (skipped or unreadable), every other field at its default.
    static whole_object_digest left_out(kind why, std::uint64_t count = 1, address at = 0) {
        whole_object_digest d;
        d.outcome = why;
        d.count = count;
        d.where = at;
        return d;
    }
    // A digested object (its fingerprint still to be taken).
    static whole_object_digest digested_at(address at, double weight) {
        whole_object_digest d;
        d.where = at;
        d.weight = weight;
        return d;
    }

    friend bool operator==(const whole_object_digest&, const whole_object_digest&) = default;
};

} // namespace ojx
