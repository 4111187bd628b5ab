// x86_value_flow: hand-assembled instructions (bytes from GNU as, the assembly beside them) against a known register
// file, each with the exact value flow events it must give — every family the header names, stack slots through
// the slot table (spill and reload, a full table, the window's edges), string moves both ways — and a run over
// all the code of libc and of this test binary, instruction by instruction, that never writes past the span.
#include "ojx/hardware/x86_value_flow.hpp"

#include <catch2/catch.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <ostream>
#include <vector>

using ojx::value_flow_event;
using ojx::value_flow_kind;
using ojx::value_register;
using ojx::hardware::register_file;
using ojx::hardware::stack_slot_table;
using E = value_flow_event;

namespace ojx {
std::ostream& operator<<(std::ostream& out, const value_flow_event& e) {
    static const char* const names[] = {"load", "register_move", "store", "compute",
                                        "constant", "string_move", "new_reference"};
    out << names[static_cast<int>(e.kind)] << "(reg " << int(e.reg) << ", sources";
    for (std::size_t i = 0; i < e.source_count; ++i) out << ' ' << int(e.sources[i]);
    out << (e.has_result ? ", result" : "") << ", at 0x" << std::hex << e.at << ", from 0x" << e.from << std::dec
        << ", bytes " << e.bytes << ", width " << int(e.width) << ')';
    return out;
}
} // namespace ojx

namespace {

constexpr value_register rax = 0, rcx = 1, rdx = 2, rbx = 3, rbp = 5, rsi = 6, rdi = 7;
constexpr value_register xmm(unsigned k) { return static_cast<value_register>(16 + k); }
constexpr value_register slot(unsigned i) { return static_cast<value_register>(48 + i); }
constexpr value_register scratch = ojx::hardware::scratch_register;

constexpr std::uint64_t heap_rbx = 0x10000, heap_rsi = 0x20000, heap_rdi = 0x30000;
constexpr std::uint64_t stack_top = 0x7fff00010000; // rsp
constexpr std::uint64_t zero_flag = 0x40, direction_flag = 0x400;

// rbx, rsi, rdi point to the heap, rsp and rbp (rsp + 0x100) to the stack; rcx counts 4.
register_file sample_registers() {
    register_file regs;
    regs.gprs = {0x1111, 4, 0x3333, heap_rbx, stack_top, stack_top + 0x100, heap_rsi, heap_rdi,
                 8, 9, 10, 11, 12, 13, 14, 15};
    regs.rip = 0x400000;
    regs.rflags = 0x202;
    return regs;
}

E compute(std::initializer_list<value_register> sources, std::optional<value_register> result) {
    return E::compute(std::span<const value_register>(sources.begin(), sources.size()), result);
}

// The events of `code`, which must decode whole into a complete list.
std::vector<E> flow(const std::vector<std::uint8_t>& code, register_file regs, stack_slot_table& slots) {
    std::array<E, ojx::hardware::max_x86_value_flow_events> events{};
    const auto result = ojx::hardware::x86_value_flow(code.data(), code.size(), regs, slots, events);
    REQUIRE(result.decoded);
    CHECK(result.length == code.size());
    CHECK(result.complete);
    return {events.begin(), events.begin() + result.count};
}

std::vector<E> flow(const std::vector<std::uint8_t>& code, const register_file& regs = sample_registers()) {
    stack_slot_table slots;
    return flow(code, regs, slots);
}

register_file with_flags(std::uint64_t flags) {
    register_file regs = sample_registers();
    regs.rflags = flags;
    return regs;
}

using events = std::vector<E>;

} // namespace

