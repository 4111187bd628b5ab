// find_access_ahead: follows the interrupted thread through the code after its pc, computing what simple integer
// instructions do to its registers and flags, until the data access single-stepping would reach. Everything here
// runs in the sampler's signal handler: fixed-size state on the stack, Zydis decoding into local structures.
#include "ojx/hardware/access_lookahead.hpp"

#include "x86_conditions.hpp"
#include "zydis_decoding.hpp"

#include <Zydis/Zydis.h>

#include <array>
#include <bit>

namespace ojx::hardware {

namespace {

using zydis::carry;
using zydis::overflow;
using zydis::parity;
using zydis::sign;
using zydis::status_flags;
using zydis::zero;

constexpr std::uint64_t low_bits(unsigned bits) noexcept {
    return bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
}

// The thread as it will be when it reaches regs.rip: register values, and which of them are exact.
struct followed_thread {
    register_file regs;
    std::uint16_t known_gprs = 0xFFFF; // bit i: regs.gprs[i]
    std::uint64_t known_flags = status_flags;
};

// Bit of the 64-bit register enclosing `reg` (any width), 0 for registers that are not general.
std::uint16_t gpr_bit(ZydisRegister reg) noexcept {
    const ZydisRegister full = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, reg);
    if (full < ZYDIS_REGISTER_RAX || full > ZYDIS_REGISTER_R15) return 0;
    return static_cast<std::uint16_t>(1u << (full - ZYDIS_REGISTER_RAX));
}

// A general register operand of any width: which 64-bit register holds it, how many bits, from which bit (8 for
// ah, ch, dh, bh).
struct gpr_ref {
    std::size_t index = 0;
    unsigned bits = 64;
    unsigned shift = 0;
};

bool gpr_of(ZydisRegister reg, gpr_ref& ref) noexcept {
    const ZydisRegister full = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, reg);
    if (full < ZYDIS_REGISTER_RAX || full > ZYDIS_REGISTER_R15) return false;
    ref.index = static_cast<std::size_t>(full - ZYDIS_REGISTER_RAX);
    ref.bits = ZydisRegisterGetWidth(ZYDIS_MACHINE_MODE_LONG_64, reg);
    ref.shift = (reg == ZYDIS_REGISTER_AH || reg == ZYDIS_REGISTER_CH || reg == ZYDIS_REGISTER_DH ||
                 reg == ZYDIS_REGISTER_BH)
                    ? 8
                    : 0;
    return ref.bits == 8 || ref.bits == 16 || ref.bits == 32 || ref.bits == 64;
}

bool known(const followed_thread& thread, const gpr_ref& ref) noexcept {
    return (thread.known_gprs & (1u << ref.index)) != 0;
}

std::uint64_t read_gpr(const followed_thread& thread, const gpr_ref& ref) noexcept {
    return (thread.regs.gprs[ref.index] >> ref.shift) & low_bits(ref.bits);
}

// Writes as the CPU does: a 32-bit result clears the upper half, an 8- or 16-bit one merges into the rest of the
// register (so that is exact only if the rest was known).
void write_gpr(followed_thread& thread, const gpr_ref& ref, std::uint64_t value) noexcept {
    std::uint64_t& full = thread.regs.gprs[ref.index];
    const bool merges = ref.bits < 32;
    if (merges) {
        const std::uint64_t field = low_bits(ref.bits) << ref.shift;
        full = (full & ~field) | ((value << ref.shift) & field);
    } else {
        full = value & low_bits(ref.bits);
    }
    if (!merges) thread.known_gprs = static_cast<std::uint16_t>(thread.known_gprs | (1u << ref.index));
}

// The exact value of a register or immediate operand, cut to `bits`. False when unknown or of another kind.
bool operand_value(const ZydisDecodedOperand& operand, const followed_thread& thread, unsigned bits,
                   std::uint64_t& value) noexcept {
    if (operand.type == ZYDIS_OPERAND_TYPE_IMMEDIATE) {
        value = operand.imm.value.u & low_bits(bits); // Zydis sign-extends signed immediates to 64 bits
        return true;
    }
    gpr_ref ref;
    if (operand.type != ZYDIS_OPERAND_TYPE_REGISTER || !gpr_of(operand.reg.value, ref) || !known(thread, ref)) {
        return false;
    }
    value = read_gpr(thread, ref) & low_bits(bits);
    return true;
}

