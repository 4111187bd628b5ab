// The descriptors of the agent's stack unwinder, kept apart from the program's. libunwind checks an address it is
// unsure of by writing a byte of it into a pipe of its own (made at its first unwind, at the lowest free numbers);
// where a read of that pipe fails, as after a program closed every inherited descriptor, it closes both numbers
// and makes a new pipe — closing, and before that reading from and writing into, whatever the program has put at
// those numbers since: its own files (descriptor_closer lost its whole output in 6 of 80 runs).
//
// So the agent unwinds inside an unwinder_scope, and on that thread, while the scope is open, the pipe2, close,
// read and write this library interposes act only on the unwinder's own pipe: a new one is moved above the
// program's numbers (high_descriptor_floor), and a descriptor that is not that pipe any more (checked by its
// inode, as the agent checks its other descriptors) is neither read, written nor closed — the call fails with
// EBADF, and libunwind makes a new pipe. Outside the scope these functions are the C library's.
#pragma once

namespace ojx::preload {

class unwinder_scope {
public:
    unwinder_scope() noexcept;
    ~unwinder_scope();
    unwinder_scope(const unwinder_scope&) = delete;
    unwinder_scope& operator=(const unwinder_scope&) = delete;
};

} // namespace ojx::preload
