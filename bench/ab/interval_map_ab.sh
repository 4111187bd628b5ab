#!/usr/bin/env bash
# Lone-lookup A/B of the interval map: REV's include/ojx/interval_map.hpp (renamed into namespace ojx_old) against
# the working tree's, in one process, interleaved (bench/RESULTS.md, "lone lookup"). Host noise here moves whole
# runs by ±15 %; the paired ratio is what to read.
#   bench/ab/interval_map_ab.sh REV [ROUNDS] [FIELDS]   FIELDS 0: the answer's serial is used, 1: begin, end,
#                                                       context and serial (what the profiler's sample path uses)
set -euo pipefail
cd "$(dirname "$0")/../.."
rev=${1:?usage: $0 REV [ROUNDS] [FIELDS]}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/ojx"
git show "$rev:include/ojx/interval_map.hpp" |
    sed 's/namespace ojx {/namespace ojx_old {\nusing namespace ojx;/; s/OJX_INTERVAL_MAP_/OJXOLD_INTERVAL_MAP_/g' \
        > "$work/ojx/interval_map_old.hpp"
g++ -std=c++20 -O2 -Iinclude -I"$work" bench/ab/interval_map_ab.cpp -o "$work/ab"
"$work/ab" "${2:-30}" "${3:-0}"
