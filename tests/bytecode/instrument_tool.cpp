// bytecode_instrument: runs the StackMapTable codec and the instrumenter over real class files. For each .class
// file under the given directories it
//   - decodes every method's StackMapTable, encodes it again, and requires the re-decoded frames to equal the
//     originals (and counts how often the bytes are identical too: javac does not always pick the compact form);
//   - instruments the class with each plan and requires the result to read back, every instrumented method to
//     decode, its StackMapTable to decode, and every original instruction to appear in new_to_original at an
//     instruction start of the new code;
// and prints the counts, the refusals by reason, and every failure.
//
//   bytecode_instrument [--label NAME] [--plans sites,paths,edges] PATH...
//
// It is run through real_classes.sh, which extracts the corpus and then calls its tool a second time with
// `--mutate SEEDS --sample FILES` for bytecode_roundtrip's mutation pass; that call is accepted and does nothing.
// Exit status: 0 when nothing failed, 1 when something did (or no class file was found), 2 on a usage error.
#include "class_file_bytes.hpp"

#include "ojx/bytecode/class_instrumenter.hpp"
#include "ojx/bytecode/class_reader.hpp"
#include "ojx/bytecode/instructions.hpp"
#include "ojx/bytecode/stack_map.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace fs = std::filesystem;
using namespace ojx::bytecode;

