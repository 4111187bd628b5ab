// Where outputs go: a new or regular file appears whole or not at all (new files 0600, an existing file keeps its
// mode); devices and FIFOs are written through, never replaced; a symbolic link leads to the file written, and
// stays a link; a directory, or a link to nothing, is refused with a message naming the path.
#include "output_file.hpp"

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <sstream>
#include <string>

using namespace ojx::tool;
namespace fs = std::filesystem;

namespace {

struct scratch_directory {
    fs::path root = fs::temp_directory_path() / ("ojx-output-file-test-" + std::to_string(::getpid()));
    scratch_directory() {
        fs::remove_all(root);
        fs::create_directories(root);
    }
    ~scratch_directory() { fs::remove_all(root); }
    std::string operator/(const std::string& name) const { return (root / name).string(); }
    // Everything in the directory: no temporary file may be left behind.
    std::size_t entries() const { return static_cast<std::size_t>(std::distance(fs::directory_iterator(root), {})); }
};

std::string contents(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

struct stat status_of(const std::string& path) {
    struct stat status {};
    REQUIRE(::lstat(path.c_str(), &status) == 0);
    return status;
}

std::optional<std::string> write(const std::string& path, const std::string& text) {
    output_file out(path);
    if (out.ok()) out.stream() << text;
    return out.commit();
}

} // namespace

TEST_CASE("a new file is created 0600 whatever the umask, and appears only when committed") {
    const scratch_directory dir;
    const mode_t old_mask = ::umask(0);
    {
        output_file out(dir / "profile.json");
        REQUIRE(out.ok());
        out.stream() << "{\"secret\": 1}";
        out.stream().flush();
        CHECK_FALSE(fs::exists(dir / "profile.json"));
        CHECK_FALSE(out.commit());
    }
    ::umask(old_mask);
    CHECK(contents(dir / "profile.json") == "{\"secret\": 1}");
    CHECK((status_of(dir / "profile.json").st_mode & 07777) == 0600);
    CHECK(dir.entries() == 1);
    {
        output_file abandoned(dir / "never.json");
        abandoned.stream() << "half";
    }
    CHECK_FALSE(fs::exists(dir / "never.json"));
    CHECK(dir.entries() == 1);
}

TEST_CASE("an existing regular file is replaced whole and keeps its mode") {
    const scratch_directory dir;
    std::ofstream(dir / "report.html") << "old";
    fs::permissions(dir / "report.html", fs::perms(0640));
    {
        output_file out(dir / "report.html");
        out.stream() << "new";
        CHECK(contents(dir / "report.html") == "old"); // until committed
        CHECK_FALSE(out.commit());
    }
    CHECK(contents(dir / "report.html") == "new");
    CHECK((status_of(dir / "report.html").st_mode & 07777) == 0640);
    CHECK(dir.entries() == 1);
}

TEST_CASE("a character device is written through and stays a device") {
    CHECK_FALSE(write("/dev/null", "discarded"));
    const struct stat null = status_of("/dev/null");
    CHECK(S_ISCHR(null.st_mode));
}

TEST_CASE("a FIFO is written through to its reader and stays a FIFO") {
    const scratch_directory dir;
    const std::string fifo = dir / "pipe";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    // The writer's open waits for a reader: the reader runs beside it.
    auto reader = std::async(std::launch::async, [&] { return contents(fifo); });
    CHECK_FALSE(write(fifo, "through the pipe"));
    CHECK(reader.get() == "through the pipe");
    CHECK(S_ISFIFO(status_of(fifo).st_mode));
    CHECK(dir.entries() == 1);
}

TEST_CASE("a symbolic link leads to the file written; the link stays") {
    const scratch_directory dir;
    fs::create_directories(dir / "real");
    std::ofstream(dir / "real/out.json") << "old";
    fs::permissions(dir / "real/out.json", fs::perms(0644));
    // Relative links, two in a row: each is resolved from its own directory.
    fs::create_symlink("real/out.json", dir / "first");
    fs::create_symlink("first", dir / "second");
    CHECK_FALSE(write(dir / "second", "through two links"));
    CHECK(S_ISLNK(status_of(dir / "first").st_mode));
    CHECK(S_ISLNK(status_of(dir / "second").st_mode));
    CHECK(contents(dir / "real/out.json") == "through two links");
    CHECK((status_of(dir / "real/out.json").st_mode & 07777) == 0644);
    // The temporary file was made beside the target, not beside the link, and is gone.
    CHECK(std::distance(fs::directory_iterator(dir / "real"), {}) == 1);
    CHECK(dir.entries() == 3);
    // A link to a device is written through too.
    fs::create_symlink("/dev/null", dir / "null");
    CHECK_FALSE(write(dir / "null", "discarded"));
    CHECK(S_ISCHR(status_of("/dev/null").st_mode));
}

TEST_CASE("a link to nothing, a directory and an unwritable place are refused, naming the path") {
    const scratch_directory dir;
    fs::create_symlink("missing/file.json", dir / "dangling");
    const auto dangling = write(dir / "dangling", "x");
    REQUIRE(dangling);
    CHECK_THAT(*dangling, Catch::StartsWith(dir / "dangling") && Catch::Contains("does not exist"));
    CHECK(S_ISLNK(status_of(dir / "dangling").st_mode));
    const auto directory = write(dir.root.string(), "x");
    REQUIRE(directory);
    CHECK_THAT(*directory, Catch::Contains("is a directory"));
    const auto nowhere = write(dir / "no/such/dir/out.json", "x");
    REQUIRE(nowhere);
    CHECK_THAT(*nowhere, Catch::StartsWith(dir / "no/such/dir/out.json: cannot create"));
    CHECK(dir.entries() == 1);
}
