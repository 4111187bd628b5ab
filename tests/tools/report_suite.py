#!/usr/bin/env python3
"""End to end: `ojx report` and `ojx merge` on profiles this test suite makes itself — the emulation demo's
(deterministic: its report is compared with a golden file), profiles the suite's Java and native runs wrote
(kept in testdata/, golden too), and the native agent's on the bundled program with planted replicas (real
samples on this machine, made afresh) — in every output format, read back by independent consumers.

usage: report_suite.py OJX SYNTHETIC_DEMO WORKDIR [--agent LIBOJXPRELOAD --program NATIVE_REPLICAS]
                       [--update-golden]

Checks:
  golden     `ojx report` and `--collapsed` of the emulation profile and of the kept Java and native profiles
             equal tests/tools/testdata/*.golden, and so does the kept profiles' report with --source (the
             bundled programs' source lines); --update-golden rewrites them after a deliberate change
  ranking    the report's #1 site is the profile's most replicated context; in the native run, every planted
             site of the program's ground truth is listed before every control
  html       the page opens in headless Chromium with no error and no request, shows the #1 site, and a click
             shows its numbers (html_view_test.py; skipped where Chromium is not installed)
  pprof      `go tool pprof` reads the output and its totals equal the JSON's (pprof_consumer_test.py; skipped
             where Go is not installed)
  merge      merging two native runs in either order gives the same bytes; objects and comparisons add up
  bad input  a missing, empty, truncated, foreign or newer-version profile: exit 2, one line naming the file and
             the problem, and no output file (or temporary file) left behind; so too copy volume (--value
             copied-bytes or copying-code) or exact counts (exact-objects, never-allocated) asked of a profile
             without the section
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TESTDATA = os.path.join(HERE, "testdata")
SKIPPED = 77



def has_estimate(context):
    """Whether the site has an estimate: its `estimate` says what it rests on; profiles without one: `reported`."""
    estimate = context.get("estimate")
    return estimate["evidence"] != "none" if estimate else context["reported"]


class Suite:
    def __init__(self, ojx, workdir):
        self.ojx = ojx
        self.workdir = workdir
        self.problems = []
        self.skips = []

    def fail(self, message):
        print(f"  FAIL: {message}")
        self.problems.append(message)

    def ojx_run(self, *args, cwd=None):
        return subprocess.run([self.ojx, *args], capture_output=True, text=True, timeout=120, cwd=cwd or self.workdir)

    def helper(self, name, *args):
        result = subprocess.run([sys.executable, os.path.join(HERE, name), *args], capture_output=True, text=True,
                                timeout=300)
        print("\n".join("    " + line for line in result.stdout.strip().splitlines()[-6:]))
        if result.returncode == SKIPPED:
            self.skips.append(f"{name}: {result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ''}")
        elif result.returncode != 0:
            self.fail(f"{name} {' '.join(args)}: exit {result.returncode}: {(result.stdout + result.stderr)[-800:]}")

    # ---- the checks ----

    def golden(self, stem, profile_name, update, sources=None):
        outputs = [(f"{stem}-report", ["report", "--top", "5", profile_name]),
                   (f"{stem}-collapsed", ["report", "--collapsed", "-", profile_name])]
        if sources:
            outputs.append((f"{stem}-source", ["report", "--top", "2", "--source", sources, profile_name]))
        for name, args in outputs:
            result = self.ojx_run(*args)
            if result.returncode != 0:
                self.fail(f"ojx {' '.join(args)}: exit {result.returncode}: {result.stderr}")
                continue
            path = os.path.join(TESTDATA, name + ".golden")
            if update:
                with open(path, "w", encoding="utf-8") as out:
                    out.write(result.stdout)
                print(f"  golden: rewrote {path}")
                continue
            with open(path, encoding="utf-8") as golden:
                expected = golden.read()
            if result.stdout != expected:
                with open(os.path.join(self.workdir, name + ".actual"), "w", encoding="utf-8") as out:
                    out.write(result.stdout)
                self.fail(f"golden: ojx {' '.join(args)} differs from {path} (see {name}.actual in {self.workdir})")
            else:
                print(f"  golden: {name} matches ({len(expected.splitlines())} lines)")

    def ranking(self, profile):
        """The profile's first site with an estimate (whole objects or comparisons) is the report's #1."""
        with open(profile, encoding="utf-8") as handle:
            doc = json.load(handle)
        first = next((c for c in doc["contexts"] if has_estimate(c)), None)
        result = self.ojx_run("report", "--top", "3", profile)
        if result.returncode != 0 or first is None:
            self.fail(f"report of {profile}: exit {result.returncode}, reported contexts: {first is not None}")
            return None
        site_lines = [line for line in result.stdout.splitlines() if line.lstrip().startswith("1 ")]
        expected = f"{first['allocation']['type']} at {first['allocation']['frames'][0]}"
        if not site_lines or not site_lines[0].endswith(expected):
            self.fail(f"report of {profile}: #1 should be '{expected}', table says {site_lines[:1]}")
        else:
            print(f"  ranking: #1 is {expected[:100]}")
        return first

    def outputs(self, profile, planted_frame, tag):
        html = os.path.join(self.workdir, f"{tag}.html")
        pprof = os.path.join(self.workdir, f"{tag}.pb.gz")
        result = self.ojx_run("report", "--html", html, "--pprof", pprof, profile)
        if result.returncode != 0 or not os.path.exists(html) or not os.path.exists(pprof):
            self.fail(f"ojx report --html --pprof {profile}: exit {result.returncode}: {result.stderr}")
            return
        print(f"  html and pprof of {tag}:")
        self.helper("html_view_test.py", html, planted_frame, os.path.join(self.workdir, f"{tag}-browser"))
        self.helper("pprof_consumer_test.py", "--pprof", pprof, "--profile-json", profile)

    def native_runs(self, agent, program):
        profiles = []
        for seed in (1, 2):
            profile = os.path.join(self.workdir, f"native-{seed}.json")
            truth = os.path.join(self.workdir, f"native-truth-{seed}.json")
            env = dict(os.environ, LD_PRELOAD=agent, OJX_OPTIONS=f"file={profile},seed={seed},rate=500,quiet")
            result = subprocess.run([program, "--seconds", "3", "--seed", str(seed), "--truth", truth], env=env,
                                    capture_output=True, text=True, timeout=120)
            if result.returncode != 0:
                self.fail(f"native_replicas under the agent exited {result.returncode}: {result.stderr[-800:]}")
                return []
            profiles.append((profile, truth))
        return profiles

    def planted_before_controls(self, profile, truth):
        with open(truth, encoding="utf-8") as handle:
            sites = json.load(handle)["sites"]
        result = self.ojx_run("report", "--top", "50", "--frames", "1", profile)
        rows = [line for line in result.stdout.splitlines() if " at " in line and line[:4].strip().isdigit()]
        rank = {}
        for number, row in enumerate(rows):
            for site in sites:
                if site["function"] in row and site["function"] not in rank:
                    rank[site["function"]] = number
        planted = [s["function"] for s in sites if s["role"] == "planted" and s["function"] in rank]
        controls = [s["function"] for s in sites if s["role"] == "control" and s["function"] in rank]
        if not planted:
            self.fail(f"report of {profile}: no planted site listed:\n{result.stdout}")
        for p in planted:
            for c in controls:
                if rank[p] > rank[c]:
                    self.fail(f"report of {profile}: planted {p} (#{rank[p] + 1}) listed after control {c} "
                              f"(#{rank[c] + 1})")
        print(f"  ranking: planted {', '.join(f'{p} #{rank[p] + 1}' for p in planted)}; controls "
              f"{', '.join(f'{c} #{rank[c] + 1}' for c in controls) or 'none listed'}")

    def merge(self, a, b):
        ab = os.path.join(self.workdir, "merged-ab.json")
        ba = os.path.join(self.workdir, "merged-ba.json")
        for inputs, out in (((a, b), ab), ((b, a), ba)):
            result = self.ojx_run("merge", *inputs, "-o", out)
            if result.returncode != 0:
                self.fail(f"ojx merge {' '.join(inputs)}: exit {result.returncode}: {result.stderr}")
                return
        with open(ab, encoding="utf-8") as x, open(ba, encoding="utf-8") as y:
            if x.read() != y.read():
                self.fail("ojx merge a b and ojx merge b a differ")
        docs = []
        for path in (a, b, ab):
            with open(path, encoding="utf-8") as handle:
                docs.append(json.load(handle))
        for field in ("samples", "comparisons", "allocations"):
            if docs[2]["run"][field] != docs[0]["run"][field] + docs[1]["run"][field]:
                self.fail(f"merge: run.{field} {docs[2]['run'][field]} is not the sum of the inputs'")
        objects = sum(c["objects"] for d in docs[:2] for c in d["contexts"])
        if sum(c["objects"] for c in docs[2]["contexts"]) != objects:
            self.fail("merge: the merged profile's objects are not the sum of the inputs'")
        if docs[2]["run"]["merged"]["profiles"] != 2:
            self.fail("merge: run.merged.profiles should be 2")
        print(f"  merge: {len(docs[0]['contexts'])} + {len(docs[1]['contexts'])} contexts -> "
              f"{len(docs[2]['contexts'])} sites, same bytes in either order, counters and objects add up")

    def missing_section(self, profile):
        """Copy volume (by destination or by code) or exact counts asked of a profile with neither section: exit 2,
        one line naming the file, the problem and the --value asked for, nothing on standard output and no output
        file left behind."""
        with open(profile, encoding="utf-8") as handle:
            doc = json.load(handle)
        if "copies" in doc or "exact_counts" in doc:
            self.fail(f"{profile} has a copy or exact counts section: it cannot show their --value refused")
            return
        out_dir = os.path.join(self.workdir, "no-section")
        os.makedirs(out_dir, exist_ok=True)
        name = os.path.basename(profile)
        for value, problem in (("copied-bytes", "no copy section"), ("copying-code", "no copy section"),
                               ("exact-objects", "no exact counts section"),
                               ("never-allocated", "no exact counts section")):
            for outputs in (["--collapsed", "-"], ["--collapsed", os.path.join(out_dir, "stacks.txt"), "--pprof",
                                                   os.path.join(out_dir, "stacks.pb.gz")]):
                args = ["report", "--value", value, *outputs, profile]
                result = self.ojx_run(*args)
                lines = result.stderr.strip().splitlines()
                if (result.returncode != 2 or result.stdout or len(lines) != 1 or name not in lines[0]
                        or problem not in lines[0] or f"--value {value}" not in lines[0]):
                    self.fail(f"ojx {' '.join(args)}: exit {result.returncode}, stdout {result.stdout[:200]!r}, "
                              f"stderr {result.stderr!r} (want exit 2 and one line naming {name}, "
                              f"'{problem}' and --value {value})")
            left = os.listdir(out_dir)
            if left:
                self.fail(f"ojx report --value {value} of a profile with no such section left files behind: {left}")
            print(f"  {problem}: --value {value} of {name}: exit 2, one line, nothing left behind")

    def sampling_only(self, profile):
        """A run without watchpoints has no estimates: the report says why instead of asking for a longer run."""
        with open(profile, encoding="utf-8") as handle:
            doc = json.load(handle)
        doc["run"]["watchpoints"] = "none: hardware breakpoints open but never fire; sampling only"
        for context in doc["contexts"]:
            context["reported"] = False
        path = os.path.join(self.workdir, "sampling-only.json")
        with open(path, "w", encoding="utf-8") as out:
            json.dump(doc, out)
        result = self.ojx_run("report", path)
        if result.returncode != 0 or "had no watchpoints (none: hardware breakpoints open" not in result.stdout:
            self.fail(f"report of a sampling-only profile: exit {result.returncode}: {result.stdout[-400:]}")
        else:
            print("  sampling only: the report says the run had no watchpoints, and why")

    def bad_input(self, good_profile):
        with open(good_profile, encoding="utf-8") as handle:
            text = handle.read()
        cases = {
            "missing.json": None,
            "empty.json": "",
            "truncated.json": text[: len(text) // 2],
            "foreign.json": json.dumps({"name": "left-pad", "version": "1.3.0"}),
            "newer.json": text.replace('"ojx_profile_version": 1', '"ojx_profile_version": 7', 1),
        }
        expected = {"missing.json": "cannot read", "empty.json": "empty file", "truncated.json": "truncated",
                    "foreign.json": "not an ojx profile", "newer.json": "version 7 is newer"}
        bad_dir = os.path.join(self.workdir, "bad")
        os.makedirs(bad_dir, exist_ok=True)
        for name, content in cases.items():
            path = os.path.join(bad_dir, name)
            if content is not None:
                with open(path, "w", encoding="utf-8") as out:
                    out.write(content)
            out_dir = os.path.join(bad_dir, "out-" + name)
            os.makedirs(out_dir, exist_ok=True)
            for args in (["report", path], ["report", "--html", os.path.join(out_dir, "r.html"), "--pprof",
                                              os.path.join(out_dir, "r.pb.gz"), path],
                         ["merge", good_profile, path, "-o", os.path.join(out_dir, "m.json")]):
                result = self.ojx_run(*args)
                lines = result.stderr.strip().splitlines()
                if result.returncode != 2 or len(lines) != 1 or name not in lines[0] or expected[name] not in lines[0]:
                    self.fail(f"ojx {' '.join(args[:-1])} {name}: exit {result.returncode}, stderr {result.stderr!r} "
                              f"(want exit 2 and one line naming {name} and '{expected[name]}')")
                left = os.listdir(out_dir)
                if left:
                    self.fail(f"ojx {args[0]} {name} left files behind: {left}")
        print(f"  bad input: {', '.join(cases)}: exit 2, one line naming the file and the problem, nothing left "
              "behind")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("ojx")
    parser.add_argument("synthetic_demo")
    parser.add_argument("workdir")
    parser.add_argument("--agent")
    parser.add_argument("--program")
    parser.add_argument("--update-golden", action="store_true")
    args = parser.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    suite = Suite(os.path.abspath(args.ojx), args.workdir)

    print("--- the emulation demo's profile (deterministic)")
    emulation = os.path.join(args.workdir, "emulation.json")
    demo = subprocess.run([args.synthetic_demo, "--json", emulation], capture_output=True, text=True, timeout=300)
    if demo.returncode != 0:
        suite.fail(f"ojx_synthetic_demo exited {demo.returncode}: {demo.stderr[-500:]}")
    else:
        suite.golden("emulation", "emulation.json", args.update_golden)
        first = suite.ranking(emulation)
        if first:
            suite.outputs(emulation, first["allocation"]["frames"][0], "emulation")
        suite.bad_input(emulation)
        suite.sampling_only(emulation)

    print("--- profiles this suite's Java and native runs wrote on a Firecracker VM (testdata/README.md)")
    for stem in ("java-replicas", "native-replicas"):
        shutil.copy(os.path.join(TESTDATA, stem + ".json"), args.workdir)
        sources = os.path.join(HERE, "..", "..", "examples", stem.replace("-", "_"))
        suite.golden(stem, stem + ".json", args.update_golden, sources)
    suite.missing_section(os.path.join(args.workdir, "native-replicas.json"))
    java = os.path.join(args.workdir, "java-replicas.json")
    first = suite.ranking(java)
    if first:
        suite.outputs(java, first["allocation"]["frames"][0], "java")

    if args.agent and args.program:
        print("--- the native agent's profiles of native_replicas (this machine's samples)")
        runs = suite.native_runs(args.agent, args.program)
        for profile, truth in runs:
            suite.planted_before_controls(profile, truth)
        if runs:
            first = suite.ranking(runs[0][0])
            if first:
                suite.outputs(runs[0][0], first["allocation"]["frames"][0], "native")
        if len(runs) == 2:
            suite.merge(runs[0][0], runs[1][0])

    for skip in suite.skips:
        print(f"SKIPPED {skip}")
    print("report suite: " + ("passed" if not suite.problems else f"{len(suite.problems)} problem(s)"))
    for problem in suite.problems:
        print("FAIL: " + problem)
    return 0 if not suite.problems else 1


if __name__ == "__main__":
    sys.exit(main())
