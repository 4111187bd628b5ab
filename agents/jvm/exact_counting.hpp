// Exact allocation counts in the JVM (count=paths|edges|sites): every class loaded after VMInit, and those loaded
// before it (retransformed at VMInit), is rewritten by the bytecode backend's instrument_class so that its counters
// call ojx/Counts.hit (Counts.java); where an exception leaves an instrumented frame, the plan's correction is added
// to the frame's sites here; at a dump, counter values times what each adds, plus corrections, are each site's
// objects (docs/design.md, "Exact allocation counts").
//
// The program must see no difference: a class the reader cannot parse, a method the rewriter refuses, or a class
// that cannot get counter storage runs as it was, and the reason's kind is counted (left_alone). Nothing here runs
// in a signal handler: the hook and the Exception callback run on Java threads, under a mutex.
#pragma once

#include "ojx/bytecode/class_instrumenter.hpp"
#include "ojx/exact_counts.hpp"

#include <jvmti.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ojx::jvm {

// "sites", "paths", "edges" or "off" (nullopt).
std::optional<bytecode::plan_kind> parse_count_option(std::string_view value);

class exact_counting {
public:
    exact_counting(jvmtiEnv* jvmti, bytecode::plan_kind kind) : jvmti_(jvmti), kind_(kind) {}

    // What counting needs, to be added at Agent_OnLoad: the class hook for every class, retransformation (classes
    // loaded before VMInit), exception events (corrections) and method bytecodes (is the code ours?).
    static void add_capabilities(jvmtiCapabilities& wanted) noexcept;

    // At VMInit, on its thread: defines ojx/Counts in the boot loader, lets it use jdk.internal.misc.Unsafe, makes
    // every module read it, initialises it, then turns on the class hook and exception events and retransforms
    // the classes loaded so far. An error leaves counting off and the program as it was.
    std::optional<std::string> start(JNIEnv* jni);
    // Events off; counts stay readable.
    void stop() noexcept;

    // The ClassFileLoadHook: rewrites the class, or leaves it (new_data untouched).
    void on_class_file_load(JNIEnv* jni, jobject loader, const char* name, jint length, const unsigned char* data,
                            jint* new_length, unsigned char** new_data) noexcept;
    // The Exception event: corrections for every instrumented frame the exception leaves or lands in.
    void on_exception(JNIEnv* jni, jthread thread, jmethodID method, jlocation location, jmethodID catch_method,
                      jlocation catch_location) noexcept;

    // With heap sampling at interval 0 (the JVM reports every allocation): from now on, each allocation the JVM
    // reports is counted against the site it names, so that counted and allocated can be compared site by site.
    // Called after start, which ends once the classes loaded before it are rewritten: from then on every allocation
    // of rewritten code is both counted and reported.
    void compare_with_reported() noexcept { comparing_.store(started(), std::memory_order_release); }
    bool comparing() const noexcept { return comparing_.load(std::memory_order_acquire); }
    // An allocation the JVM reported (SampledObjectAlloc) at `location` of `method`, of class `signature`: counted
    // at the site there when that is a counted method's allocation instruction of this class (a `new` that makes
    // the JVM throw reports the exception object there; a multianewarray reports every dimension).
    // `length`: an array's.
    void on_reported_allocation(JNIEnv* jni, jmethodID method, jlocation location, const char* signature,
                                std::uint64_t length) noexcept;

    // Every site's objects so far (counter values read from the Java heap). On a Java thread.
    exact_counts collect(JNIEnv* jni);
    // run.agent counters: retransformation at start (classes, batches, the longest and total pause).
    std::vector<std::pair<std::string, std::uint64_t>> counters() const;

    bytecode::plan_kind kind() const noexcept { return kind_; }
    // Whether start succeeded (counts are then worth writing, also after stop).
    bool started() const noexcept { return started_.load(std::memory_order_acquire); }

private:
    // A method with a graph: instrumented, or counted only at throws (its code unchanged).
    struct counted_method {
        std::string class_name; // internal form
        std::string source_file;
        jweak loader = nullptr; // the defining loader's (null: the boot loader)
        bytecode::method_counting counting;
        std::size_t code_length = 0; // of the code as returned to the JVM
        std::unique_ptr<std::atomic<std::int64_t>[]> corrections; // per site
        // Per site, the JVM's allocations there and their arrays' lengths (compare_with_reported); under mutex_.
        std::vector<std::uint64_t> reported, reported_elements;
        std::atomic<bool> changed_after_ojx{false}; // its code is not what ojx returned: its sites are not reported
    };

    bool ensure_storage(JNIEnv* jni, std::uint32_t end_counter); // under mutex_
    counted_method* lookup(JNIEnv* jni, jmethodID method);        // under mutex_
    void correct(const counted_method& m, jlocation location, std::optional<jlocation> catch_location);
    void left_alone(const std::string& reason); // under mutex_
    void retransform_loaded_classes(JNIEnv* jni);

    jvmtiEnv* jvmti_;
    bytecode::plan_kind kind_;
    std::atomic<bool> live_{false};
    std::atomic<bool> started_{false};
    std::atomic<bool> comparing_{false};

    std::mutex mutex_; // guards everything below
    jobjectArray chunks_ = nullptr;      // global: Counts.CHUNKS
    std::vector<jlongArray> chunk_refs_; // global refs to the chunks handed to Counts, in order
    std::uint32_t next_counter_ = 0;
    std::deque<counted_method> methods_; // stable addresses
    std::unordered_map<std::string, std::vector<counted_method*>> by_name_; // "class.name(desc)", oldest first
    std::unordered_map<jmethodID, counted_method*> by_id_;                  // null: not counted
    std::map<std::string, std::uint64_t> reasons_;
    std::uint64_t methods_instrumented_ = 0;

    std::atomic<std::uint64_t> corrections_{0};
    // Retransformation at start.
    std::uint64_t retransformed_ = 0, retransform_batches_ = 0, retransform_ns_max_ = 0, retransform_ns_total_ = 0;
};

} // namespace ojx::jvm
