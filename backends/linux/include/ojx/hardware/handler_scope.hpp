// Where ojx's own signal handlers run, for the test of their rules: a handler allocates nothing and takes no lock
// the interrupted code may hold (tests/linux/handler_rules.cpp aborts the process when one does). Every handler
// of ojx's (the backend's sampling, step and overflow handlers, the fault guard's, the JVM agent's probe, the
// native agent's exit-signal catcher) opens a handler_scope for as long as its own code runs, and closes it
// before it chains a signal on to the program's handler, whose rules are the program's.
//
// The observer is a weak symbol: in production nothing defines it, the dynamic linker resolves it to null when the
// library is loaded, and a scope costs one test of that address. A test defines it, in a preloaded library or in
// the test program itself. A flag set by the handlers, rather than a stack walk from inside malloc, because it is
// exact (a walk would have to unwind through the signal frame and recognise our handlers' code) and needs nothing
// from the allocator's caller.
#pragma once

// Called with 1 when a handler of ours begins on the calling thread and 0 when it ends; scopes nest (a fault
// inside a sampling handler's guarded read runs the fault guard's handler within it).
extern "C" void ojx_handler_observer(int entering) noexcept __attribute__((weak, visibility("default")));

namespace ojx::hardware {

// Signal-safe: marks the calling thread as running one of ojx's handlers from construction to destruction.
class handler_scope {
public:
    handler_scope() noexcept {
        if (ojx_handler_observer != nullptr) ojx_handler_observer(1);
    }
    ~handler_scope() {
        if (ojx_handler_observer != nullptr) ojx_handler_observer(0);
    }
    handler_scope(const handler_scope&) = delete;
    handler_scope& operator=(const handler_scope&) = delete;
};

} // namespace ojx::hardware
