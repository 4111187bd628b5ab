// bytecode_roundtrip: runs the bytecode backend over real class files. For each .class file under the given
// directories (or given directly) it reads the class, writes it back and compares the bytes, and decodes every
// method's code; it prints the counts and every failure with its reason. With --mutate it instead corrupts a
// sample of the files in seeded ways and checks that each corruption is rejected or round-trips (mutations.hpp).
//
//   bytecode_roundtrip [--label NAME] [--mutate SEEDS --sample FILES] PATH...
//
// Exit status: 0 when nothing failed, 1 when something did (or no class file was found), 2 on a usage error.
#include "mutations.hpp"

#include "class_file_bytes.hpp"

#include "ojx/bytecode/class_reader.hpp"
#include "ojx/bytecode/class_writer.hpp"
#include "ojx/bytecode/instructions.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace ojx::bytecode;

namespace {

using ojx::bytecode::test::read_file;

// Failures printed one per line; a systematic bug would otherwise print one for every class.
constexpr std::size_t max_printed_failures = 100;

void print_failures(const std::vector<std::string>& failures) {
    for (std::size_t i = 0; i < failures.size() && i < max_printed_failures; ++i) {
        std::printf("FAILED %s\n", failures[i].c_str());
    }
    if (failures.size() > max_printed_failures) {
        std::printf("... and %zu more failures\n", failures.size() - max_printed_failures);
    }
}

struct options {
    std::string label = "classes";
    std::uint64_t mutation_seeds = 0; // 0: round-trip mode
    std::size_t sample = 200;
    std::vector<std::string> paths;
};

struct totals {
    std::size_t classes = 0;
    std::uint64_t bytes = 0;
    std::size_t methods = 0;
    std::size_t methods_with_code = 0;
    std::uint64_t instructions = 0;
    std::uint16_t lowest_version = 0xffff;
    std::uint16_t highest_version = 0;
    std::vector<std::string> failures;
};

// Every .class file under `paths`, sorted so that runs and samples are reproducible.
std::vector<fs::path> find_classes(const std::vector<std::string>& paths, std::vector<std::string>& problems) {
    std::vector<fs::path> found;
    for (const std::string& path : paths) {
        std::error_code error;
        if (fs::is_regular_file(path, error)) {
            found.emplace_back(path);
            continue;
        }
        if (!fs::is_directory(path, error)) {
            problems.push_back(path + ": neither a file nor a directory");
            continue;
        }
        for (auto it = fs::recursive_directory_iterator(path, error); !error && it != fs::end(it);
             it.increment(error)) {
            if (it->is_regular_file(error) && it->path().extension() == ".class") {
                found.push_back(it->path());
            }
        }
        if (error) {
            problems.push_back(path + ": " + error.message());
        }
    }
    std::sort(found.begin(), found.end());
    return found;
}

// The first offset where `a` and `b` differ (or the shorter length).
std::size_t first_difference(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b) {
    const std::size_t common = std::min(a.size(), b.size());
    return static_cast<std::size_t>(std::mismatch(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(common),
                                        b.begin())
                                        .first -
                                    a.begin());
}

void round_trip(const fs::path& path, totals& total) {
    std::vector<std::uint8_t> bytes;
    if (!read_file(path, bytes)) {
        total.failures.push_back(path.string() + ": cannot read the file");
        return;
    }
    ++total.classes;
    total.bytes += bytes.size();
    auto parsed = read_class(bytes);
    if (!parsed) {
        total.failures.push_back(path.string() + ": read: " + parsed.error().describe());
        return;
    }
    total.lowest_version = std::min(total.lowest_version, parsed->major_version);
    total.highest_version = std::max(total.highest_version, parsed->major_version);
    auto written = write_class(*parsed);
    if (!written) {
        total.failures.push_back(path.string() + ": write: " + written.error().describe());
    } else if (*written != bytes) {
        total.failures.push_back(path.string() + ": written bytes differ from the file's, first at offset " +
                                 std::to_string(first_difference(*written, bytes)) + " (sizes " +
                                 std::to_string(written->size()) + " and " + std::to_string(bytes.size()) + ")");
    }
    for (const method_info& method : parsed->methods) {
        ++total.methods;
        const code_attribute* code = method.code();
        if (!code) {
            continue;
        }
        ++total.methods_with_code;
        auto decoded = decode_instructions(*code, parsed->constants);
        if (!decoded) {
            const auto name = parsed->name_of(method);
            const auto descriptor = parsed->descriptor_of(method);
            total.failures.push_back(path.string() + ": decode " + std::string(name ? *name : "?") +
                                     std::string(descriptor ? *descriptor : "") + ": " +
                                     decoded.error().describe());
            continue;
        }
        total.instructions += decoded->size();
    }
}

int run_round_trip(const options& settings, const std::vector<fs::path>& files, std::vector<std::string> problems) {
    const auto start = std::chrono::steady_clock::now();
    totals total;
    total.failures = std::move(problems);
    for (const fs::path& path : files) {
        round_trip(path, total);
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%s: %zu classes (%.1f MiB, major versions %u..%u), %zu methods (%zu with code), %llu "
                "instructions, %zu failures, %.1f s\n",
        settings.label.c_str(), total.classes, static_cast<double>(total.bytes) / (1024.0 * 1024.0),
        total.classes ? total.lowest_version : 0u, static_cast<unsigned>(total.highest_version), total.methods,
        total.methods_with_code, static_cast<unsigned long long>(total.instructions), total.failures.size(),
        seconds);
    print_failures(total.failures);
    if (total.classes == 0) {
        std::printf("FAILED no class files found\n");
        return 1;
    }
    return total.failures.empty() ? 0 : 1;
}

int run_mutations(const options& settings, const std::vector<fs::path>& files, std::vector<std::string> problems) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::string> failures = std::move(problems);
    std::size_t sampled = 0;
    std::uint64_t mutations = 0;
    std::uint64_t accepted = 0;
    // Evenly spaced through the sorted list, so that the sample spans packages (and modules or jars).
    const std::size_t step = std::max<std::size_t>(1, files.size() / std::max<std::size_t>(1, settings.sample));
    for (std::size_t i = 0; i < files.size() && sampled < settings.sample; i += step) {
        std::vector<std::uint8_t> original;
        if (!read_file(files[i], original) || original.empty()) {
            failures.push_back(files[i].string() + ": cannot read the file, or it is empty");
            continue;
        }
        ++sampled;
        for (std::uint64_t seed = 0; seed < settings.mutation_seeds; ++seed) {
            const std::uint64_t mixed = seed * 0x100000001B3ull + i;
            const auto outcome = test::check_mutated(test::mutate(original, mixed));
            ++mutations;
            accepted += outcome.parsed ? 1 : 0;
            if (!outcome.violation.empty()) {
                failures.push_back(files[i].string() + " seed " + std::to_string(mixed) + ": " + outcome.violation);
            }
        }
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%s mutations: %zu files, %llu mutations (%llu accepted as valid classes, the rest rejected), %zu "
                "failures, %.1f s\n",
        settings.label.c_str(), sampled, static_cast<unsigned long long>(mutations),
        static_cast<unsigned long long>(accepted), failures.size(), seconds);
    print_failures(failures);
    if (sampled == 0) {
        std::printf("FAILED no class files found\n");
        return 1;
    }
    return failures.empty() ? 0 : 1;
}

