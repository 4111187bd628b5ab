// The x86-64 access decoder: hand-assembled instructions (bytes from GNU as, the assembly beside them) decoded
// against a known register file; backward decoding for watchpoint traps, ambiguous cases included; and a live
// check that single-steps real code and decodes every instruction it executes from the signal's ucontext.
#include "ojx/hardware/fault_safe_read.hpp"
#include "ojx/hardware/instruction_decoder.hpp"

#include <catch2/catch.hpp>

#include <asm/prctl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

using ojx::access_kind;
using ojx::hardware::decode_status;
using ojx::hardware::decoded_instruction;
using ojx::hardware::register_file;

namespace {

// Distinct, recognisable register values: register n holds 0x10000 * (n + 1) + n.
register_file sample_registers() {
    register_file regs;
    for (std::size_t n = 0; n < regs.gprs.size(); ++n) {
        regs.gprs[n] = 0x10000 * (n + 1) + n;
    }
    regs.rip = 0x400000;
    return regs;
}

decoded_instruction decode(const std::vector<std::uint8_t>& code, register_file& regs) {
    return ojx::hardware::decode_access(code.data(), code.size(), regs);
}

decoded_instruction decode(const std::vector<std::uint8_t>& code) {
    register_file regs = sample_registers();
    return decode(code, regs);
}

void check_access(const decoded_instruction& decoded, std::uint8_t length, std::uint64_t address,
                  std::uint16_t width, access_kind kind) {
    CHECK(decoded.status == decode_status::memory_access);
    CHECK(decoded.length == length);
    CHECK(decoded.effective_address == address);
    CHECK(decoded.width == width);
    CHECK(decoded.kind == kind);
    CHECK_FALSE(decoded.address_verified);
}

void check_no_access(const decoded_instruction& decoded, std::uint8_t length) {
    CHECK(decoded.status == decode_status::no_memory_access);
    CHECK(decoded.length == length);
}

std::uint64_t fs_base_from_kernel() {
    std::uint64_t base = 0;
    syscall(SYS_arch_prctl, ARCH_GET_FS, &base);
    return base;
}

} // namespace

TEST_CASE("plain loads and stores of each width", "[decoder]") {
    const register_file r = sample_registers();
    const std::uint64_t rdi = r.gprs[register_file::rdi];
    check_access(decode({0x8a, 0x07}), 2, rdi, 1, access_kind::load);              // mov al, [rdi]
    check_access(decode({0x66, 0x89, 0x07}), 3, rdi, 2, access_kind::store);       // mov [rdi], ax
    check_access(decode({0x8b, 0x07}), 2, rdi, 4, access_kind::load);              // mov eax, [rdi]
    check_access(decode({0x48, 0x89, 0x07}), 3, rdi, 8, access_kind::store);       // mov [rdi], rax
    check_access(decode({0x48, 0x8b, 0x44, 0x24, 0x08}), 5, r.gprs[register_file::rsp] + 8, 8,
                 access_kind::load); // mov rax, [rsp+8]: explicit stack operands are data accesses
    // movabs al, [0x1122334455667788]
    check_access(decode({0xa0, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11}), 9, 0x1122334455667788, 1,
                 access_kind::load);
}

TEST_CASE("base + index * scale + displacement", "[decoder]") {
    const register_file r = sample_registers();
    // mov eax, [rdi+rcx*4+0x10]
    check_access(decode({0x8b, 0x44, 0x8f, 0x10}), 4,
                 r.gprs[register_file::rdi] + r.gprs[register_file::rcx] * 4 + 0x10, 4, access_kind::load);
    // mov rax, [rbx+rsi*8-0x20]
    check_access(decode({0x48, 0x8b, 0x44, 0xf3, 0xe0}), 5,
                 r.gprs[register_file::rbx] + r.gprs[register_file::rsi] * 8 - 0x20, 8, access_kind::load);
    // movdqu [rdi+0x40], xmm3
    check_access(decode({0xf3, 0x0f, 0x7f, 0x5f, 0x40}), 5, r.gprs[register_file::rdi] + 0x40, 16,
                 access_kind::store);
}

