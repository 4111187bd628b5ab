// The debug-register watch source: each slot is a perf_event breakpoint on every attached thread, re-armed with
// PERF_EVENT_IOC_MODIFY_ATTRIBUTES (or reopened where the kernel lacks it). With a sampler running, arming is
// lazy: the arming thread's register at once, every other thread's at its next sampling interrupt (no cross-CPU
// call per thread per arm). A thread may then trap once on a slot's old address: counted in traps_unknown.
#include "watch_source.hpp"

#include "ojx/hardware/arch_x86_64.hpp"
#include "ojx/hardware/perf_events.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstring>

namespace ojx::hardware {

namespace {

// What an armed slot watches, as the profiler asked (`where`, `width`) and as the debug register is to be set
// (`base`, `length`). `generation` is a seqlock over the whole record: odd while arm or disarm rewrites it, and
// each rewrite makes it larger, so a thread can tell whether its copy of the slot is current.
struct armed_slot {
    std::atomic<std::uint64_t> generation{0};
    std::atomic<std::uint64_t> where{0};
    std::atomic<std::uint8_t> width{0};
    std::atomic<bool> armed{false};
    std::atomic<std::uint64_t> base{0};
    std::atomic<std::uint8_t> length{0};
};

// Writer side of the seqlock (arm and disarm; the profiler serialises them). The fields are then stored with
// release and read with acquire, which orders them against the generation without fences (ThreadSanitizer
// does not model fences; on x86 these are plain moves either way).
void begin_slot_update(armed_slot& slot) noexcept { slot.generation.fetch_add(1, std::memory_order_relaxed); }
void end_slot_update(armed_slot& slot) noexcept { slot.generation.fetch_add(1, std::memory_order_release); }

// A consistent copy of a slot's target, for a debug register.
struct slot_target {
    bool armed = false;
    std::uint64_t base = 0;
    std::uint8_t length = 0;
};

class register_watches final : public watch_source {
public:
    hardware_backend* backend = nullptr;
    std::size_t slots = 0; // debug registers in use
    bool lazy = false;
    std::array<armed_slot, max_slots> armed_slots;

    std::size_t slot_count() const noexcept override { return slots; }

    bool arm(std::size_t slot, address where, std::uint8_t width) noexcept override {
        if (slot >= slots || !backend->running()) return false;
        armed_slot& armed = armed_slots[slot];
        std::uint64_t base = 0;
        std::uint8_t length = 0;
        if (!arch::breakpoint_cover(where, width == 0 ? 1 : width, base, length)) {
            counters().arm_failures.fetch_add(1, std::memory_order_relaxed);
            return false;
        }
        begin_slot_update(armed);
        armed.armed.store(false, std::memory_order_release);
        armed.base.store(base, std::memory_order_release);
        armed.length.store(length, std::memory_order_release);
        armed.where.store(where, std::memory_order_release);
        armed.width.store(width, std::memory_order_release);
        armed.armed.store(true, std::memory_order_release);
        end_slot_update(armed);
        bool all = true;
        if (lazy) {
            // Only the calling thread's register now. Every other thread points its own at the next sampling
            // interrupt it takes (sync), which comes while it runs, the only time it can touch the address.
            // Rewriting a register of a thread running on another CPU costs a cross-CPU call, and with many
            // threads every arm would pay one per thread.
            const pid_t tid = current_tid();
            if (thread_state* self = threads.find(tid)) {
                all = set_breakpoint(*self, slot, tid);
                self->synced_generation[slot] = armed.generation.load(std::memory_order_relaxed);
            }
        } else {
            threads.for_each([&](pid_t tid, thread_state& state) { all &= set_breakpoint(state, slot, tid); });
        }
        if (!all) {
            counters().arm_failures.fetch_add(1, std::memory_order_relaxed);
            disarm(slot);
        }
        return all;
    }

    // Lazy: the slot is marked free and the calling thread's debug register turned off; the other threads'
    // copies stay until they trap once on the old address (and turn theirs off), take a sampling interrupt (sync)
    // or the slot is re-armed. Disabling a breakpoint of a thread running on another CPU costs a cross-CPU call,
    // and the profiler disarms after every trap — usually to re-arm the slot elsewhere soon after, which
    // rewrites every copy anyway.
    void disarm(std::size_t slot) noexcept override {
        if (slot >= slots) return;
        armed_slot& armed = armed_slots[slot];
        begin_slot_update(armed);
        armed.armed.store(false, std::memory_order_release);
        end_slot_update(armed);
        const pid_t tid = current_tid();
        if (thread_state* self = threads.find(tid)) {
            set_breakpoint(*self, slot, tid);
            if (lazy) self->synced_generation[slot] = armed.generation.load(std::memory_order_relaxed);
        }
    }

