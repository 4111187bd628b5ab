#!/usr/bin/env python3
"""End-to-end: copy profiling with the native agent (copies=N) on tests/linux/copy_program.cpp, whose planted copies
are known: objects of make_source copied whole into objects of make_memcpy_copy (memcpy), make_std_copy (std::copy)
and make_loop_copy (a loop of 8-byte moves); controls that read objects of make_summed (summed) and of
make_computed_from (x * 3 + 1 stored into make_computed) and copy nothing.

Checked, over RUNS runs (each site gets about a fifth of the samples; the tolerances are counts any run of a few
seconds at 1000 samples/s gives many times over):
  - the program exits normally, and the profile has a copy section whose counters say values were followed;
  - every planted edge source -> destination is in the section, in that direction, in every run, with at least
    MIN_SAMPLES samples over the runs together; no edge goes the other way;
  - no control site's objects are copied into any tracked object (no edge from make_summed or make_computed_from
    to a site's node), and their loads are seen consumed (edges into the consumer);
  - no edge from the source into a control's site;
  - with OJX set to the ojx command: in `ojx report`'s replica table, each planted site's row that is listed says
    its contents were copied from make_source (its first "copied from" line), in at least one run for each, and no
    control's row says it was copied into.

usage: copies_suite.py AGENT.so PROGRAM WORKDIR [RUNS] [SECONDS]
"""
import json
import os
import subprocess
import sys

MIN_SAMPLES = 5
PLANTED = ["make_memcpy_copy", "make_std_copy", "make_loop_copy"]
CONTROLS = ["make_summed", "make_computed_from"]


def site_of(sites, function):
    """Index of the site whose allocating frames name `function`, or None."""
    for index, site in enumerate(sites):
        if any(function + "(" in frame for frame in site["frames"][:4]):
            return index
    return None


def report_rows(ojx, profile):
    """The rows of `ojx report PROFILE`'s replica table: its lines by the row's first line (rank, numbers, site)."""
    text = subprocess.run([ojx, "report", profile], capture_output=True, text=True, check=True, timeout=60).stdout
    table = text.split("allocation site\n", 1)[1].split("\nevidence:", 1)[0]
    blocks = [block.strip("\n").splitlines() for block in table.split("\n\n")]
    return {lines[0]: lines[1:] for lines in blocks if lines}


def check_report(ojx, profile_path, totals):
    """The text report's "copied from" lines: make_source first for the planted sites, none for the controls."""
    problems = []
    for first, lines in report_rows(ojx, profile_path).items():
        copied = [line.strip() for line in lines if line.strip().startswith("copied from ")]
        for name in PLANTED:
            if " at (anonymous namespace)::" + name + "(" not in first:
                continue
            if not copied or "make_source(" not in copied[0]:
                problems.append(f"the report's row of {name} does not say it was copied from make_source: {lines}")
            else:
                totals[name + " in the report"] = totals.get(name + " in the report", 0) + 1
        for name in CONTROLS + ["make_computed"]:
            if " at (anonymous namespace)::" + name + "(" in first and copied:
                problems.append(f"the report's row of the control {name} says it was copied into: {copied}")
    return problems


def run(agent, program, workdir, seed, seconds):
    profile = os.path.join(workdir, f"profile-{seed}.json")
    env = dict(os.environ, LD_PRELOAD=agent,
               OJX_OPTIONS=f"file={profile},seed={seed},copies=8,rate=1000,interval=0,slots=0,quiet")
    result = subprocess.run([program, "--seconds", str(seconds)], env=env, capture_output=True, text=True,
                            timeout=120)
    return result, profile


