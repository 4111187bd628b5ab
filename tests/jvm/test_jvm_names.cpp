// The JVM agent's pure parts: Java frames packed into one word for the context tree (and unpacked unchanged),
// and JVM signatures turned into the names a Java engineer reads.
#include "java_names.hpp"
#include "jvm_frame.hpp"

#include <catch2/catch.hpp>

#include "ojx/random.hpp"

using namespace ojx::jvm;

TEST_CASE("a frame survives encoding: method ids below 2^47 and every bytecode index a method can have") {
    ojx::fast_random rng(7);
    for (int i = 0; i < 100000; ++i) {
        const java_frame frame{(rng() & method_mask) | 8, static_cast<std::int32_t>(rng() % 65536)};
        REQUIRE(decode_frame(encode_frame(frame)) == frame);
    }
    for (const std::int32_t bci : {0, 65535, -1, native_method_bci})
        REQUIRE(decode_frame(encode_frame(java_frame{0x7f12345678, bci})).bci == bci);
}

TEST_CASE("frames that cannot be represented are never confused with another frame") {
    // A method id above 2^47 becomes a walk failure; a bci out of range becomes "unknown" (-1).
    const java_frame too_far = decode_frame(encode_frame(java_frame{std::uint64_t{1} << 50, 3}));
    CHECK(too_far.method == 0);
    CHECK(too_far.bci == method_id_too_large);
    CHECK(decode_frame(encode_frame(java_frame{0x1000, max_bci + 1})).bci == -1);
    CHECK(decode_frame(encode_frame(java_frame{0x1000, -bci_bias - 1})).bci == -1);
    // Failures have no method, and different reasons stay different.
    CHECK(decode_frame(failure_frame(gc_active)) == java_frame{0, gc_active});
    CHECK(failure_frame(gc_active) != failure_frame(not_walkable_java));
    CHECK(failure_name(not_a_java_thread) == "[not a Java thread]");
    CHECK(failure_name(-55) == "[stack walk failed]");
}

TEST_CASE("signatures read as Java types") {
    CHECK(java_type_name("[B") == "byte[]");
    CHECK(java_type_name("[[J") == "long[][]");
    CHECK(java_type_name("Ljava/lang/String;") == "java.lang.String");
    CHECK(java_type_name("[Ljava/util/Map$Entry;") == "java.util.Map$Entry[]");
    CHECK(java_type_name("Z") == "boolean");
    // Malformed input is shown as the JVM gave it, not dropped.
    CHECK(java_type_name("Ljava/lang/String") == "Ljava/lang/String");
    CHECK(java_type_name("[Q") == "[Q");
    CHECK(java_type_name("") == "");
}

TEST_CASE("hidden classes are named without the address they were loaded at, which changes from run to run") {
    CHECK(java_type_name("LGen$$Lambda$1.0x00007f3b8c000a08;") == "Gen$$Lambda$1");
    CHECK(java_type_name("Ljava/lang/invoke/LambdaForm$MH.0x0000000800c10000;") == "java.lang.invoke.LambdaForm$MH");
    CHECK(java_type_name("[LGen$$Lambda.0x0000000801000a00;") == "Gen$$Lambda[]");
    // Only a hexadecimal address at the very end is one.
    CHECK(java_type_name("Lpkg/Version.0xcafe1;") == "pkg.Version");
    CHECK(java_type_name("Lpkg/Odd.0x12g;") == "pkg.Odd.0x12g");
    CHECK(java_type_name("Lpkg/Odd.0x;") == "pkg.Odd.0x");
    CHECK(java_type_name("Lpkg/Plain;") == "pkg.Plain");
}

TEST_CASE("frames read as in Throwable.printStackTrace") {
    CHECK(java_frame_name("pkg.Reader", "read", "Reader.java", 42, 17, false) == "pkg.Reader.read(Reader.java:42)");
    CHECK(java_frame_name("pkg.Reader", "read", "Reader.java", -1, -1, false) == "pkg.Reader.read(Reader.java)");
    CHECK(java_frame_name("java.lang.Object", "clone", "Object.java", 7, -3, true) ==
          "java.lang.Object.clone(Native Method)");
}

TEST_CASE("frames without a line say their bytecode index, so that two sites of one method read apart") {
    // A jar compiled without line tables: two allocations of one method.
    const std::string first = java_frame_name("pkg.Codec", "encode", "Codec.java", -1, 12, false);
    const std::string second = java_frame_name("pkg.Codec", "encode", "Codec.java", -1, 40, false);
    CHECK(first == "pkg.Codec.encode(Codec.java, bci 12)");
    CHECK(first != second);
    // No source file (a generated class): the JDK's "Unknown Source", and the index, line or not.
    CHECK(java_frame_name("Gen$$Lambda$1", "run", "", 3, 5, false) == "Gen$$Lambda$1.run(Unknown Source, bci 5)");
    CHECK(java_frame_name("Gen$$Lambda$1", "run", "", -1, 0, false) == "Gen$$Lambda$1.run(Unknown Source, bci 0)");
    // A native method has no index to show.
    CHECK(java_frame_name("pkg.Io", "read0", "Io.java", -1, -3, true) == "pkg.Io.read0(Native Method)");
}
