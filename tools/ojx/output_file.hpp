// An output file that appears whole or not at all: written to a temporary file next to it and renamed into place
// by commit(). A command that fails half way (bad input found late, a full disk) leaves no partial output.
#pragma once

#include <fstream>
#include <optional>
#include <string>

namespace ojx::tool {

class output_file {
public:
    // Opens a temporary file in the target's directory. ok() says whether that worked; error() why not.
    explicit output_file(std::string path, std::ios::openmode mode = std::ios::out);
    ~output_file(); // removes the temporary file unless committed
    output_file(const output_file&) = delete;
    output_file& operator=(const output_file&) = delete;

    bool ok() const noexcept { return error_.empty(); }
    const std::string& error() const noexcept { return error_; }
    std::ostream& stream() noexcept { return stream_; }

    // Flushes, checks every write succeeded, and renames the file into place. Returns the error, if any
    // ("PATH: problem"); the temporary file is removed either way.
    std::optional<std::string> commit();

private:
    std::string path_;
    std::string temporary_;
    std::ofstream stream_;
    std::string error_;
    bool committed_ = false;
};

} // namespace ojx::tool
