// How the agents write their files (the profile, file=; the trace, record=) into a program they share a process
// with, and possibly as root:
//
// - Descriptors: every descriptor an agent keeps is moved above the numbers a program is normally given
//   (owned_descriptor), and remembers which file it is. Before each write and before the close it checks that the
//   number still names that file: a program that closed its inherited descriptors and was given the number for a
//   file of its own never has ojx's bytes written into that file, nor that file closed under it.
// - Where: names are made absolute when the agent starts (resolve against the start directory, not the one the
//   program has at exit). A symbolic link is followed, except one in a world-writable sticky directory (/tmp) that
//   neither the directory's owner nor this process's effective user owns: the kernel's protected_symlinks rule,
//   applied whether or not the kernel enforces it, so that a root-run agent cannot be steered onto a file of
//   root's by a link another user planted. A FIFO or character device named (or linked to) is written in place,
//   and so is a descriptor of the process named by /proc/PID/fd/N (what /dev/stdout and /dev/fd/N lead to): opened
//   again, appending, so that `file=/dev/stdout` adds the profile to whatever standard output is, a regular file
//   included, instead of replacing that file.
// - How: a profile is written whole or not at all (output_file: a new file in the target's directory, created
//   exclusively with mode 0600, synced, then renamed over the target), so concurrent writers of one name leave
//   one of their profiles, never a mixture, and a failure leaves the previous file as it was. A trace is a
//   stream written while the program runs (open_output_stream): created 0600, locked so that a second recorder
//   of the same file is refused rather than interleaved.
//
// Every failure is one line naming the file and the reason.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <ostream>
#include <span>
#include <string>

namespace ojx::hardware {

// The lowest number an agent's descriptors are moved to: below the soft RLIMIT_NOFILE (F_DUPFD cannot go above
// it), a margin under min(limit, 4096) — high enough that a program reaches it only with thousands of files open,
// low enough that the kernel's descriptor table is not grown to a huge limit's size for it. Every descriptor an
// agent keeps goes here (files, perf events, the unwinder's pipe), so that the table grows once: in a
// multi-threaded process (a JVM) each growth waits for an RCU grace period (≈ 14 ms on this project's VMs).
int high_descriptor_floor() noexcept;

// A descriptor the agent owns. Invariant: while `lost()` is false, the number was last seen (by fstat, before the
// latest write or close) naming the file it was opened on; once it is found naming anything else (or nothing),
// it is never written or closed again.
class owned_descriptor {
public:
    owned_descriptor() = default;
    // Takes `fd` (just opened by the agent): moves it to high_descriptor_floor() or above, close-on-exec (keeps
    // the original number where it cannot be moved), and records its file's identity.
    explicit owned_descriptor(int fd) noexcept;
    owned_descriptor(owned_descriptor&& other) noexcept;
    owned_descriptor& operator=(owned_descriptor&& other) noexcept;
    owned_descriptor(const owned_descriptor&) = delete;
    owned_descriptor& operator=(const owned_descriptor&) = delete;
    ~owned_descriptor() { close(); }

    bool is_open() const noexcept { return fd_ >= 0; }
    int number() const noexcept { return fd_; }
    // Whether the number still names the file it was opened on; if not, the descriptor is lost from now on.
    bool still_ours() noexcept;
    bool lost() const noexcept { return lost_; }

    // Writes all of `bytes`, checking before each write(2) that the descriptor is still ours. 0, or the errno of
    // the failed write; ESTALE when the descriptor was lost (nothing more is written); EFBIG, with nothing
    // written, when a regular file would grow past RLIMIT_FSIZE (the write would raise SIGXFSZ, which kills).
    int write_all(std::span<const std::byte> bytes) noexcept;
    // Closes the descriptor if it is still ours, else only forgets it. 0, or the errno of close(2); ESTALE when
    // it was lost.
    int close() noexcept;

private:
    int fd_ = -1;
    dev_t device_ = 0;
    ino_t inode_ = 0;
    bool regular_ = false;
    bool lost_ = false;
};

// `path` made absolute against `base` (an absolute directory; the current directory when empty). Lexical: "."
// and ".." are left for the kernel, links are not looked at. Empty when the current directory cannot be named.
std::string absolute_path(const std::string& path, const std::string& base = {});

// Where a file named `path` is really written, after the link rule above.
struct output_target {
    std::string path;           // absolute; no link as its last component
    bool exists = false;
    bool write_in_place = false; // a FIFO or character device: written through, never replaced
    bool descriptor_link = false; // path is /proc/PID/fd/N: opened through the link, appending (write_in_place too)
};
std::optional<std::string> resolve_output_target(const std::string& path, output_target& into);

// A profile written whole or not at all. open(), write to stream(), commit(). A file not committed is removed
// (the target is left as it was); a FIFO or device target is written in place.
class output_file {
public:
    output_file();
    ~output_file();
    output_file(const output_file&) = delete;
    output_file& operator=(const output_file&) = delete;

    std::optional<std::string> open(const std::string& path);
    std::ostream& stream();
    // Flushes, syncs, checks the descriptor is still ours, closes and renames onto the target. One line naming
    // the target and the reason on failure, and then nothing is left behind.
    std::optional<std::string> commit();
    const std::string& target() const noexcept;

private:
    struct state;
    std::unique_ptr<state> state_;
};

// Whether a profile could be written to `path` now (for a check at start): what open() would say, leaving
// nothing behind.
std::optional<std::string> check_output_file(const std::string& path);

// Opens `path` for a stream of bytes written while the program runs (a trace): a regular file is created with
// mode 0600 (an existing one of this user's is truncated and made 0600; one in a world-writable sticky directory
// owned by neither that directory's owner nor this user is refused, as the kernel's protected_regular rule does),
// locked (flock) against a second writer, and truncated; a FIFO or character device is opened as it is.
std::optional<std::string> open_output_stream(const std::string& path, owned_descriptor& into,
                                              output_target& target);

} // namespace ojx::hardware
