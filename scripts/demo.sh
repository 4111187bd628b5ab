#!/usr/bin/env bash
# The main job: install what is needed, build, and find the replicas in the bundled Java program
# (examples/java_replicas: 4 threads, replicas planted at four allocation sites modelled on the OJXPerf paper's
# case studies and one whose copies are dropped at once, three control sites) with the JVM agent libojx.so at its defaults on a real JVM — whole objects
# digested at collections (OJX_OPTIONS=rate=200 adds sampled accesses and this machine's watchpoints). Prints the
# agent's report, writes the JSON profile to build/demo/profile.json, and checks it against the program's ground
# truth.
#
#   scripts/demo.sh                 the JVM agent on the bundled Java program (OJX_OPTIONS are added to its options)
#   scripts/demo.sh --native        the native agent (LD_PRELOAD) on the bundled C++ program
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
if [ "${1:-}" = "--native" ]; then
    cmake --build "$build" --target ojxpreload native_replicas
    echo "=== LD_PRELOAD=libojxpreload.so native_replicas (4 threads, 4 s)"
    OJX_OPTIONS="file=$build/profile.json${OJX_OPTIONS:+,$OJX_OPTIONS}" LD_PRELOAD="$build/agents/native/libojxpreload.so" \
        "$build/examples/native_replicas" --seconds 4 --truth "$build/truth.json"
else
    cmake --build "$build" --target ojxjvm
    mkdir -p "$build/java"
    javac --release 11 -d "$build/java" "$root/examples/java_replicas/JavaReplicas.java"
    echo "=== java -agentpath:libojx.so=start,file=profile.json JavaReplicas (4 threads, 8 s)"
    # Default settings: adaptive heap sampling and whole objects digested at each collection's start give every
    # site its estimate within the 8 seconds.
    java "-agentpath:$build/agents/jvm/libojx.so=start,file=$build/profile.json${OJX_OPTIONS:+,$OJX_OPTIONS}" \
        -cp "$build/java" JavaReplicas --seconds 8 --threads 4 --truth "$build/truth.json"
fi
echo
echo "=== the profile against the program's ground truth"
python3 "$root/tests/ground_truth/check_profile.py" --whole-objects "$build/profile.json" "$build/truth.json"
echo
echo "=== ojx report --top 3 --source (and the same profile as one self-contained page)"
cmake --build "$build" --target ojx_command >/dev/null
sources="$root/examples/java_replicas"
[ "${1:-}" = "--native" ] && sources="$root/examples/native_replicas"
"$build/tools/ojx/ojx" report --top 3 --accesses 1 --source "$sources" "$build/profile.json"
"$build/tools/ojx/ojx" report --html "$build/profile.html" "$build/profile.json"
# Sampling accesses without working debug registers (some hypervisors, e.g. Firecracker, never deliver their
# traps), the agent finds where objects are used but compares nothing: show the comparisons on the emulation
# backend too, where every access is visible.
if why=$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import check_profile
r = check_profile.sampling_only_reason(sys.argv[2]); print(r or ""); sys.exit(0 if r else 1)' \
        "$root/tests/ground_truth" "$build/profile.json"); then
    echo
    echo "=== no replica comparisons on this machine: $why"
    echo "=== the same profiler on the emulation backend (synthetic heap with planted replicas):"
    cmake --build "$build" --target ojx_synthetic_demo >/dev/null
    "$build/examples/ojx_synthetic_demo" --json "$build/emulation-profile.json"
fi
