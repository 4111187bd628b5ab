// Java names from JVM type signatures, as a Java engineer reads them: "[B" is "byte[]", "Ljava/util/Map;" is
// "java.util.Map", and a frame is "java.util.Map.get(Map.java:42)" as in Throwable.printStackTrace.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ojx::jvm {

// A hidden class's name (a lambda's "Gen$$Lambda$1", the JVM's "java.lang.invoke.LambdaForm$MH") ends in the
// address the JVM loaded it at: ".0x00007f3b8c000a08" in its signature, "/0x…" in Class.getName(). The address
// differs from run to run, so a frame or type named with it would never match the same site in another run's
// profile (ojx merge keys sites by their names): the name is taken without it.
inline std::string_view without_hidden_class_address(std::string_view name) {
    const std::size_t mark = name.rfind(".0x");
    if (mark == std::string_view::npos || mark + 3 == name.size()) return name;
    for (const char c : name.substr(mark + 3))
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) return name;
    return name.substr(0, mark);
}

// A field or class signature ("I", "[[J", "Ljava/lang/String;") as a Java type name, hidden classes without
// their address. Anything malformed is returned as it is, so a report shows what the JVM said rather than nothing.
inline std::string java_type_name(std::string_view signature) {
    std::size_t dimensions = 0;
    while (dimensions < signature.size() && signature[dimensions] == '[') ++dimensions;
    const std::string_view element = signature.substr(dimensions);
    std::string name;
    if (element.size() >= 2 && element.front() == 'L' && element.back() == ';') {
        name.assign(without_hidden_class_address(element.substr(1, element.size() - 2)));
        for (char& c : name)
            if (c == '/') c = '.';
    } else if (element.size() == 1) {
        switch (element.front()) {
        case 'Z': name = "boolean"; break;
        case 'B': name = "byte"; break;
        case 'C': name = "char"; break;
        case 'S': name = "short"; break;
        case 'I': name = "int"; break;
        case 'J': name = "long"; break;
        case 'F': name = "float"; break;
        case 'D': name = "double"; break;
        case 'V': name = "void"; break;
        default: return std::string(signature);
        }
    } else {
        return std::string(signature);
    }
    for (std::size_t i = 0; i < dimensions; ++i) name += "[]";
    return name;
}

// "pkg.Cls.method(File.java:42)". `line` < 0: unknown; `native_method`: "(Native Method)"; an empty
// `source_file`: "(Unknown Source)", as the JDK prints them. Where the line is not shown (no line table: a jar
// compiled without -g:lines, a generated class) the bytecode index `bci` (when ≥ 0) is, "(File.java, bci 17)":
// two allocations of one method would otherwise read alike, and a report would show one site as two rows of the
// same name, neither of them the site (javap -c maps the index to the instruction).
inline std::string java_frame_name(std::string_view class_name, std::string_view method, std::string_view source_file,
                                   std::int32_t line, std::int32_t bci, bool native_method) {
    std::string name;
    name.reserve(class_name.size() + method.size() + source_file.size() + 24);
    name.append(class_name).append(".").append(method).append("(");
    if (native_method) {
        name += "Native Method";
    } else {
        const bool line_shown = !source_file.empty() && line >= 0;
        name += source_file.empty() ? std::string_view("Unknown Source") : source_file;
        if (line_shown) name.append(":").append(std::to_string(line));
        if (!line_shown && bci >= 0) name.append(", bci ").append(std::to_string(bci));
    }
    name += ')';
    return name;
}

} // namespace ojx::jvm
