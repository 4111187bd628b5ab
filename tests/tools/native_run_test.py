#!/usr/bin/env python3
"""A process tree under the native agent: one voice, one report, one profile.

A shell runs `timeout`, which runs the program (native_replicas): three processes, all preloaded.
  - Under LD_PRELOAD alone: exactly one start line for the tree (its first process speaks; descendants stay quiet),
    a start line a person reads at a glance (at most 160 characters beyond the profile's path), and each process's
    profile written; with `verbose` each descendant speaks too.
  - Under `ojx run --file F -- sh -c 'timeout …'`: no agent speaks, ojx says one line at start and prints one report
    on standard error (none on standard output, which stays the program's), the tree's profiles are merged into F
    (the program's planted sites in it), nothing is left in the run's scratch directory, and ojx exits with the
    program's status — also when the program fails.
  - `ojx run --duration` with a native program is refused with one line naming the option.

  native_run_test.py OJX AGENT PROGRAM WORKDIR
"""
import glob
import json
import os
import shutil
import subprocess
import sys


def main():
    ojx, agent, program, workdir = sys.argv[1:5]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    problems = []

    def check(what, ok, detail=""):
        print(("ok: " if ok else "FAILED: ") + what + ("" if ok else f" ({detail})"))
        if not ok:
            problems.append(what)

    tree = ["sh", "-c", f"timeout 60 {program} --seconds 0.5 --threads 2"]
    base = {k: v for k, v in os.environ.items() if not k.startswith("OJX_")}

    # LD_PRELOAD alone: one start line for the tree.
    plain = os.path.join(workdir, "plain")
    os.makedirs(plain)
    env = dict(base, LD_PRELOAD=agent, OJX_OPTIONS=f"file={plain}/tree.json")
    result = subprocess.run(tree, env=env, capture_output=True, text=True, timeout=120, cwd=plain)
    starts = [line for line in result.stderr.splitlines() if line.startswith("ojx: profiling pid")]
    check("the tree exits 0", result.returncode == 0, result.stderr[-800:])
    check("one start line for the tree of three processes", len(starts) == 1, "\n".join(starts))
    if starts:
        profile = starts[0].rsplit("profile: ", 1)[-1]
        check("the start line reads at a glance (≤ 160 characters besides the profile's path)",
              len(starts[0]) - len(profile) <= 160, f"{len(starts[0])} characters: {starts[0]}")
    check("no descendant speaks", "descends from" not in result.stderr, result.stderr[-800:])
    written = glob.glob(os.path.join(plain, "tree*.json"))
    check("the descendants still write their profiles", len(written) >= 2, str(written))
    env["OJX_OPTIONS"] = f"verbose,file={plain}/verbose.json"
    result = subprocess.run(tree, env=env, capture_output=True, text=True, timeout=120, cwd=plain)
    check("verbose: every process speaks", result.stderr.count("ojx: profiling pid") >= 2, result.stderr[-800:])

    # ojx run: one report, one merged profile.
    merged = os.path.join(workdir, "run", "tree-%p.json")
    os.makedirs(os.path.dirname(merged))
    scratch_before = set(glob.glob(os.path.join(os.environ.get("TMPDIR", "/tmp"), "ojx-run-*")))
    result = subprocess.run([ojx, "run", "--agent", agent, "--file", merged, "--"] + tree, env=base,
                            capture_output=True, text=True, timeout=180)
    check("ojx run exits with the program's status (0)", result.returncode == 0, result.stderr[-800:])
    check("no agent speaks under ojx run", "ojx: profiling pid" not in result.stderr, result.stderr[-800:])
    check("ojx says one line at start", result.stderr.count("ojx: running ") == 1, result.stderr[:800])
    check("one report, on standard error", result.stderr.count("largest [95% int.]") == 1, result.stderr[-1500:])
    check("standard output stays the program's", "ojx" not in result.stdout, result.stdout[-500:])
    profiles = glob.glob(os.path.join(os.path.dirname(merged), "tree-*.json"))
    check("one merged profile, %p expanded", len(profiles) == 1, str(profiles))
    if profiles:
        with open(profiles[0], encoding="utf-8") as handle:
            data = json.load(handle)
        frames = " ".join(" ".join(c.get("allocation", {}).get("frames", [])) for c in data.get("contexts", []))
        check("the merged profile holds the program's planted sites", "allocate_config_blocks" in frames,
              frames[:300])
    said = [line for line in result.stderr.splitlines() if "processes profiled" in line or "process profiled" in line]
    check("ojx says how many processes it merged", len(said) == 1 and not said[0].startswith("ojx: 1 process "),
          "\n".join(said))
    scratch_after = set(glob.glob(os.path.join(os.environ.get("TMPDIR", "/tmp"), "ojx-run-*")))
    check("the run's scratch directory is gone", scratch_after <= scratch_before, str(scratch_after - scratch_before))

    # The program's failure is ojx's status.
    result = subprocess.run([ojx, "run", "--agent", agent, "--file", os.path.join(workdir, "f.json"), "--", "sh", "-c",
                             f"{program} --seconds 0.2; exit 3"], env=base, capture_output=True, text=True,
                            timeout=120)
    check("ojx run exits with a failing program's status (3)", result.returncode == 3, result.stderr[-800:])

    result = subprocess.run([ojx, "run", "--agent", agent, "--duration", "5s", "--", program], env=base,
                            capture_output=True, text=True, timeout=60)
    check("--duration with a native program is refused, naming it",
          result.returncode == 2 and "--duration" in result.stderr, result.stderr[-400:])

    print("native run: " + ("passed" if not problems else f"{len(problems)} problem(s)"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
