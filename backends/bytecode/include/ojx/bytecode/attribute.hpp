// An attribute kept as it was read: its name's constant-pool index and its payload, byte for byte. Attributes
// this library does not interpret (all but a method's Code) stay in this form so that they are written back
// unchanged.
#pragma once

#include <cstdint>
#include <vector>

namespace ojx::bytecode {

struct attribute {
    std::uint16_t name_index = 0;   // Utf8 naming the attribute ("SourceFile", "StackMapTable", ...)
    std::vector<std::uint8_t> info; // the payload after attribute_length; its size is the length written
};

} // namespace ojx::bytecode
