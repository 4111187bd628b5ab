// The compare-at-sample watch source: no debug register is set and nothing ever traps. The slots only hold the
// pairs the profiler armed, and the profiler compares each at the sample that armed it, reading the word then
// (profiler_config::compare_at_sample, which the session sets from hardware_backend::compares_at_sample). For
// machines whose debug registers do not work (some hypervisors accept them and never trap), or when asked
// (compare=sample).
#include "watch_source.hpp"

namespace ojx::hardware {

namespace {

class sample_watches final : public watch_source {
public:
    const hardware_backend* backend = nullptr;
    std::size_t slots = 0;

    std::size_t slot_count() const noexcept override { return slots; }
    // Accepted while the backend runs, as a register would be set; nothing to keep.
    bool arm(std::size_t slot, address, std::uint8_t) noexcept override { return slot < slots && backend->running(); }
    void disarm(std::size_t) noexcept override {}
};

sample_watches compared; // one backend per process

} // namespace

watch_source& compare_at_sample_watches(const hardware_backend& backend, std::size_t slots) {
    compared.backend = &backend;
    compared.slots = slots < max_slots ? slots : max_slots;
    return compared;
}

} // namespace ojx::hardware
