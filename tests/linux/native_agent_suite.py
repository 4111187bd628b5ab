#!/usr/bin/env python3
"""End-to-end: libojxpreload.so profiles the bundled native_replicas program, several seeds, and every profile is
checked against the program's ground truth with tests/ground_truth/check_profile.py.

Tolerances (statistical claims are checked over all runs, not one lucky seed):
  - runs sample at 500/s per thread (more comparisons per second; the rate does not change what is estimated);
  - ranking: in every run, each planted site ranks above every control (the product's promise);
  - bounds: the true largest-group ratio lies in [omega, gamma] for at least 80 % of (run, planted site) pairs
    (the estimator aims at 95 %; a 4-second run gives a few dozen comparisons per site);
  - controls: no control is called replicated (omega >= 0.1) in any run;
  - robustness: the program exits normally with the agent, as without it;
  - recording: seed 1 also records a trace (record=), and `ojx replay` of it (the ojx command named by the
    environment variable OJX) must give the profile the live run wrote, byte for byte, with no record lost.
  - the main runs track every allocation (interval=0): the estimator checks are of exact tracking;
  - allocation sampling (interval=32k, and adaptive tracking at track_rate=300, the program allocating ≈ 10 times
    that: one more run each): every site is still found, the profile's allocation counts are marked estimated,
    and each site's estimated number of objects is within 4 standard deviations (the profile's own variance
    estimate) + 3 % of what the program allocated, + under adaptive tracking the weight of one of the site's
    objects at the run's largest interval (a heavy object not sampled leaves no trace in that variance); with weights missing the estimate would be the ~12 % of objects
    actually tracked. The adaptive run's profile says its target and the range of intervals its objects were
    sampled at. The program frees every object it made before it exits, often on another thread than the one that
    made it: each sampled run's profile must count a free for all but at most 3 of its tracked objects (the
    interval=0 runs leave 1, which the C++ runtime keeps), and no object evicted by a new one at its address — what
    a free the agent's filter of tracked addresses wrongly let through would leave.
  - whole objects at defaults (one more run, no option but the file and a trace): the agent digests objects whole
    at their free and at exit, so every planted site gets a whole-object estimate that ranks it above every
    control, the true largest-group share lies in the estimate's interval for most planted sites, no control is
    called replicated (interval's lower end >= 0.1), and `ojx replay` of the trace gives the same profile.
Where the machine's debug registers do not work (the agent runs sampling only, and says why in the profile),
there are no comparisons to check: every site must still be found, and the estimator checks are skipped with
the reason printed.

usage: native_agent_suite.py AGENT.so PROGRAM WORKDIR [RUNS] [SECONDS]
"""
import json
import math
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ground_truth"))
import check_profile  # noqa: E402


def run(agent, program, workdir, seed, seconds, profiled, unwinder="auto", compare="auto", record=None,
        reads="auto"):
    kind = "profiled" if profiled else "plain"
    truth = os.path.join(workdir, f"truth-{kind}-{seed}.json")
    profile = os.path.join(workdir, f"profile-{seed}.json")
    env = dict(os.environ)
    if profiled:
        env["LD_PRELOAD"] = agent
        env["OJX_OPTIONS"] = (f"file={profile},seed={seed},rate=500,quiet,unwinder={unwinder},compare={compare},"
                              f"reads={reads},interval=0")
        if record:
            env["OJX_OPTIONS"] += f",record={record}"
    result = subprocess.run([program, "--seconds", str(seconds), "--seed", str(seed), "--truth", truth],
                            env=env, capture_output=True, text=True, timeout=120)
    return result, truth, profile


