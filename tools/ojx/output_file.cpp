#include "output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

namespace ojx::tool {
namespace {

namespace fs = std::filesystem;

// The kernel gives up after 40 links in one path walk (ELOOP); so does this.
constexpr int max_links = 40;

std::string directory_of(const std::string& path) {
    const fs::path parent = fs::path(path).parent_path();
    return parent.empty() ? std::string(".") : parent.string();
}

// The protected_symlinks rule (fs/namei.c, may_follow_link): a link in a sticky world-writable directory is
// followed only by its owner or when the directory's owner owns it too. readlink() is not subject to it, so a
// link resolved here must be checked here.
bool planted(const std::string& link, const struct stat& link_status) {
    struct stat directory {};
    if (::stat(directory_of(link).c_str(), &directory) != 0) return false;
    const bool sticky_and_shared = (directory.st_mode & S_ISVTX) && (directory.st_mode & S_IWOTH);
    return sticky_and_shared && link_status.st_uid != directory.st_uid && link_status.st_uid != ::geteuid();
}

std::string why(int error) { return std::strerror(error); }

} // namespace

output_file::output_file(std::string path, std::ios::openmode mode) : path_(std::move(path)) {
    // Follow the links the user named, one at a time, to what they lead to. Links in the directories above are
    // left to the kernel's own path walk (and its protected_symlinks rule) when the file is opened.
    std::string target = path_;
    struct stat status {};
    for (int links = 0;; ++links) {
        if (::lstat(target.c_str(), &status) != 0) {
            if (errno != ENOENT) {
                error_ = path_ + ": cannot write: " + why(errno);
                return;
            }
            if (target != path_) {
                error_ = path_ + ": a symbolic link to " + target + ", which does not exist; name the file itself";
                return;
            }
            open_temporary(target, mode); // a new file
            return;
        }
        if (!S_ISLNK(status.st_mode)) break;
        if (links == max_links) {
            error_ = path_ + ": cannot write: " + why(ELOOP);
            return;
        }
        if (planted(target, status)) {
            error_ = path_ + ": not following the symbolic link " + target + ": it is in a world-writable sticky "
                     "directory and owned by another user (uid " + std::to_string(status.st_uid) +
                     "), who may have planted it; name the file it leads to";
            return;
        }
        std::vector<char> link(static_cast<std::size_t>(status.st_size > 0 ? status.st_size : 255) + 1);
        const ssize_t length = ::readlink(target.c_str(), link.data(), link.size());
        if (length < 0 || static_cast<std::size_t>(length) >= link.size()) {
            error_ = path_ + ": cannot read the symbolic link " + target + (length < 0 ? ": " + why(errno) : "");
            return;
        }
        const fs::path next(std::string(link.data(), static_cast<std::size_t>(length)));
        target = next.is_absolute() ? next.string() : (fs::path(directory_of(target)) / next).string();
    }
    if (S_ISREG(status.st_mode)) {
        open_temporary(target, mode);
        if (!ok() || temporary_.empty()) return;
        // The new file replaces this one: it keeps its permissions, and as root its owner (root writing a
        // user's file must not leave it root's).
        const int fd = buffer_->fd();
        ::fchmod(fd, status.st_mode & 07777);
        if (::geteuid() == 0) (void)::fchown(fd, status.st_uid, status.st_gid);
        return;
    }
    if (S_ISDIR(status.st_mode)) {
        error_ = path_ + ": is a directory";
        return;
    }
    open_through(target); // a device, a FIFO, a socket
}

void output_file::open_through(const std::string& target) {
    // No O_CREAT and no O_TRUNC: what is there is written to, never made anew. O_NOFOLLOW: the links were
    // followed and checked above; one put there since is not followed.
    const int fd = ::open(target.c_str(), O_WRONLY | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        error_ = path_ + ": cannot write: " + why(errno);
        return;
    }
    struct stat status {};
    if (::fstat(fd, &status) != 0 || S_ISREG(status.st_mode) || S_ISDIR(status.st_mode)) {
        ::close(fd);
        error_ = path_ + ": changed while it was being opened; not writing it";
        return;
    }
    buffer_ = std::make_unique<__gnu_cxx::stdio_filebuf<char>>(fd, std::ios::out);
    stream_.rdbuf(buffer_.get());
}

void output_file::open_temporary(const std::string& target, std::ios::openmode mode) {
    std::vector<char> name(target.begin(), target.end());
    const char suffix[] = ".ojx-partial-XXXXXX";
    name.insert(name.end(), suffix, suffix + sizeof suffix); // with the terminating zero
    // mkstemp creates the file 0600, O_EXCL: no one else's file, and private until renamed.
    const int fd = ::mkostemp(name.data(), O_CLOEXEC);
    if (fd < 0) {
        error_ = path_ + ": cannot create: " + why(errno);
        return;
    }
    temporary_.assign(name.data());
    destination_ = target;
    buffer_ = std::make_unique<__gnu_cxx::stdio_filebuf<char>>(fd, mode | std::ios::out);
    stream_.rdbuf(buffer_.get());
}

output_file::~output_file() {
    if (!committed_ && !temporary_.empty()) ::unlink(temporary_.c_str());
}

std::optional<std::string> output_file::commit() {
    if (!ok()) return error_;
    stream_.flush();
    bool written = static_cast<bool>(stream_);
    int error = written ? 0 : EIO;
    if (written && !temporary_.empty() && ::fsync(buffer_->fd()) != 0) {
        written = false;
        error = errno;
    }
    // close() reports what a network file system defers to it.
    if (buffer_->close() == nullptr && written) {
        written = false;
        error = errno != 0 ? errno : EIO;
    }
    if (!written)
        return path_ + ": write failed: " + why(error) + (error == ENOSPC || error == EIO ? " (disk full?)" : "");
    if (!temporary_.empty() && std::rename(temporary_.c_str(), destination_.c_str()) != 0)
        return path_ + ": cannot write: " + why(errno);
    committed_ = true;
    return std::nullopt;
}

} // namespace ojx::tool
