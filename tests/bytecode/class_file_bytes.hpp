// Reading a class file's bytes whole, for the corpus tools (roundtrip_tool.cpp, instrument_tool.cpp).
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

namespace ojx::bytecode::test {

inline bool read_file(const std::filesystem::path& path, std::vector<std::uint8_t>& out) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        return false;
    }
    out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    return !in.bad();
}

} // namespace ojx::bytecode::test