TEST_CASE("mov and its extensions: moves, loads, stores, constants", "[value_flow]") {
    CHECK(flow({0x48, 0x89, 0xd8}) == events{E::register_move(rax, rbx)});                       // mov rax, rbx
    CHECK(flow({0x48, 0x8b, 0x43, 0x08}) == events{E::load(rax, heap_rbx + 8, 8)});              // mov rax, [rbx+8]
    CHECK(flow({0x48, 0x89, 0x43, 0x10}) == events{E::store(rax, heap_rbx + 16, 8)});            // mov [rbx+16], rax
    CHECK(flow({0x48, 0xc7, 0x03, 0x05, 0x00, 0x00, 0x00}).empty());            // mov qword [rbx], 5
    CHECK(flow({0xb8, 0x07, 0x00, 0x00, 0x00}) == events{E::constant(rax)});    // mov eax, 7
    CHECK(flow({0x0f, 0xb6, 0x03}) == events{E::load(rax, heap_rbx, 1)});       // movzx eax, byte [rbx]
    CHECK(flow({0x48, 0x0f, 0xbf, 0x03}) == events{E::load(rax, heap_rbx, 2)}); // movsx rax, word [rbx]
    CHECK(flow({0x48, 0x63, 0x03}) == events{E::load(rax, heap_rbx, 4)});       // movsxd rax, dword [rbx]
    CHECK(flow({0x0f, 0xbe, 0xc1}) == events{E::register_move(rax, rcx)});      // movsx eax, cl
    // Parts of a register are the register.
    CHECK(flow({0x8a, 0x03}) == events{E::load(rax, heap_rbx, 1)}); // mov al, [rbx]
    CHECK(flow({0xb4, 0x01}) == events{E::constant(rax)});          // mov ah, 1
}

TEST_CASE("a spill and its reload are moves through a stack slot", "[value_flow]") {
    stack_slot_table slots;
    const register_file regs = sample_registers();
    // mov [rsp+8], rax; mov rcx, [rsp+8]
    CHECK(flow({0x48, 0x89, 0x44, 0x24, 0x08}, regs, slots) == events{E::register_move(slot(0), rax)});
    CHECK(flow({0x48, 0x8b, 0x4c, 0x24, 0x08}, regs, slots) == events{E::register_move(rcx, slot(0))});
    // Through rbp, at an address of its own: another slot. mov [rbp-16], rdx
    CHECK(flow({0x48, 0x89, 0x55, 0xf0}, regs, slots) == events{E::register_move(slot(1), rdx)});
    // A vector register spilled: movaps [rsp+32], xmm5
    CHECK(flow({0x0f, 0x29, 0x6c, 0x24, 0x20}, regs, slots) == events{E::register_move(slot(2), xmm(5))});
    CHECK(slots.used == 3);
    CHECK(slots.addresses[0] == stack_top + 8);
    CHECK(slots.addresses[1] == stack_top + 0xf0);
    CHECK(slots.treated_as_memory == 0);
}

TEST_CASE("the stack window and a full slot table", "[value_flow]") {
    register_file regs = sample_registers();
    // mov [rsp-128], rax: the red zone's bottom is a slot; mov [rsp-136], rax: below it, memory.
    CHECK(flow({0x48, 0x89, 0x44, 0x24, 0x80}, regs) == events{E::register_move(slot(0), rax)});
    CHECK(flow({0x48, 0x89, 0x84, 0x24, 0x78, 0xff, 0xff, 0xff}, regs) ==
          events{E::store(rax, stack_top - 136, 8)});
    // mov rax, [rsp + 0xfff8]: the last slot of the window; [rsp + 0x10000]: memory.
    CHECK(flow({0x48, 0x8b, 0x84, 0x24, 0xf8, 0xff, 0x00, 0x00}, regs) == events{E::register_move(rax, slot(0))});
    CHECK(flow({0x48, 0x8b, 0x84, 0x24, 0x00, 0x00, 0x01, 0x00}, regs) ==
          events{E::load(rax, stack_top + 0x10000, 8)});

    stack_slot_table slots;
    for (std::uint8_t i = 0; i < stack_slot_table::capacity; ++i) { // mov [rsp + 8 i], rax
        CHECK(flow({0x48, 0x89, 0x44, 0x24, static_cast<std::uint8_t>(8 * i)}, regs, slots) ==
              events{E::register_move(slot(i), rax)});
    }
    CHECK(slots.used == stack_slot_table::capacity);
    // A seventeenth address is memory, counted; the known ones stay slots.
    CHECK(flow({0x48, 0x89, 0x84, 0x24, 0xc8, 0x00, 0x00, 0x00}, regs, slots) ==
          events{E::store(rax, stack_top + 200, 8)}); // mov [rsp+200], rax
    CHECK(flow({0x48, 0x8b, 0x4c, 0x24, 0x08}, regs, slots) == events{E::register_move(rcx, slot(1))});
    CHECK(slots.treated_as_memory == 1);
}

