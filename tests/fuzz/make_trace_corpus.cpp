// Writes a few small valid traces into the directory given as argument: the fuzzer's starting corpus, so that it
// begins from inputs that pass the header and checksum checks and reach the record decoders.
#include "ojx/trace_writer.hpp"

#include <cstdio>
#include <array>
#include <fstream>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace {

struct file_sink {
    std::vector<std::byte> buffer;
    std::vector<std::byte> file;
    bool refuse = false;

    static std::span<std::byte> exchange(void* context, std::span<const std::byte> closed_block) {
        auto& self = *static_cast<file_sink*>(context);
        self.file.insert(self.file.end(), closed_block.begin(), closed_block.end());
        return self.refuse ? std::span<std::byte>() : std::span<std::byte>(self.buffer);
    }
};

// Symbols, a run of compact allocations on three threads, a GC with moves, samples, watchpoints, accesses and value
// flow; `variant` varies
// the block size (one block or several) and the values.
std::vector<std::byte> make_trace(int variant) {
    file_sink sink{.buffer = std::vector<std::byte>(variant % 2 == 0 ? 4096 : 256)};
    const auto header = ojx::trace_file_header();
    sink.file.assign(header.begin(), header.end());
    ojx::trace_writer writer(sink.buffer, {.context = &sink, .exchange = &file_sink::exchange});

    writer.append_type(1, "byte[]");
    writer.append_frame(0x401000, "main (main.cpp:3)");
    writer.append(ojx::context_symbol{.id = 1, .parent = 0, .frame = 0x401000});
    writer.append_thread(7, "worker");
    const ojx::address base = 0x7f0000000000u + static_cast<ojx::address>(variant) * 0x100000u;
    for (std::uint32_t thread = 7; thread < 10; ++thread) {
        ojx::address top = base + thread * 0x10000u;
        for (int i = 0; i < 6; ++i) {
            const std::uint64_t size = 1024u + 16u * static_cast<std::uint64_t>((i * 7 + variant) % 5);
            ojx::allocation_event allocation{.thread = thread, .where = top, .size = size,
                .context = static_cast<ojx::context_id>(1 + i / 3), .type = 1};
            // A byte[] or an instance: 0x16 too.
            allocation.shape = i % 2 == 0 ? ojx::allocation_shape{.header_bytes = 16, .array_length = size - 16}
                                          : ojx::allocation_shape{.header_bytes = 12, .typed_layout = true};
            writer.append(allocation);
            top += size;
        }
    }
    writer.append(ojx::gc_start_event{.gc = 1});
    writer.append(ojx::move_event{.from = base, .to = base - 0x1000});
    writer.append(ojx::region_move_event{.from = base + 0x10000, .to = base + 0x8000, .length = 0x4000});
    writer.append(ojx::free_event{.where = base + 0x20000});
    writer.append(ojx::gc_end_event{.gc = 1});
    writer.append(ojx::relocated_object_event{.from = base + 0x4000, .to = base + 0x9000, .size = 1040,
        .object = {1, 1, 3}});
    writer.append(ojx::relocation_event{.count = 1});
    writer.append(ojx::heap_census_event{.gc = 1, .types = {{1, 1, 1040}, {ojx::no_type, 2, 48}}});
    // Whole-object digests: one digested object (blocks repeating and not), one by its context (gone from the map),
    // and counts skipped and unreadable.
    ojx::whole_object_digest digested{.where = base + 0x9000, .weight = 1.5 + variant};
    digested.fingerprint.digest = 0x0123456789abcdefull * static_cast<std::uint64_t>(variant + 1);
    digested.fingerprint.size = 1040;
    for (std::size_t b = 0; b < digested.fingerprint.blocks.size(); ++b)
        digested.fingerprint.blocks[b] = b < 20 ? static_cast<std::uint32_t>(b * 0x9e3779b9u) : 7u;
    writer.append(digested);
    digested = {.outcome = ojx::whole_object_digest::kind::digested_gone, .context = 1, .weight = 2,
                .fingerprint = digested.fingerprint};
    writer.append(digested);
    writer.append(ojx::whole_object_digest::left_out(ojx::whole_object_digest::kind::skipped, 12));
    writer.append(ojx::whole_object_digest::left_out(ojx::whole_object_digest::kind::unreadable));
    for (int i = 0; i < 5; ++i) {
        writer.append(ojx::access_sample{.ip = 0x401000u + 4u * static_cast<unsigned>(i),
            .effective_address = base + 8u * static_cast<unsigned>(i), .value = static_cast<std::uint64_t>(i * variant),
            .width = 8, .kind = i % 2 == 0 ? ojx::access_kind::load : ojx::access_kind::store, .thread = 7,
            .access_context = 2});
    }
    writer.append(ojx::watchpoint_arm_refused_event{.slot = 1, .where = base + 12, .width = 8});
    writer.append(ojx::watchpoint_arm_event{.slot = 0, .where = base + 8, .width = 8});
    writer.append(ojx::watchpoint_trap{.slot = 0, .watched_address = base + 8, .value = 42, .width = 8,
        .kind = ojx::access_kind::load, .ip = 0x401010, .thread = 8, .access_context = 3});
    writer.append(ojx::watchpoint_disarm_event{.slot = 0});
    // A trace of every access: a fill, then runs of two threads' loads and stores (next-access records), each
    // with its register (value flow, the access-register form), and the other value flow records between them.
    const std::array<std::byte, 16> filled{std::byte{1}, std::byte{2}, std::byte{3}};
    writer.append(ojx::memory_fill_event{.where = base, .bytes = filled});
    const std::array<ojx::value_register, 3> sources{1, 2, 255};
    for (int i = 0; i < 12; ++i) {
        const auto kind = i % 3 == 2 ? ojx::access_kind::store : ojx::access_kind::load;
        const ojx::address where = base + 8u * static_cast<unsigned>(i);
        const auto r = static_cast<ojx::value_register>(i + variant);
        writer.append(ojx::access_event{.thread = i < 6 ? 7u : 8u, .ip = 0x401020, .where = where,
            .value = kind == ojx::access_kind::store ? std::optional<std::uint64_t>(i * 0x0123456789abcdefull * variant)
                                                     : std::nullopt,
            .width = 8, .kind = kind, .context = 2});
        writer.append(kind == ojx::access_kind::load ? ojx::value_flow_event::load(r, where, 8)
                                                     : ojx::value_flow_event::store(r, where, 8));
        writer.append(ojx::value_flow_event::register_move(static_cast<ojx::value_register>(16 + i), r));
    }
    writer.append(ojx::value_flow_event::compute(sources, ojx::value_register{3}));
    writer.append(ojx::value_flow_event::compute(std::span(sources).first(1), std::nullopt));
    writer.append(ojx::value_flow_event::constant(4));
    writer.append(ojx::value_flow_event::new_reference(5, 2));
    writer.append(ojx::value_flow_event::load(6, base + 0x100, 4)); // no access before it: the whole form
    writer.append(ojx::value_flow_event::string_move(base + 0x200, base + 0x100, 64, 8));
    if (variant == 3) {
        // A gap: the pool runs dry for a moment, and the trace says how many events were lost.
        sink.refuse = true;
        writer.flush();
        writer.append(ojx::free_event{.where = base});
        sink.refuse = false;
        writer.append(ojx::free_event{.where = base + 16});
    }
    writer.finish();
    return sink.file;
}

} // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: make_trace_corpus DIRECTORY\n");
        return 2;
    }
    for (int variant = 0; variant < 4; ++variant) {
        const auto trace = make_trace(variant);
        const std::string path = std::string(argv[1]) + "/trace-" + std::to_string(variant) + ".ojxt";
        std::ofstream out(path, std::ios::binary);
        out.write(reinterpret_cast<const char*>(trace.data()), static_cast<std::streamsize>(trace.size()));
        // The first block's payload alone, for the fuzzer's reading of its input as one block.
        std::size_t payload_length = 0;
        for (std::size_t i = 0; i < 4; ++i) {
            payload_length |= static_cast<std::size_t>(trace[ojx::trace_header_size + i]) << (8 * i);
        }
        const std::size_t payload_start = ojx::trace_header_size + ojx::trace_block_header_size;
        const std::string payload_path = std::string(argv[1]) + "/payload-" + std::to_string(variant) + ".bin";
        std::ofstream payload(payload_path, std::ios::binary);
        payload.write(reinterpret_cast<const char*>(trace.data() + payload_start),
            static_cast<std::streamsize>(payload_length));
        if (!out || !payload) {
            std::fprintf(stderr, "make_trace_corpus: cannot write %s\n", path.c_str());
            return 1;
        }
    }
    return 0;
}
