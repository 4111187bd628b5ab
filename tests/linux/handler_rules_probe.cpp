// The check of handler_rules.cpp, checked: a program whose own SIGUSR1 handler marks itself as one of ojx's
// (handler_scope) and then does what its argument says. Under LD_PRELOAD=libhandler_rules.so, `clean` must exit 0
// and `malloc` and `lock` must be aborted by the library, so that a handler of ojx's that allocated or locked
// could not pass unnoticed. Outside the handler, both are done freely first.
//
//   handler_rules_probe clean|malloc|lock
#include "ojx/hardware/handler_scope.hpp"

#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

enum class action { clean, allocate, lock };
volatile action chosen = action::clean;
pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
void* volatile kept = nullptr;

void on_signal(int) {
    const ojx::hardware::handler_scope ours;
    switch (chosen) {
    case action::clean: break;
    case action::allocate: kept = std::malloc(64); break;
    case action::lock:
        pthread_mutex_lock(&mutex);
        pthread_mutex_unlock(&mutex);
        break;
    }
}

} // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: handler_rules_probe clean|malloc|lock\n");
        return 2;
    }
    if (std::strcmp(argv[1], "malloc") == 0)
        chosen = action::allocate;
    else if (std::strcmp(argv[1], "lock") == 0)
        chosen = action::lock;
    else if (std::strcmp(argv[1], "clean") != 0)
        return 2;
    // Outside a handler, allocating and locking are fine.
    std::free(std::malloc(64));
    pthread_mutex_lock(&mutex);
    pthread_mutex_unlock(&mutex);
    struct sigaction handler {};
    handler.sa_handler = on_signal;
    sigemptyset(&handler.sa_mask);
    if (sigaction(SIGUSR1, &handler, nullptr) != 0) return 2;
    raise(SIGUSR1);
    std::free(kept);
    std::printf("handler returned\n");
    return 0;
}