def run_with_options(agent, program, workdir, name, options, seed, seconds):
    """The program under the agent with OJX_OPTIONS `options` plus its profile file; returns (result, truth, profile),
    the files named after `name`."""
    truth = os.path.join(workdir, f"truth-{name}.json")
    profile = os.path.join(workdir, f"profile-{name}.json")
    env = dict(os.environ, LD_PRELOAD=agent, OJX_OPTIONS=f"file={profile},{options}")
    result = subprocess.run([program, "--seconds", str(seconds), "--seed", str(seed), "--truth", truth], env=env,
                            capture_output=True, text=True, timeout=120)
    return result, truth, profile


def check_allocation_sampling(agent, program, workdir, seconds, tracking="interval=32k"):
    """Problems of a run with allocation sampling (interval=N, or track_rate=N): found sites, unbiased weighted
    counts."""
    result, truth, profile = run_with_options(agent, program, workdir, "sampled", f"seed=9,rate=500,quiet,{tracking}",
                                              9, seconds)
    if result.returncode != 0:
        return [f"{tracking}: the profiled program exited {result.returncode}: {result.stderr[-2000:]}"]
    problems = []
    sites = check_profile.read_truth(truth)
    with open(profile, encoding="utf-8") as handle:
        written = json.load(handle)
    contexts = written["contexts"]
    run_facts = written["run"]
    unfreed = run_facts["allocations"] - run_facts["frees"]
    print(f"  {tracking}: {run_facts['allocations']} objects tracked, {run_facts['frees']} of them seen freed, "
          f"{run_facts['objects_evicted_by_overlap']} evicted by overlap")
    if unfreed > 3 or run_facts["objects_evicted_by_overlap"] != 0:
        problems.append(f"{tracking}: frees of tracked objects went unseen: {run_facts['allocations']} tracked, "
                        f"{run_facts['frees']} freed, {run_facts['objects_evicted_by_overlap']} evicted by overlap")
    if tracking.startswith("track_rate="):
        adaptive = written["run"].get("allocation_sampling", {})
        print(f"  run.allocation_sampling: {adaptive}")
        if adaptive.get("targets_per_second") != [int(tracking.split("=")[1])]:
            problems.append(f"{tracking}: run.allocation_sampling does not name the target: {adaptive}")
        elif adaptive.get("interval_range", [0, 0])[1] == 0:
            problems.append(f"{tracking}: no object was sampled at a positive interval: {adaptive}")
    # Under adaptive tracking an object sampled at the run's largest interval weighs up to 1/p at that interval, and
    # the profile's variance comes from the objects that were sampled: where none of those heavy ones happened to
    # be, the estimate falls short by up to such a weight with a variance that does not show it (a run went to a
    # 1.2 MiB interval, 4 KiB objects weighing ≈ 300 each, and its estimate fell 452 short with sd 88). So each
    # site is also allowed the weight of its smallest object at the largest interval.
    largest_interval = written["run"].get("allocation_sampling", {}).get("interval_range", [0, 0])[1] \
        if tracking.startswith("track_rate=") else 0
    with open(truth, encoding="utf-8") as handle:
        smallest = {entry["function"]: entry["object_bytes"]["min"] for entry in json.load(handle)["sites"]}
    print(f"--- {tracking}: estimated objects per site against the program's")
    for site in sites:
        heaviest = 1 / -math.expm1(-smallest[site["function"]] / largest_interval) if largest_interval else 0
        # The site's contexts (a realloc site has two: its malloc and its realloc); the one with most objects.
        estimates = []
        for context in contexts:
            names = check_profile.site_of({"frames": context["allocation"]["frames"]}, sites)
            if names is not site:
                continue
            allocated = context.get("allocated", {})
            if not allocated.get("estimated"):
                problems.append(f"{tracking}: {site['function']}: counts not marked estimated")
            types = allocated.get("types", [])
            estimates.append((sum(t["instances"] for t in types), sum(t.get("instances_variance", 0) for t in types),
                              sum(t["seen"] for t in types)))
        if not estimates:
            problems.append(f"{tracking}: {site['function']} not found")
            continue
        estimate, variance, seen = max(estimates)
        allowed = 4 * variance ** 0.5 + 0.03 * site["objects"] + heaviest
        verdict = "ok" if abs(estimate - site["objects"]) <= allowed else "FAIL"
        print(f"  {site['function']:26} estimated {estimate:8.0f} (sd {variance ** 0.5:5.0f}, {seen} tracked) "
              f"allocated {site['objects']:6}  {verdict}")
        if verdict != "ok":
            problems.append(f"{tracking}: {site['function']}: estimated {estimate:.0f} objects, allocated "
                            f"{site['objects']} (allowed difference {allowed:.0f})")
    return problems


