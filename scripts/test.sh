#!/usr/bin/env bash
# Every test: install what is needed, then build and run the suite three times — warnings as errors, under
# AddressSanitizer + UndefinedBehaviorSanitizer, and the concurrent structures under ThreadSanitizer.
# Benchmarks, examples and the agents are built (so they keep compiling) in the first configuration only. Compile
# time is most of the suite's, and debug information and optimization are most of that (docs/design.md, "Tests"):
# the first configuration compiles at -O2 -g1 (line tables, no variable locations: a test file 49 s against 85 s at
# -O2 -g; the programs the agents profile set their own -g), the sanitizer builds at -Og -g1 (with ASan+UBSan a test
# file 54 s against 98 s at -O1 and 128 s at -O2 -g), which keeps the stack traces sanitizer reports need.
# ThreadSanitizer builds only the concurrent tests.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=$(nproc)
"$root/scripts/install-deps.sh" --tests

configure_and_test() {
    local name=$1 ctest_args=$2 build_target=$3
    shift 3
    local dir="$root/build/test-$name"
    echo "=== $name: configure and build"
    cmake -S "$root" -B "$dir" -G Ninja -DOJX_WERROR=ON "$@" >/dev/null
    cmake --build "$dir" -j "$jobs" --target "$build_target"
    echo "=== $name: test"
    # shellcheck disable=SC2086
    (cd "$dir" && ctest -j "$jobs" --output-on-failure --timeout 900 $ctest_args)
}

# No agents under sanitizers: each is a shared object loaded into a program built without them (LD_PRELOAD,
# -agentpath), which a sanitizer runtime cannot be loaded into (the native agent replaces malloc, as ASan does; a
# JVM's own signal handling and memory tricks defeat ASan). Their end-to-end suites run in the first configuration;
# the backend and runtime they are made of are tested under the sanitizers by tests/linux.
sanitizer_flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-Og -g1 -DNDEBUG"
    -DOJX_BUILD_BENCHMARKS=OFF -DOJX_BUILD_EXAMPLES=OFF -DOJX_BUILD_AGENTS=OFF)
configure_and_test release "" all -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"
configure_and_test asan-ubsan "-LE packaging" all "${sanitizer_flags[@]}" -DOJX_SANITIZE=address,undefined
configure_and_test tsan "-L concurrent" ojx_concurrent_tests "${sanitizer_flags[@]}" -DOJX_SANITIZE=thread
echo "=== all configurations passed"
