// A frame name of the profile split into function, source file and line, for outputs that know what those are
// (pprof's Function and Line). docs/profile-format.md names frames `pkg.Class.method(File.java:42)` (Java) and
// `function (file.cpp:42)` (native); anything else — `Cls.m(Native Method)`, `f+0x1f (libfoo.so)`, `0x7f…`,
// `[not walkable Java]` — is kept whole as the function's name, with no file or line.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ojx::tool {

struct source_frame {
    std::string function;
    std::string file;      // empty: unknown
    std::int64_t line = 0; // 0: unknown
};

source_frame parse_frame(std::string_view frame);

} // namespace ojx::tool
