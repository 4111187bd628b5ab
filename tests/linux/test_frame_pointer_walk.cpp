// The backend's frame-pointer walk runs in signal handlers at any instruction, where rbp may hold anything: code
// built without frame pointers uses it as a general register. Whatever it holds, the walk must read only inside
// the thread's stack and end. (Found with python3 under copy following: glibc's malloc_usable_size had -16 in
// rbp, and `frame + 16` wrapped past the stack's upper bound.)
#include "ojx/hardware/hardware_backend.hpp"

#include "child_process.hpp"
#include "hardware_test_support.hpp"

#include <catch2/catch.hpp>

#include <ucontext.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <vector>

using namespace ojx::hardware;
using namespace ojx::hardware::testing;

namespace {

constexpr std::uint64_t interrupted_pc = 0x4242;

// The walk from a context whose rbp is `frame_pointer` and whose stack pointer lies below `stack_pointer_above`.
std::vector<std::uint64_t> walk_from(std::uint64_t frame_pointer, const void* stack_pointer_above) {
    ucontext_t context{};
    context.uc_mcontext.gregs[REG_RIP] = static_cast<greg_t>(interrupted_pc);
    context.uc_mcontext.gregs[REG_RSP] = static_cast<greg_t>(reinterpret_cast<std::uint64_t>(stack_pointer_above) - 256);
    context.uc_mcontext.gregs[REG_RBP] = static_cast<greg_t>(frame_pointer);
    std::vector<std::uint64_t> frames(16);
    frames.resize(hardware_backend::capture_stack(context, current_tid(), frames.data(), frames.size()));
    return frames;
}

} // namespace

TEST_CASE("the frame-pointer walk follows a chain on the stack and stops at any frame pointer outside it") {
    in_child_process([] {
        int failures = 0;
        auto rec = std::make_unique<recorder>();
        hardware_backend backend;
        backend_options options;
        options.sampler = sampler_kind::none;
        options.watchpoint_slots = 0;
        if (auto error = backend.start(options, rec->delivery())) {
            std::printf("start failed: %s\n", error->c_str());
            return 1;
        }
        if (backend.attach_current_thread()) return 1;

        // Two frames on this stack: [fp] = caller's fp, [fp + 8] = return address; the outer one's saved fp is
        // what each case puts there.
        alignas(16) std::uint64_t chain[4] = {};
        chain[0] = reinterpret_cast<std::uint64_t>(&chain[2]);
        chain[1] = 0x1001;
        chain[3] = 0x2001;
        const std::uint64_t inner = reinterpret_cast<std::uint64_t>(&chain[0]);
        const std::vector<std::uint64_t> whole{interrupted_pc, 0x1000, 0x2000};

        const std::uint64_t hostile[] = {
            ~std::uint64_t{0} - 15, // -16: frame + 16 wraps to 0
            ~std::uint64_t{0} - 7,  // -8: wraps to 8
            ~std::uint64_t{0} - 31,
            0,
            inner + 4,              // misaligned
            inner - 64,             // down the stack: frames only go up
            0x7fff'ffff'f000,       // above any stack here, unmapped or not ours
        };
        for (const std::uint64_t saved : hostile) {
            chain[2] = saved;
            const std::vector<std::uint64_t> frames = walk_from(inner, chain);
            std::printf("saved fp %#llx: %zu frames\n", static_cast<unsigned long long>(saved), frames.size());
            EXPECT(frames == whole);
            // The same value in rbp itself, where it is off the stack: the pc alone.
            if (saved != inner - 64) EXPECT(walk_from(saved, chain) == std::vector<std::uint64_t>{interrupted_pc});
        }

        backend.detach_current_thread();
        backend.stop();
        return failures;
    });
}
