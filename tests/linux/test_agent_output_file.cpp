// How the agents write their files (agent_output_file.hpp): a profile is whole or absent, never a mixture of two
// writers, never a truncated file; a failure leaves the earlier file as it was and nothing else behind; files are
// 0600; a FIFO or device named is written through, not replaced; a link is followed unless another user planted
// it in a world-writable sticky directory (that case needs root to plant: reported as skipped otherwise); a
// descriptor is moved above the program's numbers and, once the program has taken its number, never written or
// closed by ojx.
#include "ojx/hardware/agent_output_file.hpp"
#include "skip.hpp"

#include <catch2/catch.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

using namespace ojx::hardware;

namespace {

// A fresh directory of this test's, removed with what it holds.
struct scratch_directory {
    std::string path;
    explicit scratch_directory(const char* name)
        : path("/tmp/ojx-test-" + std::to_string(getpid()) + "-" + name) {
        remove_all();
        REQUIRE(mkdir(path.c_str(), 0700) == 0);
    }
    ~scratch_directory() { remove_all(); }
    void remove_all() const {
        if (DIR* dir = opendir(path.c_str())) {
            while (const dirent* entry = readdir(dir))
                if (std::strcmp(entry->d_name, ".") != 0 && std::strcmp(entry->d_name, "..") != 0)
                    ::unlink((path + "/" + entry->d_name).c_str());
            closedir(dir);
        }
        ::rmdir(path.c_str());
    }
    std::vector<std::string> entries() const {
        std::vector<std::string> names;
        if (DIR* dir = opendir(path.c_str())) {
            while (const dirent* entry = readdir(dir))
                if (std::strcmp(entry->d_name, ".") != 0 && std::strcmp(entry->d_name, "..") != 0)
                    names.emplace_back(entry->d_name);
            closedir(dir);
        }
        return names;
    }
};

std::string contents_of(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::optional<std::string> write_whole(const std::string& path, const std::string& text) {
    output_file out;
    if (auto error = out.open(path)) return error;
    out.stream() << text;
    return out.commit();
}

mode_t mode_of(const std::string& path) {
    struct stat st {};
    REQUIRE(stat(path.c_str(), &st) == 0);
    return st.st_mode & 07777;
}

} // namespace

TEST_CASE("names are made absolute against the directory they were given in") {
    CHECK(absolute_path("/a/b.json") == "/a/b.json");
    CHECK(absolute_path("b.json", "/work") == "/work/b.json");
    CHECK(absolute_path("sub/b.json", "/work/") == "/work/sub/b.json");
    char* current = getcwd(nullptr, 0);
    REQUIRE(current != nullptr);
    CHECK(absolute_path("b.json") == std::string(current) + "/b.json");
    std::free(current);
    CHECK(absolute_path("").empty());
}

TEST_CASE("a profile is written whole, 0600, and replaces the earlier file only once it is complete") {
    const scratch_directory dir("whole");
    const std::string path = dir.path + "/profile.json";
    { std::ofstream earlier(path); earlier << "earlier"; }
    const mode_t previous_umask = umask(0);
    output_file out;
    REQUIRE_FALSE(out.open(path).has_value());
    out.stream() << std::string(200000, 'x'); // several buffers' worth
    CHECK(contents_of(path) == "earlier");    // not yet: the target changes only at commit
    CHECK(dir.entries().size() == 2);
    REQUIRE_FALSE(out.commit().has_value());
    umask(previous_umask);
    CHECK(contents_of(path) == std::string(200000, 'x'));
    CHECK(mode_of(path) == 0600);
    CHECK(dir.entries() == std::vector<std::string>{"profile.json"});
}

TEST_CASE("a profile that is not committed, or cannot be written, leaves the earlier file and nothing else") {
    const scratch_directory dir("failed");
    const std::string path = dir.path + "/profile.json";
    { std::ofstream earlier(path); earlier << "earlier"; }
    {
        output_file out;
        REQUIRE_FALSE(out.open(path).has_value());
        out.stream() << "half a profile";
    } // abandoned
    CHECK(contents_of(path) == "earlier");
    CHECK(dir.entries() == std::vector<std::string>{"profile.json"});

    // A write that fails (the file-size limit, as a full disk): one reason, the earlier file intact. SIGXFSZ
    // keeps its default action (it kills): ojx never writes past the limit, so it is never raised.
    rlimit previous_limit{};
    REQUIRE(getrlimit(RLIMIT_FSIZE, &previous_limit) == 0);
    rlimit small = previous_limit;
    small.rlim_cur = 1000;
    REQUIRE(setrlimit(RLIMIT_FSIZE, &small) == 0);
    const auto error = write_whole(path, std::string(100000, 'y'));
    setrlimit(RLIMIT_FSIZE, &previous_limit);
    REQUIRE(error.has_value());
    CHECK(*error == "File too large");
    CHECK(contents_of(path) == "earlier");
    CHECK(dir.entries() == std::vector<std::string>{"profile.json"});

    // A directory that does not exist, or a directory named as the file.
    CHECK(write_whole(dir.path + "/missing/profile.json", "{}") == std::optional<std::string>("No such file or directory"));
    CHECK(write_whole(dir.path, "{}") == std::optional<std::string>("it is a directory"));
    CHECK(check_output_file(dir.path + "/missing/profile.json").has_value());
    CHECK_FALSE(check_output_file(path).has_value());
    CHECK(dir.entries() == std::vector<std::string>{"profile.json"}); // the check leaves nothing behind
}

TEST_CASE("concurrent writers of one name leave one whole profile, never a mixture") {
    const scratch_directory dir("concurrent");
    const std::string path = dir.path + "/profile.json";
    for (int round = 0; round < 20; ++round) {
        std::vector<std::thread> writers;
        std::optional<std::string> errors[4]; // Catch2 asserts on this thread only
        for (int i = 0; i < 4; ++i)
            writers.emplace_back([&, i] { errors[i] = write_whole(path, std::string(300000, static_cast<char>('a' + i))); });
        for (std::thread& writer : writers) writer.join();
        for (const auto& error : errors) CHECK_FALSE(error.has_value());
        const std::string text = contents_of(path);
        REQUIRE(text.size() == 300000);
        CHECK(text.find_first_not_of(text[0]) == std::string::npos);
    }
    CHECK(dir.entries() == std::vector<std::string>{"profile.json"});
}

TEST_CASE("a FIFO or a device named is written through, never replaced") {
    REQUIRE_FALSE(write_whole("/dev/null", "{}").has_value());
    struct stat st {};
    REQUIRE(stat("/dev/null", &st) == 0);
    CHECK(S_ISCHR(st.st_mode));

    const scratch_directory dir("fifo");
    const std::string fifo = dir.path + "/profile.fifo";
    REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
    // Nobody reads it: refused at once, not a hang.
    CHECK(write_whole(fifo, "{}") == std::optional<std::string>("no process reads it"));
    const int reading = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
    REQUIRE(reading >= 0);
    std::string received;
    std::thread reader([&] {
        fcntl(reading, F_SETFL, 0);
        char chunk[4096];
        for (ssize_t got; (got = ::read(reading, chunk, sizeof chunk)) != 0;)
            if (got > 0) received.append(chunk, static_cast<std::size_t>(got));
    });
    CHECK_FALSE(write_whole(fifo, "{\"through\": true}").has_value());
    reader.join();
    ::close(reading);
    CHECK(received == "{\"through\": true}");
    REQUIRE(lstat(fifo.c_str(), &st) == 0);
    CHECK(S_ISFIFO(st.st_mode));
}

TEST_CASE("a descriptor named through /proc or /dev/fd is written through, appending: /dev/stdout to a file") {
    const scratch_directory dir("descriptor");
    const std::string path = dir.path + "/stdout.txt";
    { std::ofstream earlier(path); earlier << "the program's output\n"; }
    const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND);
    REQUIRE(fd >= 0);
    struct stat before {};
    REQUIRE(fstat(fd, &before) == 0);
    CHECK_FALSE(write_whole("/proc/self/fd/" + std::to_string(fd), "profile 1\n").has_value());
    CHECK_FALSE(write_whole("/dev/fd/" + std::to_string(fd), "profile 2\n").has_value());
    struct stat after {};
    REQUIRE(stat(path.c_str(), &after) == 0);
    CHECK(after.st_ino == before.st_ino); // the same file, not a replacement
    CHECK(contents_of(path) == "the program's output\nprofile 1\nprofile 2\n");
    ::close(fd);

