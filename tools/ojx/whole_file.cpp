#include "whole_file.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

namespace ojx::tool {

std::optional<std::vector<std::byte>> read_whole_file(const std::string& path, std::string& error) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        error = path + ": cannot open (" + std::strerror(errno) + ")";
        return std::nullopt;
    }
    std::vector<char> text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) {
        error = path + ": cannot read (" + std::strerror(errno) + ")";
        return std::nullopt;
    }
    std::vector<std::byte> bytes(text.size());
    if (!text.empty()) std::memcpy(bytes.data(), text.data(), text.size());
    return bytes;
}

} // namespace ojx::tool
