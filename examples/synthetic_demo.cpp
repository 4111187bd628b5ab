// The emulation demo (`scripts/demo.sh --emulation`): profile a synthetic program whose heap has replicas planted
// the way OJXPerf's case studies found them, through the full profiler, and print the replica report.
//
//   ojx_synthetic_demo [--seed N] [--json FILE] [--record TRACE | --record-accesses TRACE]
//                      [--pairing reservoir|recent] [--window BYTES] [--copy-program]
//
// The traces are docs/trace-format.md's; demo_options below says what each option does.

#include "ojx/emulation/access_recorder.hpp"
#include "ojx/emulation/copy_profiling_session.hpp"
#include "ojx/emulation/copy_programs.hpp"
#include "ojx/emulation/copy_recording_session.hpp"
#include "ojx/emulation/heap_shapes.hpp"
#include "ojx/emulation/session.hpp"
#include "ojx/emulation/trace_recorder.hpp"
#include "ojx/options.hpp"
#include "ojx/profile.hpp"
#include "ojx/profile_writer.hpp"
#include "ojx/report.hpp"
#include "output_file.hpp"

#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace ojx;
using namespace ojx::emulation;

// The demo's options: parsing, defaults and --help come from this table (ojx/options.hpp).
const std::vector<option_spec> demo_options = {
    {"seed", option_kind::count, "42", "seed of the planted program, the sampler and the profiler"},
    {"json", option_kind::text, "", "also write the JSON profile to this file"},
    {"record", option_kind::text, "",
     "write a trace of the samples and traps the profiler took, which `ojx replay` analyses again with other "
     "estimator settings"},
    {"record_accesses", option_kind::text, "",
     "write a trace of every access instead, which `ojx replay` replays through any sampler, watchpoint and pairing "
     "configuration"},
    {"pairing", option_kind::choice, "reservoir", "which earlier object a sampled one is compared with",
     {reservoir_pairing::name, recent_pairing::name}},
    {"window", option_kind::size, "64", "bytes compared around a probed word; 0: the word only"},
    {"copy_program", option_kind::flag, "",
     "run a generated copy program (chains, clones, carriers; emulation/copy_programs.hpp) instead, at sampler period "
     "16, and profile its copies too; --record-accesses then records its value flow as well, from which `ojx replay` "
     "rebuilds the copy graphs"},
    {"help", option_kind::flag, "", "print the options and exit"},
};

struct options {
    std::uint64_t seed = 0;
    std::string json_path;
    std::string record_path;
    bool every_access = false; // the trace at record_path holds every access
    bool copy_program = false;
    std::string pairing;
    std::size_t window = 0;
};

// The options, or nullopt after saying why not (or after the help).
std::optional<options> parse(int argc, char** argv) {
    const std::vector<std::string_view> args(argv + 1, argv + argc);
    const arguments_result parsed = parse_arguments(args, demo_options);
    if (!parsed.ok() || !parsed.operands.empty()) {
        std::cerr << "ojx_synthetic_demo: "
                  << (parsed.ok() ? "unexpected argument '" + parsed.operands.front() + "'" : parsed.error)
                  << " (ojx_synthetic_demo --help)\n";
        return std::nullopt;
    }
    const option_values& v = parsed.values;
    if (v.flag("help")) {
        std::cout << "usage: ojx_synthetic_demo [OPTIONS]\n\n" << argument_help_text(demo_options);
        std::exit(0);
    }
    if (v.given("record") && v.given("record_accesses")) {
        std::cerr << "ojx_synthetic_demo: one trace at a time (--record or --record-accesses)\n";
        return std::nullopt;
    }
    if (v.given("copy_program") && v.given("record")) {
        std::cerr << "ojx_synthetic_demo: a copy program is recorded with --record-accesses only\n";
        return std::nullopt;
    }
    options result;
    result.copy_program = v.given("copy_program");
    result.seed = v.count("seed");
    result.json_path = v.text("json");
    result.every_access = v.given("record_accesses");
    result.record_path = v.text(result.every_access ? "record_accesses" : "record");
    result.pairing = v.choice("pairing");
    result.window = static_cast<std::size_t>(v.size("window"));
    return result;
}

// The planted program: allocation sites modelled on the paper's case studies, and controls.
std::vector<context_shape> planted_program() {
    std::vector<context_shape> shapes;
    // Parquet's readNext: a fresh byte[] refilled from the same input on every call.
    shapes.push_back({.name = "parquet.RunLengthDecoder.readNext", .type = "byte[]", .object_size = 2048,
                      .group_sizes = {270, 10, 10, 10}});
    // Findbugs' dataflow facts: results equal to the previous one most of the time, then a new value.
    shapes.push_back({.name = "findbugs.Dataflow.getResultFact", .type = "long[]", .object_size = 1024,
                      .repeat_probability = 0.97, .objects = 300});
    // SAMOA's copyObject: serialisation copies of an object that rarely changes, in runs.
    shapes.push_back({.name = "samoa.SerializeUtils.copyObject", .type = "byte[]", .object_size = 4096,
                      .group_sizes = {200, 60, 40}, .order = ordering::runs});
    // Sparse matrix rows: mostly zeros, every row different in a few elements (partial replicas).
    shapes.push_back({.name = "matrix.SparseRow.multiply", .type = "double[]", .object_size = 4096,
                      .group_sizes = {300}, .differing_words = 6, .zero_fraction = 0.95});
    // Controls: buffers with random contents.
    shapes.push_back({.name = "net.PacketBuffer.receive", .type = "byte[]", .object_size = 2048,
                      .group_sizes = std::vector<std::uint32_t>(300, 1)});
    shapes.push_back({.name = "crypto.Nonce.generate", .type = "long[]", .object_size = 1024,
                      .group_sizes = std::vector<std::uint32_t>(300, 1)});
    return shapes;
}

