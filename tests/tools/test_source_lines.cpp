// `ojx report --source`: a frame's line is found where its package or path says, else by file name anywhere below
// the directories, the first directory winning; frames without a file or line, and lines past the end, give none.
#include "source_lines.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

using namespace ojx::tool;
namespace fs = std::filesystem;

namespace {

struct source_tree {
    fs::path root = fs::temp_directory_path() / "ojx-source-lines-test";
    source_tree() {
        fs::remove_all(root);
        write("first/com/acme/Reader.java", "package com.acme;\nclass Reader {\n    byte[] b = new byte[64];\n}\n");
        write("first/other/Elsewhere.java", "class Elsewhere {\n  int x;\n}\n");
        write("second/com/acme/Reader.java", "// a shadowed copy\n\n    shadowed();\n");
        write("second/deep/src/parser.cpp", "int main() {\n  return parse_row();\n}\n");
    }
    ~source_tree() { fs::remove_all(root); }
    void write(const std::string& relative, const std::string& text) {
        fs::create_directories((root / relative).parent_path());
        std::ofstream(root / relative) << text;
    }
};

} // namespace

TEST_CASE("source lines are found by package path, by file name, and by absolute path") {
    const source_tree tree;
    source_lines lines({(tree.root / "first").string(), (tree.root / "second").string()});
    // By package path under the first directory that has it.
    CHECK(lines.line_of("com.acme.Reader.<init>(Reader.java:3)") == "byte[] b = new byte[64];");
    // A Java frame whose package does not match the directories: by file name anywhere below them.
    CHECK(lines.line_of("Elsewhere.run(Elsewhere.java:2)") == "int x;");
    // A native frame with a relative path that is not under a directory as written: by file name.
    CHECK(lines.line_of("parse(std::string_view) (parser.cpp:2)") == "return parse_row();");
    // An absolute path inside a directory is taken as it is.
    const std::string absolute = (tree.root / "second/deep/src/parser.cpp").string();
    CHECK(lines.line_of("main (" + absolute + ":1)") == "int main() {");
    // No file, no line, a line past the end, a file nowhere: nothing.
    CHECK_FALSE(lines.line_of("0x7f0f986d44a2 (libstdc++.so.6.0.30)"));
    CHECK_FALSE(lines.line_of("java.lang.Object.clone(Native Method)"));
    CHECK_FALSE(lines.line_of("com.acme.Reader.<init>(Reader.java:99)"));
    CHECK_FALSE(lines.line_of("Missing.m(Missing.java:1)"));
}

TEST_CASE("frame paths that lead out of the directories give no line") {
    source_tree tree;
    source_lines lines({(tree.root / "first").string()});
    // Absolute, and relative with `..`, out of the directory: outside files are never read.
    CHECK_FALSE(lines.line_of("main (/etc/passwd:1)"));
    CHECK_FALSE(lines.line_of("main (../../../../../../../../etc/passwd:1)"));
    CHECK_FALSE(lines.line_of("main (com/../../second/deep/src/parser.cpp:1)"));
    // Another directory the user did not name, whose name begins like a named one's.
    tree.write("first-not/leak.cpp", "secret\n");
    CHECK_FALSE(lines.line_of("main (" + (tree.root / "first-not/leak.cpp").string() + ":1)"));
    CHECK_FALSE(lines.line_of("main (../first-not/leak.cpp:1)"));
    // A symbolic link inside the directory to a file outside it, found by path or by name.
    fs::create_symlink(tree.root / "first-not/leak.cpp", tree.root / "first/other/linked.cpp");
    CHECK_FALSE(lines.line_of("main (other/linked.cpp:1)"));
    CHECK_FALSE(lines.line_of("main (linked.cpp:1)"));
    // `..` that stays inside is fine.
    CHECK(lines.line_of("main (other/../other/Elsewhere.java:2)") == "int x;");
}
