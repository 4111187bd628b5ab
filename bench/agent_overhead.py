#!/usr/bin/env python3
"""Runtime overhead of the native agent: bench/overhead_workload (a fixed amount of native work: threads that
read 4 KiB objects, half of them replicas, and replace one now and then; no locks) with and without
LD_PRELOAD=libojxpreload.so, in alternating runs. The measure is the CPU time (user + system, from wait4) the
whole process took for the same work, so the agent's handlers, steps, traps and exit report all count.
Two estimates are printed. The median over pairs of (profiled / plain) - 1 is the classic one. On a shared
machine, though, other tenants only ever add time to a run, and the spread of identical runs (±15 % on our VMs)
swamps a 2 % effect; the ratio of the lower quartiles of the two sets of runs estimates what each configuration
costs when undisturbed (the reasoning of Chen & Revels, "Robust benchmarking in noisy environments", 2016, who
recommend the minimum; a quartile is less at the mercy of one lucky run). Both come with a seeded bootstrap
95 % interval.

usage: agent_overhead.py BUILD_DIR [PAIRS] [OPTIONS] [WORKLOAD ARGS...]
  OPTIONS: OJX_OPTIONS (default rate=200); WORKLOAD ARGS: e.g. --threads 2 --rounds 32000 --churn 1024
"""
import os
import random
import statistics
import subprocess
import sys
import tempfile


def cpu_seconds(command, env):
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    if status != 0:
        sys.exit(f"agent_overhead: {' '.join(command)} failed with status {status}")
    return usage.ru_utime + usage.ru_stime


def median_interval(ratios, level=0.95, resamples=2000):
    """Bootstrap interval of the median pair ratio (seeded, so a rerun on the same numbers prints the same)."""
    rng = random.Random(1)
    medians = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(resamples))
    return medians[int((1 - level) / 2 * resamples)], medians[int((1 + level) / 2 * resamples) - 1]


def lower_quartile(values):
    return statistics.quantiles(values, n=4, method="inclusive")[0]


def quartile_ratio_interval(plain, profiled, level=0.95, resamples=2000):
    """Bootstrap interval of lower_quartile(profiled) / lower_quartile(plain), resampling the pairs."""
    rng = random.Random(2)
    indices = range(len(plain))
    ratios = []
    for _ in range(resamples):
        chosen = rng.choices(indices, k=len(plain))
        ratios.append(lower_quartile([profiled[i] for i in chosen]) / lower_quartile([plain[i] for i in chosen]))
    ratios.sort()
    return ratios[int((1 - level) / 2 * resamples)], ratios[int((1 + level) / 2 * resamples) - 1]


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(argv) >= 2 else 2
    build = argv[1]
    try:
        pairs = int(argv[2]) if len(argv) > 2 else 7
    except ValueError:
        sys.exit(f"agent_overhead: PAIRS must be a whole number, not {argv[2]!r}")
    if pairs < 1:
        sys.exit("agent_overhead: PAIRS must be at least 1")
    options = argv[3] if len(argv) > 3 else "rate=200"
    command = [os.path.join(build, "bench", "overhead_workload")] + argv[4:]
    agent = os.path.join(build, "agents", "native", "libojxpreload.so")
    for needed in (command[0], agent):
        if not os.path.exists(needed):
            sys.exit(f"agent_overhead: {needed} does not exist; build {build} first (benchmarks and examples)")
    ratios, plain_times, profiled_times = [], [], []
    with tempfile.TemporaryDirectory() as work:
        profiled_env = dict(os.environ, LD_PRELOAD=agent, OJX_OPTIONS=f"file={work}/profile.json,quiet,{options}")
        for pair in range(pairs):
            plain = cpu_seconds(command, dict(os.environ))
            profiled = cpu_seconds(command, profiled_env)
            ratios.append(profiled / plain)
            plain_times.append(plain)
            profiled_times.append(profiled)
            print(f"pair {pair + 1}: plain {plain:.3f} s, profiled {profiled:.3f} s CPU; ratio {ratios[-1]:.4f}",
                  flush=True)
    low, high = median_interval(ratios)
    print(f"{' '.join(argv[4:]) or 'defaults'}, OJX_OPTIONS {options}: overhead "
          f"{100 * (statistics.median(ratios) - 1):.2f} % (median of {pairs} pairs; 95 % bootstrap interval "
          f"{100 * (low - 1):.2f}..{100 * (high - 1):.2f} %; ratios {min(ratios):.3f}..{max(ratios):.3f})")
    if pairs >= 4:
        quartiles = lower_quartile(profiled_times) / lower_quartile(plain_times)
        low, high = quartile_ratio_interval(plain_times, profiled_times)
        print(f"lower quartiles: plain {lower_quartile(plain_times):.3f} s, profiled "
              f"{lower_quartile(profiled_times):.3f} s CPU: overhead {100 * (quartiles - 1):.2f} % (95 % bootstrap "
              f"interval {100 * (low - 1):.2f}..{100 * (high - 1):.2f} %); minima: "
              f"{100 * (min(profiled_times) / min(plain_times) - 1):.2f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
