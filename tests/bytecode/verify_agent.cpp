// ojx_verify_agent: a JVMTI agent for the bytecode_verify_* tests. It rewrites every class the JVM loads after
// VMInit with instrument_class (the plan named by its options: sites, paths or edges), so that the JVM's own
// verifier (-Xverify:all) judges what the instrumenter writes, and prints at VMDeath what it saw: classes seen,
// rewritten, left alone, failed (with reasons), and methods instrumented and refused (with reasons).
//
//   java -agentpath:libojx_verify_agent.so=paths -Xbootclasspath/a:DIR_WITH_ojx/Counts ...
//
// With the option `PLAN,break=PREFIX` it also sets max_stack to 0 in every method it instruments in classes whose
// name starts with PREFIX: a negative control, so that the test shows the JVM does reject what it is given
// (classes the JVM needs to start must stay intact, hence the prefix).
//
// Classes loaded before VMInit are left alone: until then no module reads the boot loader's unnamed module that
// holds ojx/Counts, so a call to it from java.base would fail access checks. At VMInit every module is made to read
// it (AddModuleReads); modules defined later are class loaders' unnamed modules, which read every module.
#include "ojx/bytecode/class_instrumenter.hpp"
#include "ojx/bytecode/class_reader.hpp"
#include "ojx/bytecode/class_writer.hpp"

#include <jvmti.h>

#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

using namespace ojx::bytecode;

namespace {

struct agent_state {
    plan_kind kind = plan_kind::paths;
    bool break_code = false; // the negative control
    std::string break_prefix;
    std::atomic<bool> live{false};
    std::mutex lock; // guards everything below, and counter numbering
    std::uint32_t next_counter = 0;
    std::size_t seen_early = 0;
    std::size_t seen = 0;
    std::size_t rewritten = 0;
    std::size_t unchanged = 0;
    std::size_t failed = 0;
    std::size_t methods_instrumented = 0;
    std::size_t methods_refused = 0;
    std::map<std::string, std::size_t> class_reasons;
    std::map<std::string, std::size_t> method_reasons;
};

agent_state* state = nullptr;

void JNICALL on_class_file_load_hook(jvmtiEnv* jvmti, JNIEnv*, jclass, jobject, const char* name, jobject,
    jint length, const unsigned char* data, jint* new_length, unsigned char** new_data) {
    if (!state->live.load()) {
        std::lock_guard guard(state->lock);
        ++state->seen_early;
        return;
    }
    std::lock_guard guard(state->lock);
    ++state->seen;
    try {
        auto done = instrument_class(std::span(data, static_cast<std::size_t>(length)), state->kind,
            state->next_counter);
        if (!done) {
            ++state->failed;
            ++state->class_reasons[reason_kind(done.error().message)];
            return;
        }
        for (const auto& m : done->methods) {
            if (m.refused) {
                ++state->methods_refused;
                ++state->method_reasons[reason_kind(*m.refused)];
            } else {
                ++state->methods_instrumented;
            }
        }
        if (done->bytes.empty()) {
            ++state->unchanged;
            return;
        }
        if (state->break_code && name && std::string_view(name).starts_with(state->break_prefix)) {
            auto parsed = read_class(done->bytes);
            if (parsed) {
                for (std::size_t i = 0, m = 0; i < parsed->methods.size(); ++i) {
                    if (auto* code = parsed->methods[i].code(); code && !done->methods[m++].refused) {
                        code->max_stack = 0;
                    }
                }
                if (auto written = write_class(*parsed)) {
                    done->bytes = std::move(written).value();
                }
            }
        }
        unsigned char* copy = nullptr;
        if (jvmti->Allocate(static_cast<jlong>(done->bytes.size()), &copy) != JVMTI_ERROR_NONE) {
            ++state->failed;
            ++state->class_reasons["JVMTI Allocate failed"];
            return;
        }
        std::memcpy(copy, done->bytes.data(), done->bytes.size());
        *new_length = static_cast<jint>(done->bytes.size());
        *new_data = copy;
        state->next_counter += done->counters;
        ++state->rewritten;
    } catch (const std::exception& e) {
        ++state->failed;
        ++state->class_reasons[std::string("exception: ") + e.what()];
    }
}

void JNICALL on_vm_init(jvmtiEnv* jvmti, JNIEnv* jni, jthread) {
    jclass counts = jni->FindClass("ojx/Counts");
    jclass class_class = jni->FindClass("java/lang/Class");
    jmethodID get_module = class_class ? jni->GetMethodID(class_class, "getModule", "()Ljava/lang/Module;") : nullptr;
    jobject module = counts && get_module ? jni->CallObjectMethod(counts, get_module) : nullptr;
    if (!module || jni->ExceptionCheck()) {
        jni->ExceptionClear();
        std::fprintf(stderr, "ojx-verify-agent: ojx/Counts is not on the boot class path; nothing is rewritten\n");
        return;
    }
    jint count = 0;
    jobject* modules = nullptr;
    if (jvmti->GetAllModules(&count, &modules) != JVMTI_ERROR_NONE) {
        std::fprintf(stderr, "ojx-verify-agent: GetAllModules failed; nothing is rewritten\n");
        return;
    }
    for (jint i = 0; i < count; ++i) {
        jvmti->AddModuleReads(modules[i], module);
    }
    jvmti->Deallocate(reinterpret_cast<unsigned char*>(modules));
    state->live = true;
}

void JNICALL on_vm_death(jvmtiEnv*, JNIEnv*) {
    std::lock_guard guard(state->lock);
    std::fprintf(stderr,
        "ojx-verify-agent: plan %s%s: classes seen before VMInit %zu (left alone), seen %zu, rewritten %zu, "
        "unchanged %zu, failed %zu; methods instrumented %zu, refused %zu; counters %u\n",
        plan_kind_name(state->kind), state->break_code ? (" (" + state->break_prefix + "* broken on purpose)").c_str() : "", state->seen_early, state->seen, state->rewritten, state->unchanged,
        state->failed, state->methods_instrumented, state->methods_refused, state->next_counter);
    for (const auto& [reason, n] : state->class_reasons) {
        std::fprintf(stderr, "ojx-verify-agent:   class failed %zu: %s\n", n, reason.c_str());
    }
    for (const auto& [reason, n] : state->method_reasons) {
        std::fprintf(stderr, "ojx-verify-agent:   method refused %zu: %s\n", n, reason.c_str());
    }
    std::fflush(stderr);
}

} // namespace

