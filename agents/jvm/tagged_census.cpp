#include "tagged_census.hpp"

#include <map>

namespace ojx::jvm {
namespace {

// A tracked object's tag. Its class's tag has class_tag_bit set, the type id in bits 8-39 and the data offset in
// bits 0-7; classes and objects never share a tag value.
constexpr jlong object_tag = 1;
constexpr jlong class_tag_bit = jlong{1} << 62;

struct walk_state {
    std::map<type_id, census_count> by_type;
};

// Called by IterateThroughHeap on the VM thread for every tagged object (objects and class mirrors); no JNI or
// JVMTI call is allowed here.
jint JNICALL count_object(jlong class_tag, jlong size, jlong* tag, jint, void* user_data) {
    if (*tag != object_tag) return 0; // a class mirror
    auto& state = *static_cast<walk_state*>(user_data);
    const bool known_class = (class_tag & class_tag_bit) != 0;
    const auto type = known_class ? static_cast<type_id>((class_tag >> 8) & 0xFFFFFFFF) : no_type;
    const auto data_offset = known_class ? static_cast<std::uint64_t>(class_tag & 0xFF) : 0;
    census_count& count = state.by_type[type];
    count.type = type;
    ++count.objects;
    const auto bytes = static_cast<std::uint64_t>(size);
    count.bytes += bytes > data_offset ? bytes - data_offset : 0;
    return 0;
}

} // namespace

bool tagged_census::tag(jobject object, jclass klass, type_id type, std::uint32_t data_offset) noexcept {
    // An offset that does not fit the class tag leaves the class untagged: its objects are counted as "no type",
    // and the check reports them.
    if (data_offset <= 0xFF)
        jvmti_->SetTag(klass, class_tag_bit | static_cast<jlong>(type) << 8 | static_cast<jlong>(data_offset));
    return jvmti_->SetTag(object, object_tag) == JVMTI_ERROR_NONE;
}

std::optional<std::string> tagged_census::count(std::vector<census_count>& by_type) {
    walk_state state;
    jvmtiHeapCallbacks callbacks{};
    callbacks.heap_iteration_callback = count_object;
    const jvmtiError error = jvmti_->IterateThroughHeap(JVMTI_HEAP_FILTER_UNTAGGED, nullptr, &callbacks, &state);
    if (error != JVMTI_ERROR_NONE) return "IterateThroughHeap failed (JVMTI error " + std::to_string(error) + ")";
    by_type.clear();
    for (const auto& [type, count] : state.by_type) by_type.push_back(count);
    return std::nullopt;
}

} // namespace ojx::jvm
