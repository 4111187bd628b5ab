#include "unwinder_descriptors.hpp"

#include "ojx/hardware/agent_output_file.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

namespace ojx::preload {

namespace {

// Initial-exec: the agent is preloaded, so its TLS is in the static block, reached without a call (a read or
// write of the program's must not pay for a TLS lookup).
[[gnu::tls_model("initial-exec")]] constinit thread_local bool unwinding = false;

using pipe2_function = int (*)(int*, int);
using close_function = int (*)(int);
using read_function = ssize_t (*)(int, void*, size_t);
using write_function = ssize_t (*)(int, const void*, size_t);
pipe2_function real_pipe2 = nullptr;
close_function real_close = nullptr;
read_function real_read = nullptr;
write_function real_write = nullptr;

// The unwinder's pipe (both ends share one inode); 0 before it makes one.
std::atomic<dev_t> pipe_device{0};
std::atomic<ino_t> pipe_inode{0};

bool is_unwinder_pipe(int fd) noexcept {
    struct stat status {};
    const int saved = errno;
    const bool same = fd >= 0 && ::fstat(fd, &status) == 0 && status.st_ino == pipe_inode.load() &&
                      status.st_dev == pipe_device.load();
    errno = saved;
    return same;
}

int not_ours() noexcept {
    errno = EBADF;
    return -1;
}

// `fd` at high_descriptor_floor() or above (itself where that fails), close-on-exec.
int moved_high(int fd) noexcept {
    const int floor = hardware::high_descriptor_floor();
    if (floor < 0 || fd >= floor) return fd;
    const int high = ::fcntl(fd, F_DUPFD_CLOEXEC, floor);
    if (high < 0) return fd;
    ::syscall(SYS_close, fd);
    return high;
}

} // namespace

unwinder_scope::unwinder_scope() noexcept { unwinding = true; }
unwinder_scope::~unwinder_scope() { unwinding = false; }

// The C library's functions, looked up as the agent is loaded (the program's own constructors may already read
// and write); calls before that go to the system calls themselves.
[[gnu::constructor(101)]] static void find_descriptor_functions() noexcept {
    real_pipe2 = reinterpret_cast<pipe2_function>(dlsym(RTLD_NEXT, "pipe2"));
    real_close = reinterpret_cast<close_function>(dlsym(RTLD_NEXT, "close"));
    real_read = reinterpret_cast<read_function>(dlsym(RTLD_NEXT, "read"));
    real_write = reinterpret_cast<write_function>(dlsym(RTLD_NEXT, "write"));
}

} // namespace ojx::preload

using namespace ojx::preload;

extern "C" {

int pipe2(int fds[2], int flags) {
    if (!unwinding) return real_pipe2 ? real_pipe2(fds, flags) : static_cast<int>(::syscall(SYS_pipe2, fds, flags));
    if (::syscall(SYS_pipe2, fds, flags) != 0) return -1;
    fds[0] = moved_high(fds[0]);
    fds[1] = moved_high(fds[1]);
    struct stat status {};
    if (::fstat(fds[0], &status) == 0) {
        pipe_device.store(status.st_dev);
        pipe_inode.store(status.st_ino);
    }
    return 0;
}

int close(int fd) {
    if (!unwinding) return real_close ? real_close(fd) : static_cast<int>(::syscall(SYS_close, fd));
    return is_unwinder_pipe(fd) ? static_cast<int>(::syscall(SYS_close, fd)) : not_ours();
}

ssize_t read(int fd, void* buffer, size_t bytes) {
    if (!unwinding) return real_read ? real_read(fd, buffer, bytes) : ::syscall(SYS_read, fd, buffer, bytes);
    return is_unwinder_pipe(fd) ? ::syscall(SYS_read, fd, buffer, bytes) : not_ours();
}

ssize_t write(int fd, const void* buffer, size_t bytes) {
    if (!unwinding) return real_write ? real_write(fd, buffer, bytes) : ::syscall(SYS_write, fd, buffer, bytes);
    return is_unwinder_pipe(fd) ? ::syscall(SYS_write, fd, buffer, bytes) : not_ours();
}

} // extern "C"