TEST_CASE("lea computes from its address registers", "[value_flow]") {
    CHECK(flow({0x48, 0x8d, 0x44, 0xcb, 0x10}) == events{compute({rbx, rcx}, rax)}); // lea rax, [rbx+rcx*8+16]
    CHECK(flow({0x48, 0x8d, 0x05, 0x00, 0x01, 0x00, 0x00}) == events{compute({}, rax)}); // lea rax, [rip+0x100]
}

TEST_CASE("push and pop move through the slot at the stack pointer", "[value_flow]") {
    stack_slot_table slots;
    register_file regs = sample_registers();
    CHECK(flow({0x53}, regs, slots) == events{E::register_move(slot(0), rbx)}); // push rbx
    regs.gprs[register_file::rsp] -= 8;
    CHECK(flow({0x59}, regs, slots) == events{E::register_move(rcx, slot(0))}); // pop rcx
    CHECK(slots.addresses[0] == stack_top - 8);

    CHECK(flow({0xff, 0x33}) == events{E::load(slot(0), heap_rbx, 8)}); // push qword [rbx]
    CHECK(flow({0x6a, 0x05}) == events{E::constant(slot(0))});          // push 5
    CHECK(flow({0x9c}) == events{compute({}, slot(0))});                // pushfq: no followed value
    CHECK(flow({0x8f, 0x03}) == events{E::store(slot(0), heap_rbx, 8)}); // pop qword [rbx]
    // pop [rsp+8] addresses its destination after rsp moved: [old rsp + 16].
    stack_slot_table pop_slots;
    CHECK(flow({0x8f, 0x44, 0x24, 0x08}, sample_registers(), pop_slots) ==
          events{E::register_move(slot(1), slot(0))});
    CHECK(pop_slots.addresses[0] == stack_top);
    CHECK(pop_slots.addresses[1] == stack_top + 16);
    // leave: rbp from the slot at rbp.
    CHECK(flow({0xc9}) == events{E::register_move(rbp, slot(0))});
}

TEST_CASE("xchg swaps through the scratch register", "[value_flow]") {
    CHECK(flow({0x48, 0x93}) == events{E::register_move(scratch, rbx), E::register_move(rbx, rax),
                                        E::register_move(rax, scratch)}); // xchg rbx, rax
    CHECK(flow({0x48, 0x87, 0x03}) == events{E::load(scratch, heap_rbx, 8), E::store(rax, heap_rbx, 8),
                                              E::register_move(rax, scratch)}); // xchg [rbx], rax
    CHECK(flow({0x48, 0x87, 0xc0}).empty()); // xchg rax, rax
}

