#!/usr/bin/env bash
# Builds one of the fuzzers with clang++ in a build directory of its own (libFuzzer, AddressSanitizer,
# UndefinedBehaviorSanitizer), writes a small corpus of valid inputs, and fuzzes for a bounded time.
#   tests/fuzz/run_fuzzers.sh [BUILD_DIR] [trace_reader|profile_reader]
#   (default build/fuzz and trace_reader; OJX_FUZZ_SECONDS, default 60, bounds the run)
# Exits non-zero if the fuzzer finds a crash, a leak or undefined behaviour; the input is left in BUILD_DIR.
set -euo pipefail

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
build_dir=${1:-$source_dir/build/fuzz}
target=${2:-trace_reader}
seconds=${OJX_FUZZ_SECONDS:-60}

cmake -S "$source_dir" -B "$build_dir" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DOJX_WERROR=ON -DOJX_BUILD_LINUX=OFF -DOJX_BUILD_BENCHMARKS=OFF -DOJX_BUILD_EXAMPLES=OFF -DOJX_BUILD_TOOLS=OFF \
    >/dev/null

fuzz_dir=$build_dir/tests/fuzz
# Each fuzzer's corpus directory keeps what it learns, so a later run starts further along.
corpus=$fuzz_dir/corpus-$target
mkdir -p "$corpus"
extra=()
case $target in
trace_reader)
    cmake --build "$build_dir" -j2 --target fuzz_trace_reader make_trace_corpus
    "$fuzz_dir/make_trace_corpus" "$corpus"
    ;;
profile_reader)
    cmake --build "$build_dir" -j2 --target fuzz_profile_reader
    # The profiles the command's tests read: one of the JVM agent's and one of the native agent's; and one with
    # a copy section.
    cp "$source_dir"/tests/tools/testdata/*.json "$source_dir"/tests/fuzz/copies.json "$corpus"/
    extra=(-dict="$source_dir/tests/fuzz/profile.dict")
    ;;
*)
    echo "run_fuzzers.sh: unknown fuzzer '$target' (trace_reader or profile_reader)" >&2
    exit 2
    ;;
esac
"$fuzz_dir/fuzz_$target" -max_total_time="$seconds" -timeout=10 -print_final_stats=1 "${extra[@]}" \
    -artifact_prefix="$fuzz_dir/$target-" "$corpus"
