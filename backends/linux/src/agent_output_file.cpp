#include "ojx/hardware/agent_output_file.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <streambuf>
#include <utility>
#include <vector>

namespace ojx::hardware {

namespace {

constexpr int descriptor_ceiling = 4096;
constexpr int descriptor_margin = 64;
constexpr int max_link_hops = 40; // as the kernel's MAXSYMLINKS

std::string parent_of(const std::string& absolute) {
    const auto slash = absolute.rfind('/');
    return slash == 0 || slash == std::string::npos ? std::string("/") : absolute.substr(0, slash);
}

std::string name_of(const std::string& absolute) { return absolute.substr(absolute.rfind('/') + 1); }

bool sticky_and_world_writable(const struct stat& directory) {
    return (directory.st_mode & S_ISVTX) != 0 && (directory.st_mode & S_IWOTH) != 0;
}

// The kernel's protected_symlinks / protected_regular rule for a file `owner` owns in `directory`: in a
// world-writable sticky directory, only what the directory's owner or this process's effective user owns is
// followed or written into.
std::optional<std::string> planted_by_another_user(const std::string& directory, uid_t owner, const char* what) {
    struct stat dir {};
    if (::stat(directory.c_str(), &dir) != 0 || !sticky_and_world_writable(dir)) return std::nullopt;
    if (owner == dir.st_uid || owner == ::geteuid()) return std::nullopt;
    return std::string(what) + " in the world-writable sticky directory " + directory + ", owned by another user (uid " +
           std::to_string(owner) + "): not followed, not written";
}

// Whether the link `path` is a process's descriptor link, /proc/PID/fd/N (or under /proc/PID/task/TID/), by
// whatever way its directory was named (/dev/fd is a link to /proc/self/fd): its target is an open file, not a
// name (a pipe's reads "pipe:[…]").
bool is_descriptor_link(const std::string& path) {
    char* directory = ::realpath(parent_of(path).c_str(), nullptr);
    if (directory == nullptr) return false;
    const std::string resolved = directory;
    std::free(directory);
    return resolved.starts_with("/proc/") && resolved.ends_with("/fd");
}

// Opens a FIFO, character device or descriptor link to be written in place. Non-blocking open: a FIFO nobody
// reads is refused at once rather than hanging the program; writes then block as they would for the program.
int open_in_place(const output_target& target) {
    const int follow = target.descriptor_link ? O_APPEND : O_NOFOLLOW;
    const int fd = ::open(target.path.c_str(), O_WRONLY | O_CLOEXEC | O_NONBLOCK | follow);
    if (fd < 0) return fd;
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    return fd;
}

// A new empty file in `target`'s directory, named in `name`: mkostemp (O_CREAT | O_EXCL, mode 0600, an
// unpredictable name) never follows or reuses a file.
int create_beside(const std::string& target, std::string& name) {
    name = parent_of(target) + "/." + name_of(target) + ".XXXXXX";
    return ::mkostemp(name.data(), O_CLOEXEC);
}

std::string reason(int error) {
    if (error == ENXIO) return "no process reads it";
    if (error == ESTALE) return "the program closed ojx's descriptor of it";
    return std::strerror(error);
}

} // namespace

int high_descriptor_floor() noexcept {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return -1;
    const rlim_t soft = limit.rlim_cur;
    const int top = soft == RLIM_INFINITY || soft > static_cast<rlim_t>(descriptor_ceiling) ? descriptor_ceiling
                                                                                          : static_cast<int>(soft);
    const int floor = top - descriptor_margin;
    return floor > 2 ? floor : -1;
}

owned_descriptor::owned_descriptor(int fd) noexcept : fd_(fd) {
    if (fd_ < 0) return;
    if (const int floor = high_descriptor_floor(); floor > fd_) {
        if (const int moved = ::fcntl(fd_, F_DUPFD_CLOEXEC, floor); moved >= 0) {
            ::close(fd_);
            fd_ = moved;
        }
    }
    ::fcntl(fd_, F_SETFD, FD_CLOEXEC);
    struct stat st {};
    if (::fstat(fd_, &st) == 0) {
        device_ = st.st_dev;
        inode_ = st.st_ino;
        regular_ = S_ISREG(st.st_mode);
    }
}

owned_descriptor::owned_descriptor(owned_descriptor&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), device_(other.device_), inode_(other.inode_), regular_(other.regular_),
      lost_(other.lost_) {}

owned_descriptor& owned_descriptor::operator=(owned_descriptor&& other) noexcept {
    if (this != &other) {
        close();
        fd_ = std::exchange(other.fd_, -1);
        device_ = other.device_;
        inode_ = other.inode_;
        regular_ = other.regular_;
        lost_ = other.lost_;
    }
    return *this;
}

bool owned_descriptor::still_ours() noexcept {
    if (fd_ < 0 || lost_) return false;
    struct stat st {};
    if (::fstat(fd_, &st) == 0 && st.st_dev == device_ && st.st_ino == inode_) return true;
    lost_ = true;
    return false;
}

int owned_descriptor::write_all(std::span<const std::byte> bytes) noexcept {
    // A write past the file-size limit would raise SIGXFSZ, whose default action kills the program.
    // Every file ojx writes is written at its end (a new file, a trace, a descriptor link opened to append).
    if (!bytes.empty() && !still_ours()) return ESTALE;
    rlimit size_limit{};
    struct stat st {};
    if (regular_ && !bytes.empty() && ::getrlimit(RLIMIT_FSIZE, &size_limit) == 0 &&
        size_limit.rlim_cur != RLIM_INFINITY && ::fstat(fd_, &st) == 0 &&
        static_cast<rlim_t>(st.st_size) + bytes.size() > size_limit.rlim_cur)
        return EFBIG;
    while (!bytes.empty()) {
        if (!still_ours()) return ESTALE;
        const ssize_t written = ::write(fd_, bytes.data(), bytes.size());
        if (written < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        bytes = bytes.subspan(static_cast<std::size_t>(written));
    }
    return 0;
}

int owned_descriptor::close() noexcept {
    if (fd_ < 0) return lost_ ? ESTALE : 0;
    if (!still_ours()) {
        fd_ = -1; // the number is the program's now: never closed by ojx
        return ESTALE;
    }
    const int result = ::close(std::exchange(fd_, -1));
    return result == 0 || errno == EINTR ? 0 : errno;
}

std::string absolute_path(const std::string& path, const std::string& base) {
    if (path.empty() || path.front() == '/') return path;
    std::string directory = base;
    if (directory.empty()) {
        char* current = ::getcwd(nullptr, 0);
        if (current == nullptr) return {};
        directory = current;
        std::free(current);
    }
    return directory + (directory.back() == '/' ? "" : "/") + path;
}

std::optional<std::string> resolve_output_target(const std::string& path, output_target& into) {
    std::string current = absolute_path(path);
    if (current.empty()) return "the current directory cannot be named (" + std::string(std::strerror(errno)) + ")";
    for (int hop = 0; hop <= max_link_hops; ++hop) {
        struct stat st {};
        if (::lstat(current.c_str(), &st) != 0) {
            if (errno != ENOENT) return reason(errno);
            into = output_target{current, false, false, false};
            return std::nullopt;
        }
        if (S_ISLNK(st.st_mode) && is_descriptor_link(current)) {
            into = output_target{current, true, true, true};
            return std::nullopt;
        }
        if (S_ISLNK(st.st_mode)) {
            const std::string directory = parent_of(current);
            if (auto refused = planted_by_another_user(directory, st.st_uid, ("a symbolic link (" + current + ")").c_str()))
                return refused;
            std::vector<char> target(static_cast<std::size_t>(std::max<off_t>(st.st_size, 255)) + 1);
            const ssize_t length = ::readlink(current.c_str(), target.data(), target.size());
            if (length < 0) return reason(errno);
            current = absolute_path(std::string(target.data(), static_cast<std::size_t>(length)), directory);
            continue;
        }
        if (S_ISREG(st.st_mode)) {
            into = output_target{current, true, false, false};
            return std::nullopt;
        }
        if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) {
            into = output_target{current, true, true, false};
            return std::nullopt;
        }
        if (S_ISDIR(st.st_mode)) return std::string("it is a directory");
        return std::string("it is not a regular file, a FIFO or a character device");
    }
    return reason(ELOOP);
}

// ---- output_file ----

namespace {

// A stream buffer over an owned descriptor; remembers the first failed write's errno.
class descriptor_buffer : public std::streambuf {
public:
    explicit descriptor_buffer(owned_descriptor& fd) : fd_(fd), buffer_(std::size_t{1} << 16) {
        setp(buffer_.data(), buffer_.data() + buffer_.size());
    }
    int error() const noexcept { return error_; }

protected:
    int_type overflow(int_type c) override {
        if (!drain()) return traits_type::eof();
        if (!traits_type::eq_int_type(c, traits_type::eof())) {
            *pptr() = traits_type::to_char_type(c);
            pbump(1);
        }
        return traits_type::not_eof(c);
    }
    int sync() override { return drain() ? 0 : -1; }

private:
    bool drain() {
        if (error_ == 0 && pptr() != pbase())
            error_ = fd_.write_all(std::as_bytes(std::span(pbase(), static_cast<std::size_t>(pptr() - pbase()))));
        setp(buffer_.data(), buffer_.data() + buffer_.size());
        return error_ == 0;
    }

