// The compare-at-sample watch source: no debug register is set. A slot armed by a sample is handed out once
// (take_armed_at_sample) for the caller to read its word now and deliver that as a trap: the comparison happens
// at the sample instead of at the program's next touch. For machines whose debug registers do not work (some
// hypervisors accept them and never trap), or when asked (compare=sample).
#include "watch_source.hpp"

namespace ojx::hardware {

namespace {

class sample_watches final : public watch_source {
public:
    const hardware_backend* backend = nullptr;
    std::size_t slots = 0;

    std::size_t slot_count() const noexcept override { return slots; }

    bool arm(std::size_t slot, address where, std::uint8_t width) noexcept override {
        if (slot >= slots || !backend->running()) return false;
        watches[slot] = {where, width, true, true};
        return true;
    }

    void disarm(std::size_t slot) noexcept override {
        if (slot < slots) watches[slot] = {};
    }

    std::optional<hardware_backend::armed_watch> take_armed_at_sample() noexcept override {
        for (std::size_t slot = 0; slot < slots; ++slot) {
            watch& armed = watches[slot];
            if (armed.armed && armed.pending) {
                armed.pending = false;
                return hardware_backend::armed_watch{slot, armed.where, armed.width};
            }
        }
        return std::nullopt;
    }

private:
    struct watch {
        address where = 0;
        std::uint8_t width = 0;
        bool armed = false;
        bool pending = false; // armed, not yet handed out
    };
    std::array<watch, max_slots> watches{};
};

sample_watches compared; // one backend per process

} // namespace

watch_source& compare_at_sample_watches(const hardware_backend& backend, std::size_t slots) {
    compared.backend = &backend;
    compared.slots = slots < max_slots ? slots : max_slots;
    return compared;
}

} // namespace ojx::hardware
