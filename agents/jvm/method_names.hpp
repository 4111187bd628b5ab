// Names of the frames in a profile, looked up through JVMTI when the profile is written (never in a signal
// handler): "pkg.Cls.method(File.java:42)" for a method and bytecode index. Each method's class, name, source
// file and line table are fetched once. A method of an unloaded class cannot be named any more and is shown
// as such.
#pragma once

#include <jvmti.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ojx::jvm {

class method_names {
public:
    // `jni`: the calling thread's; names are looked up on that thread only.
    method_names(jvmtiEnv* jvmti, JNIEnv* jni) : jvmti_(jvmti), jni_(jni) {}

    // The name of an encoded frame (jvm_frame.hpp), including walk failures.
    std::string frame_name(std::uint64_t frame);

private:
    struct method_info {
        bool valid = false;
        bool native_method = false;
        std::string class_name, method_name, source_file;
        std::vector<std::pair<jlocation, jint>> lines; // (start bci, line), by start
    };
    const method_info& info(jmethodID method);

    jvmtiEnv* jvmti_;
    JNIEnv* jni_;
    std::unordered_map<jmethodID, method_info> methods_;
};

} // namespace ojx::jvm