TEST_CASE("the integer ALU computes, with memory operands through the scratch register", "[value_flow]") {
    CHECK(flow({0x48, 0x01, 0xd8}) == events{compute({rax, rbx}, rax)}); // add rax, rbx
    CHECK(flow({0x48, 0x03, 0x03}) == events{E::load(scratch, heap_rbx, 8), compute({rax, scratch}, rax)});
    CHECK(flow({0x48, 0x01, 0x03}) == events{E::load(scratch, heap_rbx, 8), compute({scratch, rax}, scratch),
                                              E::store(scratch, heap_rbx, 8)}); // add [rbx], rax
    CHECK(flow({0x48, 0x83, 0xe8, 0x01}) == events{compute({rax}, rax)});    // sub rax, 1
    CHECK(flow({0x21, 0xc8}) == events{compute({rax, rcx}, rax)});           // and eax, ecx
    CHECK(flow({0x48, 0x09, 0xd8}) == events{compute({rax, rbx}, rax)});     // or rax, rbx
    CHECK(flow({0x48, 0x31, 0xd8}) == events{compute({rax, rbx}, rax)});     // xor rax, rbx
    CHECK(flow({0x31, 0xc0}) == events{E::constant(rax)});                   // xor eax, eax
    CHECK(flow({0x48, 0x29, 0xc9}) == events{E::constant(rcx)});             // sub rcx, rcx
    CHECK(flow({0x48, 0x83, 0x3b, 0x00}) == events{E::load(scratch, heap_rbx, 8), compute({scratch}, std::nullopt)});
    CHECK(flow({0x48, 0x39, 0xd8}) == events{compute({rax, rbx}, std::nullopt)}); // cmp rax, rbx
    CHECK(flow({0x48, 0x85, 0xc0}) == events{compute({rax}, std::nullopt)});      // test rax, rax
    CHECK(flow({0x48, 0xff, 0xc0}) == events{compute({rax}, rax)});               // inc rax
    CHECK(flow({0x48, 0xff, 0xc9}) == events{compute({rcx}, rcx)});               // dec rcx
    CHECK(flow({0x48, 0xf7, 0xd8}) == events{compute({rax}, rax)});               // neg rax
    CHECK(flow({0x48, 0xf7, 0xd0}) == events{compute({rax}, rax)});               // not rax
    CHECK(flow({0x48, 0x6b, 0xc3, 0x05}) == events{compute({rbx}, rax)});         // imul rax, rbx, 5
    CHECK(flow({0x48, 0x0f, 0xaf, 0xc3}) == events{compute({rax, rbx}, rax)});    // imul rax, rbx
    CHECK(flow({0x48, 0xd3, 0xe0}) == events{compute({rax, rcx}, rax)});          // shl rax, cl
    CHECK(flow({0x48, 0xc1, 0xfa, 0x03}) == events{compute({rdx}, rdx)});         // sar rdx, 3
    CHECK(flow({0x48, 0xf7, 0xe3}) == events{compute({rbx, rax}, rax), compute({}, rdx)}); // mul rbx
    // xadd [rbx], rax: two results, the memory one stored.
    CHECK(flow({0x48, 0x0f, 0xc1, 0x03}) == events{E::load(scratch, heap_rbx, 8), compute({scratch, rax}, scratch),
                                                    compute({}, rax), E::store(scratch, heap_rbx, 8)});
}

TEST_CASE("cmov moves only when its condition holds on the thread's flags", "[value_flow]") {
    CHECK(flow({0x48, 0x0f, 0x44, 0xc3}, with_flags(0x202 | zero_flag)) == events{E::register_move(rax, rbx)});
    CHECK(flow({0x48, 0x0f, 0x44, 0xc3}, with_flags(0x202)).empty()); // cmovz rax, rbx, not taken
    CHECK(flow({0x48, 0x0f, 0x45, 0xc3}, with_flags(0x202)) == events{E::register_move(rax, rbx)}); // cmovnz
    CHECK(flow({0x48, 0x0f, 0x44, 0x03}, with_flags(0x202 | zero_flag)) == events{E::load(rax, heap_rbx, 8)});
    CHECK(flow({0x48, 0x0f, 0x44, 0x03}, with_flags(0x202)).empty()); // cmovz rax, [rbx], not taken
}

