// Parsing a class file's bytes into a class_file, checking the structure on the way (JVMS 4.8's format checks
// that concern layout and constant-pool references; no verification of code).
#pragma once

#include "ojx/bytecode/class_file.hpp"
#include "ojx/bytecode/result.hpp"

#include <cstdint>
#include <span>

namespace ojx::bytecode {

// The class in `bytes`, or an error naming the first problem and its byte offset: bad magic, a version outside
// [min_major_version, max_major_version], truncation anywhere, an unknown constant tag, a constant-pool index out
// of range or of the wrong tag, an attribute whose length disagrees with its contents, a Code attribute with an
// empty code array or one over 65535 bytes, a second Code attribute, bytes after the end of the class.
result<class_file> read_class(std::span<const std::uint8_t> bytes);

} // namespace ojx::bytecode
