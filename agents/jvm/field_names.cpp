#include "field_names.hpp"

#include <algorithm>
#include <optional>
#include <string>

namespace ojx::jvm {

namespace {

constexpr jint static_modifier = 0x0008; // java.lang.reflect.Modifier.STATIC

// Unsafe.objectFieldOffset through JNI (which checks no access): where a field lies from the object's start.
// java.base's jdk.internal.misc.Unsafe first: a program run as a module (javac: -m jdk.compiler) may not have
// jdk.unsupported, whose sun.misc.Unsafe is the fallback.
class field_offsets {
public:
    explicit field_offsets(JNIEnv* jni) : jni_(jni) {
        for (const char* name : {"jdk/internal/misc/Unsafe", "sun/misc/Unsafe"}) {
            const jclass unsafe_class = jni_->FindClass(name);
            if (unsafe_class == nullptr) {
                jni_->ExceptionClear();
                continue;
            }
            const std::string signature = std::string("L") + name + ";";
            const jfieldID instance = jni_->GetStaticFieldID(unsafe_class, "theUnsafe", signature.c_str());
            offset_of_ = jni_->GetMethodID(unsafe_class, "objectFieldOffset", "(Ljava/lang/reflect/Field;)J");
            if (instance != nullptr && offset_of_ != nullptr) unsafe_ = jni_->GetStaticObjectField(unsafe_class, instance);
            jni_->ExceptionClear();
            jni_->DeleteLocalRef(unsafe_class);
            if (unsafe_ != nullptr) return;
        }
    }
    ~field_offsets() {
        if (unsafe_ != nullptr) jni_->DeleteLocalRef(unsafe_);
    }
    field_offsets(const field_offsets&) = delete;
    field_offsets& operator=(const field_offsets&) = delete;

    explicit operator bool() const noexcept { return unsafe_ != nullptr; }

    std::optional<std::uint64_t> of(jclass klass, jfieldID field) {
        const jobject reflected = jni_->ToReflectedField(klass, field, JNI_FALSE);
        if (reflected == nullptr) {
            jni_->ExceptionClear();
            return std::nullopt;
        }
        const jlong offset = jni_->CallLongMethod(unsafe_, offset_of_, reflected);
        jni_->DeleteLocalRef(reflected);
        // sun.misc.Unsafe throws UnsupportedOperationException for a record's or a hidden class's fields.
        if (jni_->ExceptionCheck()) {
            jni_->ExceptionClear();
            return std::nullopt;
        }
        return offset < 0 ? std::nullopt : std::optional<std::uint64_t>(static_cast<std::uint64_t>(offset));
    }

private:
    JNIEnv* jni_;
    jobject unsafe_ = nullptr;
    jmethodID offset_of_ = nullptr;
};

// The instance fields of `klass` and its superclasses into `out`, as fields of `type`.
void add_fields(jvmtiEnv* jvmti, JNIEnv* jni, field_offsets& offsets, jclass klass, type_id type,
                std::uint32_t instance_header, std::vector<field_symbol>& out) {
    jclass at = static_cast<jclass>(jni->NewLocalRef(klass));
    while (at != nullptr) {
        jint count = 0;
        jfieldID* fields = nullptr;
        if (jvmti->GetClassFields(at, &count, &fields) == JVMTI_ERROR_NONE) {
            for (jint i = 0; i < count; ++i) {
                jint modifiers = 0;
                if (jvmti->GetFieldModifiers(at, fields[i], &modifiers) != JVMTI_ERROR_NONE ||
                    (modifiers & static_modifier) != 0)
                    continue;
                const std::optional<std::uint64_t> offset = offsets.of(at, fields[i]);
                char* name = nullptr;
                if (!offset || *offset < instance_header ||
                    jvmti->GetFieldName(at, fields[i], &name, nullptr, nullptr) != JVMTI_ERROR_NONE)
                    continue;
                out.push_back({type, *offset - instance_header, name});
                jvmti->Deallocate(reinterpret_cast<unsigned char*>(name));
            }
            jvmti->Deallocate(reinterpret_cast<unsigned char*>(fields));
        }
        const jclass super = jni->GetSuperclass(at);
        jni->DeleteLocalRef(at);
        at = super;
    }
}

} // namespace

std::vector<field_symbol> instance_fields(jvmtiEnv* jvmti, JNIEnv* jni,
                                          const std::vector<std::pair<type_id, std::string>>& classes,
                                          std::uint32_t instance_header) {
    std::vector<field_symbol> out;
    if (classes.empty() || jni == nullptr) return out;
    field_offsets offsets(jni);
    if (!offsets) return out;
    jint count = 0;
    jclass* loaded = nullptr;
    if (jvmti->GetLoadedClasses(&count, &loaded) != JVMTI_ERROR_NONE) return out;
    std::vector<bool> found(classes.size());
    for (jint i = 0; i < count; ++i) {
        char* signature = nullptr;
        if (jvmti->GetClassSignature(loaded[i], &signature, nullptr) == JVMTI_ERROR_NONE) {
            // The first class of a signature (several class loaders may each define one).
            for (std::size_t c = 0; c < classes.size(); ++c)
                if (!found[c] && classes[c].second == signature) {
                    found[c] = true;
                    add_fields(jvmti, jni, offsets, loaded[i], classes[c].first, instance_header, out);
                }
            jvmti->Deallocate(reinterpret_cast<unsigned char*>(signature));
        }
        jni->DeleteLocalRef(loaded[i]);
    }
    jvmti->Deallocate(reinterpret_cast<unsigned char*>(loaded));
    std::sort(out.begin(), out.end(), [](const field_symbol& a, const field_symbol& b) {
        return std::pair{a.type, a.offset} < std::pair{b.type, b.offset};
    });
    return out;
}

} // namespace ojx::jvm