extern "C" JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM* vm, char* options, void*) {
    state = new agent_state;
    std::string_view plan = options ? options : "paths";
    if (const auto comma = plan.find(",break="); comma != std::string_view::npos) {
        state->break_code = true;
        state->break_prefix = std::string(plan.substr(comma + 7));
        plan = plan.substr(0, comma);
    }
    if (plan == "sites") {
        state->kind = plan_kind::sites;
    } else if (plan == "paths" || plan.empty()) {
        state->kind = plan_kind::paths;
    } else if (plan == "edges") {
        state->kind = plan_kind::edges;
    } else {
        std::fprintf(stderr, "ojx-verify-agent: unknown plan %s (sites, paths or edges)\n", options);
        return JNI_ERR;
    }
    jvmtiEnv* jvmti = nullptr;
    if (vm->GetEnv(reinterpret_cast<void**>(&jvmti), JVMTI_VERSION_9) != JNI_OK) {
        std::fprintf(stderr, "ojx-verify-agent: no JVMTI 9 environment\n");
        return JNI_ERR;
    }
    jvmtiCapabilities capabilities{};
    capabilities.can_generate_all_class_hook_events = 1;
    if (jvmti->AddCapabilities(&capabilities) != JVMTI_ERROR_NONE) {
        std::fprintf(stderr, "ojx-verify-agent: cannot get can_generate_all_class_hook_events\n");
        return JNI_ERR;
    }
    jvmtiEventCallbacks callbacks{};
    callbacks.ClassFileLoadHook = on_class_file_load_hook;
    callbacks.VMInit = on_vm_init;
    callbacks.VMDeath = on_vm_death;
    jvmti->SetEventCallbacks(&callbacks, sizeof callbacks);
    jvmti->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_CLASS_FILE_LOAD_HOOK, nullptr);
    jvmti->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_VM_INIT, nullptr);
    jvmti->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_VM_DEATH, nullptr);
    return JNI_OK;
}
