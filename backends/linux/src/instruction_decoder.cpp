// Instruction decoding with Zydis, reduced to the one question the handlers ask: which data access does this
// instruction make? Everything here runs in signal handlers: Zydis decodes into caller-provided structures
// (no allocation, no global state besides the decoder settings initialised at load).
#include "ojx/hardware/instruction_decoder.hpp"
#include "zydis_decoding.hpp"

#include <Zydis/Zydis.h>

#include <asm/hwcap2.h>
#include <asm/prctl.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

namespace ojx::hardware {

namespace {

static_assert(max_instruction_length == ZYDIS_MAX_INSTRUCTION_LENGTH);
// address_register_value indexes register_file::gprs by Zydis register number minus RAX (or EAX).
static_assert(ZYDIS_REGISTER_RSP - ZYDIS_REGISTER_RAX == register_file::rsp);
static_assert(ZYDIS_REGISTER_R15 - ZYDIS_REGISTER_RAX == register_file::r15);
static_assert(ZYDIS_REGISTER_R15D - ZYDIS_REGISTER_EAX == register_file::r15);

// --- The decoder ---------------------------------------------------------------------------------------------

// Written once by initialize_instruction_decoder, then only read. A handler reads it only after seeing
// decoder_ready (acquire), so the settings are complete.
ZydisDecoder long_mode_decoder;
enum decoder_state : int { not_initialized, initializing, ready };
std::atomic<int> decoder_state{not_initialized};

// --- FS/GS bases ----------------------------------------------------------------------------------------------

// rdfsbase/rdgsbase fault (SIGILL) unless the kernel enabled them, which it announces in AT_HWCAP2. False until
// the load-time initialiser has run: arch_prctl is always right, only slower.
std::atomic<bool> fsgsbase_instructions{false};

std::uint64_t segment_base_by_system_call(int which) noexcept {
    const int saved_errno = errno;
    std::uint64_t base = 0;
    syscall(SYS_arch_prctl, which, &base);
    errno = saved_errno;
    return base;
}

std::uint64_t segment_base(register_file& regs, ZydisRegister segment) noexcept {
    if (segment == ZYDIS_REGISTER_FS) {
        if (!regs.fs_base_known) {
            regs.fs_base = current_fs_base();
            regs.fs_base_known = true;
        }
        return regs.fs_base;
    }
    if (segment == ZYDIS_REGISTER_GS) {
        if (!regs.gs_base_known) {
            regs.gs_base = current_gs_base();
            regs.gs_base_known = true;
        }
        return regs.gs_base;
    }
    return 0; // CS, DS, ES, SS have base 0 in 64-bit mode
}

// --- Effective addresses --------------------------------------------------------------------------------------

constexpr std::uint64_t low_bits(unsigned bits) noexcept {
    return bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
}

// The value a register contributes to an address. False for registers the general registers cannot give (the
// vector index of a gather).
bool address_register_value(const register_file& regs, ZydisRegister reg, std::uint64_t next_rip,
                            std::uint64_t& value) noexcept {
    if (reg == ZYDIS_REGISTER_NONE) {
        value = 0;
    } else if (reg >= ZYDIS_REGISTER_RAX && reg <= ZYDIS_REGISTER_R15) {
        value = regs.gprs[static_cast<std::size_t>(reg - ZYDIS_REGISTER_RAX)];
    } else if (reg >= ZYDIS_REGISTER_EAX && reg <= ZYDIS_REGISTER_R15D) {
        value = regs.gprs[static_cast<std::size_t>(reg - ZYDIS_REGISTER_EAX)] & low_bits(32);
    } else if (reg == ZYDIS_REGISTER_RIP) {
        value = next_rip;
    } else if (reg == ZYDIS_REGISTER_EIP) {
        value = next_rip & low_bits(32);
    } else if (reg == ZYDIS_REGISTER_AL) {
        value = regs.gprs[register_file::rax] & low_bits(8); // xlat's index
    } else {
        return false;
    }
    return true;
}

// --- Which operand is the access ------------------------------------------------------------------------------

enum class operand_role { none, data_access, vector_addressed };

operand_role role_of(const ZydisDecodedOperand& operand) noexcept {
    if (operand.type != ZYDIS_OPERAND_TYPE_MEMORY || operand.actions == 0) {
        return operand_role::none;
    }
    switch (operand.mem.type) {
    case ZYDIS_MEMOP_TYPE_MEM:
        break;
    case ZYDIS_MEMOP_TYPE_VSIB:
        return operand_role::vector_addressed;
    default:
        return operand_role::none; // AGEN (lea), MIB (MPX bound tables): an address computed, nothing accessed
    }
    // Operands not written in the instruction and addressed through SS are the implicit stack references of
    // push/pop/call/ret/enter/leave. Explicit [rsp + n] operands stay accesses.
    if (operand.visibility != ZYDIS_OPERAND_VISIBILITY_EXPLICIT && operand.mem.segment == ZYDIS_REGISTER_SS) {
        return operand_role::none;
    }
    return operand_role::data_access;
}

bool reads(const ZydisDecodedOperand& operand) noexcept {
    return (operand.actions & ZYDIS_OPERAND_ACTION_MASK_READ) != 0;
}

} // namespace

namespace zydis {

bool effective_address(const ZydisDecodedInstruction& instruction, const ZydisDecodedOperand& operand,
                       register_file& regs, std::uint64_t& address) noexcept {
    const std::uint64_t next_rip = regs.rip + instruction.length;
    std::uint64_t base = 0;
    std::uint64_t index = 0;
    if (!address_register_value(regs, operand.mem.base, next_rip, base) ||
        !address_register_value(regs, operand.mem.index, next_rip, index)) {
        return false;
    }
    // Zydis 4.0 describes xlat's operand as [rbx] alone; the CPU reads [rbx + al].
    if (instruction.mnemonic == ZYDIS_MNEMONIC_XLAT && operand.mem.index == ZYDIS_REGISTER_NONE) {
        address_register_value(regs, ZYDIS_REGISTER_AL, next_rip, index);
    }
    const std::uint64_t scale = operand.mem.scale == 0 ? 1 : operand.mem.scale;
    const auto displacement = static_cast<std::uint64_t>(operand.mem.disp.value); // two's complement wrap
    // The address-size prefix truncates the offset; the segment base is added to the truncated offset.
    const std::uint64_t offset = (base + index * scale + displacement) & low_bits(instruction.address_width);
    address = segment_base(regs, operand.mem.segment) + offset;
    return true;
}

const ZydisDecoder* ready_decoder() noexcept {
    return decoder_state.load(std::memory_order_acquire) == ready ? &long_mode_decoder : nullptr;
}

bool touches_no_data(const ZydisDecodedInstruction& instruction) noexcept {
    switch (instruction.meta.category) {
    case ZYDIS_CATEGORY_NOP:
    case ZYDIS_CATEGORY_WIDENOP:
    case ZYDIS_CATEGORY_PREFETCH:
    case ZYDIS_CATEGORY_PREFETCHWT1:
    case ZYDIS_CATEGORY_CLFLUSHOPT:
    case ZYDIS_CATEGORY_CLWB:
    case ZYDIS_CATEGORY_CLDEMOTE:
        return true;
    default:
        return instruction.mnemonic == ZYDIS_MNEMONIC_CLFLUSH;
    }
}

} // namespace zydis

// --- Public functions -----------------------------------------------------------------------------------------

bool initialize_instruction_decoder() noexcept {
    int expected = not_initialized;
    if (decoder_state.compare_exchange_strong(expected, initializing, std::memory_order_acquire)) {
        fsgsbase_instructions.store((getauxval(AT_HWCAP2) & HWCAP2_FSGSBASE) != 0, std::memory_order_relaxed);
        if (!ZYAN_SUCCESS(ZydisDecoderInit(&long_mode_decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64))) {
            decoder_state.store(not_initialized, std::memory_order_release);
            return false;
        }
        decoder_state.store(ready, std::memory_order_release);
        return true;
    }
    // Another thread is initialising: wait for it (only possible outside handlers, during setup).
    while ((expected = decoder_state.load(std::memory_order_acquire)) == initializing) {
    }
    return expected == ready;
}

namespace {
// The decoder is ready before main() (or before dlopen returns), so handlers never see it uninitialised.
[[maybe_unused]] const bool decoder_initialized_at_load = initialize_instruction_decoder();
} // namespace

register_file from_ucontext(const ucontext_t& context) noexcept {
    const auto& gregs = context.uc_mcontext.gregs;
    const auto reg = [&gregs](int index) { return static_cast<std::uint64_t>(gregs[index]); };
    register_file regs;
    regs.gprs = {reg(REG_RAX), reg(REG_RCX), reg(REG_RDX), reg(REG_RBX), reg(REG_RSP), reg(REG_RBP),
                 reg(REG_RSI), reg(REG_RDI), reg(REG_R8),  reg(REG_R9),  reg(REG_R10), reg(REG_R11),
                 reg(REG_R12), reg(REG_R13), reg(REG_R14), reg(REG_R15)};
    regs.rip = reg(REG_RIP);
    regs.rflags = reg(REG_EFL);
    return regs;
}

std::uint64_t current_fs_base() noexcept {
    if (fsgsbase_instructions.load(std::memory_order_relaxed)) {
        std::uint64_t base;
        asm volatile("rdfsbase %0" : "=r"(base));
        return base;
    }
    return segment_base_by_system_call(ARCH_GET_FS);
}

std::uint64_t current_gs_base() noexcept {
    if (fsgsbase_instructions.load(std::memory_order_relaxed)) {
        std::uint64_t base;
        asm volatile("rdgsbase %0" : "=r"(base));
        return base;
    }
    return segment_base_by_system_call(ARCH_GET_GS);
}

decoded_instruction decode_access(const std::uint8_t* code, std::size_t available, register_file& regs) noexcept {
    decoded_instruction result;
    if (decoder_state.load(std::memory_order_acquire) != ready || code == nullptr) {
        return result;
    }
    ZydisDecoderContext context;
    ZydisDecodedInstruction instruction;
    const std::size_t length_limit = available < max_instruction_length ? available : max_instruction_length;
    if (!ZYAN_SUCCESS(
            ZydisDecoderDecodeInstruction(&long_mode_decoder, &context, code, length_limit, &instruction))) {
        return result;
    }
    result.length = instruction.length;
    result.status = decode_status::no_memory_access;
    if (zydis::touches_no_data(instruction)) {
        return result;
    }
    ZydisDecodedOperand operands[ZYDIS_MAX_OPERAND_COUNT];
    if (!ZYAN_SUCCESS(ZydisDecoderDecodeOperands(&long_mode_decoder, &context, &instruction, operands,
                                                 instruction.operand_count))) {
        result.status = decode_status::undecodable;
        return result;
    }

    const ZydisDecodedOperand* access = nullptr;
    bool vector_addressed = false;
    for (std::size_t i = 0; i < instruction.operand_count; ++i) {
        const ZydisDecodedOperand& operand = operands[i];
        switch (role_of(operand)) {
        case operand_role::none:
            break;
        case operand_role::vector_addressed:
            vector_addressed = true;
            break;
        case operand_role::data_access:
            // The first operand read wins (movs, cmps read [rsi] first); a written one only if none is read.
            if (access == nullptr || (!reads(*access) && reads(operand))) {
                access = &operand;
            }
            break;
        }
    }
    if (access == nullptr) {
        if (vector_addressed) {
            result.status = decode_status::undecodable; // gather/scatter: addresses in a vector register
        }
        return result;
    }
    if (!zydis::effective_address(instruction, *access, regs, result.effective_address)) {
        result.status = decode_status::undecodable;
        return result;
    }
    result.status = decode_status::memory_access;
    result.width = static_cast<std::uint16_t>(access->size / 8);
    result.kind = reads(*access) ? ojx::access_kind::load : ojx::access_kind::store;
    return result;
}

decoded_instruction decode_access_ending_at(std::span<const std::uint8_t> bytes_before, std::uint64_t next_pc,
                                            std::uint64_t watched_address, std::size_t watched_length,
                                            register_file& regs) noexcept {
    const std::uint64_t rip_on_entry = regs.rip;
    const std::size_t longest = bytes_before.size() < max_instruction_length ? bytes_before.size()
                                                                             : max_instruction_length;
    const std::uint8_t* const end = bytes_before.data() + bytes_before.size();
    const std::uint64_t watched_end = watched_address + watched_length;

    decoded_instruction unverified;        // longest candidate whose address does not match
    decoded_instruction without_access;    // longest exact-length decode that accesses no data
    // Longest first: the first verified candidate met is the longest one.
    for (std::size_t length = longest; length >= 1; --length) {
        regs.rip = next_pc - length;
        // Giving the decoder exactly `length` bytes keeps it from reading past next_pc: a longer instruction
        // fails to decode instead of being found and rejected.
        decoded_instruction candidate = decode_access(end - length, length, regs);
        if (candidate.length != length) {
            continue;
        }
        if (candidate.status == decode_status::memory_access) {
            const std::uint64_t access_end = candidate.effective_address + candidate.width;
            if (candidate.effective_address < watched_end && watched_address < access_end) {
                candidate.address_verified = true;
                regs.rip = rip_on_entry;
                return candidate;
            }
            if (unverified.status != decode_status::memory_access) {
                unverified = candidate;
            }
        } else if (candidate.status == decode_status::no_memory_access &&
                   without_access.status == decode_status::undecodable) {
            without_access = candidate;
        }
    }
    regs.rip = rip_on_entry;
    return unverified.status == decode_status::memory_access ? unverified : without_access;
}

} // namespace ojx::hardware