    void stop() noexcept override {
        for (std::size_t slot = 0; slot < slots; ++slot) armed_slots[slot].armed.store(false, std::memory_order_release);
    }

    std::optional<std::string> open(thread_state& state, pid_t tid) override {
        static std::uint64_t parked; // disabled breakpoints point here
        for (std::size_t slot = 0; slot < slots; ++slot) {
            const armed_slot& armed = armed_slots[slot];
            // Opened parked; the first sync (or an eager arm) points it at the slot's target.
            state.synced_generation[slot] = ~std::uint64_t{0};
            const bool on = armed.armed.load(std::memory_order_relaxed);
            const std::uint64_t base = armed.base.load(std::memory_order_relaxed);
            const std::uint8_t length = armed.length.load(std::memory_order_relaxed);
            perf_event_attr attr = on ? breakpoint_for(slot, base, length, false)
                                      : breakpoint_for(slot, reinterpret_cast<std::uint64_t>(&parked), 8, true);
            const int fd = open_breakpoint(tid, attr);
            if (fd < 0) return std::string("perf_event_open (breakpoint): ") + std::strerror(-fd);
            state.breakpoint_fds[slot] = fd;
            if (on) state.watching.watch(slot, base, length);
        }
        return std::nullopt;
    }

    void close(thread_state& state, backend_counters& counters) noexcept override {
        for (std::size_t slot = 0; slot < max_slots; ++slot) {
            int& fd = state.breakpoint_fds[slot];
            state.watching.clear(slot);
            if (fd >= 0 && !close_perf_event(fd)) counters.descriptors_lost.fetch_add(1, std::memory_order_relaxed);
            fd = -1;
        }
    }

    // Brings each of the thread's debug registers up to date with its slot, for the slots armed or disarmed by
    // other threads since (lazy arming). A slot being rewritten right now is left for the next call.
    void on_sampling_interrupt(thread_state& state, pid_t tid) noexcept override {
        for (std::size_t slot = 0; slot < slots; ++slot) {
            const armed_slot& armed = armed_slots[slot];
            const std::uint64_t generation = armed.generation.load(std::memory_order_acquire);
            if (generation == state.synced_generation[slot] || (generation & 1) != 0) continue;
            const slot_target target{armed.armed.load(std::memory_order_acquire),
                                     armed.base.load(std::memory_order_acquire),
                                     armed.length.load(std::memory_order_acquire)};
            if (armed.generation.load(std::memory_order_relaxed) != generation) continue;
            if (!point_breakpoint(state, slot, tid, target))
                counters().arm_failures.fetch_add(1, std::memory_order_relaxed);
            state.synced_generation[slot] = generation;
        }
    }

    void on_trap(thread_state& state, std::size_t slot, pid_t tid, const ucontext_t& context) noexcept override {
        if (slot >= slots) return;
        armed_slot& armed = armed_slots[slot];
        if (lazy && state.synced_generation[slot] != armed.generation.load(std::memory_order_acquire)) {
            // Armed lazily: this thread's register still watched an earlier target. Bring it up to date; the
            // access was not to the slot's address.
            on_sampling_interrupt(state, tid);
            counters().traps_unknown.fetch_add(1, std::memory_order_relaxed);
            return;
        }
        if (!armed.armed.load(std::memory_order_acquire)) {
            // Disarmed lazily: this thread's copy still watched; turn it off, here, for free.
            turn_off(state, slot);
            counters().traps_unknown.fetch_add(1, std::memory_order_relaxed);
            return;
        }
        const std::uint64_t where = armed.where.load(std::memory_order_relaxed);
        const std::uint8_t width = armed.width.load(std::memory_order_relaxed);
        register_file registers = from_ucontext(context);
        // A data breakpoint traps after the access: the pc is the next instruction; find the one before it.
        const handler_reads reads = reads_for(context, state);
        process_memory memory{reads};
        const std::uint64_t pc = arch::pc_of(context);
        const decoded_instruction previous = decode_previous_access(pc, where, width, registers, memory);
        watchpoint_trap trap;
        trap.slot = slot;
        trap.watched_address = where;
        trap.width = width;
        trap.thread = static_cast<std::uint32_t>(tid);
        if (previous.status == decode_status::memory_access) {
            trap.kind = previous.kind;
            trap.ip = pc - previous.length;
        } else {
            counters().traps_undecoded.fetch_add(1, std::memory_order_relaxed);
            trap.ip = pc;
        }
        if (!read_memory(where, &trap.value, width, reads)) {
            counters().unreadable.fetch_add(1, std::memory_order_relaxed);
            return;
        }
        hardware_backend::internals::deliver_trap(*backend, trap, context, reads);
    }