// A register's contribution to an address. False when unknown.
bool address_part(ZydisRegister reg, const followed_thread& thread, std::uint64_t next_rip,
                  std::uint64_t& value) noexcept {
    if (reg == ZYDIS_REGISTER_NONE) {
        value = 0;
        return true;
    }
    if (reg == ZYDIS_REGISTER_RIP) {
        value = next_rip;
        return true;
    }
    gpr_ref ref;
    if (!gpr_of(reg, ref) || !known(thread, ref)) return false;
    value = read_gpr(thread, ref);
    return true;
}

// The offset a memory operand names (base + index * scale + displacement, cut to the address size; no segment
// base), computed from known registers: lea's result, or where a followed load reads. False when unknown.
bool operand_address(const ZydisDecodedInstruction& instruction, const ZydisDecodedOperand& memory,
                     const followed_thread& thread, std::uint64_t& address) noexcept {
    const std::uint64_t next_rip = thread.regs.rip + instruction.length;
    std::uint64_t base = 0;
    std::uint64_t index = 0;
    if (memory.type != ZYDIS_OPERAND_TYPE_MEMORY || !address_part(memory.mem.base, thread, next_rip, base) ||
        !address_part(memory.mem.index, thread, next_rip, index)) {
        return false;
    }
    const std::uint64_t scale = memory.mem.scale == 0 ? 1 : memory.mem.scale;
    address = (base + index * scale + static_cast<std::uint64_t>(memory.mem.disp.value)) &
              low_bits(instruction.address_width);
    return true;
}

std::uint64_t result_flags(std::uint64_t result, unsigned bits) noexcept {
    std::uint64_t flags = 0;
    if ((result & low_bits(bits)) == 0) flags |= zero;
    if (((result >> (bits - 1)) & 1) != 0) flags |= sign;
    if (std::popcount(result & 0xFF) % 2 == 0) flags |= parity;
    return flags;
}

std::uint64_t add_flags(std::uint64_t a, std::uint64_t b, std::uint64_t result, unsigned bits) noexcept {
    std::uint64_t flags = result_flags(result, bits);
    if (result < a) flags |= carry; // operands and result already cut to `bits`
    if ((((a ^ result) & (b ^ result)) >> (bits - 1) & 1) != 0) flags |= overflow;
    return flags;
}

std::uint64_t sub_flags(std::uint64_t a, std::uint64_t b, std::uint64_t result, unsigned bits) noexcept {
    std::uint64_t flags = result_flags(result, bits);
    if (a < b) flags |= carry;
    if ((((a ^ b) & (a ^ result)) >> (bits - 1) & 1) != 0) flags |= overflow;
    return flags;
}

void set_flags(followed_thread& thread, std::uint64_t defined, std::uint64_t values) noexcept {
    thread.regs.rflags = (thread.regs.rflags & ~defined) | (values & defined);
    thread.known_flags |= defined;
}

// Whether condition `condition` holds; false when a flag it tests is unknown.
bool condition_holds(unsigned condition, const followed_thread& thread, bool& holds) noexcept {
    const std::uint64_t tested = zydis::tested_flags(condition);
    if ((thread.known_flags & tested) != tested) return false;
    holds = zydis::condition_holds(condition, thread.regs.rflags);
    return true;
}

// Where the look-ahead reads memory, and how many more reads it may make.
struct memory_budget {
    code_reader read{};
    std::uint32_t data_reads_left = 0;
};

// A value of `bits` bits moved by mov, movzx (zero-extended) or movsx/movsxd (sign-extended).
std::uint64_t extend(ZydisMnemonic mnemonic, std::uint64_t value, unsigned bits) noexcept {
    if ((mnemonic != ZYDIS_MNEMONIC_MOVSX && mnemonic != ZYDIS_MNEMONIC_MOVSXD) || bits >= 64) return value;
    const unsigned unused = 64 - bits;
    return static_cast<std::uint64_t>(static_cast<std::int64_t>(value << unused) >> unused);
}

