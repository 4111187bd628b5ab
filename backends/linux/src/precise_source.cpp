// The precise sample source: a precise perf event (Intel PEBS loads, AMD IBS ops; perf_events.cpp's probe chooses
// which) whose samples carry the data address, written to a per-thread ring buffer that each overflow drains. No
// decoding to find the access: the instruction is decoded only for the access's width and kind.
#include "sample_source.hpp"

#include "ojx/hardware/perf_events.hpp"

namespace ojx::hardware {

namespace {

constexpr std::size_t ring_data_pages = 8;

class precise_event_source final : public sample_source {
public:
    hardware_backend* backend = nullptr;
    perf_event_attr attr{};

    std::optional<std::string> open(thread_state& state, pid_t tid) const override {
        state.trigger.source = this;
        return open_perf_trigger(*backend, state.trigger, tid, attr, ring_data_pages);
    }

    bool on_trigger(thread_state& state, pid_t tid, const ucontext_t& context) const noexcept override {
        if (state.trigger.ring != nullptr) drain_ring(state, tid, context);
        return false;
    }

private:
    // Signal-safe: drains this thread's ring buffer, delivering each sample with a data address.
    void drain_ring(thread_state& state, pid_t tid, const ucontext_t& context) const noexcept {
        auto* header = static_cast<perf_event_mmap_page*>(state.trigger.ring);
        auto* data = static_cast<unsigned char*>(state.trigger.ring) + header->data_offset;
        const std::uint64_t size = header->data_size;
        std::uint64_t tail = header->data_tail;
        const std::uint64_t head = __atomic_load_n(&header->data_head, __ATOMIC_ACQUIRE);
        const handler_reads reads = reads_for(context, state);
        auto copy_out = [&](std::uint64_t at, void* out, std::size_t bytes) {
            auto* to = static_cast<unsigned char*>(out);
            for (std::size_t i = 0; i < bytes; ++i) to[i] = data[(at + i) % size];
        };
        while (tail + sizeof(perf_event_header) <= head) {
            perf_event_header record{};
            copy_out(tail, &record, sizeof(record));
            if (record.size == 0) break;
            if (record.type == PERF_RECORD_SAMPLE) {
                // Layout for PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_ADDR: ip, pid, tid, addr.
                struct {
                    std::uint64_t ip;
                    std::uint32_t pid, tid;
                    std::uint64_t addr;
                } body{};
                copy_out(tail + sizeof(record), &body, sizeof(body));
                std::uint8_t code[max_instruction_length];
                decoded_instruction decoded{};
                if (const std::size_t available = code_reader_for(reads)(body.ip, code, sizeof code); available > 0) {
                    register_file registers = from_ucontext(context);
                    registers.rip = body.ip;
                    decoded = decode_access(code, available, registers);
                }
                // The event gives the address; the instruction gives the width (8 if it cannot be decoded).
                decoded.effective_address = body.addr;
                if (decoded.status != decode_status::memory_access) {
                    decoded.width = 8;
                    decoded.kind = access_kind::load;
                }
                if (body.addr != 0)
                    hardware_backend::internals::deliver_sample(*backend, decoded, body.ip, tid, context, reads);
            }
            tail += record.size;
        }
        __atomic_store_n(&header->data_tail, tail, __ATOMIC_RELEASE);
    }
};

precise_event_source precise; // one backend per process

} // namespace

const sample_source& precise_source(hardware_backend& backend, const perf_event_attr& attr) {
    precise.backend = &backend;
    precise.attr = attr;
    return precise;
}

} // namespace ojx::hardware
