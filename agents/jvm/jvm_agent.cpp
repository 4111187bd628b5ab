// libojx.so: finds replica objects in an unmodified Java program.
//
//   java -agentpath:/path/to/libojx.so=start,file=replicas.json -jar app.jar
//   jcmd <pid> JVMTI.agent_load /path/to/libojx.so "start,file=replicas.json"     (a running JVM)
//   jcmd <pid> JVMTI.agent_load /path/to/libojx.so dump                            (write the profile now)
//   jcmd <pid> JVMTI.agent_load /path/to/libojx.so stop                            (write it and stop)
//
// The shim between a JVM and ojx's production configuration (ojx::hardware::profiling_session): objects come
// from JVMTI's sampled allocations (address from the JNI handle, contents past the calibrated header), their
// allocation contexts from GetStackTrace, access contexts from AsyncGetCallTrace in the signal handler, GC moves
// from tracked_objects.hpp, names at dump time from method_names.hpp.
//
// A profiler must never take the program down: bad options stop start-up with a message (at launch) or fail the
// attach (dynamic); every fault at run time degrades and is said once.
#include "adaptive_heap_sampling.hpp"
#include "exact_counting.hpp"
#include "field_names.hpp"
#include "heap_layout.hpp"
#include "hotspot_flags.hpp"
#include "java_names.hpp"
#include "java_thread_envs.hpp"
#include "jvm_frame.hpp"
#include "method_names.hpp"
#include "tracked_objects.hpp"

#include "ojx/agents/agent_options.hpp"
#include "ojx/agents/agent_report.hpp"
#include "ojx/agents/agent_singleton.hpp"
#include "ojx/hardware/agent_output_file.hpp"
#include "ojx/hardware/kernel_warm_up.hpp"
#include "ojx/hardware/fault_safe_read.hpp"
#include "ojx/hardware/handler_scope.hpp"
#include "ojx/hardware/profiling_session.hpp"
#include "ojx/hardware/signals.hpp"
#include "ojx/report.hpp"

#include <dirent.h>
#include <dlfcn.h>
#include <fmt/format.h>
#include <jvmti.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

using namespace ojx;
using namespace ojx::agents;
using namespace ojx::hardware;
using namespace ojx::jvm;

// AsyncGetCallTrace's interface (exported by libjvm, not declared in any JDK header).
struct call_frame {
    jint bci; // "lineno" in HotSpot's sources: the bytecode index for Java frames, -3 for native methods
    jmethodID method;
};
struct call_trace {
    JNIEnv* env;
    jint frame_count; // negative: why the walk failed (jvm_frame.hpp's walk_failure)
    call_frame* frames;
};
using async_get_call_trace_function = void (*)(call_trace*, jint, void*);

constexpr std::size_t max_frames = profiling_session::max_frames;

// Whole-object evidence (docs/design.md): at each collection's start, before anything moves, the tracked objects
// are fingerprinted within this many bytes (a fair subsample beyond it) and held until the collection says which
// it freed, a pause the program waits for (whole_object_sweep_us_max in the profile's run.agent); before the
// final profile, the objects alive then within the exit budget. Reading runs at about 2.7 GB/s here: the exit
// budget was 256 MiB, and on a short program whose young generation held hundreds of MiB of dead tracked buffers
// at exit (Parallel and Serial keep them until a collection) that sweep took 65–75 ms, 3 % of a 2.5 s run;
// at 64 MiB it is bounded by about 25 ms.
constexpr std::uint64_t collection_digest_bytes = 4ULL << 20;
constexpr std::uint64_t exit_digest_bytes = 64ULL << 20;
// The default target of tracked allocations a second (track_rate=). What a tracked allocation costs grows with
// its stack: GetStackTrace alone takes ≈ 8–9 µs at xalan's 27 frames on average (≈ 1.2 µs for the whole
// callback in a shallow loop), besides its share of the callbacks for smaller objects (bounded by
// adaptive_heap_sampling::callbacks_per_tracked) and of the whole-object sweeps. Halving the target from 1000
// cut the agent's CPU on the JVM overhead benchmark from +4.1 % to +2.6 % and kept the corpus's recall at
// 45/45 over seven Java programs; at 250, Saxon's sites of eleven arrays were missed in 5 of 27 cases
// (bench/RESULTS.md, "Half the tracked allocations", 2026-11-26). A program allocating fewer objects at or
// above the threshold a second has them sampled at adaptive_heap_sampling::floor_interval.
constexpr allocation_tracking_words heap_sampling_option_words{
    .default_track_rate = "500",
    .track_rate_help = "adaptive heap sampling: about this many allocations (at or above threshold) a second are "
                       "tracked, the heap sampling interval moving every 200 ms to meet it (at least 4k; callbacks for "
                       "smaller objects bounded too); counts are weighted so that they stay unbiased",
    .default_interval = "512k",
    .interval_help = "when given, a fixed heap sampling interval instead of track_rate: on average one allocation "
                     "sampled per this many bytes allocated (0: every allocation, exact counts)"};
// What JVMTI samples at until an agent sets an interval (its specification's default).
constexpr std::uint64_t jvmti_default_interval = 512 * 1024;


std::vector<option_spec> jvm_agent_options() {
    std::vector<option_spec> specs = common_agent_options();
    specs.insert(specs.begin(),
                 {
                     {"start", option_kind::flag, "", "start profiling (the default when the JVM starts with the agent)"},
                     {"stop", option_kind::flag, "", "write the profile and stop profiling (dynamic attach)"},
                     {"dump", option_kind::flag, "", "write the profile now and keep profiling (dynamic attach)"},
                 });
    for (option_spec& spec : allocation_tracking_options(heap_sampling_option_words)) specs.push_back(std::move(spec));
    specs.push_back({"duration", option_kind::duration, "0",
                     "write the profile and stop after this long (e.g. 30s; 0: when the JVM exits)"});
    specs.push_back({"count", option_kind::choice, "off",
                     "exact allocation counts by bytecode site (the profile's exact_counts): classes are rewritten as "
                     "they load so that counters placed by a plan count every allocation; paths (DuckTracks' hot "
                     "paths) and edges (spanning-tree chords) increment less often than sites (one counter per "
                     "site). With interval=0 each site's count is compared with the allocations the JVM reported there, "
                     "showing those the JIT's escape analysis removed. At JVM start only. Off by default for now: the "
                     "default is to be chosen from measurements",
                     {"off", "sites", "paths", "edges"}});
    specs.push_back({"census", option_kind::count, "0",
                     "with record=: after every Nth collection, count the tracked objects by a JVMTI heap walk and "
                     "write the count into the trace, for `ojx heap --check-census` (a test of the trace: each walk "
                     "stops the JVM; 0: never)"});
    return specs;
}

struct jvm_settings {
    agent_settings agent; // agent.tracking: the heap sampling interval, fixed or moving to meet track_rate
    bool start = false, stop = false, dump = false;
    bool file_given = false; // with dump or stop: that profile goes to this file (the agent keeps its own)
    std::chrono::nanoseconds duration{0};
    std::uint64_t census_every = 0; // census=: a heap walk after every this many relocated collections; 0: none
    std::optional<bytecode::plan_kind> count; // count=: exact allocation counts with this plan; none: off
};

