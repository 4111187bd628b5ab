#!/usr/bin/env bash
# The main job: install what is needed, build, and find the replicas in the bundled native program
# (examples/native_replicas: 4 threads, replicas planted at three allocation sites, three control sites) with the
# native agent on this machine's hardware — real samples, real watchpoints. Prints the agent's report, writes
# the JSON profile to build/demo/profile.json, and checks it against the program's ground truth.
#
#   scripts/demo.sh                 the native agent on the bundled program (OJX_OPTIONS are honoured)
#   scripts/demo.sh --emulation …   the synthetic-heap demo on the emulation backend (try --emulation --help)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build/demo"
"$root/scripts/install-deps.sh"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DOJX_BUILD_TESTS=OFF -DOJX_BUILD_BENCHMARKS=OFF >/dev/null
if [ "${1:-}" = "--emulation" ]; then
    shift
    cmake --build "$build" --target ojx_synthetic_demo
    exec "$build/examples/ojx_synthetic_demo" --json "$build/profile.json" "$@"
fi
cmake --build "$build" --target ojxpreload native_replicas
echo "=== LD_PRELOAD=libojxpreload.so native_replicas (4 threads, 4 s)"
OJX_OPTIONS="file=$build/profile.json${OJX_OPTIONS:+,$OJX_OPTIONS}" LD_PRELOAD="$build/examples/libojxpreload.so" \
    "$build/examples/native_replicas" --seconds 4 --truth "$build/truth.json"
echo
echo "=== the profile against the program's ground truth"
python3 "$root/examples/native_replicas/check_profile.py" "$build/profile.json" "$build/truth.json"
