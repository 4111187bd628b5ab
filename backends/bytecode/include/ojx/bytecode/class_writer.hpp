// Serialising a class_file. A class read by read_class and left unmodified writes back byte for byte: the
// constant pool, every raw attribute and the order of everything are kept, and a Code attribute's length is
// recomputed from exactly the parts it was read from.
#pragma once

#include "ojx/bytecode/class_file.hpp"
#include "ojx/bytecode/result.hpp"

#include <cstdint>
#include <vector>

namespace ojx::bytecode {

// The bytes of `klass`, or an error when an edited class can no longer be expressed in the format: a count over
// 65535, a code array empty or over 65535 bytes, an attribute over 4 GiB. References are not checked here.
result<std::vector<std::uint8_t>> write_class(const class_file& klass);

} // namespace ojx::bytecode
