// What the trace file writer's tests share: scratch file names, reading a written trace back, a stream of
// distinct allocation events, and which descriptors of this process name a file.
#pragma once

#include "ojx/trace_reader.hpp"
#include "ojx/trace_writer.hpp"

#include <catch2/catch.hpp>

#include <limits.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

namespace ojx::hardware::testing {

inline std::string temporary_path(const char* name) {
    return "/tmp/ojx-test-" + std::to_string(getpid()) + "-" + name;
}

inline std::vector<std::byte> read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::vector<char> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    std::vector<std::byte> result(bytes.size());
    std::memcpy(result.data(), bytes.data(), bytes.size());
    return result;
}

struct read_trace {
    std::vector<trace_event> events;
    bool complete = false;
};

// The events of a trace file's bytes; the test fails if the reader refuses them.
inline read_trace read_events(const std::vector<std::byte>& file) {
    trace_reader reader(file, "written.ojxt");
    read_trace result;
    while (auto event = reader.next()) result.events.push_back(std::move(*event));
    INFO(reader.error());
    REQUIRE_FALSE(reader.failed());
    result.complete = reader.complete();
    return result;
}

inline trace_event allocation(std::uint64_t index) {
    return allocation_event{static_cast<std::uint32_t>(index % 3), 0x100000 + index * 4096, 1024 + index % 2048,
                            static_cast<context_id>(index % 7), 2};
}

// The descriptors of this process open on `path`.
inline std::vector<int> descriptors_of(const std::string& path) {
    std::vector<int> found;
    for (int fd = 0; fd < 65536; ++fd) {
        char link[64], target[PATH_MAX];
        std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        const ssize_t length = readlink(link, target, sizeof target - 1);
        if (length > 0 && std::string(target, static_cast<std::size_t>(length)) == path) found.push_back(fd);
    }
    return found;
}

} // namespace ojx::hardware::testing