// A message for the user, or nothing. Parses and checks an option string.
std::optional<std::string> parse_jvm_options(const char* text, jvm_settings& settings) {
    const std::vector<option_spec> specs = jvm_agent_options();
    parsed_agent_options parsed;
    if (auto error = parse_agent_options(text != nullptr ? text : "", specs, parsed)) return error;
    settings.agent = parsed.settings;
    settings.start = parsed.values.flag("start");
    settings.stop = parsed.values.flag("stop");
    settings.dump = parsed.values.flag("dump");
    settings.file_given = parsed.values.given("file");
    if (settings.start + settings.stop + settings.dump > 1) return std::string("give one of start, stop and dump");
    if (settings.agent.tracking.interval > 0x7fffffff) return std::string("interval: at most 2g");
    settings.duration = parsed.values.duration("duration");
    settings.census_every = parsed.values.count("census");
    if (settings.census_every != 0 && settings.agent.record_pattern.empty())
        return std::string("census= writes its counts into the trace: give record=FILE as well");
    settings.count = parse_count_option(parsed.values.choice("count"));
    if (parsed.values.given("count") && (settings.stop || settings.dump))
        return std::string("count= is chosen when the JVM starts; dump and stop write the counts it chose");
    return std::nullopt;
}

// What a dump needs from the context tree, copied under the profiler's lock so that names can be looked up
// through JVMTI afterwards without holding it (a JVMTI call may wait for a safepoint, and the GC's callback
// takes the profiler's lock).
struct tree_snapshot {
    static constexpr context_id root = context_tree::root;
    std::vector<context_id> parents;
    std::vector<std::uint64_t> frames;
    std::size_t size() const noexcept { return parents.size(); }
    context_id parent(context_id id) const noexcept { return parents[id]; }
    std::uint64_t frame_of(context_id id) const noexcept { return frames[id]; }
};

// Adaptive sampling: the interval in force when this thread's next sample point was drawn; not_drawn_yet before
// its first SampledObjectAlloc or ThreadStart. HotSpot draws a thread's next sample point as it takes a sample,
// before that sample's callback runs, at the interval in force then, and a new interval applies from each
// thread's next point. So the sample a callback reports was drawn at the interval read in this thread's previous
// callback, and the one read now is its next sample's. The agent sets JVMTI's interval and its own one after the
// other: a point drawn between the two is weighed at the other (nanoseconds against a 200 ms window).
constexpr std::uint64_t not_drawn_yet = ~std::uint64_t{0};
thread_local std::uint64_t next_sample_interval = not_drawn_yet;

class agent {
public:
    // ---- Life cycle. All on live-phase Java threads (VMInit, the attach listener, the agent's thread). ----

    // `live`: loaded into a running JVM (dynamic attach), whose threads may read the environment concurrently, so
    // the environment is left alone (agent_options.hpp: the names a profiled process tree uses).
    std::optional<std::string> prepare(JavaVM* vm, jvmtiEnv* jvmti, const jvm_settings& settings, bool live);
    std::optional<std::string> start(JNIEnv* jni, bool attached_late);
    // To `file`, or the agent's file when empty. Whether the profile was written. `final`: profiling stops after
    // it, so the trace (record=) ends with it; a dump only flushes the trace.
    bool write_profile(JNIEnv* jni, const char* why, const std::string& file = {}, bool final = false);
    void stop(JNIEnv* jni);
    bool profiling() const noexcept { return profiling_.load(std::memory_order_acquire); }
    const jvm_settings& settings() const noexcept { return settings_; }
    // Whether accesses are sampled (sampler=, rate=): only then are jmethodIDs made ahead for AsyncGetCallTrace.
    bool samples_accesses() const noexcept {
        return settings_.agent.session.backend.sampler != hardware::sampler_kind::none;
    }
    // count=: what rewrites classes and corrects at throws; null when off.
    exact_counting* counting() noexcept { return counting_ ? &*counting_ : nullptr; }

    // ---- JVMTI callbacks ----

    void on_thread_start(JNIEnv* jni) {
        if (!profiling()) return; // (acquire: sampling_ was made before)
        if (sampling_) next_sample_interval = draws_first_point_at_creation_ ? sampling_->interval() : 0;
        if (current_tid() == agent_tid_.load()) return;
        attach_this_thread(jni, "a thread runs unprofiled: ");
    }
    void on_thread_end() {
        if (!profiling()) return;
        session_.detach_current_thread();
        envs_.remove(current_tid());
    }
    void on_class_prepare(jclass klass) { create_method_ids(klass); }
    void on_sampled_allocation(JNIEnv* jni, jthread thread, jobject object, jclass klass, jlong size);
    void on_gc_start() noexcept {
        if (profiling()) objects_->on_collection_start(digest_budget(settings_.agent, collection_digest_bytes));
    }
    void on_gc_finish() noexcept {
        if (!profiling()) return;
        objects_->on_collection_finish();
        sem_post(&wake_); // async-signal-safe, allowed where JVMTI is not
    }

    // Signal-safe: the access context of the interrupted Java code, by AsyncGetCallTrace.
    static bool walk_from_caller(agent& a, const ucontext_t& interrupted, call_trace& trace, jint depth) noexcept;
    static std::size_t walk_java_stack(void* self, const ucontext_t& context, pid_t thread, std::uint64_t* leaf_first,
                                       std::size_t max) noexcept;

private:
    void say_once(std::atomic<bool>& said, const std::string& message) {
        if (!said.exchange(true)) std::fprintf(stderr, "ojx: %s\n", message.c_str());
    }
    void create_method_ids(jclass klass) {
        jint count = 0;
        jmethodID* methods = nullptr;
        if (jvmti_->GetClassMethods(klass, &count, &methods) == JVMTI_ERROR_NONE)
            jvmti_->Deallocate(reinterpret_cast<unsigned char*>(methods));
    }
    // The calling Java thread, whose env is `jni`, is noted and attached to the session (sampled from now on);
    // `unprofiled` begins the message said once when it cannot be.
    void attach_this_thread(JNIEnv* jni, const char* unprofiled) {
        if (!envs_.add(current_tid(), jni)) threads_without_env_.fetch_add(1, std::memory_order_relaxed);
        if (auto error = session_.attach_current_thread()) say_once(thread_error_said_, unprofiled + *error);
    }
    void create_method_ids_of_loaded_classes();
    type_id intern_type(const char* signature);
    // The types of the sites that the copy graph's field nodes lie in (not arrays: their nodes are `elements`), with
    // their class signatures, for naming the fields (field_names.hpp).
    std::vector<std::pair<type_id, std::string>> classes_with_field_nodes(const sampled_copy_graph& graph,
                                                                          const replica_report& report);
    std::string collector(JNIEnv* jni);
    void attach_running_java_threads(JNIEnv* jni);
    void start_agent_thread();
    static void* agent_thread_main(void* self);

    JavaVM* vm_ = nullptr;
    jvmtiEnv* jvmti_ = nullptr;
    jvm_settings settings_;
    agent_files files_; // absolute, fixed when the agent is loaded
    heap_layout layout_;
    profiling_session session_;
    java_thread_envs envs_; // for the handler's AsyncGetCallTrace
    std::optional<tracked_objects> objects_; // made once the heap layout is known
    std::optional<adaptive_heap_sampling> sampling_; // track_rate=: made at start
    std::optional<exact_counting> counting_;         // count=: made when the agent is loaded
    // Whether this JVM draws a thread's first sample point when the thread is made (JDK 25 and later) rather
    // than sampling its first checked allocation for certain (JDK 17-24).
    bool draws_first_point_at_creation_ = false;
    async_get_call_trace_function async_get_call_trace_ = nullptr;
    std::atomic<bool> profiling_{false};
    std::atomic<bool> stopping_{false};
    std::atomic<pid_t> agent_tid_{0};
    pthread_t agent_thread_{};
    bool agent_thread_started_ = false;
    sem_t wake_{};
    std::chrono::steady_clock::time_point started_at_{};
    std::string runtime_;

