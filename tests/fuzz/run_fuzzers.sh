#!/usr/bin/env bash
# Builds the trace reader's fuzzer with clang++ in a build directory of its own (libFuzzer, AddressSanitizer,
# UndefinedBehaviorSanitizer), writes a small corpus of valid traces, and fuzzes for a bounded time.
#   tests/fuzz/run_fuzzers.sh [BUILD_DIR]     (default build/fuzz; OJX_FUZZ_SECONDS, default 60, bounds the run)
# Exits non-zero if the fuzzer finds a crash, a leak or undefined behaviour; the input is left in BUILD_DIR.
set -euo pipefail

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
build_dir=${1:-$source_dir/build/fuzz}
seconds=${OJX_FUZZ_SECONDS:-60}

cmake -S "$source_dir" -B "$build_dir" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DOJX_WERROR=ON -DOJX_BUILD_LINUX=OFF -DOJX_BUILD_BENCHMARKS=OFF -DOJX_BUILD_EXAMPLES=OFF -DOJX_BUILD_TOOLS=OFF \
    >/dev/null
cmake --build "$build_dir" -j2 --target fuzz_trace_reader make_trace_corpus

fuzz_dir=$build_dir/tests/fuzz
corpus=$fuzz_dir/corpus
mkdir -p "$corpus"
"$fuzz_dir/make_trace_corpus" "$corpus"
# The corpus directory keeps what the fuzzer learns, so a later run starts further along.
"$fuzz_dir/fuzz_trace_reader" -max_total_time="$seconds" -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$fuzz_dir/" "$corpus"