    void turn_off(thread_state& state, std::size_t slot) noexcept override {
        state.watching.clear(slot);
        if (is_perf_event_fd(state.breakpoint_fds[slot])) ::ioctl(state.breakpoint_fds[slot], PERF_EVENT_IOC_DISABLE, 0);
    }

    void silence(thread_state& state) noexcept override {
        for (std::size_t slot = 0; slot < max_slots; ++slot)
            if (state.breakpoint_fds[slot] >= 0) turn_off(state, slot);
    }

    void silence_from_outside(thread_state& state) noexcept override {
        for (const int fd : state.breakpoint_fds)
            if (is_perf_event_fd(fd)) ::ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
    }

private:
    backend_counters& counters() const noexcept { return hardware_backend::internals::counters(*backend); }
    bool synchronous() const noexcept { return hardware_backend::internals::caps(*backend).synchronous_traps; }

    // A breakpoint attribute for `slot`, delivered as the triggers are.
    perf_event_attr breakpoint_for(std::size_t slot, std::uint64_t base, std::uint8_t length,
                                   bool disabled) const noexcept {
        perf_event_attr attr = breakpoint_attr(base, length, disabled);
        if (synchronous()) deliver_as_sigtrap(attr, breakpoint_tag | slot);
        return attr;
    }

    // Opens a breakpoint of thread `tid` (an attribute from breakpoint_for) and routes it; the fd, or -errno.
    int open_breakpoint(pid_t tid, perf_event_attr& attr) const noexcept {
        const int fd = open_perf_event(attr, tid);
        if (fd < 0 || synchronous()) return fd;
        if (const int error = route_to_thread(fd, sampling_signal_number, tid); error != 0) {
            ::close(fd);
            return -error;
        }
        return fd;
    }

    // Signal-safe: points one thread's breakpoint in `slot` at the slot's target, or disables it. Only where the
    // slot cannot change meanwhile (the writer of the slot, or under its seqlock).
    bool set_breakpoint(thread_state& state, std::size_t slot, pid_t tid) noexcept {
        const armed_slot& armed = armed_slots[slot];
        return point_breakpoint(state, slot, tid,
                                {armed.armed.load(std::memory_order_relaxed), armed.base.load(std::memory_order_relaxed),
                                 armed.length.load(std::memory_order_relaxed)});
    }

    // Signal-safe. What the thread's register watches is noted before it is pointed there (a trap may come at
    // once) and kept when pointing fails: the register's state is then unknown, and a needless system-call read
    // is harmless.
    bool point_breakpoint(thread_state& state, std::size_t slot, pid_t tid, const slot_target& target) noexcept {
        int& fd = state.breakpoint_fds[slot];
        if (fd < 0) return false;
        if (!is_perf_event_fd(fd)) {
            // The program closed our descriptor; the number may be its own file now.
            counters().descriptors_lost.fetch_add(1, std::memory_order_relaxed);
            fd = -1;
            state.watching.clear(slot);
            return false;
        }
        if (!target.armed || state.quarantined) {
            // A quarantined thread watches nothing; the slot stays armed for the others.
            const bool off = ::ioctl(fd, PERF_EVENT_IOC_DISABLE, 0) == 0;
            if (off) state.watching.clear(slot);
            return off || state.quarantined;
        }
        state.watching.watch(slot, target.base, target.length);
        perf_event_attr attr = breakpoint_for(slot, target.base, target.length, false);
        if (hardware_backend::internals::caps(*backend).breakpoint_modify)
            return ::ioctl(fd, PERF_EVENT_IOC_MODIFY_ATTRIBUTES, &attr) == 0;
        // Kernels before 4.17: reopen.
        ::close(fd);
        fd = open_breakpoint(tid, attr);
        if (fd < 0) state.watching.clear(slot);
        return fd >= 0;
    }
};

register_watches registers; // one backend per process

} // namespace

watch_source& debug_register_watches(hardware_backend& backend, std::size_t slots, bool lazy) {
    registers.backend = &backend;
    registers.slots = slots;
    registers.lazy = lazy;
    return registers;
}

} // namespace ojx::hardware