    int pipe_ends[2];
    REQUIRE(pipe(pipe_ends) == 0);
    CHECK_FALSE(write_whole("/dev/fd/" + std::to_string(pipe_ends[1]), "through the pipe").has_value());
    ::close(pipe_ends[1]);
    char received[64] = {};
    CHECK(::read(pipe_ends[0], received, sizeof received - 1) == 16);
    CHECK(std::string(received) == "through the pipe");
    ::close(pipe_ends[0]);
    CHECK(dir.entries() == std::vector<std::string>{"stdout.txt"});
}

TEST_CASE("a link the user made is followed: the file it names is written, the link stays") {
    const scratch_directory dir("link");
    const std::string target = dir.path + "/real.json";
    const std::string link = dir.path + "/link.json";
    REQUIRE(symlink("real.json", link.c_str()) == 0); // relative, dangling until written
    REQUIRE_FALSE(write_whole(link, "through the link").has_value());
    CHECK(contents_of(target) == "through the link");
    struct stat st {};
    REQUIRE(lstat(link.c_str(), &st) == 0);
    CHECK(S_ISLNK(st.st_mode));
    output_target resolved;
    REQUIRE_FALSE(resolve_output_target(link, resolved).has_value());
    CHECK(resolved.path == target);
    CHECK(resolved.exists);
    CHECK_FALSE(resolved.write_in_place);
}