    std::mutex types_mutex_;
    std::unordered_map<std::string, type_id> type_ids_;
    std::vector<std::string> type_names_;

    std::mutex dump_mutex_;
    std::atomic<bool> thread_error_said_{false};
    std::atomic<bool> interval_error_said_{false};
    std::atomic<std::uint64_t> stack_failures_{0};
    std::atomic<std::uint64_t> walks_from_caller_{0}; // walks that succeeded only from the caller's frame
    std::atomic<std::uint64_t> walks_without_env_{0}; // samples of a sampled thread whose env the agent does not hold
    std::atomic<std::uint64_t> threads_without_env_{0}; // sampled threads whose env could not be noted
};

constinit agent_singleton<agent> the_agent;

// ---------------------------------------------------------------------------------------------------------------

std::optional<std::string> agent::prepare(JavaVM* vm, jvmtiEnv* jvmti, const jvm_settings& settings, bool live) {
    vm_ = vm;
    jvmti_ = jvmti;
    settings_ = settings;
    if (auto error = prepare_agent_files(settings.agent, !live, files_)) return error;
    settings_.agent.quiet = !speaks(settings_.agent, files_);
    sem_init(&wake_, 0, 0);

    jvmtiCapabilities wanted{};
    wanted.can_generate_sampled_object_alloc_events = 1;
    wanted.can_generate_garbage_collection_events = 1;
    wanted.can_get_line_numbers = 1;
    wanted.can_get_source_file_name = 1;
    wanted.can_tag_objects = settings.census_every != 0 ? 1 : 0;
    if (settings.count) {
        // Classes already loaded would run uncounted, and running methods would be counted from their middle.
        if (live) return std::string("count= rewrites classes as they load: start the JVM with the agent (-agentpath)");
        exact_counting::add_capabilities(wanted);
        counting_.emplace(jvmti, *settings.count);
    }
    if (const jvmtiError error = jvmti_->AddCapabilities(&wanted); error != JVMTI_ERROR_NONE) {
        if (error == JVMTI_ERROR_NOT_AVAILABLE)
            return std::string("the JVM refused the capabilities ojx needs (is another agent sampling allocations? "
                               "only one JVMTI environment may)");
        return "AddCapabilities failed (JVMTI error " + std::to_string(error) + ")";
    }
    // count= at interval 0 compares every allocation with the counts from VMInit on. A thread samples at a new
    // interval only from its next sample point, drawn at the interval in force when it took its last sample, and
    // until then allocates in its TLAB unseen: so the interval is 0 before any thread draws a point.
    if (settings.count && settings.agent.tracking.track_rate == 0 && settings.agent.tracking.interval == 0 &&
        jvmti_->SetHeapSamplingInterval(0) != JVMTI_ERROR_NONE)
        return std::string("SetHeapSamplingInterval(0) failed at load");

    jvmtiEventCallbacks callbacks{};
    callbacks.VMInit = [](jvmtiEnv*, JNIEnv* jni, jthread) {
        if (auto error = the_agent->start(jni, false)) std::fprintf(stderr, "ojx: not profiling: %s\n", error->c_str());
        end_kernel_warm_up();
    };
    callbacks.VMDeath = [](jvmtiEnv*, JNIEnv* jni) {
        if (the_agent->profiling()) {
            the_agent->write_profile(jni, "at exit", {}, true);
            the_agent->stop(jni);
        }
    };
    callbacks.ThreadStart = [](jvmtiEnv*, JNIEnv* jni, jthread) { the_agent->on_thread_start(jni); };
    callbacks.ThreadEnd = [](jvmtiEnv*, JNIEnv*, jthread) { the_agent->on_thread_end(); };
    // AsyncGetCallTrace walks only while ClassLoad events are on (else every walk fails "no class load").
    callbacks.ClassLoad = [](jvmtiEnv*, JNIEnv*, jthread, jclass) {};
    callbacks.ClassPrepare = [](jvmtiEnv*, JNIEnv*, jthread, jclass klass) { the_agent->on_class_prepare(klass); };
    callbacks.CompiledMethodLoad = [](jvmtiEnv*, jmethodID, jint, const void*, jint, const jvmtiAddrLocationMap*,
                                      const void*) {};
    callbacks.SampledObjectAlloc = [](jvmtiEnv*, JNIEnv* jni, jthread thread, jobject object, jclass klass, jlong size) {
        the_agent->on_sampled_allocation(jni, thread, object, klass, size);
    };
    callbacks.ClassFileLoadHook = [](jvmtiEnv*, JNIEnv* jni, jclass, jobject loader, const char* name, jobject,
                                     jint length, const unsigned char* data, jint* new_length,
                                     unsigned char** new_data) {
        if (the_agent->counting()) the_agent->counting()->on_class_file_load(jni, loader, name, length, data, new_length, new_data);
    };
    callbacks.Exception = [](jvmtiEnv*, JNIEnv* jni, jthread thread, jmethodID method, jlocation location, jobject,
                             jmethodID catch_method, jlocation catch_location) {
        if (the_agent->counting())
            the_agent->counting()->on_exception(jni, thread, method, location, catch_method, catch_location);
    };
    callbacks.GarbageCollectionStart = [](jvmtiEnv*) { the_agent->on_gc_start(); };
    callbacks.GarbageCollectionFinish = [](jvmtiEnv*) { the_agent->on_gc_finish(); };
    if (jvmti_->SetEventCallbacks(&callbacks, sizeof callbacks) != JVMTI_ERROR_NONE)
        return std::string("SetEventCallbacks failed");
    for (const jvmtiEvent event : {JVMTI_EVENT_VM_INIT, JVMTI_EVENT_VM_DEATH, JVMTI_EVENT_THREAD_START,
                                   JVMTI_EVENT_THREAD_END})
        if (jvmti_->SetEventNotificationMode(JVMTI_ENABLE, event, nullptr) != JVMTI_ERROR_NONE)
            return "cannot enable JVMTI event " + std::to_string(event);
    if (samples_accesses()) {
        for (const jvmtiEvent event : {JVMTI_EVENT_CLASS_LOAD, JVMTI_EVENT_CLASS_PREPARE})
            if (jvmti_->SetEventNotificationMode(JVMTI_ENABLE, event, nullptr) != JVMTI_ERROR_NONE)
                return "cannot enable JVMTI event " + std::to_string(event);
        // HotSpot's JIT records where inlined methods' code lies between safepoints too wherever an agent takes
        // CompiledMethodLoad (DebugInformationRecorder::recording_non_safepoints, as -XX:+DebugNonSafepoints), so
        // that AsyncGetCallTrace names the method at an access's pc rather than the nearest safepoint's: what
        // "used at" and the copy section's "copied by" name. Only a refinement: a JVM that refuses it is profiled
        // with the coarser names.
        jvmtiCapabilities compiled{};
        compiled.can_generate_compiled_method_load_events = 1;
        if (jvmti_->AddCapabilities(&compiled) == JVMTI_ERROR_NONE)
            jvmti_->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_COMPILED_METHOD_LOAD, nullptr);
    }
    return std::nullopt;
}

// The smallest object G1 allocates humongous: half a region (G1HeapRegionSize, set by the JVM when it made the
// heap); where the flag cannot be read, half the smallest region G1 makes, so that no humongous object gets a
// reference (tracked_objects.hpp says why none may).
std::uint64_t g1_humongous_threshold() {
    constexpr std::uint64_t smallest_region = 1 << 20;
    const std::uint64_t region = hotspot_size_flag("G1HeapRegionSize").value_or(0);
    return std::max(region, smallest_region) / 2;
}