TEST_CASE("RIP-relative addresses count from the next instruction", "[decoder]") {
    register_file regs = sample_registers();
    regs.rip = 0x7f0000001000;
    // mov rax, [rip+0x100]
    check_access(decode({0x48, 0x8b, 0x05, 0x00, 0x01, 0x00, 0x00}, regs), 7, 0x7f0000001000 + 7 + 0x100, 8,
                 access_kind::load);
    // mov rax, [rip-0x10]
    check_access(decode({0x48, 0x8b, 0x05, 0xf0, 0xff, 0xff, 0xff}, regs), 7, 0x7f0000001000 + 7 - 0x10, 8,
                 access_kind::load);
}

TEST_CASE("FS and GS bases are the current thread's, read only when used", "[decoder]") {
    const std::uint64_t fs_base = fs_base_from_kernel();
    CHECK(ojx::hardware::current_fs_base() == fs_base);
    // glibc on x86-64: the thread descriptor sits at the FS base.
    CHECK(ojx::hardware::current_fs_base() == reinterpret_cast<std::uint64_t>(pthread_self()));
    std::uint64_t gs_base = 1;
    syscall(SYS_arch_prctl, ARCH_GET_GS, &gs_base);
    CHECK(ojx::hardware::current_gs_base() == gs_base);

    register_file regs = sample_registers();
    check_access(decode({0x8b, 0x07}, regs), 2, regs.gprs[register_file::rdi], 4, access_kind::load);
    CHECK_FALSE(regs.fs_base_known); // the common path left the bases alone

    // mov rax, fs:[0x28]  (the stack protector's canary)
    check_access(decode({0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0x00, 0x00, 0x00}, regs), 9, fs_base + 0x28, 8,
                 access_kind::load);
    CHECK(regs.fs_base_known);
    CHECK(regs.fs_base == fs_base);
    CHECK_FALSE(regs.gs_base_known);
    std::uint64_t canary_by_decoder = 0;
    std::uint64_t canary_direct = 0;
    REQUIRE(ojx::hardware::read_memory(fs_base + 0x28, &canary_by_decoder, sizeof canary_by_decoder));
    asm volatile("mov %%fs:0x28, %0" : "=r"(canary_direct));
    CHECK(canary_by_decoder == canary_direct);

    // mov rax, fs:[rdx]
    check_access(decode({0x64, 0x48, 0x8b, 0x02}, regs), 4, fs_base + regs.gprs[register_file::rdx], 8,
                 access_kind::load);
    // A cached base is used as given (registers of another thread): mov eax, gs:[rdi+rcx*4+0x10]
    regs.gs_base = 0x5000000;
    regs.gs_base_known = true;
    check_access(decode({0x65, 0x8b, 0x44, 0x8f, 0x10}, regs), 5,
                 0x5000000 + regs.gprs[register_file::rdi] + regs.gprs[register_file::rcx] * 4 + 0x10, 4,
                 access_kind::load);
    // lods al, fs:[rsi]
    check_access(decode({0x64, 0xac}, regs), 2, fs_base + regs.gprs[register_file::rsi], 1, access_kind::load);
}

TEST_CASE("vector accesses report their full size", "[decoder]") {
    const register_file r = sample_registers();
    check_access(decode({0xf3, 0x0f, 0x6f, 0x06}), 4, r.gprs[register_file::rsi], 16,
                 access_kind::load); // movdqu xmm0, [rsi]
    check_access(decode({0xc5, 0xfe, 0x7f, 0x0f}), 4, r.gprs[register_file::rdi], 32,
                 access_kind::store); // vmovdqu [rdi], ymm1
    check_access(decode({0x62, 0xf1, 0xfe, 0x48, 0x6f, 0x12}), 6, r.gprs[register_file::rdx], 64,
                 access_kind::load); // vmovdqu64 zmm2, [rdx]
    check_access(decode({0xc4, 0xe2, 0x7d, 0x58, 0x07}), 5, r.gprs[register_file::rdi], 4,
                 access_kind::load); // vpbroadcastd ymm0, dword [rdi]: one element read
    check_access(decode({0x62, 0xf1, 0x74, 0x58, 0x58, 0x07}), 6, r.gprs[register_file::rdi], 4,
                 access_kind::load); // vaddps zmm0, zmm1, dword [rdi]{1to16}
}

