// Where the `ojx` command writes a file it was asked for (-o, --json, --html, --pprof, replay -o, heap --json).
// What the path names decides how:
//   - nothing yet, or a regular file: whole or not at all. The output goes to a temporary file in the target's
//     directory and is renamed into place by commit() after fsync; a command that fails half way (bad input
//     found late, a full disk) leaves no partial output. A new file is created 0600 (profiles and reports may
//     hold heap contents); a file that existed keeps its mode (and, as root, its owner).
//   - a device, a FIFO or a socket: written through, never replaced (`-o /dev/null`, `-o >(gzip > f)`).
//   - a symbolic link: the file it leads to is written as above, never the link replaced — except a link in a
//     world-writable sticky directory (/tmp) owned by neither the directory's owner nor this user, which is
//     refused as the kernel's protected_symlinks rule would refuse it: someone else may have planted it.
#pragma once

#include <ext/stdio_filebuf.h>

#include <memory>
#include <optional>
#include <ostream>
#include <string>

namespace ojx::tool {

class output_file {
public:
    // Opens the output for `path`. ok() says whether that worked; error() why not ("PATH: problem").
    explicit output_file(std::string path, std::ios::openmode mode = std::ios::out);
    ~output_file(); // removes the temporary file unless committed
    output_file(const output_file&) = delete;
    output_file& operator=(const output_file&) = delete;

    bool ok() const noexcept { return error_.empty(); }
    const std::string& error() const noexcept { return error_; }
    std::ostream& stream() noexcept { return stream_; }

    // Flushes and checks that every write succeeded; a regular file is synced and renamed into place. Returns
    // the error, if any ("PATH: problem"); the temporary file is removed either way.
    std::optional<std::string> commit();

private:
    void open_through(const std::string& target);
    void open_temporary(const std::string& target, std::ios::openmode mode);

    std::string path_;        // as the user named it, for messages
    std::string destination_; // the regular file renamed over; empty when written through
    std::string temporary_;   // the file written until commit(); empty when written through
    std::unique_ptr<__gnu_cxx::stdio_filebuf<char>> buffer_;
    std::ostream stream_{nullptr};
    std::string error_;
    bool committed_ = false;
};

} // namespace ojx::tool