// A load into a general register (mov, movzx, movsx, movsxd from memory) whose address is known: reads the value
// the thread would load. False, changing nothing, for anything else or when the read fails or is not allowed.
bool load_register(const ZydisDecodedInstruction& instruction, const ZydisDecodedOperand* operands,
                   followed_thread& thread, memory_budget& memory) noexcept {
    switch (instruction.mnemonic) {
    case ZYDIS_MNEMONIC_MOV:
    case ZYDIS_MNEMONIC_MOVZX:
    case ZYDIS_MNEMONIC_MOVSX:
    case ZYDIS_MNEMONIC_MOVSXD:
        break;
    default:
        return false;
    }
    gpr_ref destination;
    if (instruction.operand_count_visible != 2 || operands[0].type != ZYDIS_OPERAND_TYPE_REGISTER ||
        !gpr_of(operands[0].reg.value, destination)) {
        return false;
    }
    const ZydisDecodedOperand& source = operands[1];
    const unsigned source_bytes = source.size / 8;
    if (source.type != ZYDIS_OPERAND_TYPE_MEMORY || source.mem.type != ZYDIS_MEMOP_TYPE_MEM ||
        (source.mem.segment != ZYDIS_REGISTER_DS && source.mem.segment != ZYDIS_REGISTER_SS) ||
        (source_bytes != 1 && source_bytes != 2 && source_bytes != 4 && source_bytes != 8) ||
        memory.data_reads_left == 0 || !memory.read) {
        return false; // FS/GS-relative loads (thread-local data) are left to stepping
    }
    std::uint64_t address = 0;
    if (!operand_address(instruction, source, thread, address)) return false;
    std::uint8_t bytes[8] = {};
    --memory.data_reads_left;
    if (memory.read(address, bytes, source_bytes) != source_bytes) return false;
    std::uint64_t value = 0;
    for (unsigned i = 0; i < source_bytes; ++i) value |= std::uint64_t{bytes[i]} << (8 * i); // x86: little-endian
    write_gpr(thread, destination, extend(instruction.mnemonic, value, source_bytes * 8));
    return true;
}

