// The JVM's instruction set (JVMS chapter 6): opcodes, how their operands are laid out, and what kind of
// instruction each is. The decoder and, later, code rewriting both read this one table.
#pragma once

#include <cstdint>
#include <string_view>

namespace ojx::bytecode {

// Every opcode a class file may contain. `new`, `return` and `goto` carry a trailing underscore (C++ keywords).
// breakpoint (0xca) and impdep1/impdep2 (0xfe, 0xff) are reserved for debuggers and the JVM itself and must not
// appear in a class file, so they are absent: the decoder treats them as unknown.
enum class opcode : std::uint8_t {
    nop = 0x00,
    aconst_null = 0x01,
    iconst_m1 = 0x02,
    iconst_0 = 0x03,
    iconst_1 = 0x04,
    iconst_2 = 0x05,
    iconst_3 = 0x06,
    iconst_4 = 0x07,
    iconst_5 = 0x08,
    lconst_0 = 0x09,
    lconst_1 = 0x0a,
    fconst_0 = 0x0b,
    fconst_1 = 0x0c,
    fconst_2 = 0x0d,
    dconst_0 = 0x0e,
    dconst_1 = 0x0f,
    bipush = 0x10,
    sipush = 0x11,
    ldc = 0x12,
    ldc_w = 0x13,
    ldc2_w = 0x14,
    iload = 0x15,
    lload = 0x16,
    fload = 0x17,
    dload = 0x18,
    aload = 0x19,
    iload_0 = 0x1a,
    iload_1 = 0x1b,
    iload_2 = 0x1c,
    iload_3 = 0x1d,
    lload_0 = 0x1e,
    lload_1 = 0x1f,
    lload_2 = 0x20,
    lload_3 = 0x21,
    fload_0 = 0x22,
    fload_1 = 0x23,
    fload_2 = 0x24,
    fload_3 = 0x25,
    dload_0 = 0x26,
    dload_1 = 0x27,
    dload_2 = 0x28,
    dload_3 = 0x29,
    aload_0 = 0x2a,
    aload_1 = 0x2b,
    aload_2 = 0x2c,
    aload_3 = 0x2d,
    iaload = 0x2e,
    laload = 0x2f,
    faload = 0x30,
    daload = 0x31,
    aaload = 0x32,
    baload = 0x33,
    caload = 0x34,
    saload = 0x35,
    istore = 0x36,
    lstore = 0x37,
    fstore = 0x38,
    dstore = 0x39,
    astore = 0x3a,
    istore_0 = 0x3b,
    istore_1 = 0x3c,
    istore_2 = 0x3d,
    istore_3 = 0x3e,
    lstore_0 = 0x3f,
    lstore_1 = 0x40,
    lstore_2 = 0x41,
    lstore_3 = 0x42,
    fstore_0 = 0x43,
    fstore_1 = 0x44,
    fstore_2 = 0x45,
    fstore_3 = 0x46,
    dstore_0 = 0x47,
    dstore_1 = 0x48,
    dstore_2 = 0x49,
    dstore_3 = 0x4a,
    astore_0 = 0x4b,
    astore_1 = 0x4c,
    astore_2 = 0x4d,
    astore_3 = 0x4e,
    iastore = 0x4f,
    lastore = 0x50,
    fastore = 0x51,
    dastore = 0x52,
    aastore = 0x53,
    bastore = 0x54,
    castore = 0x55,
    sastore = 0x56,
    pop = 0x57,
    pop2 = 0x58,
    dup = 0x59,
    dup_x1 = 0x5a,
    dup_x2 = 0x5b,
    dup2 = 0x5c,
    dup2_x1 = 0x5d,
    dup2_x2 = 0x5e,
    swap = 0x5f,
    iadd = 0x60,
    ladd = 0x61,
    fadd = 0x62,
    dadd = 0x63,
    isub = 0x64,
    lsub = 0x65,
    fsub = 0x66,
    dsub = 0x67,
    imul = 0x68,
    lmul = 0x69,
    fmul = 0x6a,
    dmul = 0x6b,
    idiv = 0x6c,
    ldiv = 0x6d,
    fdiv = 0x6e,
    ddiv = 0x6f,
    irem = 0x70,
    lrem = 0x71,
    frem = 0x72,
    drem = 0x73,
    ineg = 0x74,
    lneg = 0x75,
    fneg = 0x76,
    dneg = 0x77,
    ishl = 0x78,
    lshl = 0x79,
    ishr = 0x7a,
    lshr = 0x7b,
    iushr = 0x7c,
    lushr = 0x7d,
    iand = 0x7e,
    land = 0x7f,
    ior = 0x80,
    lor = 0x81,
    ixor = 0x82,
    lxor = 0x83,
    iinc = 0x84,
    i2l = 0x85,
    i2f = 0x86,
    i2d = 0x87,
    l2i = 0x88,
    l2f = 0x89,
    l2d = 0x8a,
    f2i = 0x8b,
    f2l = 0x8c,
    f2d = 0x8d,
    d2i = 0x8e,
    d2l = 0x8f,
    d2f = 0x90,
    i2b = 0x91,
    i2c = 0x92,
    i2s = 0x93,
    lcmp = 0x94,
    fcmpl = 0x95,
    fcmpg = 0x96,
    dcmpl = 0x97,
    dcmpg = 0x98,
    ifeq = 0x99,
    ifne = 0x9a,
    iflt = 0x9b,
    ifge = 0x9c,
    ifgt = 0x9d,
    ifle = 0x9e,
    if_icmpeq = 0x9f,
    if_icmpne = 0xa0,
    if_icmplt = 0xa1,
    if_icmpge = 0xa2,
    if_icmpgt = 0xa3,
    if_icmple = 0xa4,
    if_acmpeq = 0xa5,
    if_acmpne = 0xa6,
    goto_ = 0xa7,
    jsr = 0xa8,
    ret = 0xa9,
    tableswitch = 0xaa,
    lookupswitch = 0xab,
    ireturn = 0xac,
    lreturn = 0xad,
    freturn = 0xae,
    dreturn = 0xaf,
    areturn = 0xb0,
    return_ = 0xb1,
    getstatic = 0xb2,
    putstatic = 0xb3,
    getfield = 0xb4,
    putfield = 0xb5,
    invokevirtual = 0xb6,
    invokespecial = 0xb7,
    invokestatic = 0xb8,
    invokeinterface = 0xb9,
    invokedynamic = 0xba,
    new_ = 0xbb,
    newarray = 0xbc,
    anewarray = 0xbd,
    arraylength = 0xbe,
    athrow = 0xbf,
    checkcast = 0xc0,
    instanceof = 0xc1,
    monitorenter = 0xc2,
    monitorexit = 0xc3,
    wide = 0xc4,
    multianewarray = 0xc5,
    ifnull = 0xc6,
    ifnonnull = 0xc7,
    goto_w = 0xc8,
    jsr_w = 0xc9,
};

// How an opcode's operands follow it.
enum class operand_format : std::uint8_t {
    unknown,         // not an opcode a class file may contain
    none,            // no operands
    local_u1,        // u1 local variable index (u2 after wide): xload, xstore, ret
    byte_s1,         // bipush: s1 value
    short_s2,        // sipush: s2 value
    constant_u1,     // ldc: u1 constant-pool index
    constant_u2,     // u2 constant-pool index: ldc_w, ldc2_w, field access, invokevirtual/special/static, new,
                     // anewarray, checkcast, instanceof
    iinc,            // u1 local index, s1 increment (u2, s2 after wide)
    branch_s2,       // s2 offset from the opcode: if*, goto, jsr
    branch_s4,       // s4 offset from the opcode: goto_w, jsr_w
    array_type_u1,   // newarray: u1 element type (4..11)
    invokeinterface, // u2 constant-pool index, u1 argument slot count, u1 zero
    invokedynamic,   // u2 constant-pool index, two zero bytes
    multianewarray,  // u2 constant-pool index, u1 dimensions
    tableswitch,     // padding to a multiple of 4 from the code start, s4 default, s4 low, s4 high, offsets
    lookupswitch,    // padding, s4 default, s4 npairs, npairs (s4 key, s4 offset) pairs
    wide,            // prefix: the next opcode's local index (and iinc increment) is two bytes wide
};

// Classification of instructions, as a bit set (an instruction may be several: invokes can also throw).
enum class instruction_kind : std::uint16_t {
    none = 0,
    conditional_branch = 1 << 0, // if*, ifnull, ifnonnull: the target or the next instruction
    unconditional_jump = 1 << 1, // goto, goto_w
    switch_ = 1 << 2,            // tableswitch, lookupswitch
    return_ = 1 << 3,            // ireturn .. return
    athrow = 1 << 4,
    subroutine = 1 << 5, // jsr, jsr_w, ret (class files before version 51 only)
    invoke = 1 << 6,     // invokevirtual, invokespecial, invokestatic, invokeinterface, invokedynamic
    allocation = 1 << 7, // new, newarray, anewarray, multianewarray (explicit allocations only)
    // May raise an exception, conservatively (JVMS chapter 6's "Run-time Exceptions" and "Linking Exceptions"):
    // invokes, field and array access, allocation, athrow, checkcast, instanceof, integer division and remainder,
    // monitorenter/exit, arraylength, returns (IllegalMonitorStateException in synchronized methods), and ldc of
    // anything that must be resolved (Class, MethodHandle, MethodType, Dynamic; with no constant pool to look in,
    // every ldc). Errors any instruction may raise (StackOverflowError, OutOfMemoryError, asynchronous exceptions)
    // are not counted.
    can_throw = 1 << 8,
};

constexpr instruction_kind operator|(instruction_kind a, instruction_kind b) noexcept {
    return static_cast<instruction_kind>(static_cast<std::uint16_t>(a) | static_cast<std::uint16_t>(b));
}
constexpr instruction_kind operator&(instruction_kind a, instruction_kind b) noexcept {
    return static_cast<instruction_kind>(static_cast<std::uint16_t>(a) & static_cast<std::uint16_t>(b));
}
constexpr instruction_kind operator~(instruction_kind a) noexcept {
    return static_cast<instruction_kind>(static_cast<std::uint16_t>(~static_cast<std::uint16_t>(a)));
}
constexpr bool has_any(instruction_kind kinds, instruction_kind wanted) noexcept {
    return (kinds & wanted) != instruction_kind::none;
}

struct opcode_info {
    std::string_view name;                          // the JVMS mnemonic; empty for an unknown opcode
    operand_format format = operand_format::unknown;
    std::uint8_t length = 0;                        // bytes with operands; 0 when variable (switches, wide)
    instruction_kind kinds = instruction_kind::none;
};

// The table entry of any byte; format is operand_format::unknown for bytes that are no opcode.
const opcode_info& info(std::uint8_t byte) noexcept;
inline const opcode_info& info(opcode op) noexcept { return info(static_cast<std::uint8_t>(op)); }
inline std::string_view opcode_name(opcode op) noexcept { return info(op).name; }

} // namespace ojx::bytecode
