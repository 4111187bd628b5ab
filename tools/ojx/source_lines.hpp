// Source lines for frames, for `ojx report --source DIR…`: a frame names a file and a line
// (`pkg.Cls.m(File.java:42)`, `f (src/file.cpp:42)`), and the line is looked for under the given directories —
// first where the frame's package or path says (DIR/pkg/File.java, DIR/src/file.cpp, an absolute path inside
// one of them), then by file name anywhere below a directory. Only files under the directories are read: a
// frame's absolute path or `..` that leads out of them (or a symbolic link that does) gives no line. Files are
// read once.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ojx::tool {

class source_lines {
public:
    explicit source_lines(std::vector<std::string> directories);

    // The text of the frame's line (leading and trailing blanks removed), where its file is found.
    std::optional<std::string> line_of(std::string_view frame);

private:
    const std::vector<std::string>* lines_of_file(const std::string& path);
    std::optional<std::string> find_file(std::string_view frame, const std::string& file);
    std::optional<std::string> contained(const std::filesystem::path& path) const;
    const std::multimap<std::string, std::string>& files_by_name();

    std::vector<std::string> directories_;
    std::vector<std::filesystem::path> roots_; // the directories, canonical
    std::map<std::string, std::vector<std::string>> files_; // path → lines (empty: unreadable)
    std::multimap<std::string, std::string> by_name_;        // file name → path, filled on first use
    bool indexed_ = false;
};

} // namespace ojx::tool