std::string agent::collector(JNIEnv* jni) {
    if (auto from_flags = hotspot_collector()) return *from_flags;
    // Not HotSpot, or its flag table unreadable: the collectors' names, as java.lang.management reports them
    // ("G1 Young Generation", "ZGC Cycles", …).
    std::string names;
    if (jni->PushLocalFrame(32) != JNI_OK) return names;
    const jclass factory = jni->FindClass("java/lang/management/ManagementFactory");
    const jclass list_class = jni->FindClass("java/util/List");
    const jclass bean_class = jni->FindClass("java/lang/management/MemoryManagerMXBean");
    if (factory && list_class && bean_class) {
        const jmethodID get_beans = jni->GetStaticMethodID(factory, "getGarbageCollectorMXBeans", "()Ljava/util/List;");
        const jmethodID size = jni->GetMethodID(list_class, "size", "()I");
        const jmethodID get = jni->GetMethodID(list_class, "get", "(I)Ljava/lang/Object;");
        const jmethodID get_name = jni->GetMethodID(bean_class, "getName", "()Ljava/lang/String;");
        const jobject beans = get_beans ? jni->CallStaticObjectMethod(factory, get_beans) : nullptr;
        const jint count = beans && size ? jni->CallIntMethod(beans, size) : 0;
        for (jint i = 0; i < count && !jni->ExceptionCheck(); ++i) {
            const jobject bean = jni->CallObjectMethod(beans, get, i);
            const auto name = bean ? static_cast<jstring>(jni->CallObjectMethod(bean, get_name)) : nullptr;
            if (name == nullptr) continue;
            if (const char* utf = jni->GetStringUTFChars(name, nullptr)) {
                names += (names.empty() ? "" : ", ") + std::string(utf);
                jni->ReleaseStringUTFChars(name, utf);
            }
        }
    }
    if (jni->ExceptionCheck()) jni->ExceptionClear(); // e.g. a runtime without java.management
    jni->PopLocalFrame(nullptr);
    return names;
}

std::optional<std::string> agent::start(JNIEnv* jni, bool attached_late) {
    if (profiling()) return std::string("already profiling");
    if (settings_.agent.help) return std::nullopt;

    const std::string gc = collector(jni);
    if (gc.find("ZGC") != std::string::npos || gc.find("Shenandoah") != std::string::npos)
        return "the collector (" + gc + ") moves objects while Java threads run, so sampled addresses cannot be "
               "attributed to objects safely; use -XX:+UseG1GC, -XX:+UseParallelGC or -XX:+UseSerialGC";
    if (auto error = calibrate_heap_layout(jni, layout_)) return "heap layout: " + *error;
    std::optional<tagged_census> census;
    if (settings_.census_every != 0) census.emplace(jvmti_, settings_.census_every);
    // A collector the flags do not name may be G1.
    const bool may_be_g1 = gc.empty() || gc.find("G1") != std::string::npos;
    objects_.emplace(session_, layout_.array_length_offset, census,
                     may_be_g1 ? g1_humongous_threshold() : ~std::uint64_t{0});

    char* vm_name = nullptr;
    char* vm_version = nullptr;
    jvmti_->GetSystemProperty("java.vm.name", &vm_name);
    jvmti_->GetSystemProperty("java.vm.version", &vm_version);
    runtime_ = std::string(vm_name ? vm_name : "JVM") + " " + (vm_version ? vm_version : "?") + " (" +
               (gc.empty() ? "collector unknown" : gc) + ")";
    jvmti_->Deallocate(reinterpret_cast<unsigned char*>(vm_name));
    jvmti_->Deallocate(reinterpret_cast<unsigned char*>(vm_version));
    char* specification = nullptr;
    if (jvmti_->GetSystemProperty("java.specification.version", &specification) == JVMTI_ERROR_NONE &&
        specification != nullptr)
        draws_first_point_at_creation_ = std::atoi(specification) >= 25;
    jvmti_->Deallocate(reinterpret_cast<unsigned char*>(specification));

    if (samples_accesses()) {
        async_get_call_trace_ = reinterpret_cast<async_get_call_trace_function>(dlsym(RTLD_DEFAULT, "AsyncGetCallTrace"));
        create_method_ids_of_loaded_classes();
    }

    session_options options = settings_.agent.session;
    options.profiler.min_object_size = 1; // the agent applies the threshold to whole objects, headers included
    options.profiler.sweep_sees_live_heap = false; // the heap view's moments are collections' survivors
    // Allocation metrics are scaled by JVMTI's sampling (interval 0: every allocation is sampled, counts exact);
    // under adaptive sampling each object carries the interval it was drawn at.
    const allocation_tracking& tracking = settings_.agent.tracking;
    if (tracking.track_rate != 0) {
        sampling_.emplace(static_cast<double>(tracking.track_rate));
        options.profiler.allocation_sampling_interval = 0;
        options.profiler.allocation_tracking_target = tracking.track_rate;
    } else {
        options.profiler.allocation_sampling_interval = tracking.interval;
    }
    options.access_walker = stack_walker{this, walk_java_stack};
    options.runtime = runtime_;
    options.record_file = files_.trace;
    if (auto error = session_.start(options)) return error;

    const std::uint64_t first_interval = sampling_ ? sampling_->interval() : tracking.interval;
    if (jvmti_->SetHeapSamplingInterval(static_cast<jint>(first_interval)) != JVMTI_ERROR_NONE)
        return std::string("SetHeapSamplingInterval failed");
    for (const jvmtiEvent event : {JVMTI_EVENT_SAMPLED_OBJECT_ALLOC, JVMTI_EVENT_GARBAGE_COLLECTION_START,
                                   JVMTI_EVENT_GARBAGE_COLLECTION_FINISH})
        if (jvmti_->SetEventNotificationMode(JVMTI_ENABLE, event, nullptr) != JVMTI_ERROR_NONE)
            return "cannot enable JVMTI event " + std::to_string(event);

    started_at_ = std::chrono::steady_clock::now();
    profiling_.store(true, std::memory_order_release);
    if (attached_late)
        attach_running_java_threads(jni);
    else
        attach_this_thread(jni, "the main thread runs unprofiled: ");
    start_agent_thread();
    if (counting_) {
        if (auto error = counting_->start(jni)) {
            say("ojx: exact counts off, every class runs as it was: " + *error + "\n");
            counting_->stop();
        } else if (!sampling_ && tracking.interval == 0) {
            counting_->compare_with_reported(); // every allocation is reported from here on (prepare)
        }
    }
    if (!settings_.agent.quiet)
        say(start_line(session_.backend(), runtime_,
                       settings_.agent.exact ? "every allocation tracked and digested whole (exact mode)"
                                             : "allocations sampled and digested whole",
                       layout_.describe() + (settings_.agent.exact ? "; exact mode: every allocation at or above the "
                                                                     "threshold tracked, each digested whole with no "
                                                                     "budget"
                                                                   : ""),
                       files_, settings_.agent.verbose));
    return std::nullopt;
}