def check_whole_objects_at_defaults(agent, program, workdir, seconds):
    """Problems of a run at the agent's default options, judged by its whole-object estimates."""
    trace = os.path.join(workdir, "trace-defaults.ojxt")
    result, truth, profile = run_with_options(agent, program, workdir, "defaults", f"record={trace}", 11, seconds)
    if result.returncode != 0:
        return [f"defaults: the profiled program exited {result.returncode}: {result.stderr[-2000:]}"]
    print("--- defaults, whole-object estimates; the agent says: " +
          " / ".join(line for line in result.stderr.splitlines() if "digested whole" in line))
    problems = []
    if "objects digested whole" not in result.stderr:
        problems.append("defaults: the exit summary does not say how many objects were digested whole")
    if problem := check_profile.check_replay(trace, profile):
        problems.append(f"defaults: recording: {problem}")
    problems += [f"defaults: {problem}" for problem in check_profile.whole_object_problems(profile, truth)]
    return problems


def check_exact(agent, program, workdir, seconds):
    """Problems of a run in the exact verification mode: every object of every site digested, nothing left out by
    a budget or a full table, and each planted site's interval collapsed onto its true largest-group share."""
    result, truth, profile = run_with_options(agent, program, workdir, "exact", "exact", 12, seconds)
    if result.returncode != 0:
        return [f"exact: the profiled program exited {result.returncode}: {result.stderr[-2000:]}"]
    problems = [f"exact: {problem}" for problem in check_profile.exact_run_problems(profile, result.stderr)]
    sites = check_profile.read_truth(truth)
    rows, _, failures = check_profile.check(check_profile.read_profile(profile, "whole_objects"), sites,
                                            "whole_objects")
    print("--- exact mode, whole-object estimates")
    check_profile.print_table(rows)
    problems += [f"exact: {failure}" for failure in failures]
    for site, context, *_ in rows:
        if site["role"] == "planted" and context is not None and \
                not (abs(context["omega"] - site["ratio"]) <= check_profile.SLACK
                     and abs(context["gamma"] - site["ratio"]) <= check_profile.SLACK):
            problems.append(f"exact: {site['function']}: interval [{context['omega']}, {context['gamma']}] is not "
                            f"the true share {site['ratio']}")
    return problems


