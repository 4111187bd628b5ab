#!/usr/bin/env bash
# Every test: install what is needed, then build and run the suite three times — warnings as errors, under
# AddressSanitizer + UndefinedBehaviorSanitizer, and the concurrent structures under ThreadSanitizer.
# Benchmarks and examples are built (so they keep compiling) in the first configuration.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=$(nproc)
"$root/scripts/install-deps.sh"

configure_and_test() {
    local name=$1 ctest_args=$2
    shift 2
    local dir="$root/build/test-$name"
    echo "=== $name: configure and build"
    cmake -S "$root" -B "$dir" -G Ninja -DOJX_WERROR=ON "$@" >/dev/null
    cmake --build "$dir" -j "$jobs"
    echo "=== $name: test"
    # shellcheck disable=SC2086
    (cd "$dir" && ctest -j "$jobs" --output-on-failure --timeout 900 $ctest_args)
}

configure_and_test release "" -DCMAKE_BUILD_TYPE=RelWithDebInfo
configure_and_test asan-ubsan "-LE packaging" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOJX_SANITIZE=address,undefined \
    -DOJX_BUILD_BENCHMARKS=OFF
configure_and_test tsan "-L concurrent" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOJX_SANITIZE=thread \
    -DOJX_BUILD_BENCHMARKS=OFF -DOJX_BUILD_EXAMPLES=OFF
echo "=== all configurations passed"
