// `ojx merge`: many profiles — threads, processes, hosts — into one, estimates recomputed from the summed
// evidence (profile_merger.hpp says how).
#include "commands.hpp"
#include "output_file.hpp"
#include "profile_merger.hpp"

#include "ojx/options.hpp"
#include "ojx/profile_writer.hpp"

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

namespace ojx::tool {
namespace {

constexpr const char* merge_help = R"(usage: ojx merge PROFILE… -o OUT

Merges profiles of the same program — from several threads, processes or hosts — into one. Sites (the same
allocated type and allocation frames) are combined and their estimates recomputed from the summed evidence, as
if one run had made all the comparisons; counters add up. Copy sections (sampled copy graphs) merge edge by
edge from their sums, at any mix of sampling periods. The order of the inputs does not matter, and merging
merged profiles gives the same result as merging the originals at once.

  -o, --output FILE  where the merged profile goes (written whole or not at all; '-' is standard output)

example: ojx merge host1.json host2.json host3.json -o fleet.json && ojx report fleet.json
)";

// The options (ojx/options.hpp); merge_help says what they do. -o is --output.
const option_spec merge_options[] = {
    {"output", option_kind::text, "", ""},
    {"help", option_kind::flag, "", ""},
};
const option_alias merge_short_names[] = {{"-o", "output"}};

} // namespace

int merge_command(arguments args) {
    argument_reader reader(args, merge_options, merge_short_names);
    std::vector<std::string> inputs;
    std::string output;
    while (reader.next()) {
        if (reader.option() == nullptr) {
            inputs.emplace_back(reader.operand());
        } else if (reader.option()->name == "help") {
            std::fputs(merge_help, stdout);
            return exit_ok;
        } else {
            output = reader.value().text;
        }
    }
    if (!reader.error().empty()) return usage_error("merge", reader.error());
    if (inputs.empty()) return usage_error("merge", "no profile given");
    if (output.empty()) return usage_error("merge", "no output file: add -o OUT (or -o - for standard output)");

    profile merged;
    if (const auto error = load_profiles(inputs, merged)) return input_error("merge", *error);
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