def main(argv):
    if len(argv) < 4:
        print(__doc__)
        return 2
    agent, program, workdir = argv[1:4]
    runs = int(argv[4]) if len(argv) > 4 else 5
    seconds = float(argv[5]) if len(argv) > 5 else 4
    os.makedirs(workdir, exist_ok=True)
    problems = []
    bounds_checked = bounds_held = 0
    skipped_because = None
    for seed in range(1, runs + 1):
        # Allocation stacks come from libunwind where it is installed; the last seed checks libgcc's unwinder, the
        # fallback, against the same ground truth.
        unwinder = "libgcc" if seed == runs and runs > 1 else "auto"
        # Seed 2 compares at the sample whatever the machine has (elsewhere: watchpoints where debug registers trap).
        compare = "sample" if seed == 2 else "auto"
        trace = os.path.join(workdir, f"trace-{seed}.ojxt") if seed == 1 else None
        # Seed 3 reads memory by system call only (elsewhere: guarded loads).
        reads = "syscall" if seed == 3 else "auto"
        result, truth, profile = run(agent, program, workdir, seed, seconds, profiled=True, unwinder=unwinder,
                                     compare=compare, record=trace, reads=reads)
        plain, _, _ = run(agent, program, workdir, seed, 0.5, profiled=False)
        if result.returncode != 0:
            problems.append(f"seed {seed}: the profiled program exited {result.returncode}: {result.stderr[-2000:]}")
            continue
        if plain.returncode != 0:
            problems.append(f"seed {seed}: the program alone exited {plain.returncode}")
        if trace:
            if problem := check_profile.check_replay(trace, profile):
                problems.append(f"seed {seed}: recording: {problem}")
        sites = check_profile.read_truth(truth)
        contexts = check_profile.read_profile(profile)
        rows, notes, failures = check_profile.check(contexts, sites)
        print(f"--- seed {seed} (unwinder={unwinder}, compare={compare})")
        check_profile.print_table(rows)
        sampling_only = check_profile.sampling_only_reason(profile)
        if sampling_only:
            skipped_because = sampling_only
            failures = [failure for failure in failures if failure.startswith("found")]
        for failure in failures:
            print("  " + failure)
        for failure in failures:
            if failure.startswith("(b)"):
                continue
            problems.append(f"seed {seed}: {failure}")
        for site, context, _ in rows:
            if site["role"] == "planted" and context is not None and context["reported"]:
                bounds_checked += 1
                bounds_held += context["omega"] - check_profile.SLACK <= site["ratio"] <= context["gamma"] + \
                    check_profile.SLACK
    problems += check_allocation_sampling(agent, program, workdir, seconds)
    problems += check_allocation_sampling(agent, program, workdir, seconds, "track_rate=300")
    problems += check_whole_objects_at_defaults(agent, program, workdir, seconds)
    problems += check_exact(agent, program, workdir, seconds)
    # Bad options: a message that names the problem, and the program runs unprofiled to a normal exit.
    for options, expected in [("bogus=1", "bogus"), ("rate=fast", "rate"), ("sampler=magic", "precise"),
                              ("rate=0", "rate"), ("help", "threshold"), ("unwinder=magic", "unwinder"),
                              ("record=", "record"), ("record=/nonexistent/run.ojxt", "/nonexistent/run.ojxt"),
                              ("reads=fast", "reads"), ("track_rate=0", "track_rate=0 would track nothing"),
                              ("track_rate=often", "track_rate"), ("interval=0,track_rate=1000", "both given"),
                              ("exact,interval=0", "do not go with it"), ("exact,track_rate=100", "do not go with it"),
                              (f"verbose,reads=auto,file={workdir}/reads.json", "memory reads: guarded loads"),
                              (f"verbose,reads=syscall,file={workdir}/reads.json", "memory reads: process_vm_readv")]:
        env = dict(os.environ, LD_PRELOAD=agent, OJX_OPTIONS=options)
        result = subprocess.run([program, "--seconds", "0.2"], env=env, capture_output=True, text=True, timeout=60)
        print(f"OJX_OPTIONS={options}: exit {result.returncode}; agent says: "
              f"{' / '.join(line for line in result.stderr.splitlines() if line.startswith('ojx'))[:300]}")
        if result.returncode != 0 or expected not in result.stderr:
            problems.append(f"OJX_OPTIONS={options}: exit {result.returncode}, stderr lacks '{expected}'")
    coverage = bounds_held / bounds_checked if bounds_checked else 0
    if skipped_because:
        print(f"SKIPPED ranking, bounds and control checks: the agent ran sampling only ({skipped_because})")
    else:
        print(f"bounds held for {bounds_held} of {bounds_checked} (run, planted site) pairs: {coverage:.1%} "
              "(need 80 %)")
        if coverage < 0.8:
            problems.append(f"bounds coverage {coverage:.1%} < 80 %")
    for problem in problems:
        print("FAIL: " + problem)
    print("native agent suite: " + ("passed" if not problems else f"{len(problems)} problem(s)"))
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