    owned_descriptor& fd_;
    std::vector<char> buffer_;
    int error_ = 0;
};

} // namespace

struct output_file::state {
    output_target target;
    std::string temporary; // the file written, renamed onto the target at commit; empty when written in place
    owned_descriptor fd;
    std::optional<descriptor_buffer> buffer;
    std::optional<std::ostream> stream;

    void discard() {
        buffer.reset();
        fd.close();
        if (!temporary.empty()) ::unlink(temporary.c_str());
        temporary.clear();
    }
};

output_file::output_file() : state_(std::make_unique<state>()) {}

output_file::~output_file() {
    if (state_) state_->discard();
}

const std::string& output_file::target() const noexcept { return state_->target.path; }

std::optional<std::string> output_file::open(const std::string& path) {
    state& s = *state_;
    s.discard();
    s.target = output_target{};
    s.target.path = absolute_path(path);
    if (auto error = resolve_output_target(path, s.target)) return error;
    int fd = -1;
    if (s.target.write_in_place) {
        fd = open_in_place(s.target);
    } else {
        std::string name;
        fd = create_beside(s.target.path, name);
        if (fd >= 0) s.temporary = name;
    }
    if (fd < 0) return reason(errno);
    s.fd = owned_descriptor(fd);
    s.buffer.emplace(s.fd);
    s.stream.emplace(&*s.buffer);
    return std::nullopt;
}

std::ostream& output_file::stream() { return *state_->stream; }

std::optional<std::string> output_file::commit() {
    state& s = *state_;
    if (!s.stream) return std::string("the file was not opened");
    s.stream->flush();
    const auto fail = [&](int error) -> std::optional<std::string> {
        s.discard();
        return reason(error);
    };
    if (s.buffer->error() != 0) return fail(s.buffer->error());
    if (!*s.stream) return fail(EIO);
    if (!s.target.write_in_place) {
        // Synced before the rename: after a crash the target is the old file or the whole new one.
        if (!s.fd.still_ours()) return fail(ESTALE);
        if (::fsync(s.fd.number()) != 0) return fail(errno);
    }
    if (const int error = s.fd.close(); error != 0) return fail(error);
    if (!s.temporary.empty()) {
        if (::rename(s.temporary.c_str(), s.target.path.c_str()) != 0) return fail(errno);
        s.temporary.clear();
    }
    s.buffer.reset();
    s.stream.reset();
    return std::nullopt;
}

std::optional<std::string> check_output_file(const std::string& path) {
    output_target target;
    if (auto error = resolve_output_target(path, target)) return error;
    if (target.write_in_place) {
        if (::faccessat(AT_FDCWD, target.path.c_str(), W_OK, AT_EACCESS) != 0) return reason(errno);
        return std::nullopt;
    }
    // What the real write will need, leaving nothing behind. The descriptor is closed where it was opened, not
    // moved above the program's numbers as a kept one is: the move grows the descriptor table, an RCU grace
    // period in a multi-threaded process, and this runs on the JVM's start-up path (kernel_warm_up.hpp grows the
    // table off that path).
    std::string name;
    const int fd = create_beside(target.path, name);
    if (fd < 0) return reason(errno);
    ::close(fd);
    ::unlink(name.c_str());
    return std::nullopt;
}

std::optional<std::string> open_output_stream(const std::string& path, owned_descriptor& into,
                                              output_target& target) {
    if (auto error = resolve_output_target(path, target)) return error;
    if (target.write_in_place) {
        const int fd = open_in_place(target);
        if (fd < 0) return reason(errno);
        into = owned_descriptor(fd);
        return std::nullopt;
    }
    // O_NOFOLLOW: a link put in the target's place since it was resolved is refused, not followed.
    const int fd = ::open(target.path.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return reason(errno);
    owned_descriptor opened(fd);
    struct stat st {};
    if (::fstat(opened.number(), &st) != 0) return reason(errno);
    if (!S_ISREG(st.st_mode)) return std::string("it is not a regular file");
    if (auto refused = planted_by_another_user(parent_of(target.path), st.st_uid, ("a file (" + target.path + ")").c_str()))
        return refused;
    if (::flock(opened.number(), LOCK_EX | LOCK_NB) != 0)
        return errno == EWOULDBLOCK ? std::string("another process is writing a trace to it") : reason(errno);
    if (::ftruncate(opened.number(), 0) != 0) return reason(errno);
    // It will hold the program's memory: this user's only, whatever mode an earlier file had.
    if (st.st_uid == ::geteuid() && (st.st_mode & 07077) != 0 && ::fchmod(opened.number(), 0600) != 0)
        return reason(errno);
    into = std::move(opened);
    return std::nullopt;
}

} // namespace ojx::hardware