TEST_CASE("read-modify-write and conditional accesses are loads", "[decoder]") {
    const register_file r = sample_registers();
    const std::uint64_t rdi = r.gprs[register_file::rdi];
    check_access(decode({0x01, 0x07}), 2, rdi, 4, access_kind::load);                   // add [rdi], eax
    check_access(decode({0xf0, 0x48, 0x0f, 0xb1, 0x0f}), 5, rdi, 8, access_kind::load); // lock cmpxchg [rdi], rcx
    check_access(decode({0x48, 0x87, 0x07}), 3, rdi, 8, access_kind::load);             // xchg [rdi], rax
    check_access(decode({0x48, 0x0f, 0x44, 0x07}), 4, rdi, 8, access_kind::load);       // cmove rax, [rdi]
}

TEST_CASE("address generation, hints and flushes are not accesses", "[decoder]") {
    check_no_access(decode({0x48, 0x8d, 0x47, 0x08}), 4);             // lea rax, [rdi+8]
    check_no_access(decode({0x0f, 0x1f, 0x00}), 3);                   // nop dword [rax]
    check_no_access(decode({0x2e, 0x66, 0x0f, 0x1f, 0x04, 0x00}), 6); // cs nop word [rax+rax]
    check_no_access(decode({0x0f, 0x18, 0x0f}), 3);                   // prefetcht0 [rdi]
    check_no_access(decode({0x0f, 0x0d, 0x0f}), 3);                   // prefetchw [rdi]
    check_no_access(decode({0x0f, 0xae, 0x3f}), 3);                   // clflush [rdi]
    check_no_access(decode({0x66, 0x0f, 0xae, 0x3f}), 4);             // clflushopt [rdi]
    check_no_access(decode({0x66, 0x0f, 0xae, 0x37}), 4);             // clwb [rdi]
    check_no_access(decode({0x0f, 0x1b, 0x04, 0x18}), 4);             // bndstx [rax+rbx], bnd0 (MIB)
    check_no_access(decode({0xf3, 0x0f, 0x1e, 0xfa}), 4);             // endbr64
    check_no_access(decode({0x48, 0x89, 0xc7}), 3);                   // mov rdi, rax
}

TEST_CASE("implicit stack references are not data accesses; explicit operands of push/pop/call are", "[decoder]") {
    const std::uint64_t rax = sample_registers().gprs[register_file::rax];
    check_no_access(decode({0x50}), 1);                         // push rax
    check_no_access(decode({0x58}), 1);                         // pop rax
    check_no_access(decode({0xff, 0xd0}), 2);                   // call rax
    check_no_access(decode({0xc3}), 1);                         // ret
    check_no_access(decode({0xc9}), 1);                         // leave
    check_no_access(decode({0xc8, 0x10, 0x00, 0x00}), 4);       // enter 16, 0
    check_access(decode({0xff, 0x30}), 2, rax, 8, access_kind::load);  // push qword [rax]
    check_access(decode({0x8f, 0x00}), 2, rax, 8, access_kind::store); // pop qword [rax]
    check_access(decode({0xff, 0x10}), 2, rax, 8, access_kind::load);  // call qword [rax]
}

TEST_CASE("string instructions access [rsi] / [rdi], preferring the operand read", "[decoder]") {
    const register_file r = sample_registers();
    const std::uint64_t rsi = r.gprs[register_file::rsi];
    const std::uint64_t rdi = r.gprs[register_file::rdi];
    check_access(decode({0xf3, 0xa4}), 2, rsi, 1, access_kind::load);        // rep movsb: reads [rsi]
    check_access(decode({0x48, 0xa5}), 2, rsi, 8, access_kind::load);        // movsq
    check_access(decode({0xf3, 0x48, 0xab}), 3, rdi, 8, access_kind::store); // rep stosq
    check_access(decode({0xa6}), 1, rsi, 1, access_kind::load);              // cmpsb: both read, [rsi] first
    check_access(decode({0xaf}), 1, rdi, 4, access_kind::load);              // scasd
    check_access(decode({0x66, 0xad}), 2, rsi, 2, access_kind::load);        // lodsw
    check_access(decode({0x66, 0x0f, 0xf7, 0xc1}), 4, rdi, 16, access_kind::store); // maskmovdqu xmm0, xmm1
    // xlat: [rbx + al]
    register_file regs = sample_registers();
    regs.gprs[register_file::rax] = 0x1234'56ab;
    check_access(decode({0xd7}, regs), 1, r.gprs[register_file::rbx] + 0xab, 1, access_kind::load);
}

