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
  - every edge names the code that copied for each of its samples (its copied_by samples and copied_by_other sum to
    its samples), and over the runs together each planted edge's heaviest code context has the function that
    copies (copy_by_memcpy, copy_by_std_copy, copy_by_loop) among its first frames — or, where the C library's
    memmove copies (std::copy of 4 KiB calls it; memcpy of a constant size may too), that memmove is the context's
    leaf: a frame-pointer walk from inside it skips its caller, whose frame it never made;
  - with OJX set to the ojx command: in `ojx report`'s replica table, each planted site's row that is listed says
    its contents were copied from make_source (its first "copied from" line), in at least one run for each, and no
    control's row says it was copied into; in its copies view, the edge into make_loop_copy is followed by a
    "copied by" line naming copy_by_loop, in at least one run.

usage: copies_suite.py AGENT.so PROGRAM WORKDIR [RUNS] [SECONDS]
"""
import json
import os
import subprocess
import sys

MIN_SAMPLES = 5
PLANTED = ["make_memcpy_copy", "make_std_copy", "make_loop_copy"]
CONTROLS = ["make_summed", "make_computed_from"]
# The function that copies each planted site's objects, and whether the C library's memmove may copy for it.
COPIER = {"make_memcpy_copy": "copy_by_memcpy", "make_std_copy": "copy_by_std_copy", "make_loop_copy": "copy_by_loop"}
LIBRARY_COPIES = ["make_memcpy_copy", "make_std_copy"]
COPIER_FRAMES = 4


def library_copy(leaf):
    """Whether a leaf frame is the C library's memmove or memcpy (any of its variants)."""
    return leaf.startswith(("__memmove", "__memcpy", "memmove", "memcpy"))


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


def check_copies_view(ojx, profile_path, totals):
    """Counts a run whose copies view names copy_by_loop on the line under the edge into make_loop_copy."""
    text = subprocess.run([ojx, "report", profile_path], capture_output=True, text=True, check=True,
                          timeout=60).stdout
    lines = text.split("\ncopies (sampled copy graph)", 1)[-1].splitlines()
    for line, below in zip(lines, lines[1:]):
        if "-> " in line and "make_loop_copy(" in line.split("-> ", 1)[1]:
            if below.strip().startswith("copied by ") and COPIER["make_loop_copy"] + "(" in below:
                totals["copy_by_loop in the copies view"] = totals.get("copy_by_loop in the copies view", 0) + 1
            return


def check_report(ojx, profile_path, totals):
    """The text report's "copied from" lines: make_source first for the planted sites, none for the controls."""
    check_copies_view(ojx, profile_path, totals)
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


def check_code_sums(copies):
    """Every edge's code counts each of its samples once: its copied_by samples and copied_by_other sum to them."""
    problems = []
    for e in copies["edges"]:
        counted = sum(c["samples"] for c in e.get("copied_by", [])) + e.get("copied_by_other", 0)
        if counted != e["samples"]:
            problems.append(f"an edge's code counts {counted} samples, the edge {e['samples']}: {e}")
    return problems


def add_code(copies, found, code):
    """Adds the samples of each code context (by its frames) of the edges `found` to `code`."""
    for e in found:
        for c in e.get("copied_by", []):
            frames = tuple(copies["code_contexts"][c["context"]]["frames"])
            code[frames] = code.get(frames, 0) + c["samples"]


def print_heaviest_code(key, code):
    """Prints the heaviest code context (by its frames) of the edge `key` in `code`; returns its frames."""
    frames, samples = max(sorted(code.items()), key=lambda item: item[1])
    print(f"  {key}: heaviest code {list(frames[:COPIER_FRAMES])} ({samples} samples of {sum(code.values())})")
    return frames


def check_code(code_by_edge, copiers, library=()):
    """Over all runs: each planted edge's (a key of `copiers`) heaviest code context in `code_by_edge` has its
    copier (the value, a function's name and its opening parenthesis) among its first COPIER_FRAMES frames, or for
    an edge in `library`, the C library's memmove as its leaf."""
    problems = []
    for key, copier in copiers.items():
        code = code_by_edge.get(key)
        if not code:
            problems.append(f"{key}: no sample named the code that copied")
            continue
        frames = print_heaviest_code(key, code)
        if key in library and frames and library_copy(frames[0]):
            continue
        if not any(copier in frame for frame in frames[:COPIER_FRAMES]):
            problems.append(f"{key}: the heaviest code context does not name {copier}: {list(frames[:COPIER_FRAMES])}")
    return problems


def check_run(result, profile_path, totals, code_by_edge):
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
        add_code(copies, planted, code_by_edge.setdefault("make_source -> " + name, {}))
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
    problems += check_code_sums(copies)
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
    code_by_edge = {}
    problems = []
    for seed in range(1, runs + 1):
        result, profile = run(agent, program, workdir, seed, seconds)
        found = check_run(result, profile, totals, code_by_edge)
        if ojx and result.returncode == 0:
            found += check_report(ojx, profile, totals)
        problems += [f"seed {seed}: {p}" for p in found]
    if not ojx:
        print("the report's \"copied from\" lines not checked: OJX (the ojx command) is not set")
    for name in PLANTED if ojx else []:
        if totals.get(name + " in the report", 0) == 0:
            problems.append(f"no run's report lists {name}'s row saying it was copied from make_source")
    if ojx and totals.get("copy_by_loop in the copies view", 0) == 0:
        problems.append("no run's copies view says the edge into make_loop_copy was copied by copy_by_loop")
    problems += check_code(code_by_edge, {"make_source -> " + name: copier + "(" for name, copier in COPIER.items()},
                           ["make_source -> " + name for name in LIBRARY_COPIES])
    return verdict(problems, totals, ["make_source -> " + name for name in PLANTED], CONTROLS, runs, MIN_SAMPLES)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