namespace {

using ojx::bytecode::test::read_file;

constexpr std::size_t max_printed_failures = 100;

std::vector<fs::path> find_classes(const std::vector<std::string>& paths) {
    std::vector<fs::path> found;
    for (const std::string& path : paths) {
        std::error_code error;
        if (fs::is_regular_file(path, error)) {
            found.emplace_back(path);
            continue;
        }
        for (auto it = fs::recursive_directory_iterator(path, error); !error && it != fs::end(it);
             it.increment(error)) {
            if (it->is_regular_file(error) && it->path().extension() == ".class") {
                found.push_back(it->path());
            }
        }
    }
    std::sort(found.begin(), found.end());
    return found;
}

struct plan_totals {
    std::size_t classes_rewritten = 0;
    std::size_t methods_instrumented = 0;
    std::size_t methods_refused = 0;
    std::uint64_t counters = 0;
    std::uint64_t bytes_before = 0; // code bytes of instrumented methods
    std::uint64_t bytes_after = 0;
    std::map<std::string, std::size_t> reasons;
};

struct totals {
    std::size_t classes = 0;
    std::size_t maps = 0;
    std::size_t maps_identical = 0;
    std::uint64_t frames = 0;
    std::vector<plan_totals> plans;
    std::vector<std::string> failures;
};

const attribute* nested(const class_file& klass, const code_attribute& code, std::string_view name) {
    for (const attribute& a : code.attributes) {
        const auto n = klass.constants.utf8(a.name_index);
        if (n && *n == name) {
            return &a;
        }
    }
    return nullptr;
}

void check_stack_maps(const fs::path& path, const class_file& klass, totals& total) {
    const auto class_name = klass.name();
    for (const method_info& method : klass.methods) {
        const code_attribute* code = method.code();
        const attribute* map = code ? nested(klass, *code, "StackMapTable") : nullptr;
        if (!map) {
            continue;
        }
        const auto name = klass.name_of(method);
        const auto descriptor = klass.descriptor_of(method);
        const std::string where = path.string() + ": " + std::string(name ? *name : "?") +
                                  std::string(descriptor ? *descriptor : "") + ": ";
        auto initial = initial_frame(class_name ? *class_name : "", name ? *name : "", descriptor ? *descriptor : "",
            method.access_flags);
        if (!initial) {
            total.failures.push_back(where + initial.error().describe());
            continue;
        }
        auto frames = decode_stack_map(map->info, *initial, klass.constants,
            static_cast<std::uint32_t>(code->code.size()));
        if (!frames) {
            total.failures.push_back(where + "decode StackMapTable: " + frames.error().describe());
            continue;
        }
        constant_pool pool = klass.constants;
        auto encoded = encode_stack_map(*frames, *initial, pool);
        if (!encoded) {
            total.failures.push_back(where + "encode StackMapTable: " + encoded.error().describe());
            continue;
        }
        auto again = decode_stack_map(*encoded, *initial, pool);
        if (!again || *again != *frames) {
            total.failures.push_back(where + "re-encoded StackMapTable decodes to other frames");
            continue;
        }
        if (pool.count() != klass.constants.count()) {
            total.failures.push_back(where + "encoding added constants for frames that needed none");
        }
        ++total.maps;
        total.frames += frames->size();
        total.maps_identical += *encoded == map->info ? 1 : 0;
    }
}

void check_instrumented(const fs::path& path, const std::vector<std::uint8_t>& bytes, const class_file& original,
    plan_kind kind, plan_totals& plan, totals& total) {
    const std::string where = path.string() + " (" + plan_kind_name(kind) + "): ";
    auto done = instrument_class(bytes, kind, 0);
    if (!done) {
        total.failures.push_back(where + "instrument: " + done.error().describe());
        return;
    }
    for (const auto& m : done->methods) {
        if (m.refused) {
            ++plan.methods_refused;
            ++plan.reasons[reason_kind(*m.refused)];
        } else {
            ++plan.methods_instrumented;
            plan.counters += m.plan.counters().size();
        }
    }
    if (done->bytes.empty()) {
        return;
    }
    ++plan.classes_rewritten;
    auto reread = read_class(done->bytes);
    if (!reread) {
        total.failures.push_back(where + "the rewritten class does not read: " + reread.error().describe());
        return;
    }
    const auto class_name = reread->name();
    std::size_t m = 0;
    for (std::size_t i = 0; i < reread->methods.size(); ++i) {
        const code_attribute* code = reread->methods[i].code();
        if (!code) {
            continue;
        }
        const method_counting& counting = done->methods.at(m++);
        if (counting.refused) {
            continue;
        }
        const std::string method = where + counting.name + counting.descriptor + ": ";
        auto decoded = decode_instructions(*code, reread->constants);
        if (!decoded) {
            total.failures.push_back(method + "the new code does not decode: " + decoded.error().describe());
            continue;
        }
        if (counting.new_to_original.size() != code->code.size()) {
            total.failures.push_back(method + "new_to_original does not cover the new code");
            continue;
        }
        std::vector<std::uint32_t> seen;
        for (const auto& in : *decoded) {
            const auto& p = counting.new_to_original[in.offset];
            if (!p.in_counter) {
                seen.push_back(p.value);
            } else if (p.value < counting.first_counter ||
                       p.value >= counting.first_counter + counting.counters()) {
                total.failures.push_back(method + "a snippet names a counter of another method");
            }
        }
        std::sort(seen.begin(), seen.end());
        const code_attribute* before = original.methods[i].code();
        auto original_decoded = decode_instructions(*before, original.constants);
        std::vector<std::uint32_t> expected;
        for (const auto& in : *original_decoded) {
            expected.push_back(in.offset);
        }
        if (seen != expected) {
            total.failures.push_back(method + "the original instructions do not each appear once in new_to_original");
        }
        plan.bytes_before += before->code.size();
        plan.bytes_after += code->code.size();
        if (const attribute* map = nested(*reread, *code, "StackMapTable")) {
            const auto& info = reread->methods[i];
            auto initial = initial_frame(class_name ? *class_name : "", counting.name, counting.descriptor,
                info.access_flags);
            auto frames = initial ? decode_stack_map(map->info, *initial, reread->constants,
                                        static_cast<std::uint32_t>(code->code.size()))
                                  : result<std::vector<stack_frame>>(initial.error());
            if (!frames) {
                total.failures.push_back(method + "the new StackMapTable does not decode: " +
                                         frames.error().describe());
                continue;
            }
            for (const auto& frame : *frames) {
                if (!find_instruction(*decoded, frame.offset)) {
                    total.failures.push_back(method + "a new frame is not at an instruction");
                    break;
                }
            }
        }
    }
}

bool parse_plans(std::string_view text, std::vector<plan_kind>& out) {
    out.clear();
    while (!text.empty()) {
        const auto comma = text.find(',');
        const auto word = text.substr(0, comma);
        if (word == "sites") {
            out.push_back(plan_kind::sites);
        } else if (word == "paths") {
            out.push_back(plan_kind::paths);
        } else if (word == "edges") {
            out.push_back(plan_kind::edges);
        } else {
            return false;
        }
        text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    }
    return !out.empty();
}

} // namespace