TEST_CASE("SSE and AVX moves move; other vector instructions compute", "[value_flow]") {
    CHECK(flow({0x66, 0x48, 0x0f, 0x6e, 0xc0}) == events{E::register_move(xmm(0), rax)}); // movq xmm0, rax
    CHECK(flow({0x66, 0x48, 0x0f, 0x7e, 0xc8}) == events{E::register_move(rax, xmm(1))}); // movq rax, xmm1
    CHECK(flow({0x66, 0x0f, 0x6e, 0x03}) == events{E::load(xmm(0), heap_rbx, 4)});        // movd xmm0, [rbx]
    CHECK(flow({0xf3, 0x0f, 0x6f, 0x13}) == events{E::load(xmm(2), heap_rbx, 16)});       // movdqu xmm2, [rbx]
    CHECK(flow({0x66, 0x0f, 0x7f, 0x1b}) == events{E::store(xmm(3), heap_rbx, 16)});      // movdqa [rbx], xmm3
    CHECK(flow({0x0f, 0x10, 0xca}) == events{E::register_move(xmm(1), xmm(2))});          // movups xmm1, xmm2
    CHECK(flow({0xf2, 0x0f, 0x10, 0x07}) == events{E::load(xmm(0), heap_rdi, 8)});       // movsd xmm0, [rdi]
    CHECK(flow({0xc5, 0xfe, 0x6f, 0x07}) == events{E::load(xmm(0), heap_rdi, 32)});       // vmovdqu ymm0, [rdi]
    CHECK(flow({0xc5, 0xfe, 0x7f, 0x0f}) == events{E::store(xmm(1), heap_rdi, 32)});      // vmovdqu [rdi], ymm1
    CHECK(flow({0x62, 0xe1, 0xfe, 0x48, 0x6f, 0x0f}) == events{E::load(xmm(17), heap_rdi, 64)}); // vmovdqu64 zmm17
    // A masked AVX-512 move merges into its destination: a computation.
    CHECK(flow({0x62, 0xf1, 0xfe, 0x29, 0x6f, 0x07}) ==
          events{E::load(scratch, heap_rdi, 32), compute({xmm(0), scratch}, xmm(0))}); // vmovdqu64 ymm0{k1}, [rdi]
    CHECK(flow({0x66, 0x0f, 0xd4, 0xc1}) == events{compute({xmm(0), xmm(1)}, xmm(0))}); // paddq xmm0, xmm1
    CHECK(flow({0xc5, 0xf5, 0xfe, 0x07}) ==
          events{E::load(scratch, heap_rdi, 32), compute({xmm(1), scratch}, xmm(0))}); // vpaddd ymm0, ymm1, [rdi]
    CHECK(flow({0x66, 0x0f, 0xef, 0xe4}) == events{E::constant(xmm(4))});             // pxor xmm4, xmm4
    CHECK(flow({0xc5, 0xf1, 0xef, 0xc1}) == events{E::constant(xmm(0))});             // vpxor xmm0, xmm1, xmm1
}

TEST_CASE("movs is a string move of the whole range, forwards and backwards", "[value_flow]") {
    const events advance_rdi_rsi{compute({rdi}, rdi), compute({rsi}, rsi)};
    events expected{E::string_move(heap_rdi, heap_rsi, 8, 8)};
    expected.insert(expected.end(), advance_rdi_rsi.begin(), advance_rdi_rsi.end());
    CHECK(flow({0x48, 0xa5}) == expected); // movsq

    // rep movsq, rcx = 4: 32 bytes from rsi to rdi, then rcx, rdi, rsi advanced.
    const events rep_forward{E::string_move(heap_rdi, heap_rsi, 32, 8), compute({rcx}, rcx), compute({rdi}, rdi),
                             compute({rsi}, rsi)};
    CHECK(flow({0xf3, 0x48, 0xa5}) == rep_forward);
    // Backwards (direction flag set): elements rsi, rsi - 8, …, rsi - 24; the ranges start at the lowest.
    const events rep_backward{E::string_move(heap_rdi - 24, heap_rsi - 24, 32, 8), compute({rcx}, rcx),
                              compute({rdi}, rdi), compute({rsi}, rsi)};
    CHECK(flow({0xf3, 0x48, 0xa5}, with_flags(0x202 | direction_flag)) == rep_backward);
    // rep movsb with rcx = 0 moves nothing and changes no register.
    register_file empty = sample_registers();
    empty.gprs[register_file::rcx] = 0;
    CHECK(flow({0xf3, 0xa4}, empty).empty());
    // The address-size prefix counts with ecx.
    register_file wide = sample_registers();
    wide.gprs[register_file::rcx] = 0x100000003;
    CHECK(flow({0x67, 0xf3, 0xa4}, wide).front() == E::string_move(heap_rdi, heap_rsi, 3, 1));
}

TEST_CASE("stos stores rax, lods loads it", "[value_flow]") {
    CHECK(flow({0xf3, 0x48, 0xab}) == events{E::store(rax, heap_rdi, 8), compute({rcx}, rcx), compute({rdi}, rdi)});
    CHECK(flow({0x48, 0xad}) == events{E::load(rax, heap_rsi, 8), compute({rsi}, rsi)}); // lodsq
    // rep lodsq leaves the last element read in rax.
    CHECK(flow({0xf3, 0x48, 0xad}).front() == E::load(rax, heap_rsi + 24, 8));
}

