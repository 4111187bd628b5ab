#!/usr/bin/env python3
"""What ojx reports at default settings on real programs, checked against the exact truth.

For each program of the corpus this runs the agent in two ways:
  truth    once, with the agent's exact verification mode (`exact`: every allocation at or above the threshold
           tracked, every tracked object digested whole with no budget, every distinct content kept), which gives
           each allocation site's true largest-identical-group share, allocated objects and bytes;
  default  --runs times (seeds 1..N), with no option but the profile's file: what a user gets.
and compares every default profile with the truth, site by site (a site: allocated type and allocation frames).

Sites and targets:
  replicated   a site whose objects are >= 1 % of the bytes of all tracked allocations (every allocation at or
               above the threshold, exactly counted by the truth run) and whose true largest identical group
               holds >= 30 % of its objects (and at least 2 of them)
  called       a site the default profile calls replicated (its estimate's `replicated`: the interval's low end
               is >= 0.1 and two identical objects are seen; the rule of every ojx report, docs/profile-format.md)
  recall       replicated sites called, over replicated sites                              target >= 90 %
  precision    called sites whose true share is >= 0.1 with two objects or more in the largest group (what the
               call claims), over called                                                  target >= 95 %
               (also shown: those whose true share is >= 0.3)
  coverage     sites with an estimate whose interval holds the true share, over sites with an estimate,
               among sites the truth run saw                                               target >= 90 %
  time         every default run <= 60 s
The truth run must be exact: no digest skipped by a budget, no content unkept, and every tracked object digested
(its share of objects digested is printed; below 99 % it is an error).

Programs: the JVM workloads of bench/jvm/overhead.py (javac, h2, lucene, xalan: Debian packages, see
bench/jvm/README.md; its Lucene 8, liblucene8-java, conflicts with the Lucene 4.10 the stress tests use, so
installing one removes the other), and two native programs under the LD_PRELOAD agent: python3 (a dict, list and bytes
workload) and sqlite3 (builds, indexes, updates and vacuums a 60 000-row table) from tests/stress/stress.py; and the
corpus's own (bench/corpus/programs.py): Derby, Ant, Saxon-HE and FreeMarker under the JVM agent, Ghostscript under
the native one. Each default run's line says how many of the objects it tracked were digested whole. bench/jvm/install.sh installs every Debian package they need.

    bench/corpus/corpus.py --jvm-agent build/rel/agents/jvm/libojx.so \
        --native-agent build/rel/agents/native/libojxpreload.so [--programs h2,sqlite3] [--runs 3] [--out DIR]

Writes DIR/summary.json and prints a table per program and the totals. Exit status: 0 every target met,
1 a target missed or a run failed, 2 usage or setup error.
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO / "bench" / "jvm"))
sys.path.insert(0, str(REPO / "tests" / "stress"))
import overhead  # noqa: E402  (the JVM workloads)
import programs as corpus_programs  # noqa: E402  (the corpus's own programs)
import stress  # noqa: E402  (the native workloads' inputs)

JVM_PROGRAMS = ("javac", "h2", "lucene", "xalan") + corpus_programs.JVM_PROGRAMS
NATIVE_PROGRAMS = ("python3", "sqlite3") + corpus_programs.NATIVE_PROGRAMS
BYTES_SHARE = 0.01
REPLICATED_SHARE = 0.3
CALL_LOW_END = 0.1
TARGETS = {"recall": 0.90, "precision": 0.95, "coverage": 0.90}
DEFAULT_RUN_SECONDS = 60
SLACK = 1e-5  # profiles print six significant digits


class SetupError(Exception):
    pass


# ------------------------------------------------------------------------------------------------------------
# Running the programs


def run_program(argv, env, cwd, stdin_path, log_prefix, timeout):
    """Runs one program; its wall time. Raises overhead.RunError on a failure or a timeout."""
    with open(f"{log_prefix}.out", "wb") as out, open(f"{log_prefix}.err", "wb") as err, \
            open(stdin_path or os.devnull, "rb") as stdin:
        start = time.perf_counter()
        try:
            process = subprocess.run(argv, env=env, cwd=cwd, stdin=stdin, stdout=out, stderr=err, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise overhead.RunError(f"{argv[0]} took longer than {timeout} s; output in {log_prefix}.err")
        wall = time.perf_counter() - start
    if process.returncode != 0:
        raise overhead.RunError(f"{' '.join(argv[:3])} exited with status {process.returncode}:\n"
                                f"{overhead.tail(log_prefix + '.err')}")
    return wall


class JvmProgram:
    def __init__(self, workload, jdk, agent):
        self.name, self.workload, self.jdk, self.agent = workload.name, workload, jdk, agent

    def run(self, options, profile, logs, label, timeout):
        agent_arg = f"-agentpath:{self.agent}=file={profile}" + (f",{options}" if options else "")
        return overhead.run_once(self.workload, self.jdk, [], agent_arg, logs, label, timeout)[0]  # its wall time


class NativeProgram:
    def __init__(self, name, argv, env, stdin_text, agent):
        self.name, self.argv, self.env, self.stdin_text, self.agent = name, argv, env, stdin_text, agent

    def run(self, options, profile, logs, label, timeout):
        work = logs / f"{label}.work"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        stdin_path = None
        if self.stdin_text is not None:
            stdin_path = work / "stdin"
            stdin_path.write_text(self.stdin_text)
        env = dict(os.environ, **self.env)
        env["LD_PRELOAD"] = str(self.agent)
        env["OJX_OPTIONS"] = f"file={profile}" + (f",{options}" if options else "")
        argv = [part.replace("{run}", str(work)) for part in self.argv]
        return run_program(argv, env, work, stdin_path, str(logs / label), timeout)


def native_programs(names, agent, out, cache):
    programs = {}
    if "python3" in names:
        python = "/usr/bin/python3"
        if not os.access(python, os.X_OK):
            raise SetupError("/usr/bin/python3 is missing (Debian package python3)")
        script = out / "python3-workload.py"
        script.write_text(stress.PYTHON_WORKLOAD)
        programs["python3"] = NativeProgram("python3", [python, str(script), "200000"],
                                            {"PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"}, None, agent)
    if "sqlite3" in names:
        sqlite = shutil.which("sqlite3")
        if not sqlite:
            raise SetupError("sqlite3 is not installed (Debian package sqlite3)")
        programs["sqlite3"] = NativeProgram("sqlite3", [sqlite, "-batch", "{run}/db.sqlite"], {},
                                            stress.SQLITE_SCRIPT, agent)
    for name in corpus_programs.NATIVE_PROGRAMS:
        if name in names:
            argv, env = corpus_programs.native_argv(name, cache)
            programs[name] = NativeProgram(name, argv, env, None, agent)
    return programs


# ------------------------------------------------------------------------------------------------------------
# Reading profiles


def site_key(context):
    allocation = context["allocation"]
    return allocation.get("type", ""), tuple(allocation["frames"])


def allocated_bytes(context):
    types = context.get("allocated", {}).get("types")
    if types:
        return sum(t["bytes"] for t in types)
    return context.get("bytes", 0)


def read_truth(path):
    """Per site: objects, bytes, digested, largest group, true share; and the checks of exactness."""
    profile = json.loads(Path(path).read_text())
    run = profile["run"]
    problems = []
    if not run.get("allocation_counts", "").startswith("exact"):
        problems.append(f"allocation counts are not exact ({run.get('allocation_counts')})")
    if run.get("digests_skipped", {}).get("budget", 0) != 0:
        problems.append(f"{run['digests_skipped']['budget']} digests skipped by a budget")
    sites, tracked, digested = {}, 0, 0
    for context in profile["contexts"]:
        whole = context.get("whole_objects")
        objects = context.get("objects", 0)
        tracked += objects
        entry = {"objects": objects, "bytes": allocated_bytes(context), "digested": 0, "share": None,
                 "largest": 0}
        if whole:
            if whole.get("unkept", {}).get("objects", 0) != 0:
                problems.append(f"{whole['unkept']['objects']} objects unkept at {site_key(context)[1][:1]}")
            counts = [g["objects"] for g in whole.get("groups", [])]
            n = sum(counts)
            entry.update(digested=n, largest=max(counts, default=0), share=max(counts, default=0) / n if n else None)
            digested += n
        key = site_key(context)
        if key in sites:  # the same frames twice (should not happen): sum
            other = sites[key]
            for field in ("objects", "bytes", "digested"):
                other[field] += entry[field]
            continue
        sites[key] = entry
    total_bytes = sum(s["bytes"] for s in sites.values())
    return {"sites": sites, "total_bytes": total_bytes, "tracked": tracked, "digested": digested,
            "problems": problems}


def tracked_objects(run):
    """The objects a profile's run tracked: its allocations less those it ignored."""
    ignored = run.get("allocations_ignored", {})
    return run.get("allocations", 0) - sum(ignored.values()) if isinstance(ignored, dict) else run.get("allocations", 0)


