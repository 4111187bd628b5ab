// The class file of ojx/Counts (Counts.java), compiled with the JDK's javac when the agent is built and embedded by
// embed_class.cmake; counts_class_size is 0 where the build found no javac (count= is then unavailable).
#pragma once

#include <cstddef>

namespace ojx::jvm {

extern const unsigned char counts_class_bytes[];
extern const std::size_t counts_class_size;

} // namespace ojx::jvm
