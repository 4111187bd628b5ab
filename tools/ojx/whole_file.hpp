// Reading an input file whole (a trace is decoded from memory), with a one-line error naming the file.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace ojx::tool {

// The file's bytes, or nothing with `error` set to "PATH: cannot open (reason)".
std::optional<std::vector<std::byte>> read_whole_file(const std::string& path, std::string& error);

} // namespace ojx::tool
