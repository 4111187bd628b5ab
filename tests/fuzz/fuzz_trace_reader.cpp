// libFuzzer target: any bytes given to trace_reader must end in events or an error message, never a crash or an
// out-of-bounds read (AddressSanitizer and UndefinedBehaviorSanitizer watch). Every event the reader accepts must
// also survive a round trip: written again by trace_writer and read back, it is the same event.
//
// Each input is read twice: as a whole file, and as the payload of one block framed with the right checksum —
// mutations of a file almost always break its CRC, and the second reading lets them reach the record decoders.
#include "ojx/trace_reader.hpp"
#include "ojx/trace_writer.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

namespace {

struct rewritten_trace {
    std::vector<std::byte> buffer;
    std::vector<std::byte> file;

    static std::span<std::byte> exchange(void* context, std::span<const std::byte> closed_block) {
        auto& self = *static_cast<rewritten_trace*>(context);
        self.file.insert(self.file.end(), closed_block.begin(), closed_block.end());
        return self.buffer;
    }
};

void read_and_rewrite(std::span<const std::byte> input) {
    const std::size_t size = input.size();
    ojx::trace_reader reader(input, "fuzz");
    std::vector<ojx::trace_event> events;
    while (auto event = reader.next()) {
        events.push_back(std::move(*event));
    }
    if (reader.failed() == reader.error().empty() || reader.summary().empty()) {
        std::abort();
    }

    // A block as large as the input holds any record the input held.
    rewritten_trace rewritten{.buffer = std::vector<std::byte>(size + ojx::trace_writer::minimum_buffer_size)};
    const auto header = ojx::trace_file_header();
    rewritten.file.assign(header.begin(), header.end());
    ojx::trace_writer writer(rewritten.buffer, {.context = &rewritten, .exchange = &rewritten_trace::exchange});
    for (const auto& event : events) {
        if (!writer.append(event)) {
            std::abort();
        }
    }
    writer.finish();
    ojx::trace_reader again(rewritten.file, "rewritten");
    for (const auto& event : events) {
        const auto reread = again.next();
        if (!reread || *reread != event) {
            std::abort();
        }
    }
    if (again.next() || again.failed() || !again.complete()) {
        std::abort();
    }
}

std::vector<std::byte> framed_as_one_block(std::span<const std::byte> payload) {
    const auto header = ojx::trace_file_header();
    std::vector<std::byte> file(header.begin(), header.end());
    const auto length = static_cast<std::uint32_t>(payload.size());
    for (const std::uint32_t field : {length, ojx::crc32c(payload)}) {
        for (int i = 0; i < 4; ++i) {
            file.push_back(static_cast<std::byte>((field >> (8 * i)) & 0xFFu));
        }
    }
    file.insert(file.end(), payload.begin(), payload.end());
    return file;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto input = std::as_bytes(std::span(data, size));
    read_and_rewrite(input);
    read_and_rewrite(framed_as_one_block(input));
    return 0;
}
