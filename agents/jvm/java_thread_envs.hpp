// The JNIEnv of each Java thread the agent samples, by kernel thread id, for AsyncGetCallTrace in the signal
// handler. JavaVM::GetEnv must not be called there: it reads the JVM's thread-local variable, which in a library
// loaded at run time (libjvm.so is) may be allocated on a thread's first touch, so a handler that interrupted
// malloc would enter malloc again (JDK-8132510; a heap corruption in another JVM profiler). Each thread's env is
// noted where JVMTI hands it over, outside any handler; the handler only looks it up.
#pragma once

#include "ojx/hardware/thread_table.hpp"

#include <jni.h>
#include <sys/types.h>

#include <mutex>

namespace ojx::jvm {

class java_thread_envs {
public:
    // Notes the env of thread `tid` (at its ThreadStart, at VMInit, or found running at a dynamic attach). Called
    // before the thread is attached to the profiling session, so that a handler on it never sees its entry
    // change. False when the table is full: that thread's samples go unwalked.
    bool add(pid_t tid, JNIEnv* env) {
        const std::lock_guard lock(mutex_);
        JNIEnv** slot = table_.add(tid);
        if (slot == nullptr) return false;
        *slot = env;
        return true;
    }
    // At the thread's end, after it is detached from the session.
    void remove(pid_t tid) {
        const std::lock_guard lock(mutex_);
        table_.remove(tid);
    }
    // Signal-safe (no lock, no allocation): the env of `tid`, or nullptr for a thread never noted.
    JNIEnv* find(pid_t tid) noexcept {
        JNIEnv* const* slot = table_.find(tid);
        return slot != nullptr ? *slot : nullptr;
    }

private:
    std::mutex mutex_; // serializes add and remove (thread_table's rule); never taken in a handler
    hardware::thread_table<JNIEnv*> table_;
};

} // namespace ojx::jvm