// Writes the JSON profile to `path` as the ojx command writes its files (output_file.hpp): a regular file whole
// or not at all, a device or FIFO written through (--json /dev/null discards it); false (having said why) when it
// cannot.
bool write_profile_file(const std::string& path, const profile& p) {
    tool::output_file out(path);
    std::optional<std::string> error = out.ok() ? std::nullopt : std::optional<std::string>(out.error());
    if (!error) {
        write_profile_json(out.stream(), p);
        error = out.commit();
    }
    if (error) {
        std::cerr << "ojx_synthetic_demo: cannot write the profile: " << *error << '\n';
        return false;
    }
    std::cout << "\nProfile written to " << path << '\n';
    return true;
}

bool write_trace_file(const std::string& path, in_memory_trace& trace) {
    if (const auto error = trace.write_file(path)) {
        std::cerr << "ojx_synthetic_demo: " << *error << '\n';
        return false;
    }
    std::cout << "Trace written to " << path << " (" << trace.writer().events_written() << " records)\n";
    return true;
}

// How the copy program's frames and types are named.
const report_naming copy_naming{[](std::uint64_t frame) { return "Copies.f" + std::to_string(frame & 0xffff) + "()"; },
                                [](type_id type) { return "Record" + std::to_string(type); }};

// Runs the program on session `s` and reports; a recording session also writes its trace.
template <class Session>
int run(const options& opts, Session& s, const std::vector<context_shape>& shapes, const report_naming& naming) {
    const auto result = run_workload(s.machine, s.prof.contexts(), shapes,
                                     {.seed = opts.seed, .compare_window = opts.window, .collect_every = 500});
    const replica_report report = s.prof.report();
    write_text(std::cout, report, s.prof.contexts(), naming, s.facts());

    std::cout << "Ground truth of the planted program (largest identical group / objects):\n";
    for (std::size_t i = 0; i < shapes.size(); ++i)
        std::printf("    %-36s %5.1f%% of %llu\n", shapes[i].name.c_str(), 100 * result.truths[i].largest_group_ratio,
                    static_cast<unsigned long long>(result.truths[i].objects));

    if (!opts.json_path.empty() && !write_profile_file(opts.json_path, profile_of(report, s.prof.contexts(), naming, s.facts())))
        return 1;
    if constexpr (requires { s.trace; }) {
        if (!write_trace_file(opts.record_path, s.trace)) return 1;
    }
    return 0;
}

// A generated copy program on a copy profiling session (`live`, its program running on `registers`); `trace` is the
// recording's, if any.
template <class Live, class Registers>
int run_copies(const options& opts, Live& live, Registers& registers, in_memory_trace* trace) {
    const auto truth = run_copy_program(registers, live.prof.contexts(),
                                        {.seed = opts.seed, .chains = 2, .clones = 1, .carriers = 1, .controls = 1,
                                         .references = 1, .min_repetitions = 160, .max_repetitions = 640,
                                         .collect_every = 13, .static_area = live.heap.statics()});
    const profile p = live.profile(copy_naming);
    std::cout << "Copy program " << opts.seed << ": " << truth.graph.edges().size() << " copy edges made, "
              << p.copies->graph.edges().size() << " sampled (" << live.copy_sampling_note() << ")\n";
    if (!opts.json_path.empty() && !write_profile_file(opts.json_path, p)) return 1;
    return trace == nullptr || write_trace_file(opts.record_path, *trace) ? 0 : 1;
}

template <class Pairing>
int run_copies(const options& opts) {
    using chosen = policies<reservoir_replacement, Pairing>;
    session_config config;
    config.profiler.seed = opts.seed;
    config.profiler.compare_window = opts.window;
    config.profiler.min_object_size = 64; // the programs' records: the replica side tracks them too
    config.sampler = {.period = 16, .randomized = true, .seed = opts.seed};
    config.heap_bytes = std::size_t{1} << 20;
    if (opts.every_access) {
        const auto s = std::make_unique<copy_recording_session<chosen>>(config, copy_naming);
        return run_copies(opts, s->live, s->registers, &s->trace);
    }
    const auto s = std::make_unique<copy_profiling_session<chosen>>(config);
    return run_copies(opts, *s, s->registers, nullptr);
}

template <class Pairing>
int run(const options& opts) {
    const auto shapes = planted_program();
    session_config config;
    config.profiler.seed = opts.seed;
    config.profiler.compare_window = opts.window;
    config.sampler = {.period = 97, .randomized = true, .seed = opts.seed};
    const report_naming naming{[&](std::uint64_t frame) { return synthetic_frame_name(frame, shapes); },
                               [&](type_id type) { return type < shapes.size() ? shapes[type].type : "?"; }};
    if (opts.every_access) {
        access_recording_session<policies<reservoir_replacement, Pairing>> s(config, naming);
        return run(opts, s, shapes, naming);
    }
    if (!opts.record_path.empty()) {
        recording_session<recording_policies<reservoir_replacement, Pairing>> s(config, naming);
        return run(opts, s, shapes, naming);
    }
    session<policies<reservoir_replacement, Pairing>> s(config);
    return run(opts, s, shapes, naming);
}

} // namespace

int main(int argc, char** argv) {
    const auto opts = parse(argc, argv);
    if (!opts) return 2;
    if (opts->copy_program)
        return opts->pairing == recent_pairing::name ? run_copies<recent_pairing>(*opts)
                                                     : run_copies<reservoir_pairing>(*opts);
    return opts->pairing == recent_pairing::name ? run<recent_pairing>(*opts) : run<reservoir_pairing>(*opts);
}