def check_run(result, profile_path, totals):
    problems = []
    if result.returncode != 0:
        return [f"the program exited with {result.returncode}: {result.stderr.strip()[-500:]}"]
    with open(profile_path) as f:
        profile = json.load(f)
    copies = profile.get("copies")
    if copies is None:
        return ["the profile has no copies section"]
    counters = copies["counters"]
    if counters["loads_followed"] + counters["string_move_samples"] == 0:
        problems.append(f"no value was followed: {counters}")
    sites = copies["sites"]
    source = site_of(sites, "make_source")
    named = {name: site_of(sites, name) for name in PLANTED + CONTROLS + ["make_computed"]}

    def edges(from_site, to_site=None, consumer=False):
        found = []
        for e in copies["edges"]:
            if e["from"].get("site") != from_site or e["from"]["kind"] != "field":
                continue
            if consumer:
                if e["to"]["kind"] == "consumer":
                    found.append(e)
            elif e["to"]["kind"] == "field" and (to_site is None or e["to"]["site"] == to_site):
                found.append(e)
        return found

    if source is None:
        return problems + ["no site names make_source: " + json.dumps(sites)[:800]]
    for name in PLANTED:
        if named[name] is None:
            problems.append(f"no edge reaches {name}'s objects (no site names it)")
            continue
        planted = edges(source, named[name])
        samples = sum(e["samples"] for e in planted)
        totals["make_source -> " + name] = totals.get("make_source -> " + name, 0) + samples
        if samples == 0:
            problems.append(f"no copy make_source -> {name}")
        if edges(named[name], source):
            problems.append(f"a copy {name} -> make_source: the wrong direction")
    for name in CONTROLS:
        if named[name] is None:
            continue  # never sampled in a tracked object: nothing it could be blamed for
        wrong = edges(named[name])
        if wrong:
            problems.append(f"the control {name} has copies into tracked objects: {wrong}")
        totals[name + " consumed"] = totals.get(name + " consumed", 0) + sum(
            e["samples"] for e in edges(named[name], consumer=True))
    for name in ["make_summed", "make_computed_from", "make_computed"]:
        if named[name] is not None and edges(source, named[name]):
            problems.append(f"a copy make_source -> {name}, which the program never makes")
    print(f"  {os.path.basename(profile_path)}: {counters}")
    return problems


def verdict(problems, totals, planted, controls, runs, min_samples):
    """The checks over all runs together — every planted edge (a key of `totals`) with at least min_samples samples,
    every control's loads seen consumed (`totals[control + " consumed"]`) — added to the runs' problems, printed;
    the exit status."""
    print("samples over all runs:", totals)
    for key in planted:
        if totals.get(key, 0) < min_samples:
            problems.append(f"{key}: {totals.get(key, 0)} samples over {runs} runs, fewer than {min_samples}")
    for name in controls:
        if totals.get(name + " consumed", 0) == 0:
            problems.append(f"the control {name}'s loads were never seen consumed")
    for p in problems:
        print("FAIL:", p)
    print("ok" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


def main(argv):
    if len(argv) < 4:
        print(__doc__)
        return 2
    agent, program, workdir = argv[1], argv[2], argv[3]
    runs = int(argv[4]) if len(argv) > 4 else 3
    seconds = float(argv[5]) if len(argv) > 5 else 3
    ojx = os.environ.get("OJX")
    os.makedirs(workdir, exist_ok=True)
    totals = {}
    problems = []
    for seed in range(1, runs + 1):
        result, profile = run(agent, program, workdir, seed, seconds)
        found = check_run(result, profile, totals)
        if ojx and result.returncode == 0:
            found += check_report(ojx, profile, totals)
        problems += [f"seed {seed}: {p}" for p in found]
    if not ojx:
        print("the report's \"copied from\" lines not checked: OJX (the ojx command) is not set")
    for name in PLANTED if ojx else []:
        if totals.get(name + " in the report", 0) == 0:
            problems.append(f"no run's report lists {name}'s row saying it was copied from make_source")
    return verdict(problems, totals, ["make_source -> " + name for name in PLANTED], CONTROLS, runs, MIN_SAMPLES)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