def read_estimates(path):
    profile = json.loads(Path(path).read_text())
    sites = {}
    for context in profile["contexts"]:
        estimate = context.get("estimate") or {}
        if estimate.get("evidence", "none") == "none":
            continue
        low, high = estimate["largest_share_ci"]
        # The profile's own call (docs/profile-format.md); profiles written before it called on the low end alone.
        called = estimate.get("replicated", low >= CALL_LOW_END)
        sites[site_key(context)] = {"evidence": estimate["evidence"], "low": low, "high": high,
                                    "point": estimate.get("largest_share"), "called": called}
    return sites, profile["run"]


# ------------------------------------------------------------------------------------------------------------
# Comparing


def compare(truth, estimates):
    """One default profile against the truth: the sites in each class and the counts of the targets."""
    sites, total = truth["sites"], truth["total_bytes"]
    replicated = {k for k, s in sites.items()
                  if s["share"] is not None and s["bytes"] >= BYTES_SHARE * total and s["share"] >= REPLICATED_SHARE
                  and s["largest"] >= 2}
    called = {k for k, e in estimates.items() if e["called"]}
    result = {"replicated": len(replicated), "found": len(replicated & called), "missed": [],
              "called": 0, "called_true": 0, "called_true_30": 0, "called_unmatched": 0, "false_calls": [],
              "estimated": 0, "covered": 0, "uncovered": []}
    for key in sorted(replicated - called):
        e = estimates.get(key)
        result["missed"].append({"site": describe(key), "true_share": sites[key]["share"],
                                 "bytes_share": sites[key]["bytes"] / total,
                                 "estimate": [e["low"], e["high"]] if e else None})
    for key in called:
        if key not in sites or sites[key]["share"] is None:
            result["called_unmatched"] += 1
            continue
        result["called"] += 1
        share = sites[key]["share"]
        if share >= CALL_LOW_END - SLACK and sites[key]["largest"] >= 2:
            result["called_true"] += 1
        else:
            result["false_calls"].append({"site": describe(key), "true_share": share,
                                          "estimate": [estimates[key]["low"], estimates[key]["high"]]})
        if share >= REPLICATED_SHARE:
            result["called_true_30"] += 1
    for key, e in estimates.items():
        if key not in sites or sites[key]["share"] is None:
            continue
        result["estimated"] += 1
        share = sites[key]["share"]
        if e["low"] - SLACK <= share <= e["high"] + SLACK:
            result["covered"] += 1
        else:
            result["uncovered"].append({"site": describe(key), "true_share": share, "estimate": [e["low"], e["high"]],
                                        "evidence": e["evidence"], "objects": sites[key]["objects"]})
    return result