bool parse_count(const char* text, std::uint64_t& out) {
    char* end = nullptr;
    out = std::strtoull(text, &end, 10);
    return end != text && *end == '\0';
}

} // namespace

int main(int argc, char** argv) {
    options settings;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        std::uint64_t number = 0;
        if (arg == "--label" && i + 1 < argc) {
            settings.label = argv[++i];
        } else if (arg == "--mutate" && i + 1 < argc && parse_count(argv[i + 1], number) && number > 0) {
            settings.mutation_seeds = number;
            ++i;
        } else if (arg == "--sample" && i + 1 < argc && parse_count(argv[i + 1], number) && number > 0) {
            settings.sample = static_cast<std::size_t>(number);
            ++i;
        } else if (!arg.empty() && arg[0] != '-') {
            settings.paths.push_back(arg);
        } else {
            std::fprintf(stderr, "usage: %s [--label NAME] [--mutate SEEDS --sample FILES] PATH...\n", argv[0]);
            return 2;
        }
    }
    if (settings.paths.empty()) {
        std::fprintf(stderr, "usage: %s [--label NAME] [--mutate SEEDS --sample FILES] PATH...\n", argv[0]);
        return 2;
    }
    std::vector<std::string> problems;
    const std::vector<fs::path> files = find_classes(settings.paths, problems);
    const int status = settings.mutation_seeds > 0 ? run_mutations(settings, files, std::move(problems))
                                                   : run_round_trip(settings, files, std::move(problems));
    std::fflush(stdout);
    return status;
}
