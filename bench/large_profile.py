#!/usr/bin/env python3
"""How `ojx report` and `ojx merge` scale: a generated profile of ~100 MB with 100 000 allocation sites (Java-like
frames, 5 deep, three access contexts each), and the wall time and peak memory (maximum resident set) of each
command on it, measured with wait4.

usage: large_profile.py OJX [--sites N] [--workdir DIR] [--keep]

The claim to check: a text report of the top sites streams the profile and holds only what it prints, so its
memory stays small whatever the profile's size; outputs that need every site (pprof, collapsed, HTML of the top
500, merge) hold what they write.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time


def frame(rng, depth):
    cls = f"com.example.p{rng.randrange(40)}.Service{rng.randrange(500)}"
    return f"{cls}.method{rng.randrange(60)}_{depth}(Service{rng.randrange(500)}.java:{rng.randrange(1, 2000)})"


def write_profile(path, sites, seed):
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as out:
        out.write('{\n  "ojx_profile_version": 1,\n  "run": {"runtime": "generated", "sampler": "generated", '
                  '"watchpoints": "generated", "pairing": "reservoir", "replacement": "reservoir", '
                  f'"samples": {sites * 40}, "comparisons": {sites * 25},\n'
                  '    "estimator": {"min_comparisons": 20, "confidence": 0.95}},\n  "contexts": [')
        for i in range(sites):
            equal = rng.randrange(60)
            different = rng.randrange(60)
            n = equal + different
            theta = equal / n if n else 0
            objects = rng.randrange(2, 5000)
            context = {
                "allocation": {"type": rng.choice(["byte[]", "int[]", "char[]", "java.lang.Object[]"]),
                               "frames": [frame(rng, d) for d in range(5)]},
                "objects": objects, "bytes": objects * rng.randrange(1024, 65536), "reported": n >= 20,
                "comparisons": {"equal": equal, "different": different, "pairs": n, "sources": max(1, n // 3),
                                "effective": n / 2},
                "theta": theta, "theta_ci": [max(0, theta - 0.1), min(1, theta + 0.1)], "alpha": 0,
                "alpha_ci": [0, 0], "alpha_comparisons": 0, "omega": max(0, theta - 0.1),
                "gamma": min(1, theta + 0.1),
                "evidence": {"alpha_equal": 0, "weighted_equal": equal * 3, "weighted_total": n * 3,
                             "sum_equal_squared": equal * 9, "sum_equal_times_total": equal * 9,
                             "sum_total_squared": n * 9},
                "accesses": [{"frames": [frame(rng, d) for d in range(2)], "samples": rng.randrange(1, 500)}
                             for _ in range(3)],
            }
            out.write(("\n    " if i == 0 else ",\n    ") + json.dumps(context))
        out.write("\n  ]\n}\n")


def measure(command):
    start = time.monotonic()
    with open(os.devnull, "w", encoding="utf-8") as null:
        child = subprocess.Popen(command, stdout=null, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.monotonic() - start
        error = child.stderr.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command)} failed: {error}")
    return seconds, usage.ru_maxrss / 1024


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("ojx")
    parser.add_argument("--sites", type=int, default=100_000)
    parser.add_argument("--workdir")
    parser.add_argument("--keep", action="store_true", help="keep the generated files")
    args = parser.parse_args()
    if not os.access(args.ojx, os.X_OK):
        raise SystemExit(f"large_profile: {args.ojx} is not an executable ojx (build the ojx_command target)")
    workdir = args.workdir or tempfile.mkdtemp(prefix="ojx-large-")
    os.makedirs(workdir, exist_ok=True)
    profile = os.path.join(workdir, "large.json")
    half = os.path.join(workdir, "half.json")
    started = time.monotonic()
    write_profile(profile, args.sites, 1)
    write_profile(half, args.sites // 2, 2)
    size = os.path.getsize(profile) / 2**20
    print(f"profile: {args.sites} sites, {size:.1f} MiB (generated in {time.monotonic() - started:.1f} s)")
    commands = [
        ("report --top 10", [args.ojx, "report", "--top", "10", profile]),
        ("report --top 1000", [args.ojx, "report", "--top", "1000", profile]),
        ("report --html (top 500)", [args.ojx, "report", "--html", os.path.join(workdir, "r.html"), profile]),
        ("report --collapsed", [args.ojx, "report", "--collapsed", os.path.join(workdir, "r.txt"), profile]),
        ("report --pprof", [args.ojx, "report", "--pprof", os.path.join(workdir, "r.pb.gz"), profile]),
        ("merge (with a 50 000-site profile)",
         [args.ojx, "merge", profile, half, "-o", os.path.join(workdir, "merged.json")]),
    ]
    print(f"{'command':40} {'seconds':>8} {'peak RSS MiB':>13}")
    for name, command in commands:
        seconds, rss = measure(command)
        print(f"{name:40} {seconds:8.2f} {rss:13.1f}")
    if not args.keep:
        for name in os.listdir(workdir):
            os.remove(os.path.join(workdir, name))
        os.rmdir(workdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
