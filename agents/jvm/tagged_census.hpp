// census=: a count of the tracked objects that does not come from the trace, to check the trace against.
//
// Every object the agent tracks gets a JVMTI tag, and its class a tag naming the object's type (the agent's type
// id) and where its contents start. After a collection's survivors are relocated, IterateThroughHeap over the
// tagged objects counts the live tracked objects by type, with their contents' bytes (the JVM's object size less
// the header, as the agent tracks them). The count goes into the trace at that point (heap_census_event), where
// `ojx heap --check-census` compares it with the heap the trace rebuilds. Tags follow objects through
// collections inside the JVM, independently of the weak references the agent relocates objects by
// (tracked_objects.hpp), so the two agree only if the relocation is right.
//
// A test of the recording, not a profiling feature: each walk stops the JVM and visits every tagged object, and
// tagging costs a JVMTI call per sampled allocation. Off unless asked for (it needs can_tag_objects).
#pragma once

#include "ojx/trace_format.hpp"

#include <jvmti.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ojx::jvm {

class tagged_census {
public:
    // `every`: a census after every this many relocated collections.
    tagged_census(jvmtiEnv* jvmti, std::uint64_t every) noexcept : jvmti_(jvmti), every_(every) {}

    // On the allocating thread, once `object` (of class `klass`) is tracked with `type`, its contents starting
    // `data_offset` bytes past its address. Whether the tags were set.
    bool tag(jobject object, jclass klass, type_id type, std::uint32_t data_offset) noexcept;

    // Whether the relocation numbered `relocation` (from 1) gets a census.
    bool due(std::uint64_t relocation) const noexcept { return relocation % every_ == 0; }

    // Walks the heap (a safepoint): the tracked objects alive now, by type. An error message when the walk failed.
    std::optional<std::string> count(std::vector<census_count>& by_type);

private:
    jvmtiEnv* jvmti_;
    std::uint64_t every_;
};

} // namespace ojx::jvm
