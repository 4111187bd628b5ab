// A method's Code attribute (JVMS 4.7.3), parsed into the parts an instrumenter edits: the code array, the
// exception table and the nested attributes. The nested attributes (LineNumberTable, LocalVariableTable,
// LocalVariableTypeTable, StackMapTable, ...) are kept raw; code offsets inside them are not rewritten by anything
// here, so whoever changes `code` owns keeping them consistent.
#pragma once

#include "ojx/bytecode/attribute.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ojx::bytecode {

// One exception handler: [start_pc, end_pc) is covered, handler_pc is jumped to. catch_type 0 catches everything
// (finally); otherwise it is a Class index. The reader checks start_pc < end_pc <= code length and
// handler_pc < code length (the JVM's own format check); instruction boundaries are the decoder's to check.
struct exception_entry {
    std::uint16_t start_pc = 0;
    std::uint16_t end_pc = 0;
    std::uint16_t handler_pc = 0;
    std::uint16_t catch_type = 0;
};

struct code_attribute {
    // A code array must hold between 1 and this many bytes (JVMS 4.7.3, and 4.11's limit on offsets).
    static constexpr std::size_t max_code_length = 65535;

    std::uint16_t name_index = 0; // the Utf8 "Code" this attribute was read with (reused on writing)
    std::uint16_t max_stack = 0;
    std::uint16_t max_locals = 0;
    std::vector<std::uint8_t> code;
    std::vector<exception_entry> exception_table;
    std::vector<attribute> attributes; // nested attributes, raw, in file order

    // attribute_length as written: every part above after the 6-byte attribute header.
    std::size_t payload_size() const noexcept {
        std::size_t size = 2 + 2 + 4 + code.size() + 2 + 8 * exception_table.size() + 2;
        for (const attribute& nested : attributes) {
            size += 6 + nested.info.size();
        }
        return size;
    }
};

} // namespace ojx::bytecode