// Computes an instruction of the followed set (access_lookahead.hpp) on exact values. False, changing nothing,
// for anything else: other instructions, memory operands, unknown inputs.
bool compute(const ZydisDecodedInstruction& instruction, const ZydisDecodedOperand* operands,
             followed_thread& thread) noexcept {
    const std::size_t visible = instruction.operand_count_visible;
    if (visible == 0 || operands[0].type != ZYDIS_OPERAND_TYPE_REGISTER) return false;
    gpr_ref destination;
    if (!gpr_of(operands[0].reg.value, destination)) return false;
    const unsigned bits = destination.bits;
    const std::uint64_t mask = low_bits(bits);
    const bool known_destination = known(thread, destination);
    const std::uint64_t a = read_gpr(thread, destination);
    std::uint64_t b = 0;
    std::uint64_t result = 0;
    bool writes = true;
    switch (instruction.mnemonic) {
    case ZYDIS_MNEMONIC_MOV:
        if (visible != 2 || !operand_value(operands[1], thread, bits, result)) return false;
        break;
    case ZYDIS_MNEMONIC_MOVZX:
    case ZYDIS_MNEMONIC_MOVSX:
    case ZYDIS_MNEMONIC_MOVSXD: {
        const unsigned source_bits = operands[1].size;
        if (visible != 2 || operands[1].type != ZYDIS_OPERAND_TYPE_REGISTER ||
            !operand_value(operands[1], thread, source_bits, result)) {
            return false;
        }
        result = extend(instruction.mnemonic, result, source_bits);
        break;
    }
    case ZYDIS_MNEMONIC_LEA:
        if (visible != 2 || !operand_address(instruction, operands[1], thread, result)) return false;
        break;
    case ZYDIS_MNEMONIC_ADD:
    case ZYDIS_MNEMONIC_SUB:
    case ZYDIS_MNEMONIC_CMP:
    case ZYDIS_MNEMONIC_AND:
    case ZYDIS_MNEMONIC_OR:
    case ZYDIS_MNEMONIC_XOR:
    case ZYDIS_MNEMONIC_TEST: {
        if (visible != 2) return false;
        const bool same_register = operands[1].type == ZYDIS_OPERAND_TYPE_REGISTER &&
                                   operands[1].reg.value == operands[0].reg.value;
        // xor r, r and sub r, r give 0 whatever r held: the usual way to zero a register.
        const bool zeroing = same_register && (instruction.mnemonic == ZYDIS_MNEMONIC_XOR ||
                                               instruction.mnemonic == ZYDIS_MNEMONIC_SUB);
        if (zeroing) {
            set_flags(thread, status_flags, result_flags(0, bits));
            result = 0;
            break;
        }
        if (!known_destination || !operand_value(operands[1], thread, bits, b)) return false;
        switch (instruction.mnemonic) {
        case ZYDIS_MNEMONIC_ADD:
            result = (a + b) & mask;
            set_flags(thread, status_flags, add_flags(a, b, result, bits));
            break;
        case ZYDIS_MNEMONIC_SUB:
        case ZYDIS_MNEMONIC_CMP:
            result = (a - b) & mask;
            set_flags(thread, status_flags, sub_flags(a, b, result, bits));
            writes = instruction.mnemonic == ZYDIS_MNEMONIC_SUB;
            break;
        case ZYDIS_MNEMONIC_OR:
            result = a | b;
            set_flags(thread, status_flags, result_flags(result, bits));
            break;
        case ZYDIS_MNEMONIC_XOR:
            result = a ^ b;
            set_flags(thread, status_flags, result_flags(result, bits));
            break;
        default: // and, test
            result = a & b;
            set_flags(thread, status_flags, result_flags(result, bits));
            writes = instruction.mnemonic == ZYDIS_MNEMONIC_AND;
            break;
        }
        break;
    }
    case ZYDIS_MNEMONIC_INC:
    case ZYDIS_MNEMONIC_DEC: {
        if (visible != 1 || !known_destination) return false;
        const bool increment = instruction.mnemonic == ZYDIS_MNEMONIC_INC;
        result = (increment ? a + 1 : a - 1) & mask;
        const std::uint64_t flags = increment ? add_flags(a, 1, result, bits) : sub_flags(a, 1, result, bits);
        set_flags(thread, status_flags & ~carry, flags); // inc and dec leave CF alone
        break;
    }
    case ZYDIS_MNEMONIC_SHL:
    case ZYDIS_MNEMONIC_SHR:
    case ZYDIS_MNEMONIC_SAR: {
        if (visible != 2 || operands[1].type != ZYDIS_OPERAND_TYPE_IMMEDIATE || !known_destination) return false;
        const unsigned count = static_cast<unsigned>(operands[1].imm.value.u) & (bits == 64 ? 63u : 31u);
        if (count == 0) return false; // a zero count leaves the flags alone; rare enough not to model
        std::uint64_t carried = 0;
        if (instruction.mnemonic == ZYDIS_MNEMONIC_SHL) {
            result = (a << count) & mask;
            carried = (a >> (bits - count)) & 1;
        } else if (instruction.mnemonic == ZYDIS_MNEMONIC_SHR) {
            result = a >> count;
            carried = (a >> (count - 1)) & 1;
        } else {
            const std::int64_t extended = static_cast<std::int64_t>(a << (64 - bits)) >> (64 - bits);
            result = static_cast<std::uint64_t>(extended >> count) & mask;
            carried = static_cast<std::uint64_t>(extended >> (count - 1)) & 1;
        }
        // OF is defined for a count of 1 only; leave it unknown.
        set_flags(thread, carry | parity | zero | sign, result_flags(result, bits) | (carried != 0 ? carry : 0));
        thread.known_flags &= ~overflow;
        break;
    }
    case ZYDIS_MNEMONIC_NEG:
        if (visible != 1 || !known_destination) return false;
        result = (0 - a) & mask;
        set_flags(thread, status_flags, sub_flags(0, a, result, bits));
        break;
    case ZYDIS_MNEMONIC_NOT: // changes no flag
        if (visible != 1 || !known_destination) return false;
        result = ~a & mask;
        break;
    case ZYDIS_MNEMONIC_IMUL: {
        // imul r, r/imm and imul r, r, imm: the low half, and CF = OF = whether the signed product overflowed it.
        // SF, ZF and PF are undefined.
        std::uint64_t x = a;
        const ZydisDecodedOperand* factor = &operands[1];
        if (visible == 3) {
            if (!operand_value(operands[1], thread, bits, x)) return false;
            factor = &operands[2];
        } else if (visible != 2 || !known_destination) {
            return false;
        }
        if (!operand_value(*factor, thread, bits, b)) return false;
        const unsigned unused = 64 - bits;
        std::int64_t product = 0; // wrapped to 64 bits when it overflows them
        bool overflowed = __builtin_mul_overflow(static_cast<std::int64_t>(x << unused) >> unused,
                                                 static_cast<std::int64_t>(b << unused) >> unused, &product);
        result = static_cast<std::uint64_t>(product) & mask;
        if (bits < 64) overflowed = (static_cast<std::int64_t>(result << unused) >> unused) != product;
        set_flags(thread, carry | overflow, overflowed ? carry | overflow : 0);
        thread.known_flags &= ~(parity | zero | sign);
        break;
    }
    default: {
        unsigned condition = 0;
        bool holds = false;
        if (zydis::condition_of(instruction.mnemonic, zydis::sets, condition)) {
            if (visible != 1 || !condition_holds(condition, thread, holds)) return false;
            result = holds ? 1 : 0;
        } else if (zydis::condition_of(instruction.mnemonic, zydis::conditional_moves, condition)) {
            // A 32-bit cmov clears the upper half even when it does not move.
            if (visible != 2 || !condition_holds(condition, thread, holds) || !known_destination) return false;
            if (holds && !operand_value(operands[1], thread, bits, result)) return false;
            if (!holds) result = a;
        } else {
            return false;
        }
        break;
    }
    }
    if (writes) write_gpr(thread, destination, result & mask);
    return true;
}

