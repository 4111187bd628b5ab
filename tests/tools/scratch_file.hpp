// A file with given contents in the temporary directory for as long as a test holds it, named by the test process's
// pid so that test programs running side by side never share one.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace ojx::tool::testing {

struct scratch_file {
    std::filesystem::path path;
    scratch_file(const std::string& name, const std::string& content)
        : path(std::filesystem::temp_directory_path() / ("ojx-test-" + std::to_string(getpid()) + "-" + name)) {
        std::ofstream(path, std::ios::binary) << content;
    }
    scratch_file(const scratch_file&) = delete;
    scratch_file& operator=(const scratch_file&) = delete;
    ~scratch_file() { std::filesystem::remove(path); }
};

} // namespace ojx::tool::testing