// The attack: as root, a profile or trace named in /tmp, where another user planted a link to a file of root's.
TEST_CASE("a link another user planted in a world-writable sticky directory is not followed", "[may_skip]") {
    if (geteuid() != 0) OJX_SKIP("planting a link owned by another user needs root");
    const scratch_directory dir("sticky");
    REQUIRE(chmod(dir.path.c_str(), 01777) == 0);
    const scratch_directory protected_dir("protected");
    const std::string victim = protected_dir.path + "/secret";
    { std::ofstream secret(victim); secret << "root's"; }
    const std::string link = dir.path + "/profile.json";
    REQUIRE(symlink(victim.c_str(), link.c_str()) == 0);
    REQUIRE(lchown(link.c_str(), 65534, 65534) == 0);

    const auto refused = write_whole(link, "overwritten");
    REQUIRE(refused.has_value());
    CHECK(refused->find("world-writable sticky directory") != std::string::npos);
    CHECK(check_output_file(link).has_value());
    owned_descriptor stream;
    output_target target;
    CHECK(open_output_stream(link, stream, target).has_value());
    CHECK_FALSE(stream.is_open());
    CHECK(contents_of(victim) == "root's");

    // A planted regular file is not written into by a stream either; a profile replaces it (rename), which
    // changes nothing of the other user's file.
    REQUIRE(::unlink(link.c_str()) == 0);
    { std::ofstream planted(link); planted << "theirs"; }
    REQUIRE(chown(link.c_str(), 65534, 65534) == 0);
    CHECK(open_output_stream(link, stream, target).has_value());
    CHECK(contents_of(link) == "theirs");

    // The link's owner being the directory's owner (root here) or this user: followed.
    REQUIRE(::unlink(link.c_str()) == 0);
    REQUIRE(symlink(victim.c_str(), link.c_str()) == 0);
    CHECK_FALSE(write_whole(link, "asked for").has_value());
    CHECK(contents_of(victim) == "asked for");
}

TEST_CASE("an owned descriptor sits high, and once the program has taken its number it is left alone") {
    const scratch_directory dir("owned");
    const std::string path = dir.path + "/ours";
    const std::string theirs = dir.path + "/theirs";
    owned_descriptor fd(::open(path.c_str(), O_WRONLY | O_CREAT, 0600));
    REQUIRE(fd.is_open());
    CHECK(fd.number() >= high_descriptor_floor());
    CHECK(fd.still_ours());
    const std::string a = "ours\n";
    CHECK(fd.write_all(std::as_bytes(std::span(a.data(), a.size()))) == 0);

    const int number = fd.number();
    const int program = ::open(theirs.c_str(), O_WRONLY | O_CREAT, 0600);
    REQUIRE(dup2(program, number) == number);
    ::close(program);
    CHECK(fd.write_all(std::as_bytes(std::span(a.data(), a.size()))) == ESTALE);
    CHECK(fd.lost());
    CHECK(fd.close() == ESTALE);
    CHECK(fcntl(number, F_GETFD) >= 0); // not closed by ojx
    ::close(number);
    CHECK(contents_of(path) == a);
    CHECK(contents_of(theirs).empty());

    // Closed by the program and not reused: nothing written, nothing closed.
    owned_descriptor closed(::open(path.c_str(), O_WRONLY, 0600));
    REQUIRE(::close(closed.number()) == 0);
    CHECK_FALSE(closed.still_ours());
    CHECK(closed.close() == ESTALE);
}