// Executing it may leave straight-line code in a way not followed here, enter the kernel or trap without
// touching memory.
bool may_divert(const ZydisDecodedInstruction& instruction) noexcept {
    if (instruction.meta.branch_type != ZYDIS_BRANCH_TYPE_NONE ||
        (instruction.attributes & ZYDIS_ATTRIB_IS_PRIVILEGED) != 0) {
        return true;
    }
    switch (instruction.meta.category) {
    case ZYDIS_CATEGORY_CALL:
    case ZYDIS_CATEGORY_COND_BR:
    case ZYDIS_CATEGORY_UNCOND_BR:
    case ZYDIS_CATEGORY_RET:
    case ZYDIS_CATEGORY_SYSCALL:
    case ZYDIS_CATEGORY_SYSRET:
    case ZYDIS_CATEGORY_SYSTEM:
    case ZYDIS_CATEGORY_INTERRUPT:
    case ZYDIS_CATEGORY_RDWRFSGS:
    case ZYDIS_CATEGORY_UINTR:
        return true;
    default:
        break;
    }
    switch (instruction.mnemonic) {
    case ZYDIS_MNEMONIC_DIV:
    case ZYDIS_MNEMONIC_IDIV:
    case ZYDIS_MNEMONIC_UD0:
    case ZYDIS_MNEMONIC_UD1:
    case ZYDIS_MNEMONIC_UD2:
    case ZYDIS_MNEMONIC_HLT:
    case ZYDIS_MNEMONIC_XBEGIN: // transactional memory: an abort jumps to the fallback path
    case ZYDIS_MNEMONIC_XABORT:
    case ZYDIS_MNEMONIC_XEND:
        return true;
    default:
        return false;
    }
}

// A direct jump (jmp or jcc with a relative target) whose destination is known: moves the thread there or past
// it. False for every other transfer of control, and for a jcc on flags not known.
bool follow_jump(const ZydisDecodedInstruction& instruction, const ZydisDecodedOperand* operands,
                 followed_thread& thread) noexcept {
    if (instruction.operand_count_visible != 1 || operands[0].type != ZYDIS_OPERAND_TYPE_IMMEDIATE ||
        !operands[0].imm.is_relative) {
        return false;
    }
    const std::uint64_t next = thread.regs.rip + instruction.length;
    const std::uint64_t target = next + operands[0].imm.value.u;
    if (instruction.mnemonic == ZYDIS_MNEMONIC_JMP) {
        thread.regs.rip = target;
        return true;
    }
    unsigned condition = 0;
    bool taken = false;
    if (!zydis::condition_of(instruction.mnemonic, zydis::jumps, condition) ||
        !condition_holds(condition, thread, taken)) {
        return false; // jrcxz, loop: they test rcx; or a flag is unknown
    }
    thread.regs.rip = taken ? target : next;
    return true;
}