void agent::create_method_ids_of_loaded_classes() {
    jint count = 0;
    jclass* classes = nullptr;
    if (jvmti_->GetLoadedClasses(&count, &classes) != JVMTI_ERROR_NONE) return;
    JNIEnv* jni = nullptr;
    vm_->GetEnv(reinterpret_cast<void**>(&jni), JNI_VERSION_1_6);
    for (jint i = 0; i < count; ++i) {
        jint status = 0;
        if (jvmti_->GetClassStatus(classes[i], &status) == JVMTI_ERROR_NONE && (status & JVMTI_CLASS_STATUS_PREPARED))
            create_method_ids(classes[i]);
        if (jni != nullptr) jni->DeleteLocalRef(classes[i]);
    }
    jvmti_->Deallocate(reinterpret_cast<unsigned char*>(classes));
}

std::vector<std::pair<type_id, std::string>> agent::classes_with_field_nodes(const sampled_copy_graph& graph,
                                                                             const replica_report& report) {
    std::vector<type_id> wanted;
    for (const auto& field : typed_field_nodes(graph, report)) wanted.push_back(field.first);
    wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end()); // sorted by type
    std::vector<std::pair<type_id, std::string>> classes;
    const std::lock_guard lock(types_mutex_);
    for (const auto& [signature, type] : type_ids_)
        if (std::binary_search(wanted.begin(), wanted.end(), type)) classes.emplace_back(type, signature);
    return classes;
}

type_id agent::intern_type(const char* signature) {
    const std::lock_guard lock(types_mutex_);
    auto [it, inserted] = type_ids_.try_emplace(signature, static_cast<type_id>(type_names_.size()));
    if (inserted) type_names_.push_back(java_type_name(signature));
    return it->second;
}

void agent::on_sampled_allocation(JNIEnv* jni, jthread thread, jobject object, jclass klass, jlong size) {
    const bool eligible = size >= static_cast<jlong>(settings_.agent.session.profiler.min_object_size) && profiling();
    std::optional<std::uint64_t> drawn_at; // adaptive: the interval this sample was drawn at
    if (sampling_) {
        // A thread older than the agent: JDK 25 and later drew its first point at JVMTI's default interval.
        drawn_at = next_sample_interval != not_drawn_yet ? next_sample_interval
                                                 : draws_first_point_at_creation_ ? jvmti_default_interval : 0;
        next_sample_interval = sampling_->interval();
        if (sampling_->on_sample(static_cast<std::uint64_t>(size), *drawn_at, eligible))
            sem_post(&wake_); // the window has had its share: the agent's thread closes it now
    }
    // At interval 0 with count=, every allocation is compared with what was counted at its site, whatever its size.
    exact_counting* const comparing = counting_ && counting_->comparing() ? &*counting_ : nullptr;
    if (!eligible && comparing == nullptr) return;
    char* signature = nullptr;
    if (jvmti_->GetClassSignature(klass, &signature, nullptr) != JVMTI_ERROR_NONE) return;
    jvmtiFrameInfo frames[max_frames];
    jint depth = 0;
    if (jvmti_->GetStackTrace(thread, 0, eligible ? static_cast<jint>(max_frames) : 1, frames, &depth) != JVMTI_ERROR_NONE)
        depth = 0;
    if (comparing != nullptr && depth > 0)
        comparing->on_reported_allocation(
            jni, frames[0].method, frames[0].location, signature,
            signature[0] == '[' ? static_cast<std::uint64_t>(jni->GetArrayLength(static_cast<jarray>(object))) : 0);
    if (!eligible) {
        jvmti_->Deallocate(reinterpret_cast<unsigned char*>(signature));
        return;
    }
    const std::uint32_t data_offset = layout_.data_offset(signature);
    const std::uint8_t element_size = heap_layout::primitive_element_size(signature);
    const type_id type = intern_type(signature);
    // JP's array metric: the length itself, not derived from the padded size.
    std::optional<std::uint64_t> array_length;
    if (signature[0] == '[') array_length = static_cast<std::uint64_t>(jni->GetArrayLength(static_cast<jarray>(object)));
    jvmti_->Deallocate(reinterpret_cast<unsigned char*>(signature));

    std::uint64_t encoded[max_frames];
    for (jint i = 0; i < depth; ++i)
        encoded[i] = encode_frame(java_frame{reinterpret_cast<std::uint64_t>(frames[i].method),
                                             static_cast<std::int32_t>(frames[i].location)});
    objects_->on_allocation(jni, object, klass, data_offset, element_size, static_cast<std::uint64_t>(size),
                           std::span<const std::uint64_t>(encoded, static_cast<std::size_t>(depth)), type, array_length,
                           drawn_at);
}

// AsyncGetCallTrace gives up ("unknown Java", "not walkable Java") where the interrupted pc is in code without a
// Java frame it can find: HotSpot's stubs (arraycopy, the intrinsics behind Arrays.fill, String.equals and
// hashCode), methods' prologues and epilogues, and C code that compiled Java calls without leaving the Java
// thread state (libjvm's copy routines, the C library's memmove). That is where a sampler which steps to the
// next memory access often stops, because such code is what touches array contents. The Java method that called
// it is a few frames up, so the walk is retried from the callers: first from the return address on top of the
// stack (a frameless leaf such as memmove, or a method's first instruction) or the word above it (a stub
// stopped just after its `push rbp`, before `mov rbp, rsp`: the arraycopy stubs' second instruction), then along the frame-pointer chain
// (stubs and libjvm keep frame pointers), while each frame lies in the stack above the last. A candidate is
// taken only if AsyncGetCallTrace accepts it, which checks that the pc is in Java code and the frame walkable;
// the access is then attributed to the calling method at the call's bytecode, the line a user would change.
// Stack words are read by system call: no guarded load can meet a debug register, and this runs only where
// the first walk failed.
bool agent::walk_from_caller(agent& a, const ucontext_t& interrupted, call_trace& trace, jint depth) noexcept {
    constexpr int max_frames_up = 6;
    constexpr std::uint64_t frame_reach = 1 << 20; // one C frame is far smaller
    const std::uint64_t sp = static_cast<std::uint64_t>(interrupted.uc_mcontext.gregs[REG_RSP]);
    std::uint64_t fp = static_cast<std::uint64_t>(interrupted.uc_mcontext.gregs[REG_RBP]);
    const auto accepted = [&](std::uint64_t pc, std::uint64_t caller_sp, std::uint64_t caller_fp) {
        ucontext_t from_caller = interrupted;
        from_caller.uc_mcontext.gregs[REG_RIP] = static_cast<greg_t>(pc);
        from_caller.uc_mcontext.gregs[REG_RSP] = static_cast<greg_t>(caller_sp);
        from_caller.uc_mcontext.gregs[REG_RBP] = static_cast<greg_t>(caller_fp);
        a.async_get_call_trace_(&trace, depth, &from_caller);
        return trace.frame_count > 0;
    };
    std::uint64_t top[2]; // a frameless leaf's return address; or, just past a `push rbp`, the saved rbp and it
    if (read_memory(sp, top, sizeof top) && (accepted(top[0], sp + 8, fp) || accepted(top[1], sp + 16, top[0])))
        return true;
    std::uint64_t below = sp;
    for (int up = 0; up < max_frames_up && fp >= below && fp - below < frame_reach && fp % 8 == 0; ++up) {
        std::uint64_t frame[2]; // [fp]: the caller's frame pointer, [fp + 8]: the return address
        if (!read_memory(fp, frame, sizeof frame)) return false;
        if (accepted(frame[1], fp + 16, frame[0])) return true;
        below = fp + 16;
        fp = frame[0];
    }
    return false;
}

