// A preloaded library that checks the rule for ojx's signal handlers: while one of them runs on a thread (each
// marks its extent, ojx/hardware/handler_scope.hpp), that thread calls no allocator function and waits for no
// lock. A call that breaks the rule writes what was called and from where, and aborts the process, so that the
// test running a program under this library fails (handler_rules_suite.py).
//
//   LD_PRELOAD=libhandler_rules.so:libojxpreload.so program       (first, so that the agent's malloc is checked too)
//   LD_PRELOAD=libhandler_rules.so java -agentpath:libojx.so ...
//
// At exit it writes "handler_rules: N handler runs watched" to standard error, so that a test can tell that the
// handlers did run under it. Checked: the C allocator (malloc, calloc, realloc, free, the aligned allocators),
// operator new and delete (the native agent defines its own, which call the C library directly), the blocking
// pthread locks and semaphores, and the dynamic loader's lock takers (dlopen, dlsym, dladdr, dl_iterate_phdr).
// Each call is passed on to the next definition in the process (the agent's or the C library's).
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <semaphore.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

extern "C" {
void* __libc_malloc(std::size_t size);
void* __libc_calloc(std::size_t count, std::size_t size);
void* __libc_realloc(void* pointer, std::size_t size);
void __libc_free(void* pointer);
void* __libc_memalign(std::size_t alignment, std::size_t size);
}

