// `ojx merge`: many profiles — threads, processes, hosts — into one, estimates recomputed from the summed
// evidence (profile_merger.hpp says how).
#include "command_line.hpp"
#include "commands.hpp"
#include "output_file.hpp"
#include "profile_merger.hpp"

#include "ojx/profile_writer.hpp"

#include <cstdio>
#include <iostream>

namespace ojx::tool {
namespace {

constexpr const char* merge_help = R"(usage: ojx merge PROFILE… -o OUT

Merges profiles of the same program — from several threads, processes or hosts — into one. Sites (the same
allocated type and allocation frames) are combined and their estimates recomputed from the summed evidence, as
if one run had made all the comparisons; counters add up. The order of the inputs does not matter, and merging
merged profiles gives the same result as merging the originals at once.

  -o, --output FILE  where the merged profile goes (written whole or not at all; '-' is standard output)

example: ojx merge host1.json host2.json host3.json -o fleet.json && ojx report fleet.json
)";

} // namespace

int merge_command(arguments args) {
    command_line line("merge", args);
    std::vector<std::string> inputs;
    std::string output;
    while (line.next()) {
        if (!line.is_option()) {
            inputs.emplace_back(line.current());
        } else if (line.is("--help") || line.is("-h")) {
            std::fputs(merge_help, stdout);
            return exit_ok;
        } else if (line.is("-o") || line.is("--output")) {
            const std::optional<std::string> path = line.value();
            if (!path) return exit_usage;
            output = *path;
        } else {
            return line.unknown();
        }
    }
    if (inputs.empty()) return line.fail("no profile given (ojx merge --help)");
    if (output.empty()) return line.fail("no output file: add -o OUT (or -o - for standard output)");

    profile merged;
    if (const auto error = load_profiles(inputs, merged)) {
        std::fprintf(stderr, "ojx merge: %s\n", error->c_str());
        return exit_usage;
    }
    if (output == "-") {
        write_profile_json(std::cout, merged);
        return std::cout.flush() ? exit_ok : exit_failed;
    }
    output_file out(output);
    if (out.ok()) write_profile_json(out.stream(), merged);
    if (const auto error = out.commit()) {
        std::fprintf(stderr, "ojx merge: %s\n", error->c_str());
        return exit_failed;
    }
    std::fprintf(stderr, "ojx merge: %zu profiles, %zu allocation sites into %s\n", inputs.size(),
                 merged.contexts.size(), output.c_str());
    return exit_ok;
}

} // namespace ojx::tool