TEST_CASE("control transfers and no-ops move no value", "[value_flow]") {
    CHECK(flow({0xe8, 0x00, 0x00, 0x00, 0x00}).empty());       // call
    CHECK(flow({0xc3}).empty());                               // ret
    CHECK(flow({0xe9, 0x00, 0x00, 0x00, 0x00}).empty());       // jmp
    CHECK(flow({0x0f, 0x84, 0x00, 0x00, 0x00, 0x00}).empty()); // jz
    CHECK(flow({0xff, 0xe0}).empty());                         // jmp rax
    CHECK(flow({0x90}).empty());                               // nop
    CHECK(flow({0x0f, 0x1f, 0x04, 0x00}).empty());             // nop dword [rax+rax]
    CHECK(flow({0x0f, 0x18, 0x0b}).empty());                   // prefetcht0 [rbx]
    CHECK(flow({0xe2, 0xfe}) == events{compute({rcx}, rcx)});  // loop: rcx counts down
    // A call's return address overwrites a slot already at rsp - 8.
    stack_slot_table slots;
    const register_file regs = sample_registers();
    CHECK(flow({0x48, 0x89, 0x44, 0x24, 0xf8}, regs, slots) == events{E::register_move(slot(0), rax)});
    CHECK(flow({0xe8, 0x00, 0x00, 0x00, 0x00}, regs, slots) == events{E::constant(slot(0))});
}

TEST_CASE("instructions not named are described from their operands", "[value_flow]") {
    CHECK(flow({0x48, 0x0f, 0xc8}) == events{compute({rax}, rax)});                 // bswap rax
    CHECK(flow({0x0f, 0x94, 0xc0}) == events{compute({}, rax)});                    // setz al
    CHECK(flow({0x48, 0x0f, 0xc7, 0xf0}) == events{compute({}, rax)});              // rdrand rax
    CHECK(flow({0xc4, 0xe2, 0xf3, 0xf5, 0xc3}) == events{compute({rcx, rbx}, rax)}); // pdep rax, rcx, rbx
    CHECK(flow({0xf3, 0x48, 0x0f, 0xb8, 0x03}) ==
          events{E::load(scratch, heap_rbx, 8), compute({scratch}, rax)});           // popcnt rax, [rbx]
    CHECK(flow({0x0f, 0xa2}) == events{compute({rax, rcx}, rax), compute({}, rbx), compute({}, rcx),
                                       compute({}, rdx)});                          // cpuid
    CHECK(flow({0x0f, 0x31}) == events{compute({}, rax), compute({}, rdx)});        // rdtsc
    CHECK(flow({0x0f, 0x05}) == events{compute({}, rax), compute({}, rcx), compute({}, 11)}); // syscall
}

TEST_CASE("cmps and scas load the elements they compare", "[value_flow]") {
    constexpr value_register second = ojx::hardware::second_scratch_register;
    CHECK(flow({0x48, 0xa7}) == events{E::load(scratch, heap_rsi, 8), E::load(second, heap_rdi, 8),
                                       compute({scratch, second}, std::nullopt), compute({rsi}, rsi),
                                       compute({rdi}, rdi)}); // cmpsq
    CHECK(flow({0xf3, 0x48, 0xaf}) == events{E::load(scratch, heap_rdi, 8), compute({rax, scratch}, std::nullopt),
                                             compute({rcx}, rcx), compute({rdi}, rdi)}); // repe scasq
}

TEST_CASE("bytes that do not decode give no events", "[value_flow]") {
    register_file regs = sample_registers();
    stack_slot_table slots;
    std::array<E, ojx::hardware::max_x86_value_flow_events> out{};
    const std::uint8_t truncated[] = {0x48, 0x8b};
    const auto result = ojx::hardware::x86_value_flow(truncated, sizeof truncated, regs, slots, out);
    CHECK_FALSE(result.decoded);
    CHECK(result.count == 0);
}