// Signal-safe: the thread's env from the agent's table (never JavaVM::GetEnv: java_thread_envs.hpp), and
// AsyncGetCallTrace is made for signal handlers. The frames are stored encoded; nothing is named here.
std::size_t agent::walk_java_stack(void* self, const ucontext_t& context, pid_t thread, std::uint64_t* leaf_first,
                                   std::size_t max) noexcept {
    auto& a = *static_cast<agent*>(self);
    if (max == 0) return 0;
    JNIEnv* const jni = a.envs_.find(thread);
    std::int32_t failure = 0;
    if (a.async_get_call_trace_ == nullptr) {
        failure = walker_unavailable;
    } else if (jni == nullptr) {
        a.walks_without_env_.fetch_add(1, std::memory_order_relaxed);
        failure = not_a_java_thread;
    } else {
        call_frame frames[max_frames];
        call_trace trace{jni, 0, frames};
        const auto depth = static_cast<jint>(max < max_frames ? max : max_frames);
        a.async_get_call_trace_(&trace, depth, const_cast<ucontext_t*>(&context));
        if (trace.frame_count == unknown_java || trace.frame_count == not_walkable_java) {
            const std::int32_t first_failure = trace.frame_count;
            if (walk_from_caller(a, context, trace, depth))
                a.walks_from_caller_.fetch_add(1, std::memory_order_relaxed);
            else
                trace.frame_count = first_failure;
        }
        if (trace.frame_count > 0) {
            for (jint i = 0; i < trace.frame_count; ++i)
                leaf_first[i] = encode_frame(java_frame{reinterpret_cast<std::uint64_t>(frames[i].method), frames[i].bci});
            return static_cast<std::size_t>(trace.frame_count);
        }
        failure = trace.frame_count;
    }
    a.stack_failures_.fetch_add(1, std::memory_order_relaxed);
    leaf_first[0] = failure_frame(failure);
    return 1;
}

// ---- Threads that were running before a dynamic attach ----
// JVMTI names Java threads but neither their kernel ids, which the backend needs, nor their JNIEnvs, which the
// handler's AsyncGetCallTrace needs, and JavaVM::GetEnv may not be called in a signal handler
// (java_thread_envs.hpp). HotSpot keeps each of its threads' Thread* under a pthread key of its own (its signal
// handlers read it there), a java.lang.Thread's field `eetop` holds its JavaThread*, and a JavaThread holds its
// JNIEnv at a fixed offset. So the key is the one under which the attaching thread finds its own eetop, and the
// offset is its env's from there; every thread of the process is asked, by a signal, for its kernel id and what
// it keeps under that key; those whose answer is the eetop of a thread JVMTI lists are Java threads, with env at
// that offset. The JIT's compiler threads are JavaThreads that JVMTI does not list; they are left out, as
// ThreadStart leaves them out when the agent starts with the JVM. A JVM that is not HotSpot so (no `eetop`, no
// such key): only threads started from now on are profiled, and that is said.

constexpr std::size_t max_probed_threads = 4096;
struct probe_answer {
    std::atomic<pid_t> tid{0};
    std::atomic<const void*> vm_thread{nullptr}; // what the thread keeps under HotSpot's key
};
probe_answer probe_answers[max_probed_threads];
std::atomic<std::size_t> probe_answers_claimed{0};
std::atomic<std::size_t> probe_answers_written{0};
pthread_key_t hotspot_thread_key = 0;
chained_handler probe_handler; // stays installed: a late probe signal must never meet the default action

// Signal handler: records the thread's kernel id and HotSpot's pointer for it. pthread_getspecific reads the
// calling thread's own descriptor (and at most clears a stale slot of it): no lock, no allocation.
void on_probe_signal(int, siginfo_t*, void*) {
    const handler_scope ours;
    const int saved_errno = errno;
    const std::size_t at = probe_answers_claimed.fetch_add(1, std::memory_order_relaxed);
    if (at < max_probed_threads) {
        probe_answers[at].tid.store(current_tid(), std::memory_order_relaxed);
        probe_answers[at].vm_thread.store(pthread_getspecific(hotspot_thread_key), std::memory_order_relaxed);
    }
    probe_answers_written.fetch_add(1, std::memory_order_release);
    errno = saved_errno;
}

// HotSpot's thread key and the offset of a JavaThread's env, found on the calling Java thread (env `jni`), and
// each listed Java thread's JavaThread*; nothing where this JVM does not keep them so.
struct hotspot_threads {
    pthread_key_t key = 0;
    std::ptrdiff_t env_offset = 0;
    std::vector<const void*> java_threads; // sorted
};
std::optional<hotspot_threads> find_hotspot_threads(jvmtiEnv* jvmti, JNIEnv* jni) {
    jthread self = nullptr;
    const jclass thread_class = jni->FindClass("java/lang/Thread");
    const jfieldID eetop = thread_class != nullptr ? jni->GetFieldID(thread_class, "eetop", "J") : nullptr;
    if (eetop == nullptr || jvmti->GetCurrentThread(&self) != JVMTI_ERROR_NONE) {
        jni->ExceptionClear();
        return std::nullopt;
    }
    const auto own = reinterpret_cast<const void*>(static_cast<std::intptr_t>(jni->GetLongField(self, eetop)));
    hotspot_threads found;
    bool key_found = false;
    for (pthread_key_t key = 0; key < PTHREAD_KEYS_MAX && !key_found && own != nullptr; ++key) {
        if (pthread_getspecific(key) == own) {
            found.key = key;
            key_found = true;
        }
    }
    // The env lies inside the JavaThread, a few KiB at most past its start.
    found.env_offset = reinterpret_cast<const char*>(jni) - static_cast<const char*>(own);
    if (!key_found || found.env_offset <= 0 || found.env_offset >= 65536) return std::nullopt;
    jint count = 0;
    jthread* threads = nullptr;
    if (jvmti->GetAllThreads(&count, &threads) != JVMTI_ERROR_NONE) return std::nullopt;
    for (jint i = 0; i < count; ++i) {
        const jlong at = jni->GetLongField(threads[i], eetop); // 0: the thread has ended
        if (at != 0) found.java_threads.push_back(reinterpret_cast<const void*>(static_cast<std::intptr_t>(at)));
        jni->DeleteLocalRef(threads[i]);
    }
    jvmti->Deallocate(reinterpret_cast<unsigned char*>(threads));
    std::sort(found.java_threads.begin(), found.java_threads.end());
    return found;
}

