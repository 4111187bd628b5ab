# Writes a class file's bytes as a C++ source (cmake -P): the ojx/Counts class that libojx.so defines in the JVM
# for exact counts (exact_counting.cpp), so that the agent needs no file beside it.
#   cmake -DINPUT=Counts.class -DOUTPUT=counts_class.cpp -P embed_class.cmake
file(READ ${INPUT} hex HEX)
string(LENGTH "${hex}" digits)
math(EXPR size "${digits} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){16})" "\\1\n    " bytes "${bytes}")
file(WRITE ${OUTPUT} "// Generated from ${INPUT} by embed_class.cmake.\n#include \"counts_class.hpp\"\n\n"
    "namespace ojx::jvm {\n\nconst unsigned char counts_class_bytes[] = {\n    ${bytes}\n};\n"
    "const std::size_t counts_class_size = ${size};\n\n} // namespace ojx::jvm\n")