namespace {

// Every instruction of [start, end), decoded from the start of the range on (resynchronising one byte on after a
// failed decode), with the events written into a span that a guard event follows.
struct code_run {
    std::uint64_t instructions = 0;
    std::uint64_t events = 0;
    std::uint64_t most_events = 0;
    std::uint64_t incomplete = 0;
    std::uint64_t guard_overwritten = 0;
    std::uint64_t unknown_registers = 0; // events naming a register outside the numbering
};

// Every register the event names is a general-purpose or vector register, a slot of the table, or a scratch one.
bool named_registers(const E& event, const stack_slot_table& slots) {
    const auto named = [&slots](value_register r) {
        return r < ojx::hardware::first_stack_slot_register ||
               (r - ojx::hardware::first_stack_slot_register < slots.used) ||
               r == ojx::hardware::second_scratch_register || r == scratch;
    };
    if (event.kind == value_flow_kind::string_move) return event.reg == 0 && event.source_count == 0;
    if (event.kind == value_flow_kind::compute && !event.has_result && event.reg != 0) return false;
    for (std::size_t i = 0; i < event.source_count; ++i) {
        if (!named(event.sources[i])) return false;
    }
    return named(event.reg);
}

void run_over(const std::uint8_t* start, const std::uint8_t* end, code_run& run) {
    constexpr std::size_t max = ojx::hardware::max_x86_value_flow_events;
    const E guard = E::string_move(0xdead, 0xbeef, 77, 7);
    register_file regs = sample_registers();
    stack_slot_table slots;
    for (const std::uint8_t* pc = start; pc < end;) {
        std::array<E, max + 1> buffer;
        buffer.fill(guard);
        regs.rip = reinterpret_cast<std::uint64_t>(pc);
        if (run.instructions % 64 == 0) slots = {}; // a following's table: empty, then filling
        const auto result = ojx::hardware::x86_value_flow(pc, static_cast<std::size_t>(end - pc), regs, slots,
                                                          std::span<E, max>(buffer.data(), max));
        if (!(buffer[max] == guard)) ++run.guard_overwritten;
        for (std::size_t i = result.count; i < max; ++i) {
            if (!(buffer[i] == guard)) ++run.guard_overwritten;
        }
        if (!result.decoded) {
            ++pc;
            continue;
        }
        ++run.instructions;
        run.events += result.count;
        for (std::size_t i = 0; i < result.count; ++i) {
            if (!named_registers(buffer[i], slots)) ++run.unknown_registers;
        }
        run.most_events = std::max<std::uint64_t>(run.most_events, result.count);
        if (!result.complete) ++run.incomplete;
        pc += result.length;
    }
}

// The executable mapping of /proc/self/maps that holds `inside`.
bool executable_mapping(const void* inside, const std::uint8_t*& start, const std::uint8_t*& end) {
    std::FILE* maps = std::fopen("/proc/self/maps", "r");
    if (maps == nullptr) return false;
    char line[512];
    bool found = false;
    const auto where = reinterpret_cast<std::uintptr_t>(inside);
    while (!found && std::fgets(line, sizeof line, maps) != nullptr) {
        std::uintptr_t low = 0, high = 0;
        char permissions[5] = {};
        if (std::sscanf(line, "%lx-%lx %4s", &low, &high, permissions) == 3 && permissions[0] == 'r' &&
            permissions[2] == 'x' && where >= low && where < high) {
            start = reinterpret_cast<const std::uint8_t*>(low);
            end = reinterpret_cast<const std::uint8_t*>(high);
            found = true;
        }
    }
    std::fclose(maps);
    return found;
}

} // namespace

TEST_CASE("over all the code of libc and of this binary, no instruction writes past the span", "[value_flow]") {
    void* const memcpy_address = dlsym(RTLD_DEFAULT, "memcpy");
    for (const void* inside : {static_cast<const void*>(memcpy_address), reinterpret_cast<const void*>(&run_over)}) {
        REQUIRE(inside != nullptr);
        const std::uint8_t* start = nullptr;
        const std::uint8_t* end = nullptr;
        REQUIRE(executable_mapping(inside, start, end));
        code_run run;
        run_over(start, end, run);
        INFO("mapping " << static_cast<const void*>(start) << " of " << (end - start) << " bytes");
        std::printf("%zu bytes of code: %lu instructions, %lu events (at most %lu for one)\n",
                    static_cast<std::size_t>(end - start), static_cast<unsigned long>(run.instructions),
                    static_cast<unsigned long>(run.events), static_cast<unsigned long>(run.most_events));
        CHECK(run.instructions > 1000);
        CHECK(run.guard_overwritten == 0);
        CHECK(run.unknown_registers == 0);
        CHECK(run.incomplete == 0);
        CHECK(run.most_events <= ojx::hardware::max_x86_value_flow_events);
    }
}