namespace {

// How deep in ojx's handlers this thread is (they nest). Initial-exec: a preloaded library's thread-local lives
// in the static block made with each thread, so reading it from a handler allocates nothing.
thread_local int handler_depth __attribute__((tls_model("initial-exec"))) = 0;
std::atomic<std::uint64_t> handler_runs{0};

void write_text(const char* text) noexcept {
    const std::size_t length = std::strlen(text);
    for (std::size_t at = 0; at < length;) {
        const ssize_t wrote = ::write(STDERR_FILENO, text + at, length - at);
        if (wrote <= 0) return;
        at += static_cast<std::size_t>(wrote);
    }
}

// Async-signal-safe: aborts when the calling thread is inside one of ojx's handlers.
void check(const char* function, const void* caller) noexcept {
    if (handler_depth == 0) return;
    char line[192];
    // snprintf with %p and %s only: no allocation, no lock in glibc.
    std::snprintf(line, sizeof line, "handler_rules: %s called inside an ojx signal handler (from %p); aborting\n",
                  function, caller);
    write_text(line);
    std::abort();
}

#define OJX_CHECK(function) check(function, __builtin_return_address(0))

// The next definition of `name` after this library's, resolved once outside any handler (a constructor below),
// or at first use. Until then the allocator calls go to the C library's own entry points.
template <class F>
F next(const char* name) noexcept {
    return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

using malloc_function = void* (*)(std::size_t);
using calloc_function = void* (*)(std::size_t, std::size_t);
using realloc_function = void* (*)(void*, std::size_t);
using free_function = void (*)(void*);
using memalign_function = void* (*)(std::size_t, std::size_t);
using posix_memalign_function = int (*)(void**, std::size_t, std::size_t);
std::atomic<malloc_function> next_malloc{nullptr};
std::atomic<calloc_function> next_calloc{nullptr};
std::atomic<realloc_function> next_realloc{nullptr};
std::atomic<free_function> next_free{nullptr};
std::atomic<memalign_function> next_memalign{nullptr};
std::atomic<memalign_function> next_aligned_alloc{nullptr};
std::atomic<posix_memalign_function> next_posix_memalign{nullptr};
std::atomic<malloc_function> next_valloc{nullptr};
std::atomic<malloc_function> next_new{nullptr};
std::atomic<malloc_function> next_new_array{nullptr};
std::atomic<free_function> next_delete{nullptr};
std::atomic<free_function> next_delete_array{nullptr};

__attribute__((constructor(101))) void resolve_allocator() {
    // dlsym may allocate: each pointer is published only once resolved, and until then calls go to the C library.
    next_calloc.store(next<calloc_function>("calloc"));
    next_malloc.store(next<malloc_function>("malloc"));
    next_realloc.store(next<realloc_function>("realloc"));
    next_free.store(next<free_function>("free"));
    next_memalign.store(next<memalign_function>("memalign"));
    next_aligned_alloc.store(next<memalign_function>("aligned_alloc"));
    next_posix_memalign.store(next<posix_memalign_function>("posix_memalign"));
    next_valloc.store(next<malloc_function>("valloc"));
    next_new.store(next<malloc_function>("_Znwm"));
    next_new_array.store(next<malloc_function>("_Znam"));
    next_delete.store(next<free_function>("_ZdlPv"));
    next_delete_array.store(next<free_function>("_ZdaPv"));
}

__attribute__((destructor)) void report() {
    char line[96];
    std::snprintf(line, sizeof line, "handler_rules: %llu handler runs watched\n",
                  static_cast<unsigned long long>(handler_runs.load()));
    write_text(line);
}

// A lock function's next definition, resolved at its first call (dlsym takes the loader's own lock, not these).
template <class F>
F next_lock(std::atomic<F>& cached, const char* name) noexcept {
    F function = cached.load(std::memory_order_acquire);
    if (function == nullptr) {
        function = next<F>(name);
        cached.store(function, std::memory_order_release);
    }
    return function;
}

} // namespace

extern "C" {

__attribute__((visibility("default"))) void ojx_handler_observer(int entering) noexcept {
    if (entering != 0) {
        ++handler_depth;
        handler_runs.fetch_add(1, std::memory_order_relaxed);
    } else {
        --handler_depth;
    }
}

void* malloc(std::size_t size) {
    OJX_CHECK("malloc");
    const malloc_function f = next_malloc.load(std::memory_order_acquire);
    return f != nullptr ? f(size) : __libc_malloc(size);
}

void* calloc(std::size_t count, std::size_t size) {
    OJX_CHECK("calloc");
    const calloc_function f = next_calloc.load(std::memory_order_acquire);
    return f != nullptr ? f(count, size) : __libc_calloc(count, size);
}

void* realloc(void* pointer, std::size_t size) {
    OJX_CHECK("realloc");
    const realloc_function f = next_realloc.load(std::memory_order_acquire);
    return f != nullptr ? f(pointer, size) : __libc_realloc(pointer, size);
}

void free(void* pointer) {
    OJX_CHECK("free");
    const free_function f = next_free.load(std::memory_order_acquire);
    if (f != nullptr)
        f(pointer);
    else
        __libc_free(pointer);
}

void* memalign(std::size_t alignment, std::size_t size) {
    OJX_CHECK("memalign");
    const memalign_function f = next_memalign.load(std::memory_order_acquire);
    return f != nullptr ? f(alignment, size) : __libc_memalign(alignment, size);
}

void* aligned_alloc(std::size_t alignment, std::size_t size) {
    OJX_CHECK("aligned_alloc");
    const memalign_function f = next_aligned_alloc.load(std::memory_order_acquire);
    return f != nullptr ? f(alignment, size) : __libc_memalign(alignment, size);
}

int posix_memalign(void** result, std::size_t alignment, std::size_t size) {
    OJX_CHECK("posix_memalign");
    if (const posix_memalign_function f = next_posix_memalign.load(std::memory_order_acquire))
        return f(result, alignment, size);
    *result = __libc_memalign(alignment, size);
    return *result != nullptr ? 0 : ENOMEM;
}

void* valloc(std::size_t size) {
    OJX_CHECK("valloc");
    const malloc_function f = next_valloc.load(std::memory_order_acquire);
    return f != nullptr ? f(size) : __libc_memalign(static_cast<std::size_t>(sysconf(_SC_PAGESIZE)), size);
}

#define OJX_LOCK(name, signature, arguments)                                                                      \
    int name signature {                                                                                          \
        OJX_CHECK(#name);                                                                                         \
        using function = int(*) signature;                                                                        \
        static std::atomic<function> cached{nullptr};                                                             \
        return next_lock(cached, #name) arguments;                                                                \
    }

OJX_LOCK(pthread_mutex_lock, (pthread_mutex_t * mutex), (mutex))
OJX_LOCK(pthread_mutex_trylock, (pthread_mutex_t * mutex), (mutex))
OJX_LOCK(pthread_mutex_timedlock, (pthread_mutex_t * mutex, const timespec* until), (mutex, until))
OJX_LOCK(pthread_rwlock_rdlock, (pthread_rwlock_t * lock), (lock))
OJX_LOCK(pthread_rwlock_wrlock, (pthread_rwlock_t * lock), (lock))
OJX_LOCK(pthread_spin_lock, (pthread_spinlock_t * lock), (lock))
OJX_LOCK(pthread_cond_wait, (pthread_cond_t * condition, pthread_mutex_t* mutex), (condition, mutex))
OJX_LOCK(pthread_cond_timedwait, (pthread_cond_t * condition, pthread_mutex_t* mutex, const timespec* until),
         (condition, mutex, until))
OJX_LOCK(sem_wait, (sem_t * semaphore), (semaphore))
OJX_LOCK(sem_timedwait, (sem_t * semaphore, const timespec* until), (semaphore, until))
OJX_LOCK(dl_iterate_phdr, (int (*visit)(dl_phdr_info*, std::size_t, void*), void* data), (visit, data))
OJX_LOCK(dladdr, (const void* address, Dl_info* info), (address, info))

void* dlopen(const char* file, int mode) {
    OJX_CHECK("dlopen");
    using function = void* (*)(const char*, int);
    static std::atomic<function> cached{nullptr};
    return next_lock(cached, "dlopen")(file, mode);
}

} // extern "C"

// operator new and delete: libstdc++'s call malloc, but the native agent defines its own, which do not.
void* operator new(std::size_t size) {
    OJX_CHECK("operator new");
    const malloc_function f = next_new.load(std::memory_order_acquire);
    void* pointer = f != nullptr ? f(size) : __libc_malloc(size == 0 ? 1 : size);
    if (pointer == nullptr) throw std::bad_alloc();
    return pointer;
}
void* operator new[](std::size_t size) {
    OJX_CHECK("operator new[]");
    const malloc_function f = next_new_array.load(std::memory_order_acquire);
    void* pointer = f != nullptr ? f(size) : __libc_malloc(size == 0 ? 1 : size);
    if (pointer == nullptr) throw std::bad_alloc();
    return pointer;
}
void operator delete(void* pointer) noexcept {
    OJX_CHECK("operator delete");
    const free_function f = next_delete.load(std::memory_order_acquire);
    if (f != nullptr)
        f(pointer);
    else
        __libc_free(pointer);
}
void operator delete[](void* pointer) noexcept {
    OJX_CHECK("operator delete[]");
    const free_function f = next_delete_array.load(std::memory_order_acquire);
    if (f != nullptr)
        f(pointer);
    else
        __libc_free(pointer);
}
void operator delete(void* pointer, std::size_t) noexcept { operator delete(pointer); }
void operator delete[](void* pointer, std::size_t) noexcept { operator delete[](pointer); }
