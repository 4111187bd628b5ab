// Names of the fields that the copy section's field nodes lie at (copy_profile.hpp, copy_field_name), looked up when
// the profile is written (never in a signal handler). JVMTI lists a class's fields but not where they lie; the
// offsets come from Unsafe.objectFieldOffset through JNI (java.base's jdk.internal.misc.Unsafe, else
// sun.misc.Unsafe), which counts from the object's start: a field node's offset counts from after the header, so
// the header's size (heap_layout::instance_header) is taken off.
#pragma once

#include "ojx/trace_format.hpp"
#include "ojx/types.hpp"

#include <jvmti.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ojx::jvm {

// The instance fields of each class named in `classes` (type id and class signature, "Lpkg/Wide;"), its
// superclasses' included, by their offset from `instance_header`: sorted by (type, offset). A class not loaded, or
// a field Unsafe does not place, gives none; so does a JVM with neither Unsafe. `jni`: the calling thread's, in
// the live phase. Leaves no pending exception.
std::vector<field_symbol> instance_fields(jvmtiEnv* jvmti, JNIEnv* jni,
                                          const std::vector<std::pair<type_id, std::string>>& classes,
                                          std::uint32_t instance_header);

} // namespace ojx::jvm
