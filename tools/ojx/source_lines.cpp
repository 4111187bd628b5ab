#include "source_lines.hpp"

#include "source_frame.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace ojx::tool {
namespace {

namespace fs = std::filesystem;

bool is_file(const fs::path& path) {
    std::error_code error;
    return fs::is_regular_file(path, error);
}

// Whether `inside` (canonical) is `root` (canonical) or below it: compared component by component, so that
// /src/app-old is not taken to be under /src/app.
bool is_under(const fs::path& inside, const fs::path& root) {
    return std::mismatch(root.begin(), root.end(), inside.begin(), inside.end()).first == root.end();
}

std::string trimmed(const std::string& text) {
    const std::size_t first = text.find_first_not_of(" \t\r");
    if (first == std::string::npos) return {};
    return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
}

// Where a Java frame's file lives relative to a source root: its class's package as directories
// (`a.b.Cls$Inner.m` → a/b/File.java).
std::string java_relative_path(std::string_view function, const std::string& file) {
    const std::size_t method_dot = function.rfind('.');
    if (method_dot == std::string_view::npos) return file;
    const std::string_view class_name = function.substr(0, method_dot);
    const std::size_t package_end = class_name.rfind('.');
    if (package_end == std::string_view::npos) return file;
    std::string path(class_name.substr(0, package_end));
    for (char& c : path)
        if (c == '.') c = '/';
    return path + '/' + file;
}

} // namespace

source_lines::source_lines(std::vector<std::string> directories) : directories_(std::move(directories)) {
    for (const std::string& directory : directories_) {
        std::error_code error;
        const fs::path root = fs::canonical(directory, error);
        if (!error) roots_.push_back(root);
    }
}

// A profile names its files; the user names the folders. A path that leaves them (absolute, with `..`, or
// through a symbolic link) is not read: a profile from elsewhere must not make `ojx report` print a line of
// /etc/shadow to whoever runs it.
std::optional<std::string> source_lines::contained(const fs::path& path) const {
    std::error_code error;
    const fs::path real = fs::canonical(path, error);
    if (error || !is_file(real)) return std::nullopt;
    for (const fs::path& root : roots_)
        if (is_under(real, root)) return real.string();
    return std::nullopt;
}

std::optional<std::string> source_lines::line_of(std::string_view frame) {
    const source_frame where = parse_frame(frame);
    if (where.file.empty() || where.line <= 0) return std::nullopt;
    const std::optional<std::string> path = find_file(where.function, where.file);
    if (!path) return std::nullopt;
    const std::vector<std::string>* lines = lines_of_file(*path);
    if (lines == nullptr || static_cast<std::size_t>(where.line) > lines->size()) return std::nullopt;
    return trimmed((*lines)[static_cast<std::size_t>(where.line) - 1]);
}

std::optional<std::string> source_lines::find_file(std::string_view function, const std::string& file) {
    const fs::path named(file);
    if (named.is_absolute()) {
        if (auto path = contained(named)) return path;
    } else {
        const std::string relative = file.ends_with(".java") ? java_relative_path(function, file) : file;
        for (const std::string& directory : directories_)
            if (auto path = contained(fs::path(directory) / relative)) return path;
    }
    // By name anywhere below the directories: the first in directory order, then path order. A name that is a
    // folder's (`..`, `.`) names no file.
    const std::string name = named.filename().string();
    if (name.empty() || name == "." || name == "..") return std::nullopt;
    const auto& index = files_by_name();
    for (auto [it, end] = index.equal_range(name); it != end; ++it)
        if (auto path = contained(it->second)) return path;
    return std::nullopt;
}

const std::multimap<std::string, std::string>& source_lines::files_by_name() {
    if (indexed_) return by_name_;
    indexed_ = true;
    for (const std::string& directory : directories_) {
        std::error_code error;
        std::vector<std::string> paths;
        for (fs::recursive_directory_iterator it(directory, fs::directory_options::skip_permission_denied, error), end;
             !error && it != end; it.increment(error)) {
            if (it->is_regular_file(error)) paths.push_back(it->path().string());
        }
        std::sort(paths.begin(), paths.end());
        for (const std::string& path : paths) by_name_.emplace(fs::path(path).filename().string(), path);
    }
    return by_name_;
}

const std::vector<std::string>* source_lines::lines_of_file(const std::string& path) {
    auto [it, inserted] = files_.try_emplace(path);
    if (inserted) {
        std::ifstream in(path);
        for (std::string line; std::getline(in, line);) it->second.push_back(std::move(line));
    }
    return &it->second;
}

} // namespace ojx::tool
