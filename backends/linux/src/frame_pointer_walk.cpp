// The backend's stack walker: the interrupted code's return addresses by frame pointers, within the thread's
// stack bounds recorded at attach, so that it reads nothing that could fault.
#include "backend_internals.hpp"

#include "ojx/hardware/arch_x86_64.hpp"

namespace ojx::hardware {

std::size_t hardware_backend::capture_stack(const ucontext_t& context, pid_t tid, std::uint64_t* frames,
                                            std::size_t max) noexcept {
    if (max == 0) return 0;
    std::size_t count = 0;
    frames[count++] = arch::pc_of(context);
    const thread_state* state = threads.find(tid);
    if (state == nullptr) return count;
    std::uint64_t low = arch::stack_pointer_of(context);
    std::uint64_t frame = arch::frame_pointer_of(context);
    if (low < state->stack_low || low >= state->stack_high || state->stack_high < 16)
        return count; // on another stack (sigaltstack), or no bounds recorded
    // Each frame: [fp] = caller's fp, [fp + 8] = return address. Frames only go up the stack. The bound is
    // written without `frame + 16`, which wraps for a frame pointer near 2^64: code without frame pointers uses
    // rbp for anything (glibc's malloc_usable_size holds -16 in it).
    while (count < max && frame >= low && frame % 8 == 0 && frame <= state->stack_high - 16) {
        const auto* words = reinterpret_cast<const std::uint64_t*>(frame);
        const std::uint64_t return_address = words[1];
        if (return_address < 4096) break;
        frames[count++] = return_address - 1;
        low = frame + 16;
        frame = words[0];
    }
    return count;
}

} // namespace ojx::hardware
