// A program that treats its descriptors as its own, as daemons do, for agent_files_suite.py: it closes every
// descriptor above standard error, opens its output file, and (with --take) also puts that file at every number
// it had open before — so that an agent descriptor, if one were still believed valid, would now name the
// program's file. It allocates (tracked objects, hence trace records) between lines of output written through
// stdio and never closed: the last lines reach the file only as the process exits, after the agents' destructors.
//
// usage: descriptor_closer OUTPUT [--close-all] [--take] [--lines N] [--chdir DIR] [--setuid UID]
// Output: "line 0\n" … "line N-1\n". Exit status 0, or 2 with a message when an operation it was asked for fails.
#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

std::vector<int> open_descriptors_above_stderr() {
    std::vector<int> found;
    DIR* dir = opendir("/proc/self/fd");
    if (dir == nullptr) return found;
    const int own = dirfd(dir);
    while (const dirent* entry = readdir(dir)) {
        const int fd = std::atoi(entry->d_name);
        if (entry->d_name[0] != '.' && fd > 2 && fd != own) found.push_back(fd);
    }
    closedir(dir);
    return found;
}

// Allocates and frees `count` objects of 4 KiB, touching each: the agent tracks every one.
void churn(int count) {
    for (int i = 0; i < count; ++i) {
        auto* block = static_cast<volatile char*>(std::malloc(4096));
        if (block == nullptr) continue;
        block[0] = static_cast<char>(i);
        block[4095] = static_cast<char>(i);
        std::free(const_cast<char*>(block));
    }
}

int fail(const char* what) {
    std::fprintf(stderr, "descriptor_closer: %s: %s\n", what, std::strerror(errno));
    return 2;
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: descriptor_closer OUTPUT [--close-all] [--take] [--lines N] [--chdir DIR] "
                             "[--setuid UID]\n");
        return 2;
    }
    const char* output = argv[1];
    bool close_all = false, take = false;
    int lines = 200;
    const char* directory = nullptr;
    long uid = -1;
    for (int i = 2; i < argc; ++i) {
        const std::string option = argv[i];
        if (option == "--close-all") close_all = true;
        else if (option == "--take") take = true;
        else if (option == "--lines" && i + 1 < argc) lines = std::atoi(argv[++i]);
        else if (option == "--chdir" && i + 1 < argc) directory = argv[++i];
        else if (option == "--setuid" && i + 1 < argc) uid = std::atol(argv[++i]);
        else return std::fprintf(stderr, "descriptor_closer: unknown option %s\n", argv[i]), 2;
    }
    churn(20000);
    const std::vector<int> had = open_descriptors_above_stderr();
    std::fprintf(stderr, "descriptor_closer: %zu descriptors above stderr at start\n", had.size());
    if (close_all)
        for (const int fd : had) close(fd);
    std::FILE* out = std::fopen(output, "w");
    if (out == nullptr) return fail("fopen");
    if (take)
        for (const int fd : had)
            if (fd != fileno(out) && dup2(fileno(out), fd) != fd) return fail("dup2");
    for (int i = 0; i < lines; ++i) {
        std::fprintf(out, "line %d\n", i);
        churn(200);
    }
    if (directory != nullptr && chdir(directory) != 0) return fail("chdir");
    if (uid >= 0 && setuid(static_cast<uid_t>(uid)) != 0) return fail("setuid");
    return 0; // `out` is flushed and closed by exit, after the agents' destructors have run
}