void agent::attach_running_java_threads(JNIEnv* jni) {
    const std::optional<hotspot_threads> hotspot = find_hotspot_threads(jvmti_, jni);
    const std::optional<int> signal = choose_free_signal();
    if (!hotspot || !signal) {
        attach_this_thread(jni, "attach thread: ");
        say_once(thread_error_said_, std::string(!hotspot ? "this JVM does not say which threads are Java threads"
                                                          : "no free signal to find the running Java threads") +
                                         "; only new threads are profiled");
        return;
    }
    hotspot_thread_key = hotspot->key;
    if (auto error = probe_handler.install(*signal, on_probe_signal)) {
        attach_this_thread(jni, "attach thread: ");
        say_once(thread_error_said_, "cannot find the running Java threads (" + *error + "); only new threads are profiled");
        return;
    }
    std::vector<pid_t> tasks;
    if (DIR* dir = opendir("/proc/self/task")) {
        while (const dirent* item = readdir(dir))
            if (item->d_name[0] != '.') tasks.push_back(static_cast<pid_t>(std::atoi(item->d_name)));
        closedir(dir);
    }
    const pid_t self = current_tid();
    std::size_t asked = 0;
    for (const pid_t tid : tasks)
        if (tid != self && syscall(SYS_tgkill, getpid(), tid, *signal) == 0) ++asked;
    // Threads answer as soon as they are scheduled; one that exits meanwhile never does.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
    while (probe_answers_written.load(std::memory_order_acquire) < asked && std::chrono::steady_clock::now() < deadline)
        usleep(1000);
    const std::size_t found = std::min(probe_answers_claimed.load(), max_probed_threads);
    std::size_t attached = 0;
    for (std::size_t i = 0; i < found; ++i) {
        const pid_t tid = probe_answers[i].tid.load(std::memory_order_relaxed);
        const void* vm_thread = probe_answers[i].vm_thread.load(std::memory_order_relaxed);
        if (tid == 0 || tid == agent_tid_.load() || vm_thread == nullptr ||
            !std::binary_search(hotspot->java_threads.begin(), hotspot->java_threads.end(), vm_thread))
            continue;
        auto* env = reinterpret_cast<JNIEnv*>(const_cast<char*>(static_cast<const char*>(vm_thread)) + hotspot->env_offset);
        if (!envs_.add(tid, env)) threads_without_env_.fetch_add(1, std::memory_order_relaxed);
        if (session_.attach_thread(tid))
            envs_.remove(tid); // ended meanwhile
        else
            ++attached;
    }
    attach_this_thread(jni, "attach thread: ");
    if (!settings_.agent.quiet)
        std::fprintf(stderr, "ojx: attached to %zu running Java threads\n", attached);
}

// ---- The agent's thread: relocates objects after collections, ends a timed run, notices displaced handlers ----

void agent::start_agent_thread() {
    agent_thread_started_ = pthread_create(&agent_thread_, nullptr, agent_thread_main, this) == 0;
    if (!agent_thread_started_)
        say_once(thread_error_said_, "cannot start the agent's thread; profiling stops at the first collection");
}

