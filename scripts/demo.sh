#!/usr/bin/env bash
# The main job: install what is needed, build, and profile the bundled synthetic program with planted replicas
# through the full profiler; prints the replica report and writes the JSON profile to build/demo/profile.json.
# Extra arguments go to the demo (try --help).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
cmake -S "$root" -B "$root/build/demo" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DOJX_BUILD_TESTS=OFF -DOJX_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build "$root/build/demo" --target ojx_synthetic_demo
exec "$root/build/demo/examples/ojx_synthetic_demo" --json "$root/build/demo/profile.json" "$@"
