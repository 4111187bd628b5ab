#!/usr/bin/env python3
"""Runtime overhead of the native agent on a native workload: the bundled native_replicas program (4 threads,
heap churn of 1-8 KiB objects, reads) with and without LD_PRELOAD=libojxpreload.so, alternating runs.

The program runs for a fixed time, so the measure is its work per CPU second: object reads (from its truth file)
divided by the user + system CPU time the run used (wait4). CPU time, unlike wall time, does not move when the
2-vCPU VM's other tenants take a core. Overhead = 1 - median over pairs of (profiled / plain).

usage: agent_overhead.py BUILD_DIR [PAIRS] [SECONDS] [OPTIONS]   (OPTIONS: OJX_OPTIONS, default rate=200)
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile


def run(program, seconds, truth, env):
    process = subprocess.Popen([program, "--seconds", str(seconds), "--truth", truth], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    if status != 0:
        sys.exit(f"agent_overhead: {program} failed with status {status}")
    with open(truth) as f:
        t = json.load(f)
    reads = sum(site["object_reads"] for site in t["sites"])
    return reads / (usage.ru_utime + usage.ru_stime)


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    build = argv[1]
    pairs = int(argv[2]) if len(argv) > 2 else 7
    seconds = float(argv[3]) if len(argv) > 3 else 4
    options = argv[4] if len(argv) > 4 else "rate=200"
    agent = os.path.join(build, "examples", "libojxpreload.so")
    program = os.path.join(build, "examples", "native_replicas")
    ratios = []
    with tempfile.TemporaryDirectory() as work:
        plain_env = dict(os.environ)
        profiled_env = dict(os.environ, LD_PRELOAD=agent,
                            OJX_OPTIONS=f"file={work}/profile.json,quiet,{options}")
        for pair in range(pairs):
            plain = run(program, seconds, f"{work}/plain.json", plain_env)
            profiled = run(program, seconds, f"{work}/profiled.json", profiled_env)
            ratios.append(profiled / plain)
            print(f"pair {pair + 1}: plain {plain:.4g}, profiled {profiled:.4g} reads per CPU second; "
                  f"ratio {ratios[-1]:.3f}", flush=True)
    print(f"OJX_OPTIONS {options}: overhead {100 * (1 - statistics.median(ratios)):.2f} % "
          f"(1 - median of {pairs} pair ratios; ratios {min(ratios):.3f}..{max(ratios):.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
