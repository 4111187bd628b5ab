#!/usr/bin/env bash
# Builds the benchmarks in Release and runs them; results go to build/bench/*.json and the console.
# Record what you measured, with the machine and date, in bench/RESULTS.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
cmake -S "$root" -B "$root/build/bench" -G Ninja -DCMAKE_BUILD_TYPE=Release -DOJX_BUILD_TESTS=OFF \
    -DOJX_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$root/build/bench"
for bench in "$root"/build/bench/bench/bench_*; do
    name=$(basename "$bench")
    echo "=== $name"
    "$bench" --benchmark_out="$root/build/bench/$name.json" --benchmark_out_format=json "$@"
done