// Moves the thread past an instruction that is not the access. False when that cannot be done exactly.
bool follow(const ZydisDecodedInstruction& instruction, const ZydisDecodedOperand* operands,
            followed_thread& thread, memory_budget& memory) noexcept {
    if (instruction.meta.category == ZYDIS_CATEGORY_COND_BR || instruction.meta.category == ZYDIS_CATEGORY_UNCOND_BR) {
        return follow_jump(instruction, operands, thread);
    }
    if (may_divert(instruction)) return false;
    // A rep-prefixed string instruction takes one single step per iteration, not one per instruction.
    if (instruction.meta.category == ZYDIS_CATEGORY_STRINGOP &&
        (instruction.attributes & (ZYDIS_ATTRIB_HAS_REP | ZYDIS_ATTRIB_HAS_REPE | ZYDIS_ATTRIB_HAS_REPNE)) != 0) {
        return false;
    }
    for (std::size_t i = 0; i < instruction.operand_count; ++i) {
        const ZydisDecodedOperand& operand = operands[i];
        if ((operand.actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) != 0 && operand.type == ZYDIS_OPERAND_TYPE_MEMORY &&
            operand.mem.type != ZYDIS_MEMOP_TYPE_AGEN && !zydis::touches_no_data(instruction)) {
            return false; // a store: what the access then reads may change
        }
    }
    if (!compute(instruction, operands, thread) && !load_register(instruction, operands, thread, memory)) {
        // Not followed exactly: what it writes becomes unknown.
        for (std::size_t i = 0; i < instruction.operand_count; ++i) {
            const ZydisDecodedOperand& operand = operands[i];
            if ((operand.actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) != 0 &&
                operand.type == ZYDIS_OPERAND_TYPE_REGISTER) {
                thread.known_gprs = static_cast<std::uint16_t>(thread.known_gprs & ~gpr_bit(operand.reg.value));
            }
        }
        if (instruction.cpu_flags != nullptr) {
            const ZydisAccessedFlags& flags = *instruction.cpu_flags;
            thread.known_flags &= ~static_cast<std::uint64_t>(flags.modified | flags.set_0 | flags.set_1 |
                                                               flags.undefined);
        }
    }
    thread.regs.rip += instruction.length;
    return true;
}

// The general registers an access's address is computed from.
std::uint16_t address_registers(const ZydisDecodedInstruction& instruction,
                                const ZydisDecodedOperand* operands) noexcept {
    std::uint16_t registers = 0;
    for (std::size_t i = 0; i < instruction.operand_count; ++i) {
        if (operands[i].type != ZYDIS_OPERAND_TYPE_MEMORY) continue;
        registers = static_cast<std::uint16_t>(registers | gpr_bit(operands[i].mem.base) |
                                               gpr_bit(operands[i].mem.index));
    }
    if (instruction.mnemonic == ZYDIS_MNEMONIC_XLAT) registers |= gpr_bit(ZYDIS_REGISTER_AL);
    return registers;
}

} // namespace

access_ahead find_access_ahead(const std::uint8_t* code, std::size_t available, const register_file& regs,
                               std::uint32_t skip, code_reader read_more, const lookahead_limits& limits) noexcept {
    access_ahead result;
    const ZydisDecoder* decoder = zydis::ready_decoder();
    if (decoder == nullptr || code == nullptr) return result;
    followed_thread thread{regs};
    // The bytes in hand: first the caller's, then what the code reader gave for a jump's destination.
    std::uint64_t window_start = regs.rip;
    const std::uint8_t* window = code;
    std::size_t window_size = available;
    std::uint8_t fetched[64];
    std::uint32_t reads_left = read_more ? limits.max_code_reads : 0;
    memory_budget memory{read_more, limits.max_data_reads};
    for (std::uint32_t index = 0; index < limits.max_instructions; ++index) {
        const std::uint64_t pc = thread.regs.rip;
        const bool in_window = pc >= window_start && pc - window_start < window_size;
        std::size_t offset = in_window ? static_cast<std::size_t>(pc - window_start) : 0;
        std::size_t left = in_window ? window_size - offset : 0;
        if (left < max_instruction_length && reads_left > 0) {
            --reads_left;
            const std::size_t got = read_more(pc, fetched, sizeof fetched);
            if (got > left) {
                window_start = pc;
                window = fetched;
                window_size = got;
                offset = 0;
                left = got;
            }
        }
        if (left == 0) break;
        ZydisDecoderContext context;
        ZydisDecodedInstruction instruction;
        ZydisDecodedOperand operands[ZYDIS_MAX_OPERAND_COUNT];
        const std::uint8_t* bytes = window + offset;
        if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(decoder, &context, bytes,
                                                        left < max_instruction_length ? left : max_instruction_length,
                                                        &instruction)) ||
            !ZYAN_SUCCESS(ZydisDecoderDecodeOperands(decoder, &context, &instruction, operands,
                                                     instruction.operand_count))) {
            break;
        }
        if (index >= skip) {
            const decoded_instruction access = decode_access(bytes, left, thread.regs);
            if (access.status == decode_status::memory_access) {
                const std::uint16_t needed = address_registers(instruction, operands);
                if ((needed & thread.known_gprs) == needed) result = {true, access, pc, index};
                break;
            }
        }
        if (!follow(instruction, operands, thread, memory)) break;
    }
    return result;
}

} // namespace ojx::hardware
