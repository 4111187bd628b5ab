#!/usr/bin/env bash
# Installs what ojx needs to build, test and benchmark, from Debian 12's packages. Installs only what is missing,
# so it is quick on a machine that already has everything.
set -euo pipefail

# Build and test: cmake ninja-build g++ catch2 libbenchmark-dev python3. The Linux hardware backend: libzydis-dev
# (x86 decoding), libpfm4-dev (PEBS event names), libdw-dev (symbols and lines for native frames). The agents'
# runtime: libfmt-dev (messages; used header-only). The native agent: libunwind8 (its cached unwinder makes
# allocation stacks ~10x cheaper; opened at run time). The JVM agent: openjdk-17-jdk-headless (jvmti.h, and java,
# javac and jcmd for its demo and tests). The ojx command: rapidjson-dev (streaming JSON), zlib1g-dev and
# libprotobuf-dev + protobuf-compiler (gzipped pprof output).
packages=(cmake ninja-build g++ catch2 libbenchmark-dev python3 libzydis-dev libpfm4-dev libdw-dev
    libfmt-dev libunwind8 openjdk-17-jdk-headless rapidjson-dev zlib1g-dev libprotobuf-dev protobuf-compiler)
# With --tests, also what only the tests use: chromium and chromium-driver (the HTML report is opened in a headless
# browser), golang-go (`go tool pprof` reads the pprof output back as an independent consumer), and clang with
# libclang-rt-14-dev (libFuzzer, for the trace reader's fuzz test), and the real programs of the stress suite
# (tests/stress): sqlite3, git, pigz, Lucene 4.10, H2, Xalan-J and FreeMarker, with gdb to show where a hung one
# was.
if [ "${1:-}" = "--tests" ]; then
    packages+=(chromium chromium-driver golang-go clang libclang-rt-14-dev
        sqlite3 git pigz liblucene4.10-java libh2-java libxalan2-java libfreemarker-java gdb)
fi

missing=()
for package in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$package")
    fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null; then
        exec sudo "$0" "$@"
    fi
    echo "install-deps: need root to install: ${missing[*]}" >&2
    exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
