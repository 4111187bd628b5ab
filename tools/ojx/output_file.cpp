#include "output_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace ojx::tool {

output_file::output_file(std::string path, std::ios::openmode mode) : path_(std::move(path)) {
    std::vector<char> name(path_.begin(), path_.end());
    const char suffix[] = ".ojx-partial-XXXXXX";
    name.insert(name.end(), suffix, suffix + sizeof suffix); // with the terminating zero
    const int fd = ::mkstemp(name.data());
    if (fd < 0) {
        error_ = path_ + ": cannot create: " + std::strerror(errno);
        return;
    }
    // mkstemp makes the file private; the output gets the permissions any new file of this user would.
    const mode_t mask = ::umask(0);
    ::umask(mask);
    ::fchmod(fd, 0666 & ~mask);
    ::close(fd);
    temporary_.assign(name.data());
    stream_.open(temporary_, mode | std::ios::out | std::ios::trunc);
    if (!stream_) error_ = path_ + ": cannot write";
}

output_file::~output_file() {
    if (!committed_ && !temporary_.empty()) std::remove(temporary_.c_str());
}

std::optional<std::string> output_file::commit() {
    if (!ok()) return error_;
    stream_.flush();
    const bool written = static_cast<bool>(stream_);
    stream_.close();
    if (!written || stream_.fail()) return path_ + ": write failed (disk full?)";
    if (std::rename(temporary_.c_str(), path_.c_str()) != 0) return path_ + ": cannot write: " + std::strerror(errno);
    committed_ = true;
    return std::nullopt;
}

} // namespace ojx::tool
