#include "method_names.hpp"

#include "java_names.hpp"
#include "jvm_frame.hpp"

#include <algorithm>

namespace ojx::jvm {

namespace {

// JVMTI hands out memory the caller must give back.
template <class T>
struct jvmti_memory {
    explicit jvmti_memory(jvmtiEnv* env) : jvmti(env) {}
    ~jvmti_memory() {
        if (pointer != nullptr) jvmti->Deallocate(reinterpret_cast<unsigned char*>(pointer));
    }
    jvmti_memory(const jvmti_memory&) = delete;
    jvmti_memory& operator=(const jvmti_memory&) = delete;
    jvmtiEnv* jvmti;
    T* pointer = nullptr;
};

} // namespace

const method_names::method_info& method_names::info(jmethodID method) {
    auto [it, inserted] = methods_.try_emplace(method);
    method_info& m = it->second;
    if (!inserted) return m;
    jclass declaring = nullptr;
    jvmti_memory<char> name(jvmti_), signature(jvmti_), class_signature(jvmti_), source(jvmti_);
    if (jvmti_->GetMethodName(method, &name.pointer, &signature.pointer, nullptr) != JVMTI_ERROR_NONE ||
        jvmti_->GetMethodDeclaringClass(method, &declaring) != JVMTI_ERROR_NONE ||
        jvmti_->GetClassSignature(declaring, &class_signature.pointer, nullptr) != JVMTI_ERROR_NONE) {
        if (declaring != nullptr) jni_->DeleteLocalRef(declaring);
        return m; // an unloaded class: its method ids are cleared
    }
    m.valid = true;
    m.method_name = name.pointer;
    m.class_name = java_type_name(class_signature.pointer);
    if (jvmti_->GetSourceFileName(declaring, &source.pointer) == JVMTI_ERROR_NONE) m.source_file = source.pointer;
    jboolean is_native = JNI_FALSE;
    if (jvmti_->IsMethodNative(method, &is_native) == JVMTI_ERROR_NONE) m.native_method = is_native == JNI_TRUE;
    jint count = 0;
    jvmti_memory<jvmtiLineNumberEntry> table(jvmti_);
    if (!m.native_method && jvmti_->GetLineNumberTable(method, &count, &table.pointer) == JVMTI_ERROR_NONE) {
        for (jint i = 0; i < count; ++i) m.lines.emplace_back(table.pointer[i].start_location, table.pointer[i].line_number);
        std::sort(m.lines.begin(), m.lines.end());
    }
    jni_->DeleteLocalRef(declaring);
    return m;
}

std::string method_names::frame_name(std::uint64_t frame) {
    const java_frame f = decode_frame(frame);
    if (f.method == 0) return std::string(failure_name(f.bci));
    const method_info& m = info(reinterpret_cast<jmethodID>(f.method));
    if (!m.valid) return "[method of an unloaded class]";
    std::int32_t line = -1;
    if (f.bci >= 0) {
        auto after = std::upper_bound(m.lines.begin(), m.lines.end(), std::pair<jlocation, jint>(f.bci, INT32_MAX));
        if (after != m.lines.begin()) line = std::prev(after)->second;
    }
    return java_frame_name(m.class_name, m.method_name, m.source_file, line, f.bci,
                           m.native_method || f.bci == native_method_bci);
}

} // namespace ojx::jvm
