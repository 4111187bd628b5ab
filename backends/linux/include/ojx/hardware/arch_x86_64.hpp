// What the Linux backend knows of x86-64: where an interrupted context keeps its pc, stack and frame pointers and
// its trap flag, which opcode bytes enter the kernel, the siginfo layout of a perf trap, the debug registers'
// lengths, and the CPU's cycle counter and spin hint. Everything else in the backend is architecture-neutral;
// another architecture supplies these same names. All of it is signal-safe.
#pragma once

#include <signal.h>
#include <ucontext.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ojx::hardware::arch {

inline std::uint64_t pc_of(const ucontext_t& context) noexcept {
    return static_cast<std::uint64_t>(context.uc_mcontext.gregs[REG_RIP]);
}
// The pc as the handler's return will resume it (a fault handler moves it past a guarded load).
inline greg_t& pc_register(ucontext_t& context) noexcept { return context.uc_mcontext.gregs[REG_RIP]; }
inline std::uint64_t stack_pointer_of(const ucontext_t& context) noexcept {
    return static_cast<std::uint64_t>(context.uc_mcontext.gregs[REG_RSP]);
}
inline std::uint64_t frame_pointer_of(const ucontext_t& context) noexcept {
    return static_cast<std::uint64_t>(context.uc_mcontext.gregs[REG_RBP]);
}

// EFLAGS.TF: the CPU traps after the next instruction (a single step).
constexpr long trap_flag = 0x100;
inline void set_trap_flag(ucontext_t& context) noexcept { context.uc_mcontext.gregs[REG_EFL] |= trap_flag; }
inline void clear_trap_flag(ucontext_t& context) noexcept { context.uc_mcontext.gregs[REG_EFL] &= ~trap_flag; }
inline bool trap_flag_set(const ucontext_t& context) noexcept {
    return (context.uc_mcontext.gregs[REG_EFL] & trap_flag) != 0;
}

// Whether the instruction starting with `bytes` (at least 2 available) enters the kernel: syscall, sysenter,
// int 0x80.
inline bool is_system_call(const std::uint8_t* bytes) noexcept {
    return (bytes[0] == 0x0F && (bytes[1] == 0x05 || bytes[1] == 0x34)) || (bytes[0] == 0xCD && bytes[1] == 0x80);
}

// The tag a perf event put in si_perf_data of its TRAP_PERF SIGTRAP (the kernel's _sigfault._perf, which glibc's
// siginfo_t does not name): on x86-64 it follows si_addr.
inline std::uint64_t perf_tag_of(const siginfo_t& info) noexcept {
    static_assert(sizeof(siginfo_t) >= 32);
    std::uint64_t tag = 0;
    std::memcpy(&tag, reinterpret_cast<const unsigned char*>(&info) + 24, sizeof tag);
    return tag;
}

// The debug-register length and aligned base covering [where, where + width), if one does.
inline bool breakpoint_cover(std::uint64_t where, std::uint8_t width, std::uint64_t& base,
                             std::uint8_t& length) noexcept {
    for (std::uint8_t candidate : {1, 2, 4, 8}) {
        if (candidate >= width && where % candidate == 0) {
            base = where;
            length = candidate;
            return true;
        }
    }
    base = where & ~std::uint64_t{7};
    length = 8;
    return where + width <= base + 8;
}

// The time-stamp counter: cheap, monotonic enough for the watchdog's windows.
inline std::uint64_t cycles_now() noexcept { return __builtin_ia32_rdtsc(); }

// A spin-wait hint.
inline void spin_pause() noexcept { __builtin_ia32_pause(); }

} // namespace ojx::hardware::arch