TEST_CASE("an address-size prefix truncates the offset to 32 bits", "[decoder]") {
    register_file regs = sample_registers();
    regs.gprs[register_file::rax] = 0xdead'0000'1000'0000;
    regs.gprs[register_file::rbx] = 0xbeef'0000'0000'0010;
    // mov eax, [eax+ebx*2]
    check_access(decode({0x67, 0x8b, 0x04, 0x58}, regs), 4, 0x1000'0020, 4, access_kind::load);
    // The 32-bit sum wraps: eax = 0xffffffff, ebx = 1, [eax+ebx*2+4] = 5
    regs.gprs[register_file::rax] = 0xffff'ffff;
    regs.gprs[register_file::rbx] = 1;
    check_access(decode({0x67, 0x8b, 0x44, 0x58, 0x04}, regs), 5, 5, 4, access_kind::load);
    // mov eax, [eip+0x20]
    regs.rip = 0x1'ffff'fff0;
    check_access(decode({0x67, 0x8b, 0x05, 0x20, 0x00, 0x00, 0x00}, regs), 7, (0x1'ffff'fff0 + 7 + 0x20) & 0xffff'ffff,
                 4, access_kind::load);
}

TEST_CASE("gathers, bad and truncated bytes are undecodable", "[decoder]") {
    // vpgatherdd ymm0, [rdi+ymm1*4], ymm2: a memory access, but the addresses are in ymm1.
    const decoded_instruction gather = decode({0xc4, 0xe2, 0x6d, 0x90, 0x04, 0x8f});
    CHECK(gather.status == decode_status::undecodable);
    CHECK(gather.length == 6);
    // mov rax, [rip+0x100] cut after 5 of its 7 bytes
    const decoded_instruction truncated = decode({0x48, 0x8b, 0x05, 0x00, 0x01});
    CHECK(truncated.status == decode_status::undecodable);
    CHECK(truncated.length == 0);
    CHECK(decode({}).status == decode_status::undecodable);
    CHECK(decode({0x06}).status == decode_status::undecodable); // push es: invalid in 64-bit mode
    CHECK(decode({0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x8b, 0x07})
              .status == decode_status::undecodable); // 16 bytes: longer than any instruction
    register_file regs = sample_registers();
    CHECK(ojx::hardware::decode_access(nullptr, 15, regs).status == decode_status::undecodable);
}

TEST_CASE("from_ucontext maps every general register", "[decoder]") {
    ucontext_t context{};
    const std::array<int, 16> order = {REG_RAX, REG_RCX, REG_RDX, REG_RBX, REG_RSP, REG_RBP, REG_RSI, REG_RDI,
                                       REG_R8,  REG_R9,  REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15};
    for (std::size_t n = 0; n < order.size(); ++n) {
        context.uc_mcontext.gregs[order[n]] = static_cast<greg_t>(0x100 + n);
    }
    context.uc_mcontext.gregs[REG_RIP] = 0x401234;
    const register_file regs = ojx::hardware::from_ucontext(context);
    for (std::size_t n = 0; n < order.size(); ++n) {
        CHECK(regs.gprs[n] == 0x100 + n);
    }
    CHECK(regs.rip == 0x401234);
    CHECK_FALSE(regs.fs_base_known);
    CHECK_FALSE(regs.gs_base_known);
}

// --- Backward decoding for watchpoint traps -------------------------------------------------------------------

namespace {

constexpr std::uint64_t next_pc = 0x401000;

decoded_instruction decode_before(const std::vector<std::uint8_t>& bytes, std::uint64_t watched,
                                  std::size_t watched_length, register_file& regs) {
    return ojx::hardware::decode_access_ending_at(bytes, next_pc, watched, watched_length, regs);
}

} // namespace

TEST_CASE("backward decoding finds the instruction that ends at the trap pc", "[decoder][backward]") {
    register_file regs = sample_registers();
    regs.rip = next_pc;
    const std::uint64_t rdi = regs.gprs[register_file::rdi];
    // mov rdi, rax ; mov rax, [rdi+8]   <- trapped, rip now after it
    const std::vector<std::uint8_t> code = {0x48, 0x89, 0xc7, 0x48, 0x8b, 0x47, 0x08};
    const decoded_instruction found = decode_before(code, rdi + 8, 8, regs);
    CHECK(found.status == decode_status::memory_access);
    CHECK(found.length == 4);
    CHECK(found.effective_address == rdi + 8);
    CHECK(found.width == 8);
    CHECK(found.kind == access_kind::load);
    CHECK(found.address_verified);
    CHECK(regs.rip == next_pc); // restored

    // A watch on part of the access verifies it too: the trap was for bytes 4..5 of the 8.
    CHECK(decode_before(code, rdi + 12, 2, regs).address_verified);

    // RIP-relative, relative to the candidate's own end (= next_pc): mov rax, [rip+0x100]
    const decoded_instruction rip_relative =
        decode_before({0x90, 0x48, 0x8b, 0x05, 0x00, 0x01, 0x00, 0x00}, next_pc + 0x100, 8, regs);
    CHECK(rip_relative.address_verified);
    CHECK(rip_relative.length == 7);
    CHECK(rip_relative.effective_address == next_pc + 0x100);
}

TEST_CASE("backward decoding: ambiguous candidates", "[decoder][backward]") {
    register_file regs = sample_registers();
    const std::uint64_t rdi = regs.gprs[register_file::rdi];

    // mov rax, [rdi] (48 8b 07) ends with mov eax, [rdi] (8b 07): both verify; the longer one is taken.
    const decoded_instruction with_rex = decode_before({0x90, 0x48, 0x8b, 0x07}, rdi, 8, regs);
    CHECK(with_rex.address_verified);
    CHECK(with_rex.length == 3);
    CHECK(with_rex.width == 8);

    // add rsp, 0x48 ; mov eax, [rdi]  <- trapped. The previous instruction's last byte reads as a REX prefix, so
    // the heuristic reports the 3-byte "mov rax, [rdi]" (the documented limit); the address is right either way.
    const decoded_instruction prefix_valued = decode_before({0x48, 0x83, 0xc4, 0x48, 0x8b, 0x07}, rdi, 4, regs);
    CHECK(prefix_valued.address_verified);
    CHECK(prefix_valued.effective_address == rdi);
    CHECK(prefix_valued.length == 3);

    // A longer candidate that does not verify loses to a shorter one that does: with a GS base in place,
    // 65 8b 44 8f 10 "mov eax, gs:[rdi+rcx*4+0x10]" misses the watch, 8b 44 8f 10 without the prefix hits it.
    regs.gs_base = 0x7000'0000;
    regs.gs_base_known = true;
    const std::uint64_t target = rdi + regs.gprs[register_file::rcx] * 4 + 0x10;
    const decoded_instruction verified_shorter = decode_before({0x65, 0x8b, 0x44, 0x8f, 0x10}, target, 4, regs);
    CHECK(verified_shorter.address_verified);
    CHECK(verified_shorter.length == 4);
    CHECK(verified_shorter.effective_address == target);
}

TEST_CASE("backward decoding when the instruction overwrote its own base register", "[decoder][backward]") {
    register_file regs = sample_registers();
    const std::uint64_t watched = 0x7ffd'0000'1000;
    regs.gprs[register_file::rax] = 0x1234; // mov rax, [rax] loaded 0x1234 from `watched`
    const decoded_instruction found = decode_before({0x90, 0x48, 0x8b, 0x00}, watched, 8, regs);
    CHECK(found.status == decode_status::memory_access);
    CHECK_FALSE(found.address_verified);
    CHECK(found.length == 3); // the longest candidate: mov rax, [rax], not its suffix mov eax, [rax]
    CHECK(found.width == 8);
    CHECK(found.kind == access_kind::load);
    CHECK(found.effective_address == 0x1234);
}

TEST_CASE("backward decoding without a data access", "[decoder][backward]") {
    register_file regs = sample_registers();
    // call rax: its store to the stack is not a data access
    const decoded_instruction call = decode_before({0xff, 0xd0}, regs.gprs[register_file::rsp] - 8, 8, regs);
    CHECK(call.status == decode_status::no_memory_access);
    CHECK(call.length == 2);
    CHECK(decode_before({0x06}, 0x1000, 8, regs).status == decode_status::undecodable);
    CHECK(decode_before({}, 0x1000, 8, regs).status == decode_status::undecodable);
}

TEST_CASE("decode_previous_access reads the code with a fault-safe reader", "[decoder][backward]") {
    // A page of "code" after a PROT_NONE page; the instruction sits at the start of the readable page, so the
    // 15 bytes before the trap pc reach into the unreadable page.
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    void* mapping = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(mapping != MAP_FAILED);
    auto* const first = static_cast<std::uint8_t*>(mapping);
    std::uint8_t* const code = first + page;
    REQUIRE(mprotect(first, page, PROT_NONE) == 0);
    const std::array<std::uint8_t, 6> instructions = {0x8b, 0x07,               // mov eax, [rdi]
                                                      0x48, 0x8b, 0x47, 0x08};  // mov rax, [rdi+8]
    std::copy(instructions.begin(), instructions.end(), code);

    ojx::hardware::process_memory memory;
    register_file regs = sample_registers();
    const std::uint64_t rdi = regs.gprs[register_file::rdi];
    const auto code_address = reinterpret_cast<std::uint64_t>(code);

    const decoded_instruction at_page_start =
        ojx::hardware::decode_previous_access(code_address + 2, rdi, 4, regs, memory);
    CHECK(at_page_start.address_verified);
    CHECK(at_page_start.length == 2);
    CHECK(at_page_start.width == 4);

    const decoded_instruction second =
        ojx::hardware::decode_previous_access(code_address + 6, rdi + 8, 8, regs, memory);
    CHECK(second.address_verified);
    CHECK(second.length == 4);
    CHECK(second.effective_address == rdi + 8);

    // The trap pc at the start of the readable page: the bytes before it are all unreadable.
    CHECK(ojx::hardware::decode_previous_access(code_address, rdi, 4, regs, memory).status ==
          decode_status::undecodable);
    CHECK(ojx::hardware::decode_previous_access(0, rdi, 4, regs, memory).status == decode_status::undecodable);
    munmap(mapping, 2 * page);
}

// --- Live: single-step real code and decode each instruction from its ucontext --------------------------------

namespace {

constexpr greg_t trap_flag = 0x100; // EFLAGS.TF: trap after every instruction
constexpr std::uint64_t step_budget = 1'000'000;

alignas(64) std::uint64_t step_buffer[8] = {0x1111, 0x2222, 0x3333, 0x4444, 0x5555, 0x6666, 0x7777, 0x8888};
constexpr std::size_t loaded_index = 5;

// What the SIGTRAP handler saw; examined after stepping stops.
struct step_record {
    std::atomic<bool> stepping{false};
    std::atomic<std::uint64_t> steps{0};
    std::atomic<std::uint64_t> accesses{0};
    std::atomic<std::uint64_t> fs_accesses{0};
    std::atomic<std::uint64_t> vector_accesses{0};
    std::atomic<std::uint64_t> undecodable{0};
    std::atomic<std::uint64_t> first_undecodable_rip{0};
    std::atomic<std::uint64_t> unreadable_accesses{0};
    std::atomic<bool> found{false};
    std::atomic<std::uint64_t> found_address{0};
    std::atomic<std::uint64_t> found_value{0};
    std::atomic<unsigned> found_width{0};
    std::atomic<bool> found_load{false};
};
step_record record;

[[gnu::noipa]] std::uint64_t load_element(const std::uint64_t* data, std::size_t index) { return data[index]; }

// Library code to step through before the load: glibc's string functions use SSE/AVX/EVEX instructions.
char library_text[300];
char library_copy[300];
[[gnu::noipa]] std::size_t run_library_code(std::size_t length) {
    std::memset(library_text, 'x', length);
    library_text[length] = '\0';
    std::memcpy(library_copy, library_text, length + 1);
    return std::strlen(library_copy);
}

void stop_stepping(ucontext_t& context) {
    context.uc_mcontext.gregs[REG_EFL] &= ~trap_flag;
    record.stepping.store(false);
}

// SIGUSR1 toggles stepping: the first raise sets TF in the context the handler returns to, the second clears it.
void on_toggle(int, siginfo_t*, void* raw_context) {
    auto& context = *static_cast<ucontext_t*>(raw_context);
    if (record.stepping.load()) {
        stop_stepping(context);
    } else {
        record.stepping.store(true);
        context.uc_mcontext.gregs[REG_EFL] |= trap_flag;
    }
}

void on_step(int, siginfo_t*, void* raw_context) {
    auto& context = *static_cast<ucontext_t*>(raw_context);
    if (!record.stepping.load()) {
        return;
    }
    if (record.steps.fetch_add(1) >= step_budget) {
        stop_stepping(context);
        return;
    }
    register_file regs = ojx::hardware::from_ucontext(context);
    std::uint8_t code[ojx::hardware::max_instruction_length];
    std::size_t available = sizeof code;
    while (available > 0 && !ojx::hardware::read_memory(regs.rip, code, available)) {
        --available; // the instruction may end just before an unmapped page
    }
    const decoded_instruction decoded = ojx::hardware::decode_access(code, available, regs);
    if (decoded.status == decode_status::undecodable) {
        if (record.undecodable.fetch_add(1) == 0) {
            record.first_undecodable_rip.store(regs.rip);
        }
        return;
    }
    if (decoded.status != decode_status::memory_access) {
        return;
    }
    record.accesses.fetch_add(1);
    if (regs.fs_base_known) {
        record.fs_accesses.fetch_add(1);
    }
    if (decoded.width >= 16) {
        record.vector_accesses.fetch_add(1);
    }
    // Every access about to execute is to readable memory (it is about to succeed).
    std::uint64_t value = 0;
    const std::size_t value_width = decoded.width < sizeof value ? decoded.width : sizeof value;
    if (!ojx::hardware::read_memory(decoded.effective_address, &value, value_width)) {
        record.unreadable_accesses.fetch_add(1);
    }
    const auto buffer_begin = reinterpret_cast<std::uint64_t>(&step_buffer[0]);
    const auto buffer_end = buffer_begin + sizeof step_buffer;
    if (decoded.effective_address >= buffer_begin && decoded.effective_address < buffer_end) {
        record.found_address.store(decoded.effective_address);
        record.found_value.store(value);
        record.found_width.store(decoded.width);
        record.found_load.store(decoded.kind == access_kind::load);
        record.found.store(true);
        stop_stepping(context);
    }
}

} // namespace

TEST_CASE("single-stepping real code: each instruction decodes, the load is found with its value",
          "[decoder][live]") {
    struct sigaction step_action {};
    step_action.sa_sigaction = on_step;
    step_action.sa_flags = SA_SIGINFO;
    sigemptyset(&step_action.sa_mask);
    struct sigaction toggle_action = step_action;
    toggle_action.sa_sigaction = on_toggle;
    struct sigaction previous_trap {};
    struct sigaction previous_user1 {};
    REQUIRE(sigaction(SIGTRAP, &step_action, &previous_trap) == 0);
    REQUIRE(sigaction(SIGUSR1, &toggle_action, &previous_user1) == 0);

    raise(SIGUSR1); // stepping from here
    const std::size_t text_length = run_library_code(257);
    const std::uint64_t loaded = load_element(step_buffer, loaded_index);
    if (record.stepping.load()) {
        raise(SIGUSR1); // not found: stop
    }
    sigaction(SIGTRAP, &previous_trap, nullptr);
    sigaction(SIGUSR1, &previous_user1, nullptr);

    std::printf("single-step: %llu instructions, %llu data accesses (%llu through FS, %llu of 16+ bytes), "
                "%llu undecodable\n",
                static_cast<unsigned long long>(record.steps.load()),
                static_cast<unsigned long long>(record.accesses.load()),
                static_cast<unsigned long long>(record.fs_accesses.load()),
                static_cast<unsigned long long>(record.vector_accesses.load()),
                static_cast<unsigned long long>(record.undecodable.load()));
    CHECK(text_length == 257);
    CHECK(loaded == 0x6666);
    REQUIRE(record.found.load());
    CHECK(record.found_address.load() == reinterpret_cast<std::uint64_t>(&step_buffer[loaded_index]));
    CHECK(record.found_width.load() == 8);
    CHECK(record.found_load.load());
    CHECK(record.found_value.load() == step_buffer[loaded_index]);
    CHECK(record.steps.load() > 1);
    INFO("first undecodable instruction at 0x" << std::hex << record.first_undecodable_rip.load());
    CHECK(record.undecodable.load() == 0);
    CHECK(record.unreadable_accesses.load() == 0);
}