int main(int argc, char** argv) {
    std::string label = "classes";
    std::vector<plan_kind> kinds{plan_kind::sites, plan_kind::paths, plan_kind::edges};
    std::vector<std::string> paths;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--label" && i + 1 < argc) {
            label = argv[++i];
        } else if (arg == "--plans" && i + 1 < argc && parse_plans(argv[i + 1], kinds)) {
            ++i;
        } else if (arg == "--mutate" || arg == "--sample") {
            return 0; // real_classes.sh's mutation pass belongs to bytecode_roundtrip
        } else if (!arg.empty() && arg[0] != '-') {
            paths.push_back(arg);
        } else {
            std::fprintf(stderr, "usage: %s [--label NAME] [--plans sites,paths,edges] PATH...\n", argv[0]);
            return 2;
        }
    }
    const auto start = std::chrono::steady_clock::now();
    const std::vector<fs::path> files = find_classes(paths);
    totals total;
    total.plans.resize(kinds.size());
    for (const fs::path& path : files) {
        std::vector<std::uint8_t> bytes;
        if (!read_file(path, bytes)) {
            total.failures.push_back(path.string() + ": cannot read the file");
            continue;
        }
        auto parsed = read_class(bytes);
        if (!parsed) {
            total.failures.push_back(path.string() + ": read: " + parsed.error().describe());
            continue;
        }
        ++total.classes;
        check_stack_maps(path, *parsed, total);
        for (std::size_t k = 0; k < kinds.size(); ++k) {
            check_instrumented(path, bytes, *parsed, kinds[k], total.plans[k], total);
        }
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%s: %zu classes; StackMapTable: %zu tables (%llu frames) decode and re-encode to the same frames, "
                "%zu (%.1f%%) byte-identical\n",
        label.c_str(), total.classes, total.maps, static_cast<unsigned long long>(total.frames), total.maps_identical,
        total.maps ? 100.0 * static_cast<double>(total.maps_identical) / static_cast<double>(total.maps) : 0.0);
    for (std::size_t k = 0; k < kinds.size(); ++k) {
        const auto& p = total.plans[k];
        std::printf("%s %s: %zu classes rewritten, %zu methods instrumented (%llu counters, code %llu -> %llu "
                    "bytes), %zu left as they were\n",
            label.c_str(), plan_kind_name(kinds[k]), p.classes_rewritten, p.methods_instrumented,
            static_cast<unsigned long long>(p.counters), static_cast<unsigned long long>(p.bytes_before),
            static_cast<unsigned long long>(p.bytes_after), p.methods_refused);
        std::vector<std::pair<std::size_t, std::string>> reasons;
        for (const auto& [reason, count] : p.reasons) {
            reasons.emplace_back(count, reason);
        }
        std::sort(reasons.rbegin(), reasons.rend());
        for (const auto& [count, reason] : reasons) {
            std::printf("    %8zu  %s\n", count, reason.c_str());
        }
    }
    std::printf("%zu failures, %.1f s\n", total.failures.size(), seconds);
    for (std::size_t i = 0; i < total.failures.size() && i < max_printed_failures; ++i) {
        std::printf("FAILED %s\n", total.failures[i].c_str());
    }
    if (total.failures.size() > max_printed_failures) {
        std::printf("... and %zu more failures\n", total.failures.size() - max_printed_failures);
    }
    std::fflush(stdout);
    if (total.classes == 0) {
        std::printf("FAILED no class files found\n");
        return 1;
    }
    return total.failures.empty() ? 0 : 1;
}