def describe(key, depth=2):
    kind, frames = key
    return f"{kind} at {' <- '.join(frames[:depth])}" if frames else kind


def ratio(numerator, denominator):
    return numerator / denominator if denominator else math.nan


def percent(value):
    return "n/a" if math.isnan(value) else f"{100 * value:.1f} %"


# ------------------------------------------------------------------------------------------------------------


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jvm-agent", help=f"libojx.so (needed for {', '.join(JVM_PROGRAMS)})")
    parser.add_argument("--native-agent", help=f"libojxpreload.so (needed for {', '.join(NATIVE_PROGRAMS)})")
    parser.add_argument("--programs", default=",".join(JVM_PROGRAMS + NATIVE_PROGRAMS))
    parser.add_argument("--runs", type=int, default=3, help="default-setting runs per program (seeds 1..N)")
    parser.add_argument("--out", default=str(REPO / "build" / "corpus"))
    parser.add_argument("--java", default="java")
    parser.add_argument("--truth-timeout", type=int, default=900, help="seconds for an exact run")
    args = parser.parse_args(argv)
    names = [n for n in args.programs.split(",") if n]
    unknown = [n for n in names if n not in JVM_PROGRAMS + NATIVE_PROGRAMS]
    if unknown or args.runs < 1:
        parser.error(f"unknown program(s) {','.join(unknown)}" if unknown else "--runs must be at least 1")
    out = Path(args.out).resolve()
    cache = out / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    try:
        programs = {}
        jvm_names = [n for n in names if n in JVM_PROGRAMS]
        if jvm_names:
            if not args.jvm_agent or not Path(args.jvm_agent).is_file():
                raise SetupError(f"--jvm-agent: no libojx.so at {args.jvm_agent!r}")
            jdk = overhead.Jdk.find(args.java, None)
            own = [n for n in jvm_names if n in corpus_programs.JVM_PROGRAMS]
            workloads = overhead.make_workloads([n for n in jvm_names if n not in own], jdk, cache, out, "full")
            workloads.update(corpus_programs.jvm_workloads(own, jdk, cache, out))
            for name in jvm_names:
                programs[name] = JvmProgram(workloads[name], jdk, Path(args.jvm_agent).resolve())
        native_names = [n for n in names if n in NATIVE_PROGRAMS]
        if native_names:
            if not args.native_agent or not Path(args.native_agent).is_file():
                raise SetupError(f"--native-agent: no libojxpreload.so at {args.native_agent!r}")
            programs.update(native_programs(native_names, Path(args.native_agent).resolve(), out, cache))
    except (SetupError, overhead.SetupError) as error:
        print(f"corpus: {error}", file=sys.stderr)
        return 2

    summary, failed = {}, False
    totals = {"replicated": 0, "found": 0, "called": 0, "called_true": 0, "called_true_30": 0, "estimated": 0,
              "covered": 0}
    slowest = 0.0
    for name in names:
        program = programs[name]
        logs = out / name
        logs.mkdir(exist_ok=True)
        try:
            truth_path = logs / "truth.json"
            truth_wall = program.run("exact", truth_path, logs, "truth", args.truth_timeout)
            truth = read_truth(truth_path)
            runs = []
            for seed in range(1, args.runs + 1):
                path = logs / f"default-{seed}.json"
                wall = program.run("" if seed == 1 else f"seed={seed}", path, logs, f"default-{seed}",
                                   args.truth_timeout)
                estimates, run = read_estimates(path)
                result = compare(truth, estimates)
                result.update(wall=wall, objects_digested=run.get("objects_digested", 0), tracked=tracked_objects(run))
                runs.append(result)
        except overhead.RunError as error:
            print(f"corpus: {name}: {error}", file=sys.stderr)
            failed = True
            continue
        digested_share = ratio(truth["digested"], truth["tracked"])
        if digested_share < 0.99:
            truth["problems"].append(f"only {percent(digested_share)} of the tracked objects were digested")
        replicated_sites = sorted(
            ((k, s) for k, s in truth["sites"].items()
             if s["share"] is not None and s["bytes"] >= BYTES_SHARE * truth["total_bytes"]
             and s["share"] >= REPLICATED_SHARE and s["largest"] >= 2),
            key=lambda item: -item[1]["bytes"])
        print(f"\n=== {name}: truth run {truth_wall:.1f} s, {truth['tracked']} objects tracked, "
              f"{truth['total_bytes'] / 2**20:.1f} MiB, {percent(digested_share)} digested; "
              f"{len(replicated_sites)} replicated site(s)")
        for problem in truth["problems"]:
            print(f"  truth not exact: {problem}")
            failed = True
        for key, site in replicated_sites:
            print(f"  {100 * site['share']:5.1f} % of {site['objects']:>7} objects, "
                  f"{100 * site['bytes'] / truth['total_bytes']:4.1f} % of bytes: {describe(key, 3)}")
        for seed, result in enumerate(runs, 1):
            slowest = max(slowest, result["wall"])
            print(f"  default run {seed}: {result['wall']:.1f} s, {result['objects_digested']} of {result['tracked']} "
                  f"tracked digested ({percent(ratio(result['objects_digested'], result['tracked']))}); "
                  f"found {result['found']}/{result['replicated']}, called {result['called']} "
                  f"({result['called_true']} true at 10 %, {result['called_true_30']} at 30 %; "
                  f"{result['called_unmatched']} not in the truth run), intervals hold "
                  f"{result['covered']}/{result['estimated']}")
            for miss in result["missed"]:
                print(f"    missed: {miss['site']} (true {miss['true_share']:.3f}, estimate {miss['estimate']})")
            for call in result["false_calls"]:
                print(f"    false call: {call['site']} (true {call['true_share']:.3f}, estimate {call['estimate']})")
            for miss in result["uncovered"][:5]:
                print(f"    interval misses: {miss['site']} (true {miss['true_share']:.3f}, "
                      f"{miss['evidence']} {miss['estimate'][0]:.3f}..{miss['estimate'][1]:.3f})")
            for field in totals:
                totals[field] += result[field]
        summary[name] = {"truth_wall": truth_wall, "truth_problems": truth["problems"],
                         "digested_share": digested_share,
                         "replicated": [{"site": describe(k, 4), **s} for k, s in replicated_sites], "runs": runs}

    recall = ratio(totals["found"], totals["replicated"])
    precision = ratio(totals["called_true"], totals["called"])
    coverage = ratio(totals["covered"], totals["estimated"])
    print(f"\n=== totals over {args.runs} default run(s) per program")
    print(f"recall    {percent(recall):>8}  ({totals['found']}/{totals['replicated']})   target >= 90 %")
    print(f"precision {percent(precision):>8}  ({totals['called_true']}/{totals['called']}; at 30 %: "
          f"{totals['called_true_30']})   target >= 95 %")
    print(f"coverage  {percent(coverage):>8}  ({totals['covered']}/{totals['estimated']})   target >= 90 %")
    print(f"slowest default run {slowest:.1f} s   target <= {DEFAULT_RUN_SECONDS} s")
    met = {"recall": recall, "precision": precision, "coverage": coverage}
    for target, value in met.items():
        if not math.isnan(value) and value < TARGETS[target]:
            failed = True
    if slowest > DEFAULT_RUN_SECONDS:
        failed = True
    (out / "summary.json").write_text(json.dumps(
        {"totals": totals, "recall": recall, "precision": precision, "coverage": coverage, "slowest": slowest,
         "programs": summary}, indent=1, default=str))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