std::uint64_t monotonic_ns() noexcept {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    return static_cast<std::uint64_t>(now.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(now.tv_nsec);
}

void* agent::agent_thread_main(void* raw) {
    auto& a = *static_cast<agent*>(raw);
    a.agent_tid_.store(current_tid());
    JNIEnv* jni = nullptr;
    JavaVMAttachArgs args{JNI_VERSION_1_6, const_cast<char*>("ojx agent"), nullptr};
    if (a.vm_->AttachCurrentThreadAsDaemon(reinterpret_cast<void**>(&jni), &args) != JNI_OK) {
        std::fprintf(stderr, "ojx: the agent's thread cannot attach to the JVM; profiling stops\n");
        a.session_.pause(); // without relocation, addresses go stale at the first collection
        return nullptr;
    }
    const bool timed = a.settings_.duration.count() > 0;
    while (!a.stopping_.load(std::memory_order_acquire)) {
        timespec until{};
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 50'000'000; // also the longest a timed run overshoots
        if (until.tv_nsec >= 1'000'000'000) {
            until.tv_sec += 1;
            until.tv_nsec -= 1'000'000'000;
        }
        sem_timedwait(&a.wake_, &until);
        if (a.stopping_.load(std::memory_order_acquire)) break;
        // A native library's sigaction is not interposed (agents/jvm/README.md): a handler it installs over one
        // of ours is noticed here, within one period, and every thread goes quiet.
        hardware_backend::poll_handlers();
        if (a.sampling_) {
            // A refusal (only for a negative interval, or outside the live phase) would leave the weights at an
            // interval JVMTI does not use: said, as every fault at run time is.
            if (const auto next = a.sampling_->tick(monotonic_ns());
                next && a.jvmti_->SetHeapSamplingInterval(static_cast<jint>(*next)) != JVMTI_ERROR_NONE)
                a.say_once(a.interval_error_said_, "SetHeapSamplingInterval refused " + std::to_string(*next) +
                                                       ": allocation counts may be biased from here on");
        }
        if (a.objects_->relocation_due()) a.objects_->relocate(jni);
        if (timed && std::chrono::steady_clock::now() - a.started_at_ >= a.settings_.duration) {
            a.write_profile(jni, "after the requested duration", {}, true);
            a.stop(jni);
            break;
        }
    }
    a.vm_->DetachCurrentThread();
    return nullptr;
}

// ---- Writing the profile ----

bool agent::write_profile(JNIEnv* jni, const char* why, const std::string& file, bool final) {
    const std::lock_guard dump(dump_mutex_);
    if (!profiling()) return false;
    const std::string& path = file.empty() ? files_.profile : file;
    if (objects_->relocation_due()) objects_->relocate(jni);
    // The objects allocated since the last collection, whole, before the final profile is taken.
    if (final) objects_->sweep(digest_budget(settings_.agent, exit_digest_bytes));
    replica_report report;
    tree_snapshot tree;
    std::optional<followed_copies> followed;
    const auto take = [&](profiling_session::profiler_type& profiler, const followed_copy_graph& copies) {
        report = profiler.report();
        followed = followed_copies_of(copies);
        const auto& contexts = profiler.contexts();
        tree.parents.resize(contexts.size());
        tree.frames.resize(contexts.size());
        for (context_id id = 0; id < contexts.size(); ++id) {
            tree.parents[id] = id == tree_snapshot::root ? tree_snapshot::root : contexts.parent(id);
            tree.frames[id] = contexts.frame_of(id);
        }
    };
    if (final) {
        session_.with_final_analyses(take);
    } else {
        session_.with_analyses(take);
        session_.flush_recording();
    }
    // Names through JVMTI, without the profiler's lock.
    method_names methods(jvmti_, jni);
    std::unordered_map<std::uint64_t, std::string> frame_names;
    std::vector<std::string> types;
    {
        const std::lock_guard lock(types_mutex_);
        types = type_names_;
    }
    report_naming naming;
    naming.frame = [&](std::uint64_t frame) {
        auto [it, inserted] = frame_names.try_emplace(frame);
        if (inserted) it->second = methods.frame_name(frame);
        return it->second;
    };
    naming.type = [&](type_id type) { return type < types.size() ? types[type] : std::string("?"); };
    const std::vector<field_symbol> fields =
        followed ? instance_fields(jvmti_, jni, classes_with_field_nodes(followed->graph, report), layout_.instance_header)
                 : std::vector<field_symbol>{};
    naming.field = [&](type_id type, std::uint64_t offset) {
        const auto at = std::lower_bound(fields.begin(), fields.end(), std::pair{type, offset},
                                         [](const field_symbol& f, const std::pair<type_id, std::uint64_t>& key) {
                                             return std::pair{f.type, f.offset} < key;
                                         });
        return at != fields.end() && at->type == type && at->offset == offset ? at->name : std::string();
    };

    const relocation_counters& r = objects_->counters();
    run_facts facts = session_.facts();
    add_session_counters(session_, facts);
    facts.agent_counters.insert(facts.agent_counters.end(),
                                {{"samples_dropped_during_gc", session_.samples_dropped_paused()},
                                 {"traps_dropped_during_gc", session_.traps_dropped_paused()},
                                 {"stack_walk_failures", stack_failures_.load()},
                                 {"stack_walks_from_caller", walks_from_caller_.load()},
                                 {"stack_walks_without_env", walks_without_env_.load()},
                                 {"threads_without_env", threads_without_env_.load()},
                                 {"collections_relocated", r.collections.load()},
                                 {"relocation_retries", r.retries.load()},
                                 {"objects_moved_by_gc", r.moved.load()},
                                 {"objects_freed_by_gc", r.died.load()},
                                 {"relocation_check_failures", r.check_failures.load()},
                                 {"whole_object_sweeps", r.sweeps.load()},
                                 {"whole_object_sweeps_partial", r.sweeps_partial.load()},
                                 {"whole_object_sweeps_skipped", r.sweeps_skipped.load()},
                                 {"whole_object_sweep_us_total", r.sweep_ns_total.load() / 1000},
                                 {"whole_object_sweep_us_max", r.sweep_ns_max.load() / 1000},
                                 {"whole_object_exit_sweep_us", r.exit_sweep_ns.load() / 1000},
                                 {"objects_tracked_now", objects_->size()},
                                 {"objects_tracked_without_reference", r.unreferenced.load()},
                                 {"tracked_without_reference_from_bytes",
                                  objects_->unreferenced_from().value_or(0)},
                                 {"heap_sampling_interval",
                                  sampling_ ? sampling_->interval() : settings_.agent.tracking.interval}});
    if (sampling_) {
        facts.agent_counters.emplace_back("heap_sampling_windows", sampling_->windows());
        facts.agent_counters.emplace_back("heap_sampling_window_ms", sampling_->windowed_ns() / 1'000'000);
        facts.agent_counters.emplace_back("heap_samples", sampling_->callbacks_in_windows());
        facts.agent_counters.emplace_back("heap_samples_tracked", sampling_->tracked_in_windows());
    }
    if (settings_.census_every != 0) {
        facts.agent_counters.emplace_back("censuses", r.censuses.load());
        facts.agent_counters.emplace_back("censuses_skipped", r.censuses_skipped.load());
    }
    std::vector<std::string> lines;
    if (sampling_ && sampling_->windowed_ns() > 0) {
        const double seconds = static_cast<double>(sampling_->windowed_ns()) * 1e-9;
        lines.push_back(fmt::format("adaptive heap sampling: {:.0f} allocations tracked a second (target {}), {:.0f} "
                                    "samples a second of any size; interval {} to {} bytes over {} windows",
                                    static_cast<double>(sampling_->tracked_in_windows()) / seconds,
                                    settings_.agent.tracking.track_rate,
                                    static_cast<double>(sampling_->callbacks_in_windows()) / seconds,
                                    sampling_->smallest_interval(), sampling_->largest_interval(),
                                    sampling_->windows()));
    }
    if (followed)
        facts.agent_counters.insert(facts.agent_counters.end(), followed->counters.begin(), followed->counters.end());
    const auto copied = copy_section(followed, report, tree, naming, session_.followed_copies_description());
    std::optional<exact_counts> exact;
    if (counting_ && counting_->started()) {
        exact = counting_->collect(jni);
        for (auto& counter : counting_->counters()) facts.agent_counters.push_back(std::move(counter));
    }
    const bool written = write_agent_profile(agent_profile{report, tree, naming, facts, copied ? &*copied : nullptr,
                                                           exact ? &*exact : nullptr},
                                             path, session_, {settings_.agent.quiet, why, lines});
    if (final) {
        if (const auto recorded =
                session_.finish_recording(naming, static_cast<type_id>(types.size()), facts.agent_counters, fields))
            report_recording(*recorded, settings_.agent.quiet);
    }
    return written;
}

void agent::stop(JNIEnv* jni) {
    if (!profiling_.exchange(false)) return;
    stopping_.store(true, std::memory_order_release);
    for (const jvmtiEvent event : {JVMTI_EVENT_SAMPLED_OBJECT_ALLOC, JVMTI_EVENT_GARBAGE_COLLECTION_START,
                                   JVMTI_EVENT_GARBAGE_COLLECTION_FINISH})
        jvmti_->SetEventNotificationMode(JVMTI_DISABLE, event, nullptr);
    session_.stop();
    if (counting_) counting_->stop();
    if (agent_thread_started_ && current_tid() != agent_tid_.load()) {
        sem_post(&wake_);
        pthread_join(agent_thread_, nullptr);
        agent_thread_started_ = false;
    }
    objects_->clear(jni);
    // Give the exclusive capability back, so that another agent (or a later start) may sample allocations.
    jvmtiCapabilities sampled{};
    sampled.can_generate_sampled_object_alloc_events = 1;
    jvmti_->RelinquishCapabilities(&sampled);
}

// ---- Entry points ----

jint load(JavaVM* vm, const char* options, bool live) {
    jvm_settings settings;
    if (auto error = parse_jvm_options(options, settings)) {
        std::fprintf(stderr, "ojx: %s\nojx: the option 'help' lists the options\n", error->c_str());
        return JNI_ERR;
    }
    if (settings.agent.help) {
        say(agent_help("JVM agent", "-agentpath:libojx.so=name=value,...", jvm_agent_options()));
        return JNI_OK;
    }
    if (the_agent) {
        // Loaded before: dynamic attach again, to dump or stop.
        JNIEnv* jni = nullptr;
        vm->GetEnv(reinterpret_cast<void**>(&jni), JNI_VERSION_1_6);
        if (settings.dump || settings.stop) {
            if (!the_agent->profiling()) {
                std::fprintf(stderr, "ojx: not profiling; nothing to %s\n", settings.dump ? "dump" : "stop");
                return JNI_ERR;
            }
            // The return code is all an attaching tool sees (this message goes to the JVM's standard error).
            // Relative to the JVM's directory now, as the JVM itself would take it.
            const std::string file =
                settings.file_given ? absolute_path(expand_file_name(settings.agent.file_pattern,
                                                                     static_cast<std::uint64_t>(getpid()),
                                                                     start_time_text()))
                                    : std::string();
            const bool written = the_agent->write_profile(jni, settings.dump ? "on request" : "at stop", file, settings.stop);
            if (settings.stop) the_agent->stop(jni);
            return written ? JNI_OK : JNI_ERR;
        }
        std::fprintf(stderr, "ojx: %s\n",
                     the_agent->profiling() ? "already profiling" : "profiling cannot be restarted in this JVM");
        return JNI_ERR;
    }
    if (settings.dump || settings.stop) {
        std::fprintf(stderr, "ojx: not profiling; nothing to %s\n", settings.dump ? "dump" : "stop");
        return JNI_ERR;
    }
    jvmtiEnv* jvmti = nullptr;
    if (vm->GetEnv(reinterpret_cast<void**>(&jvmti), JVMTI_VERSION_11) != JNI_OK) {
        std::fprintf(stderr, "ojx: this JVM has no JVMTI 11 (JDK 11 or later is needed)\n");
        return JNI_ERR;
    }
    the_agent.emplace();
    if (auto error = the_agent->prepare(vm, jvmti, settings, live)) {
        std::fprintf(stderr, "ojx: not profiling: %s\n", error->c_str());
        // At launch the program runs unprofiled; an attach fails, so that the attaching tool knows.
        return live ? JNI_ERR : JNI_OK;
    }
    if (!live) start_kernel_warm_up(); // overlaps the JVM's start-up until VMInit
    if (live) {
        JNIEnv* jni = nullptr;
        vm->GetEnv(reinterpret_cast<void**>(&jni), JNI_VERSION_1_6);
        if (auto error = the_agent->start(jni, true)) {
            std::fprintf(stderr, "ojx: not profiling: %s\n", error->c_str());
            return JNI_ERR;
        }
    }
    return JNI_OK;
}

} // namespace

extern "C" {

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM* vm, char* options, void*) { return load(vm, options, false); }

JNIEXPORT jint JNICALL Agent_OnAttach(JavaVM* vm, char* options, void*) { return load(vm, options, true); }

JNIEXPORT void JNICALL Agent_OnUnload(JavaVM*) {}

} // extern "C"
