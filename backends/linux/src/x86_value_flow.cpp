// x86_value_flow: one executed x86-64 instruction as value flow events (ojx/hardware/x86_value_flow.hpp states the
// rules). The few instructions that move values (moves, push and pop, xchg, cmov, string moves) are named; every
// other one is described from Zydis's operand metadata — which operands it reads and writes, hidden ones
// included — so that no instruction carries a value through a register it overwrites. Runs in signal handlers:
// Zydis decodes into local structures, events go to the caller's span.
#include "ojx/hardware/x86_value_flow.hpp"

#include "x86_conditions.hpp"
#include "zydis_decoding.hpp"

#include <Zydis/Zydis.h>

#include <algorithm>
#include <array>
#include <optional>

namespace ojx::hardware {

namespace {

constexpr std::uint64_t low_bits(unsigned bits) noexcept {
    return bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
}

constexpr value_register gpr_register(register_file::gpr reg) noexcept { return static_cast<value_register>(reg); }

// The value register of a Zydis register, or none for registers that hold no followed value.
std::optional<value_register> value_register_of(ZydisRegister reg) noexcept {
    switch (ZydisRegisterGetClass(reg)) {
    case ZYDIS_REGCLASS_GPR8:
    case ZYDIS_REGCLASS_GPR16:
    case ZYDIS_REGCLASS_GPR32:
    case ZYDIS_REGCLASS_GPR64:
        return static_cast<value_register>(ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, reg) -
                                           ZYDIS_REGISTER_RAX);
    case ZYDIS_REGCLASS_XMM:
    case ZYDIS_REGCLASS_YMM:
    case ZYDIS_REGCLASS_ZMM:
        return static_cast<value_register>(first_vector_register + ZydisRegisterGetId(reg));
    default:
        return std::nullopt;
    }
}

// The caller's span, filled in order. Never written past; `complete` turns false if an event did not fit (no
// instruction Zydis decodes needs more than max_x86_value_flow_events under these rules, which the tests check
// over real code).
class event_list {
public:
    explicit event_list(std::span<value_flow_event, max_x86_value_flow_events> out) noexcept : out_(out) {}
    void add(const value_flow_event& event) noexcept {
        if (count_ < out_.size()) {
            out_[count_++] = event;
        } else {
            complete_ = false;
        }
    }
    std::uint8_t count() const noexcept { return count_; }
    bool complete() const noexcept { return complete_; }

private:
    std::span<value_flow_event, max_x86_value_flow_events> out_;
    std::uint8_t count_ = 0;
    bool complete_ = true;
};

// Where an operand's value is: a value register (a stack slot included), memory, an immediate, or somewhere not
// followed (a register that holds no followed value, an address the general registers cannot give).
struct location {
    enum class kind : std::uint8_t { elsewhere, value_register, memory, immediate };
    kind what = kind::elsewhere;
    value_register reg = 0;
    std::uint64_t address = 0;
    std::uint8_t width = 0; // memory: bytes
};

// What x86_value_flow works with for one instruction.
struct instruction_context {
    const ZydisDecodedInstruction& instruction;
    const ZydisDecodedOperand* operands;
    register_file& regs;
    stack_slot_table& slots;
    event_list& events;
};

bool in_stack_window(const register_file& regs, std::uint64_t address) noexcept {
    const std::uint64_t window_start = regs.gprs[register_file::rsp] - stack_window_below;
    return address - window_start < stack_window_below + stack_window_above; // unsigned: below start wraps high
}

// The slot already given to `address`, if any.
std::optional<value_register> existing_slot(const stack_slot_table& slots, std::uint64_t address) noexcept {
    for (std::size_t i = 0; i < slots.used; ++i) {
        if (slots.addresses[i] == address) return static_cast<value_register>(first_stack_slot_register + i);
    }
    return std::nullopt;
}

// Memory at `address`: a stack slot (found, or given one while the table has room) inside the window, memory
// outside it or when the table is full.
location memory_at(instruction_context& context, std::uint64_t address, std::uint8_t width) noexcept {
    location memory{.what = location::kind::memory, .address = address, .width = width};
    if (!in_stack_window(context.regs, address)) return memory;
    stack_slot_table& slots = context.slots;
    std::optional<value_register> slot = existing_slot(slots, address);
    if (!slot && slots.used < slots.capacity) {
        slots.addresses[slots.used] = address;
        slot = static_cast<value_register>(first_stack_slot_register + slots.used);
        ++slots.used;
    }
    if (!slot) {
        ++slots.treated_as_memory;
        return memory;
    }
    return {.what = location::kind::value_register, .reg = *slot};
}

std::uint8_t bytes_of(const ZydisDecodedOperand& operand) noexcept {
    return static_cast<std::uint8_t>(operand.size / 8);
}

// Where `operand` is, its effective address computed with `regs` (the registers before the instruction, or as
// pop computes its destination).
location locate(instruction_context& context, const ZydisDecodedOperand& operand, register_file& regs) noexcept {
    switch (operand.type) {
    case ZYDIS_OPERAND_TYPE_REGISTER:
        if (const std::optional<value_register> reg = value_register_of(operand.reg.value)) {
            return {.what = location::kind::value_register, .reg = *reg};
        }
        return {};
    case ZYDIS_OPERAND_TYPE_MEMORY: {
        std::uint64_t address = 0;
        if (operand.mem.type != ZYDIS_MEMOP_TYPE_MEM ||
            !zydis::effective_address(context.instruction, operand, regs, address)) {
            return {};
        }
        return memory_at(context, address, bytes_of(operand));
    }
    case ZYDIS_OPERAND_TYPE_IMMEDIATE:
        return {.what = location::kind::immediate};
    default:
        return {};
    }
}

location locate(instruction_context& context, const ZydisDecodedOperand& operand) noexcept {
    return locate(context, operand, context.regs);
}

// The value at `source` copied to `destination` (a move, load, store or constant; memory to memory through the
// scratch register).
void transfer(instruction_context& context, const location& destination, const location& source) noexcept {
    event_list& events = context.events;
    if (destination.what == location::kind::value_register) {
        switch (source.what) {
        case location::kind::value_register:
            events.add(value_flow_event::register_move(destination.reg, source.reg));
            break;
        case location::kind::memory:
            events.add(value_flow_event::load(destination.reg, source.address, source.width));
            break;
        case location::kind::immediate:
            events.add(value_flow_event::constant(destination.reg));
            break;
        case location::kind::elsewhere: // overwritten with a value not followed
            events.add(value_flow_event::compute({}, destination.reg));
            break;
        }
    } else if (destination.what == location::kind::memory) {
        // An immediate or a value not followed stored to memory moves no register's value: no event.
        if (source.what == location::kind::value_register) {
            events.add(value_flow_event::store(source.reg, destination.address, destination.width));
        } else if (source.what == location::kind::memory) {
            events.add(value_flow_event::load(scratch_register, source.address, source.width));
            events.add(value_flow_event::store(scratch_register, destination.address, destination.width));
        }
    }
}

// A small set of distinct registers, in the order added.
template <std::size_t Capacity>
struct register_set {
    std::array<value_register, Capacity> registers{};
    std::size_t size = 0;
    void add(value_register reg) noexcept {
        const auto end = registers.begin() + static_cast<std::ptrdiff_t>(size);
        if (size < Capacity && std::find(registers.begin(), end, reg) == end) registers[size++] = reg;
    }
    std::span<const value_register> view() const noexcept { return {registers.data(), size}; }
};

// A register computed from itself (a string instruction's pointer or count advanced, loop's count).
void advance(event_list& events, value_register reg) noexcept {
    const value_register self[] = {reg};
    events.add(value_flow_event::compute(self, reg));
}

// --- Named instructions ---------------------------------------------------------------------------------------

// The source operand of a plain move (its destination is operand 0), or 0 when the instruction is not one.
std::size_t plain_move_source(const ZydisDecodedInstruction& instruction,
                              const ZydisDecodedOperand* operands) noexcept {
    // EVEX encodings name their mask register (k0: none) as the second operand.
    const bool mask_operand = instruction.operand_count_visible == 3 &&
                              operands[1].type == ZYDIS_OPERAND_TYPE_REGISTER &&
                              ZydisRegisterGetClass(operands[1].reg.value) == ZYDIS_REGCLASS_MASK;
    const std::size_t source = mask_operand ? 2 : 1;
    if (instruction.operand_count_visible != source + 1 || instruction.meta.category == ZYDIS_CATEGORY_STRINGOP ||
        (instruction.avx.mask.reg != ZYDIS_REGISTER_NONE && instruction.avx.mask.reg != ZYDIS_REGISTER_K0)) {
        return 0; // movsd the string instruction; masked AVX-512 moves merge into their destination
    }
    switch (instruction.mnemonic) {
    case ZYDIS_MNEMONIC_MOV:
    case ZYDIS_MNEMONIC_MOVZX:
    case ZYDIS_MNEMONIC_MOVSX:
    case ZYDIS_MNEMONIC_MOVSXD:
    case ZYDIS_MNEMONIC_MOVNTI:
    case ZYDIS_MNEMONIC_MOVD:
    case ZYDIS_MNEMONIC_MOVQ:
    case ZYDIS_MNEMONIC_MOVSS:
    case ZYDIS_MNEMONIC_MOVSD:
    case ZYDIS_MNEMONIC_MOVDQU:
    case ZYDIS_MNEMONIC_MOVDQA:
    case ZYDIS_MNEMONIC_MOVUPS:
    case ZYDIS_MNEMONIC_MOVAPS:
    case ZYDIS_MNEMONIC_MOVUPD:
    case ZYDIS_MNEMONIC_MOVAPD:
    case ZYDIS_MNEMONIC_MOVNTDQ:
    case ZYDIS_MNEMONIC_MOVNTDQA:
    case ZYDIS_MNEMONIC_MOVNTPS:
    case ZYDIS_MNEMONIC_MOVNTPD:
    case ZYDIS_MNEMONIC_LDDQU:
    case ZYDIS_MNEMONIC_VMOVD:
    case ZYDIS_MNEMONIC_VMOVQ:
    case ZYDIS_MNEMONIC_VMOVSS:
    case ZYDIS_MNEMONIC_VMOVSD:
    case ZYDIS_MNEMONIC_VMOVDQU:
    case ZYDIS_MNEMONIC_VMOVDQA:
    case ZYDIS_MNEMONIC_VMOVDQU8:
    case ZYDIS_MNEMONIC_VMOVDQU16:
    case ZYDIS_MNEMONIC_VMOVDQU32:
    case ZYDIS_MNEMONIC_VMOVDQU64:
    case ZYDIS_MNEMONIC_VMOVDQA32:
    case ZYDIS_MNEMONIC_VMOVDQA64:
    case ZYDIS_MNEMONIC_VMOVUPS:
    case ZYDIS_MNEMONIC_VMOVAPS:
    case ZYDIS_MNEMONIC_VMOVUPD:
    case ZYDIS_MNEMONIC_VMOVAPD:
    case ZYDIS_MNEMONIC_VMOVNTDQ:
    case ZYDIS_MNEMONIC_VMOVNTDQA:
    case ZYDIS_MNEMONIC_VMOVNTPS:
    case ZYDIS_MNEMONIC_VMOVNTPD:
    case ZYDIS_MNEMONIC_VLDDQU:
        return source;
    default:
        return 0;
    }
}

// xor r, r and the like: the result is 0 whatever r held.
bool is_zero_idiom(const ZydisDecodedInstruction& instruction, const ZydisDecodedOperand* operands) noexcept {
    switch (instruction.mnemonic) {
    case ZYDIS_MNEMONIC_XOR:
    case ZYDIS_MNEMONIC_SUB:
    case ZYDIS_MNEMONIC_PXOR:
    case ZYDIS_MNEMONIC_VPXOR:
    case ZYDIS_MNEMONIC_VPXORD:
    case ZYDIS_MNEMONIC_VPXORQ:
    case ZYDIS_MNEMONIC_XORPS:
    case ZYDIS_MNEMONIC_VXORPS:
    case ZYDIS_MNEMONIC_XORPD:
    case ZYDIS_MNEMONIC_VXORPD:
        break;
    default:
        return false;
    }
    // The two inputs: the last two visible operands (xor eax, eax; vpxor xmm0, xmm1, xmm1).
    const std::size_t visible = instruction.operand_count_visible;
    if (visible < 2 || visible > 3) return false;
    const ZydisDecodedOperand& a = operands[visible - 2];
    const ZydisDecodedOperand& b = operands[visible - 1];
    return operands[0].type == ZYDIS_OPERAND_TYPE_REGISTER && a.type == ZYDIS_OPERAND_TYPE_REGISTER &&
           b.type == ZYDIS_OPERAND_TYPE_REGISTER && a.reg.value == b.reg.value;
}

bool has_rep(const ZydisDecodedInstruction& instruction) noexcept {
    return (instruction.attributes & (ZYDIS_ATTRIB_HAS_REP | ZYDIS_ATTRIB_HAS_REPE | ZYDIS_ATTRIB_HAS_REPNE)) != 0;
}

// The width of the stack word push, pop and leave move: their hidden stack operand's.
std::uint8_t stack_word(const ZydisDecodedInstruction& instruction, const ZydisDecodedOperand* operands) noexcept {
    for (std::size_t i = 0; i < instruction.operand_count; ++i) {
        if (operands[i].type == ZYDIS_OPERAND_TYPE_MEMORY && operands[i].mem.segment == ZYDIS_REGISTER_SS &&
            operands[i].visibility == ZYDIS_OPERAND_VISIBILITY_HIDDEN) {
            return bytes_of(operands[i]);
        }
    }
    return 8;
}

void push(instruction_context& context) noexcept {
    const std::uint8_t width = stack_word(context.instruction, context.operands);
    // The source first: push [rsp + n] computes its address before rsp moves.
    const location source =
        context.instruction.operand_count_visible == 1 ? locate(context, context.operands[0]) : location{};
    const location destination = memory_at(context, context.regs.gprs[register_file::rsp] - width, width);
    transfer(context, destination, source);
}

void pop(instruction_context& context) noexcept {
    const std::uint8_t width = stack_word(context.instruction, context.operands);
    const location source = memory_at(context, context.regs.gprs[register_file::rsp], width);
    location destination; // popf: into the flags, no value register
    if (context.instruction.operand_count_visible == 1) {
        // pop [rsp + n] computes its address after rsp moved.
        register_file after = context.regs;
        after.gprs[register_file::rsp] += width;
        destination = locate(context, context.operands[0], after);
        after.gprs[register_file::rsp] = context.regs.gprs[register_file::rsp];
        context.regs = after; // with the FS/GS bases locate may have read and cached
    }
    transfer(context, destination, source);
}

// leave: rsp = rbp, then pop rbp.
void leave(instruction_context& context) noexcept {
    const location source = memory_at(context, context.regs.gprs[register_file::rbp], 8);
    transfer(context, {.what = location::kind::value_register, .reg = gpr_register(register_file::rbp)}, source);
}

void exchange(instruction_context& context) noexcept {
    const location a = locate(context, context.operands[0]);
    const location b = locate(context, context.operands[1]);
    event_list& events = context.events;
    const auto value = location::kind::value_register;
    if (a.what == value && b.what == value) {
        if (a.reg == b.reg) return;
        events.add(value_flow_event::register_move(scratch_register, a.reg));
        events.add(value_flow_event::register_move(a.reg, b.reg));
        events.add(value_flow_event::register_move(b.reg, scratch_register));
        return;
    }
    const location& reg = a.what == value ? a : b;
    const location& other = a.what == value ? b : a;
    if (reg.what != value) return; // two operands not followed
    if (other.what == location::kind::memory) {
        events.add(value_flow_event::load(scratch_register, other.address, other.width));
        events.add(value_flow_event::store(reg.reg, other.address, other.width));
        events.add(value_flow_event::register_move(reg.reg, scratch_register));
    } else {
        events.add(value_flow_event::compute({}, reg.reg));
    }
}

// movs, stos, lods, cmps, scas (header: the rules, the direction flag). False for other string instructions.
bool string_instruction(instruction_context& context) noexcept {
    const ZydisDecodedInstruction& instruction = context.instruction;
    enum class string_kind { move, store, load, compare } kind;
    switch (instruction.mnemonic) {
    case ZYDIS_MNEMONIC_MOVSB:
    case ZYDIS_MNEMONIC_MOVSW:
    case ZYDIS_MNEMONIC_MOVSD:
    case ZYDIS_MNEMONIC_MOVSQ:
        kind = string_kind::move;
        break;
    case ZYDIS_MNEMONIC_STOSB:
    case ZYDIS_MNEMONIC_STOSW:
    case ZYDIS_MNEMONIC_STOSD:
    case ZYDIS_MNEMONIC_STOSQ:
        kind = string_kind::store;
        break;
    case ZYDIS_MNEMONIC_LODSB:
    case ZYDIS_MNEMONIC_LODSW:
    case ZYDIS_MNEMONIC_LODSD:
    case ZYDIS_MNEMONIC_LODSQ:
        kind = string_kind::load;
        break;
    case ZYDIS_MNEMONIC_CMPSB:
    case ZYDIS_MNEMONIC_CMPSW:
    case ZYDIS_MNEMONIC_CMPSD:
    case ZYDIS_MNEMONIC_CMPSQ:
    case ZYDIS_MNEMONIC_SCASB:
    case ZYDIS_MNEMONIC_SCASW:
    case ZYDIS_MNEMONIC_SCASD:
    case ZYDIS_MNEMONIC_SCASQ:
        kind = string_kind::compare;
        break;
    default:
        return false;
    }
    const bool repeated = has_rep(instruction);
    const std::uint64_t count =
        repeated ? context.regs.gprs[register_file::rcx] & low_bits(instruction.address_width) : 1;
    if (count == 0) return true; // nothing moves, no register changes
    // The memory operands (hidden: [rsi] read, [rdi] written, or both read by cmps), first elements' addresses.
    struct element {
        std::uint64_t address;
        ZydisRegister pointer;
        bool read;
    };
    std::array<element, 2> elements{};
    std::size_t element_count = 0;
    std::uint8_t width = 0;
    for (std::size_t i = 0; i < instruction.operand_count && element_count < elements.size(); ++i) {
        const ZydisDecodedOperand& operand = context.operands[i];
        if (operand.type != ZYDIS_OPERAND_TYPE_MEMORY) continue;
        element& e = elements[element_count++];
        width = bytes_of(operand);
        e.pointer = operand.mem.base;
        e.read = (operand.actions & ZYDIS_OPERAND_ACTION_MASK_READ) != 0;
        if (!zydis::effective_address(instruction, operand, context.regs, e.address)) return true;
    }
    const bool backwards = (context.regs.rflags & zydis::direction) != 0;
    const std::uint64_t below = backwards ? (count - 1) * width : 0; // from the first element to the lowest
    const std::uint64_t last_offset = (count - 1) * width;          // from the first element to the last
    event_list& events = context.events;
    const value_register rax = gpr_register(register_file::rax);
    switch (kind) {
    case string_kind::move: {
        const element& source = elements[0].read ? elements[0] : elements[1];
        const element& destination = elements[0].read ? elements[1] : elements[0];
        events.add(value_flow_event::string_move(destination.address - below, source.address - below,
                                                 count * width, width));
        break;
    }
    case string_kind::store:
        events.add(value_flow_event::store(rax, elements[0].address, width));
        break;
    case string_kind::load:
        events.add(value_flow_event::load(
            rax, backwards ? elements[0].address - last_offset : elements[0].address + last_offset, width));
        break;
    case string_kind::compare: { // the first elements compared (scas: with rax), no result but the flags
        register_set<value_flow_event::max_sources> compared;
        if (element_count == 1) compared.add(rax);
        value_register scratch = scratch_register;
        for (std::size_t i = 0; i < element_count; ++i, --scratch) {
            events.add(value_flow_event::load(scratch, elements[i].address, width));
            compared.add(scratch);
        }
        events.add(value_flow_event::compute(compared.view(), std::nullopt));
        break;
    }
    }
    // The count and the pointers it advances (Zydis does not name cmps's pointers as operands).
    if (repeated) advance(events, gpr_register(register_file::rcx));
    for (std::size_t i = 0; i < element_count; ++i) {
        if (const std::optional<value_register> pointer = value_register_of(elements[i].pointer)) {
            advance(events, *pointer);
        }
    }
    return true;
}

// call pushes a return address: a slot already at that address no longer holds what it held.
void call(instruction_context& context) noexcept {
    if (const std::optional<value_register> slot =
            existing_slot(context.slots, context.regs.gprs[register_file::rsp] - 8)) {
        context.events.add(value_flow_event::constant(*slot));
    }
}

// Jumps, calls, returns: no value moves. A register the branch changes besides rip and rsp (loop's rcx) is
// computed from itself.
void branch(instruction_context& context) noexcept {
    for (std::size_t i = 0; i < context.instruction.operand_count; ++i) {
        const ZydisDecodedOperand& operand = context.operands[i];
        if (operand.type != ZYDIS_OPERAND_TYPE_REGISTER || (operand.actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) == 0) {
            continue;
        }
        const std::optional<value_register> reg = value_register_of(operand.reg.value);
        if (reg && *reg != register_file::rsp) advance(context.events, *reg);
    }
}

// --- Everything else, from the operands -----------------------------------------------------------------------

// The implicit stack references of push-like instructions the generic path meets (enter, push of a segment
// register): rsp's adjustment and the hidden stack word are not followed.
bool implicit_stack(const ZydisDecodedOperand& operand) noexcept {
    if (operand.visibility != ZYDIS_OPERAND_VISIBILITY_HIDDEN) return false;
    if (operand.type == ZYDIS_OPERAND_TYPE_MEMORY) return operand.mem.segment == ZYDIS_REGISTER_SS;
    return operand.type == ZYDIS_OPERAND_TYPE_REGISTER && operand.reg.value == ZYDIS_REGISTER_RSP;
}

void from_operands(instruction_context& context) noexcept {
    const ZydisDecodedInstruction& instruction = context.instruction;
    event_list& events = context.events;
    register_set<value_flow_event::max_sources> sources;
    register_set<ZYDIS_MAX_OPERAND_COUNT> results;
    struct memory_result {
        value_register scratch;
        std::uint64_t address;
        std::uint8_t width;
    };
    std::array<memory_result, 2> stores{};
    std::size_t store_count = 0;
    value_register next_scratch = scratch_register;
    if (instruction.meta.category == ZYDIS_CATEGORY_SYSCALL) {
        results.add(gpr_register(register_file::rax)); // the kernel's answer; Zydis names only rcx and r11
    }
    for (std::size_t i = 0; i < instruction.operand_count; ++i) {
        const ZydisDecodedOperand& operand = context.operands[i];
        const bool read = (operand.actions & ZYDIS_OPERAND_ACTION_MASK_READ) != 0;
        const bool written = (operand.actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) != 0;
        if (implicit_stack(operand)) continue;
        if (operand.type == ZYDIS_OPERAND_TYPE_MEMORY && operand.mem.type != ZYDIS_MEMOP_TYPE_MEM) {
            // lea and other address computations: base and index are their inputs. (A gather's addresses, in a
            // vector register, give no location.)
            if (operand.mem.type == ZYDIS_MEMOP_TYPE_AGEN || operand.mem.type == ZYDIS_MEMOP_TYPE_MIB) {
                for (const ZydisRegister part : {operand.mem.base, operand.mem.index}) {
                    if (const std::optional<value_register> reg = value_register_of(part)) sources.add(*reg);
                }
            }
            continue;
        }
        if (operand.type != ZYDIS_OPERAND_TYPE_REGISTER && operand.type != ZYDIS_OPERAND_TYPE_MEMORY) continue;
        const location where = locate(context, operand);
        if (where.what == location::kind::value_register) {
            if (read) sources.add(where.reg);
            if (written) results.add(where.reg);
        } else if (where.what == location::kind::memory && next_scratch >= second_scratch_register) {
            const value_register scratch = next_scratch--;
            if (read) {
                events.add(value_flow_event::load(scratch, where.address, where.width));
                sources.add(scratch);
            }
            if (written) {
                results.add(scratch);
                stores[store_count++] = {scratch, where.address, where.width};
            }
        }
    }
    if (results.size == 0 && sources.size == 0) return;
    const std::span<const value_register> result_registers = results.view();
    events.add(value_flow_event::compute(sources.view(), result_registers.empty()
                                                             ? std::nullopt
                                                             : std::optional<value_register>(result_registers[0])));
    for (std::size_t i = 1; i < result_registers.size(); ++i) {
        events.add(value_flow_event::compute({}, result_registers[i]));
    }
    for (std::size_t i = 0; i < store_count; ++i) {
        events.add(value_flow_event::store(stores[i].scratch, stores[i].address, stores[i].width));
    }
}

void describe(instruction_context& context) noexcept {
    const ZydisDecodedInstruction& instruction = context.instruction;
    if (zydis::touches_no_data(instruction)) return; // nop, prefetch, flushes
    switch (instruction.meta.category) {
    case ZYDIS_CATEGORY_CALL:
        call(context);
        return;
    case ZYDIS_CATEGORY_COND_BR:
    case ZYDIS_CATEGORY_UNCOND_BR:
    case ZYDIS_CATEGORY_RET:
        branch(context);
        return;
    default:
        break;
    }
    unsigned condition = 0;
    if (zydis::condition_of(instruction.mnemonic, zydis::conditional_moves, condition)) {
        if (zydis::condition_holds(condition, context.regs.rflags)) {
            transfer(context, locate(context, context.operands[0]), locate(context, context.operands[1]));
        }
        return;
    }
    if (const std::size_t source_operand = plain_move_source(instruction, context.operands)) {
        // The source first: it is read before the destination is written (and is given its slot first).
        const location source = locate(context, context.operands[source_operand]);
        transfer(context, locate(context, context.operands[0]), source);
        return;
    }
    if (is_zero_idiom(instruction, context.operands)) {
        if (const std::optional<value_register> reg = value_register_of(context.operands[0].reg.value)) {
            context.events.add(value_flow_event::constant(*reg));
        }
        return;
    }
    switch (instruction.mnemonic) {
    case ZYDIS_MNEMONIC_PUSH:
    case ZYDIS_MNEMONIC_PUSHF:
    case ZYDIS_MNEMONIC_PUSHFQ:
        push(context);
        return;
    case ZYDIS_MNEMONIC_POP:
    case ZYDIS_MNEMONIC_POPF:
    case ZYDIS_MNEMONIC_POPFQ:
        pop(context);
        return;
    case ZYDIS_MNEMONIC_LEAVE:
        leave(context);
        return;
    case ZYDIS_MNEMONIC_XCHG:
        exchange(context);
        return;
    default:
        break;
    }
    if (instruction.meta.category == ZYDIS_CATEGORY_STRINGOP && string_instruction(context)) return;
    from_operands(context);
}

} // namespace

instruction_value_flow x86_value_flow(const std::uint8_t* code, std::size_t available, register_file& regs,
                                      stack_slot_table& slots,
                                      std::span<value_flow_event, max_x86_value_flow_events> events) noexcept {
    instruction_value_flow result;
    const ZydisDecoder* decoder = zydis::ready_decoder();
    if (decoder == nullptr || code == nullptr) return result;
    ZydisDecoderContext decoder_context;
    ZydisDecodedInstruction instruction;
    ZydisDecodedOperand operands[ZYDIS_MAX_OPERAND_COUNT];
    const std::size_t length_limit = available < max_instruction_length ? available : max_instruction_length;
    if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(decoder, &decoder_context, code, length_limit, &instruction)) ||
        !ZYAN_SUCCESS(ZydisDecoderDecodeOperands(decoder, &decoder_context, &instruction, operands,
                                                 instruction.operand_count))) {
        return result;
    }
    event_list list(events);
    instruction_context context{instruction, operands, regs, slots, list};
    describe(context);
    result.decoded = true;
    result.length = instruction.length;
    result.count = list.count();
    result.complete = list.complete();
    return result;
}

} // namespace ojx::hardware
