#!/usr/bin/env python3
"""What the native agent adds to one tracked malloc+free: bench/allocation_cost (one thread replacing 1-4 KiB
blocks from allocation sites a dozen frames deep) without the agent and under LD_PRELOAD=libojxpreload.so with
each OJX_OPTIONS given, the configurations alternating run after run so that a change in the machine's load hits
all of them alike. Each run prints its median CPU time per replacement; this prints, per configuration, the median
over runs and the median over runs of what it added to that run's plain time (the agent's cost per tracked
malloc+free: interposition, stack capture, context, lock, object map and free path; start-up is not in the timed
rounds).

usage: allocation_cost.py BUILD_DIR [RUNS] [--agent LABEL=PATH]... [--options OJX_OPTIONS]... [-- HARNESS ARGS]
  RUNS: runs per configuration (default 7). --agent: compare agent libraries (e.g. a copy built before a change)
  side by side; default the build's libojxpreload.so. --options: default "sampler=none" and "rate=200".
  HARNESS ARGS: e.g. --depth 12 --sites 4 --evict 1024 (see bench/allocation_cost.cpp).
"""
import os
import re
import statistics
import subprocess
import sys
import tempfile


def per_pair_ns(command, env):
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    match = re.match(r"([0-9.]+) ns per malloc\+free", result.stdout)
    if result.returncode != 0 or match is None:
        sys.exit(f"allocation_cost: {' '.join(command)} failed (status {result.returncode}): {result.stderr.strip()}")
    return float(match.group(1))


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(argv) >= 2 else 2
    build, rest = argv[1], argv[2:]
    harness_args = []
    if "--" in rest:
        harness_args = rest[rest.index("--") + 1:]
        rest = rest[:rest.index("--")]
    runs = 7
    if rest and not rest[0].startswith("--"):
        try:
            runs = int(rest.pop(0))
        except ValueError:
            sys.exit("allocation_cost: RUNS must be a whole number")
    agents, option_sets = [], []
    while rest:
        flag = rest.pop(0)
        if not rest or flag not in ("--agent", "--options"):
            sys.exit(f"allocation_cost: unexpected {flag!r} (--help shows the usage)")
        value = rest.pop(0)
        if flag == "--agent":
            label, _, path = value.partition("=")
            if not path:
                sys.exit(f"allocation_cost: --agent wants LABEL=PATH, not {value!r}")
            agents.append((label, path))
        else:
            option_sets.append(value)
    agents = agents or [("agent", os.path.join(build, "agents", "native", "libojxpreload.so"))]
    option_sets = option_sets or ["sampler=none", "rate=200"]
    command = [os.path.join(build, "bench", "allocation_cost")] + harness_args
    for needed in [command[0]] + [path for _, path in agents]:
        if not os.path.exists(needed):
            sys.exit(f"allocation_cost: {needed} does not exist; build it first (targets allocation_cost, ojxpreload)")
    with tempfile.TemporaryDirectory() as work:
        configurations = [("plain", dict(os.environ))]
        for label, path in agents:
            for options in option_sets:
                env = dict(os.environ, LD_PRELOAD=path, OJX_OPTIONS=f"file={work}/profile.json,quiet,{options}")
                configurations.append((f"{label} {options}", env))
        times = {name: [] for name, _ in configurations}
        for run in range(runs):
            for name, env in configurations:
                times[name].append(per_pair_ns(command, env))
            print(f"run {run + 1}: " + ", ".join(f"{name} {times[name][-1]:.0f}" for name, _ in configurations),
                  flush=True)
    print(f"{' '.join(harness_args) or 'defaults'}; ns per malloc+free, median of {runs} runs [range]; "
          "added: median of the per-run differences to plain [range]:")
    for name, _ in configurations:
        added = ""
        if name != "plain":
            differences = [t - p for t, p in zip(times[name], times["plain"])]
            added = f"  added {statistics.median(differences):+6.0f} [{min(differences):.0f}..{max(differences):.0f}]"
        print(f"  {name:40} {statistics.median(times[name]):8.0f} [{min(times[name]):.0f}..{max(times[name]):.0f}]"
              f"{added}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
