#include "exact_counting.hpp"

#include "counts_class.hpp"
#include "java_names.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>

namespace ojx::jvm {

namespace {

using namespace ojx::bytecode;
using counting::block_id;

constexpr std::uint32_t chunk_counters = 4096; // Counts.CHUNK_BITS
constexpr std::uint32_t max_chunks = 1 << 16;  // Counts.CHUNKS.length
// Classes retransformed per RetransformClasses call at start: each call is one safepoint pause; small batches keep
// the longest pause short (measured: agents/jvm/README.md, "Exact counts").
constexpr std::size_t retransform_batch = 32;

// Whether this thread holds exact_counting's mutex. Counter storage is allocated (NewLongArray) in the class hook
// under it, and with compare_with_reported the JVM reports that allocation on the same thread: the comparison must
// not take the mutex again (nor count the agent's own array).
thread_local bool holds_counting_lock = false;

class counting_lock {
public:
    explicit counting_lock(std::mutex& mutex) : lock_(mutex) { holds_counting_lock = true; }
    ~counting_lock() { holds_counting_lock = false; }
    counting_lock(const counting_lock&) = delete;
    counting_lock& operator=(const counting_lock&) = delete;

private:
    std::lock_guard<std::mutex> lock_;
};

// Refusals that are no loss: nothing to count there.
bool worth_naming(std::string_view reason) {
    return reason != "it has no allocation site" && reason != "a method of the hook's own class";
}

std::string key_of(std::string_view klass, std::string_view method, std::string_view descriptor) {
    std::string key;
    key.reserve(klass.size() + method.size() + descriptor.size() + 1);
    key.append(klass).append(".").append(method).append(descriptor);
    return key;
}

template <class T>
void deallocate(jvmtiEnv* jvmti, T* pointer) {
    if (pointer != nullptr) jvmti->Deallocate(reinterpret_cast<unsigned char*>(pointer));
}

// The pending Java exception's text, cleared; empty where there is none.
std::string take_exception(JNIEnv* jni) {
    if (!jni->ExceptionCheck()) return {};
    jthrowable thrown = jni->ExceptionOccurred();
    jni->ExceptionClear();
    std::string text = "a Java exception";
    jclass object = jni->FindClass("java/lang/Object");
    jmethodID to_string = object ? jni->GetMethodID(object, "toString", "()Ljava/lang/String;") : nullptr;
    if (to_string) {
        if (auto s = static_cast<jstring>(jni->CallObjectMethod(thrown, to_string))) {
            if (const char* utf = jni->GetStringUTFChars(s, nullptr)) {
                text = utf;
                jni->ReleaseStringUTFChars(s, utf);
            }
        }
    }
    jni->ExceptionClear();
    return text;
}

} // namespace

std::optional<plan_kind> parse_count_option(std::string_view value) {
    if (value == "sites") return plan_kind::sites;
    if (value == "paths") return plan_kind::paths;
    if (value == "edges") return plan_kind::edges;
    return std::nullopt;
}

void exact_counting::add_capabilities(jvmtiCapabilities& wanted) noexcept {
    wanted.can_generate_all_class_hook_events = 1;
    wanted.can_retransform_classes = 1;
    wanted.can_generate_exception_events = 1;
    wanted.can_get_bytecodes = 1;
}

std::optional<std::string> exact_counting::start(JNIEnv* jni) {
    if (counts_class_size == 0)
        return std::string("this libojx.so has no ojx/Counts class (no javac was found when it was built)");
    if (jni->PushLocalFrame(32) != JNI_OK) return std::string("no JNI local frame");
    const auto fail = [&](std::string why) {
        if (jni->ExceptionCheck()) why += ": " + take_exception(jni);
        jni->PopLocalFrame(nullptr);
        return std::optional<std::string>(std::move(why));
    };
    jclass counts = jni->DefineClass("ojx/Counts", nullptr, reinterpret_cast<const jbyte*>(counts_class_bytes),
                                     static_cast<jsize>(counts_class_size));
    if (counts == nullptr) return fail("cannot define ojx/Counts in the boot loader");
    jclass class_class = jni->FindClass("java/lang/Class");
    jmethodID get_module = class_class ? jni->GetMethodID(class_class, "getModule", "()Ljava/lang/Module;") : nullptr;
    jobject module = get_module ? jni->CallObjectMethod(counts, get_module) : nullptr;
    if (module == nullptr) return fail("cannot find ojx/Counts' module");
    // Counts increments through jdk.internal.misc.Unsafe (sun.misc.Unsafe warns on JDK 24 and later).
    jobject base = nullptr;
    if (jvmti_->GetNamedModule(nullptr, "jdk/internal/misc", &base) != JVMTI_ERROR_NONE || base == nullptr)
        return fail("cannot find java.base");
    if (const jvmtiError e = jvmti_->AddModuleExports(base, "jdk.internal.misc", module); e != JVMTI_ERROR_NONE)
        return fail("cannot export jdk.internal.misc to ojx/Counts (JVMTI error " + std::to_string(e) + ")");
    // Every module defined so far must read Counts' (the boot loader's unnamed one) to call it; modules defined
    // later by class loaders' layers do not (agents/jvm/README.md says so).
    jint count = 0;
    jobject* modules = nullptr;
    if (jvmti_->GetAllModules(&count, &modules) != JVMTI_ERROR_NONE) return fail("GetAllModules failed");
    for (jint i = 0; i < count; ++i) jvmti_->AddModuleReads(modules[i], module);
    deallocate(jvmti_, modules);
    // Initialised here (GetStaticFieldID initialises), not by the first increment inside some rewritten class.
    jfieldID chunks = jni->GetStaticFieldID(counts, "CHUNKS", "[[J");
    if (chunks == nullptr) return fail("cannot initialise ojx/Counts");
    jobject array = jni->GetStaticObjectField(counts, chunks);
    if (array == nullptr) return fail("ojx/Counts has no storage");
    chunks_ = static_cast<jobjectArray>(jni->NewGlobalRef(array));
    jni->PopLocalFrame(nullptr);

    live_.store(true, std::memory_order_release);
    for (const jvmtiEvent event : {JVMTI_EVENT_CLASS_FILE_LOAD_HOOK, JVMTI_EVENT_EXCEPTION})
        if (jvmti_->SetEventNotificationMode(JVMTI_ENABLE, event, nullptr) != JVMTI_ERROR_NONE) {
            stop();
            return "cannot enable JVMTI event " + std::to_string(event);
        }
    started_.store(true, std::memory_order_release);
    retransform_loaded_classes(jni);
    return std::nullopt;
}

void exact_counting::stop() noexcept {
    live_.store(false, std::memory_order_release);
    for (const jvmtiEvent event : {JVMTI_EVENT_CLASS_FILE_LOAD_HOOK, JVMTI_EVENT_EXCEPTION})
        jvmti_->SetEventNotificationMode(JVMTI_DISABLE, event, nullptr);
}

void exact_counting::retransform_loaded_classes(JNIEnv* jni) {
    jint count = 0;
    jclass* classes = nullptr;
    if (jvmti_->GetLoadedClasses(&count, &classes) != JVMTI_ERROR_NONE) return;
    std::vector<jclass> wanted;
    for (jint i = 0; i < count; ++i) {
        jboolean modifiable = JNI_FALSE;
        char* signature = nullptr;
        if (jvmti_->IsModifiableClass(classes[i], &modifiable) == JVMTI_ERROR_NONE && modifiable &&
            jvmti_->GetClassSignature(classes[i], &signature, nullptr) == JVMTI_ERROR_NONE &&
            std::strcmp(signature, "Lojx/Counts;") != 0)
            wanted.push_back(classes[i]);
        else
            jni->DeleteLocalRef(classes[i]);
        deallocate(jvmti_, signature);
    }
    deallocate(jvmti_, classes);
    for (std::size_t at = 0; at < wanted.size(); at += retransform_batch) {
        const auto n = static_cast<jint>(std::min(retransform_batch, wanted.size() - at));
        const auto began = std::chrono::steady_clock::now();
        jvmtiError error = jvmti_->RetransformClasses(n, wanted.data() + at);
        const auto ns = static_cast<std::uint64_t>((std::chrono::steady_clock::now() - began).count());
        ++retransform_batches_;
        retransform_ns_total_ += ns;
        retransform_ns_max_ = std::max(retransform_ns_max_, ns);
        if (error == JVMTI_ERROR_NONE) {
            retransformed_ += static_cast<std::uint64_t>(n);
            continue;
        }
        // One class spoils its batch: each alone, so that the others are counted.
        for (jint i = 0; i < n; ++i) {
            const auto one = std::chrono::steady_clock::now();
            error = jvmti_->RetransformClasses(1, wanted.data() + at + static_cast<std::size_t>(i));
            const auto one_ns = static_cast<std::uint64_t>((std::chrono::steady_clock::now() - one).count());
            retransform_ns_total_ += one_ns;
            retransform_ns_max_ = std::max(retransform_ns_max_, one_ns);
            if (error == JVMTI_ERROR_NONE) {
                ++retransformed_;
            } else {
                const counting_lock lock(mutex_);
                left_alone("class: loaded before VMInit and not retransformable (JVMTI error " +
                           std::to_string(error) + ")");
            }
        }
    }
    for (jclass c : wanted) jni->DeleteLocalRef(c);
}

void exact_counting::left_alone(const std::string& reason) { ++reasons_[reason]; }

bool exact_counting::ensure_storage(JNIEnv* jni, std::uint32_t end_counter) {
    const std::size_t needed = (std::size_t{end_counter} + chunk_counters - 1) / chunk_counters;
    if (needed > max_chunks) return false;
    while (chunk_refs_.size() < needed) {
        jlongArray chunk = jni->NewLongArray(static_cast<jsize>(chunk_counters));
        if (chunk == nullptr) {
            jni->ExceptionClear(); // an OutOfMemoryError is the program's to meet, not ours
            return false;
        }
        jni->SetObjectArrayElement(chunks_, static_cast<jsize>(chunk_refs_.size()), chunk);
        if (jni->ExceptionCheck()) {
            jni->ExceptionClear();
            jni->DeleteLocalRef(chunk);
            return false;
        }
        chunk_refs_.push_back(static_cast<jlongArray>(jni->NewGlobalRef(chunk)));
        jni->DeleteLocalRef(chunk);
    }
    return true;
}

void exact_counting::on_class_file_load(JNIEnv* jni, jobject loader, const char* name, jint length,
                                        const unsigned char* data, jint* new_length,
                                        unsigned char** new_data) noexcept {
    if (!live_.load(std::memory_order_acquire) || jni == nullptr || length <= 0) return;
    if (name != nullptr && std::strcmp(name, "ojx/Counts") == 0) return;
    try {
        const counting_lock lock(mutex_);
        auto done = instrument_class(std::span(data, static_cast<std::size_t>(length)), kind_, next_counter_);
        if (!done) {
            left_alone("class: " + reason_kind(done.error().message));
            return;
        }
        if (done->counters != 0 && !ensure_storage(jni, next_counter_ + done->counters)) {
            left_alone("class: no counter storage left");
            return;
        }
        unsigned char* copy = nullptr;
        if (!done->bytes.empty()) {
            if (jvmti_->Allocate(static_cast<jlong>(done->bytes.size()), &copy) != JVMTI_ERROR_NONE) {
                left_alone("class: JVMTI Allocate failed");
                return;
            }
            std::memcpy(copy, done->bytes.data(), done->bytes.size());
        }
        jweak loader_ref = loader != nullptr ? jni->NewWeakGlobalRef(loader) : nullptr;
        for (method_counting& m : done->methods) {
            if (!m.graph) {
                if (m.refused && worth_naming(*m.refused)) left_alone("method: " + reason_kind(*m.refused));
                continue;
            }
            if (!m.refused) ++methods_instrumented_;
            counted_method& c = methods_.emplace_back();
            c.class_name = done->name;
            c.source_file = done->source_file;
            c.loader = loader_ref;
            c.code_length = m.new_to_original.size();
            c.corrections = std::make_unique<std::atomic<std::int64_t>[]>(m.graph->graph.site_count());
            c.reported.assign(m.graph->graph.site_count(), 0);
            c.reported_elements.assign(m.graph->graph.site_count(), 0);
            c.counting = std::move(m);
            by_name_[key_of(c.class_name, c.counting.name, c.counting.descriptor)].push_back(&c);
        }
        next_counter_ += done->counters;
        if (copy != nullptr) {
            *new_length = static_cast<jint>(done->bytes.size());
            *new_data = copy;
        }
    } catch (const std::exception& e) {
        try {
            const counting_lock lock(mutex_);
            left_alone(std::string("class: ") + reason_kind(e.what()));
        } catch (...) {
        }
    }
}

exact_counting::counted_method* exact_counting::lookup(JNIEnv* jni, jmethodID method) {
    if (const auto it = by_id_.find(method); it != by_id_.end()) return it->second;
    counted_method* found = nullptr;
    jboolean obsolete = JNI_TRUE; // a frame in code replaced since (retransformed): not what ojx counts
    jclass declaring = nullptr;
    char *class_signature = nullptr, *name = nullptr, *descriptor = nullptr;
    if (jvmti_->IsMethodObsolete(method, &obsolete) == JVMTI_ERROR_NONE && !obsolete &&
        jvmti_->GetMethodDeclaringClass(method, &declaring) == JVMTI_ERROR_NONE &&
        jvmti_->GetClassSignature(declaring, &class_signature, nullptr) == JVMTI_ERROR_NONE &&
        jvmti_->GetMethodName(method, &name, &descriptor, nullptr) == JVMTI_ERROR_NONE) {
        const std::string_view signature(class_signature);
        if (signature.size() > 2 && signature.front() == 'L') {
            const auto candidates =
                by_name_.find(key_of(signature.substr(1, signature.size() - 2), name, descriptor));
            jobject loader = nullptr;
            if (candidates != by_name_.end() && jvmti_->GetClassLoader(declaring, &loader) == JVMTI_ERROR_NONE) {
                // The latest definition by this class's loader is the one whose code runs.
                for (auto c = candidates->second.rbegin(); c != candidates->second.rend() && !found; ++c)
                    if (loader == nullptr ? (*c)->loader == nullptr
                                          : (*c)->loader != nullptr && jni->IsSameObject((*c)->loader, loader))
                        found = *c;
                if (loader != nullptr) jni->DeleteLocalRef(loader);
            }
        }
    }
    if (found != nullptr && !found->counting.counted_at_throws_only()) {
        // Code of another length is not what ojx returned: another agent changed it after ojx.
        jint length = 0;
        unsigned char* bytes = nullptr;
        if (jvmti_->GetBytecodes(method, &length, &bytes) == JVMTI_ERROR_NONE &&
            static_cast<std::size_t>(length) != found->code_length) {
            if (!found->changed_after_ojx.exchange(true)) left_alone("method: changed by another agent after ojx");
            found = nullptr;
        }
        deallocate(jvmti_, bytes);
    }
    if (declaring != nullptr) jni->DeleteLocalRef(declaring);
    deallocate(jvmti_, class_signature);
    deallocate(jvmti_, name);
    deallocate(jvmti_, descriptor);
    by_id_.emplace(method, found);
    return found;
}

namespace {

// Where control was in the original code when an exception left new offset `location`: (block, cut), and the site
// whose allocation had happened though the point does not show it. A location inside a counter's increment means
// the counter did not run: control is still at its link's start, having allocated the site the link allocates
// (a counter after a site sits right after the allocation), so the correction is the link start's plus that site.
struct throw_point {
    block_id block = 0;
    std::uint32_t cut = 0;
    std::optional<counting::site_id> allocated;
};

std::optional<throw_point> point_of(const method_counting& m, jlocation location) {
    const method_graph& g = *m.graph;
    if (location < 0) return std::nullopt;
    auto offset = static_cast<std::uint32_t>(location);
    if (!m.counted_at_throws_only()) {
        if (offset >= m.new_to_original.size()) return std::nullopt;
        const auto at = m.new_to_original[offset];
        if (at.in_counter) {
            const std::uint32_t k = at.value - m.first_counter;
            if (k >= m.plan.counters().size()) {
                // An elements counter's snippet runs after its array exists and after the plan's counters there.
                const std::uint32_t j = k - static_cast<std::uint32_t>(m.plan.counters().size());
                if (j >= m.element_sites.size()) return std::nullopt;
                const counting::site_id site = m.element_sites[j];
                return throw_point{g.graph.block_of(site), g.graph.position_of(site) + 1, std::nullopt};
            }
            const auto place = m.plan.counters()[k].place;
            if (place.where == counting::counter_place::kind::after_site)
                return throw_point{g.graph.block_of(place.index), g.graph.position_of(place.index), place.index};
            const block_id from = g.graph.edge(place.index).from;
            return throw_point{from, static_cast<std::uint32_t>(g.graph.block(from).sites.size()), std::nullopt};
        }
        offset = at.value;
    }
    const auto p = g.point_at(offset);
    if (!p) return std::nullopt;
    return throw_point{p->first, p->second, std::nullopt};
}

// The handler block at new offset `location` (a handler's start, never inside an increment).
std::optional<block_id> handler_at(const method_counting& m, jlocation location) {
    if (location < 0) return std::nullopt;
    auto offset = static_cast<std::uint32_t>(location);
    if (!m.counted_at_throws_only()) {
        if (offset >= m.new_to_original.size() || m.new_to_original[offset].in_counter) return std::nullopt;
        offset = m.new_to_original[offset].value;
    }
    return m.graph->block_at(offset);
}

} // namespace

void exact_counting::correct(const counted_method& c, jlocation location, std::optional<jlocation> catch_location) {
    const method_counting& m = c.counting;
    const auto point = point_of(m, location);
    if (!point) return;
    block_id handler = counting::no_block;
    if (catch_location) {
        const auto h = handler_at(m, *catch_location);
        if (!h) return;
        handler = *h;
    }
    counting::site_vector adds = m.plan.on_exception(m.graph->graph, point->block, point->cut, handler);
    if (point->allocated) adds = counting::counter_plan::sum(adds, {{*point->allocated, 1}});
    for (const auto& a : adds) c.corrections[a.site].fetch_add(a.amount, std::memory_order_relaxed);
    corrections_.fetch_add(1, std::memory_order_relaxed);
}

void exact_counting::on_exception(JNIEnv* jni, jthread thread, jmethodID method, jlocation location,
                                  jmethodID catch_method, jlocation catch_location) noexcept {
    if (!live_.load(std::memory_order_acquire)) return;
    try {
        const counting_lock lock(mutex_);
        // Whether frame (m, at), a frame of the catching method, is the one that catches: for a counted method,
        // its point's block must be covered by the handler (recursion puts other frames of it on the stack); for
        // another, the first such frame is taken.
        const auto catches = [&](const counted_method* c, jlocation at) {
            if (c == nullptr) return true;
            const auto p = point_of(c->counting, at);
            const auto h = handler_at(c->counting, catch_location);
            if (!p || !h) return true;
            const auto& handlers = c->counting.graph->graph.block(p->block).handlers;
            return std::find(handlers.begin(), handlers.end(), *h) != handlers.end();
        };
        // The common case, an exception caught where it is thrown, needs no stack walk.
        if (catch_method == method) {
            counted_method* c = lookup(jni, method);
            if (catches(c, location)) {
                if (c != nullptr) correct(*c, location, catch_location);
                return;
            }
        }
        constexpr jint batch = 64;
        jvmtiFrameInfo frames[batch];
        for (jint start = 0;; start += batch) {
            jint depth = 0;
            if (jvmti_->GetStackTrace(thread, start, batch, frames, &depth) != JVMTI_ERROR_NONE) return;
            for (jint i = 0; i < depth; ++i) {
                counted_method* c = lookup(jni, frames[i].method);
                if (catch_method != nullptr && frames[i].method == catch_method && catches(c, frames[i].location)) {
                    if (c != nullptr) correct(*c, frames[i].location, catch_location);
                    return;
                }
                if (c != nullptr) correct(*c, frames[i].location, std::nullopt);
            }
            if (depth < batch) return;
        }
    } catch (...) {
        // Out of memory in the agent: this correction is lost, the program is not.
    }
}

void exact_counting::on_reported_allocation(JNIEnv* jni, jmethodID method, jlocation location,
                                            const char* signature, std::uint64_t length) noexcept {
    if (!comparing_.load(std::memory_order_acquire) || location < 0 || holds_counting_lock) return;
    try {
        const counting_lock lock(mutex_);
        counted_method* c = lookup(jni, method);
        if (c == nullptr) return;
        const method_counting& m = c->counting;
        // A method counted only at throws runs its original code.
        auto original = static_cast<std::uint32_t>(location);
        if (!m.counted_at_throws_only()) {
            if (original >= m.new_to_original.size() || m.new_to_original[original].in_counter) return;
            original = m.new_to_original[original].value;
        }
        const auto site = std::find(m.site_offsets.begin(), m.site_offsets.end(), original);
        if (site == m.site_offsets.end()) return;
        const auto s = static_cast<std::size_t>(site - m.site_offsets.begin());
        if (s < m.site_types.size() && m.site_types[s] == signature) {
            ++c->reported[s];
            c->reported_elements[s] += length;
        }
    } catch (...) {
        // Out of memory in the agent: the comparison loses this allocation, the program nothing.
    }
}

exact_counts exact_counting::collect(JNIEnv* jni) {
    const counting_lock lock(mutex_);
    std::vector<std::uint64_t> values(chunk_refs_.size() * chunk_counters, 0);
    for (std::size_t i = 0; i < chunk_refs_.size(); ++i)
        jni->GetLongArrayRegion(chunk_refs_[i], 0, static_cast<jsize>(chunk_counters),
                                reinterpret_cast<jlong*>(values.data() + i * chunk_counters));
    exact_counts out;
    out.plans.emplace_back(plan_kind_name(kind_));
    out.corrections = corrections_.load(std::memory_order_relaxed);
    out.methods_instrumented = methods_instrumented_;
    out.left_alone.assign(reasons_.begin(), reasons_.end());
    out.jvm_reported = comparing_.load(std::memory_order_relaxed);
    for (const counted_method& c : methods_) {
        if (c.changed_after_ojx.load(std::memory_order_relaxed)) continue;
        const method_counting& m = c.counting;
        const std::size_t sites = m.graph->graph.site_count();
        std::vector<std::int64_t> totals(sites, 0);
        for (std::size_t s = 0; s < sites; ++s) totals[s] = c.corrections[s].load(std::memory_order_relaxed);
        const std::size_t first = m.first_counter, planned = m.plan.counters().size();
        std::vector<std::uint64_t> elements(sites, 0);
        if (first + m.counters() <= values.size()) {
            const std::span<const std::uint64_t> counted = std::span(values).subspan(first, planned);
            counting::add_counted(m.plan, counted, totals);
            for (const std::uint64_t v : counted) out.increments += v; // the plan's cost; lengths are not increments
            for (std::size_t j = 0; j < m.element_sites.size(); ++j) elements[m.element_sites[j]] = values[first + planned + j];
        }
        const std::string class_name = java_type_name("L" + c.class_name + ";");
        for (std::size_t s = 0; s < sites; ++s) {
            if (totals[s] <= 0 && c.reported[s] == 0) continue; // negative only while executions are under way
            counted_site site;
            site.method = class_name + "." + m.name + m.descriptor;
            site.bci = m.site_offsets[s];
            const std::int32_t line = s < m.site_lines.size() ? m.site_lines[s] : -1;
            site.frame = java_frame_name(class_name, m.name, c.source_file, line, static_cast<std::int32_t>(site.bci),
                                         false);
            site.type = s < m.site_types.size() ? java_type_name(m.site_types[s]) : std::string("?");
            site.objects = static_cast<std::uint64_t>(std::max<std::int64_t>(totals[s], 0));
            site.jvm_allocated = c.reported[s];
            site.jvm_elements = c.reported_elements[s];
            site.elements = elements[s];
            out.sites.push_back(std::move(site));
        }
    }
    normalise(out);
    return out;
}

std::vector<std::pair<std::string, std::uint64_t>> exact_counting::counters() const {
    return {{"count_classes_retransformed", retransformed_},
            {"count_retransform_batches", retransform_batches_},
            {"count_retransform_us_max", retransform_ns_max_ / 1000},
            {"count_retransform_us_total", retransform_ns_total_ / 1000}};
}

} // namespace ojx::jvm
