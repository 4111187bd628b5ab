#!/usr/bin/env python3
"""End-to-end: libojx.so profiles Java programs on real JVMs, and what it finds is checked against ground truth.

usage: jvm_agent_suite.py AGENT.so SOURCES WORKDIR [--quick]

SOURCES is examples/java_replicas (JavaReplicas.java with planted replicas and exact truth, JvmStress.java).
Debian's JDK 17 is required; every other JDK under /usr/lib/jvm is exercised too (one run each).

Scenarios and tolerances (statistical claims are checked over all runs, not one lucky run):
  - replicas: JavaReplicas under Serial, Parallel and G1; 1 thread with the default heap, and 8 threads with
    -Xmx64m and --gc-pressure (many collections). Runs sample at 1000/s per thread with a heap sampling
    interval of 8 KiB (more evidence per second; neither changes what is estimated).
      ranking: in every run, each planted site whose context is reported ranks above every control, and at
               least 80 % of all (run, planted site) pairs are reported;
      bounds:  the true largest-group ratio lies in [omega, gamma] for at least 80 % of the reported
               (run, planted site) pairs (the estimator aims at 95 %; a short run has few dozen comparisons);
      controls: no control is called replicated (omega >= 0.1) in any run;
      moves:   every run with --gc-pressure relocated objects after collections, and no relocated primitive
               array was found with a wrong length (relocation_check_failures == 0) in any run.
      counts:  every site's allocation metrics are estimates scaled from the 8 KiB heap sampling, and the
               estimated number of arrays of the site's own contexts (its type, its array sizes, not allocated in a JDK
               constructor: the serialisation site's stream buffers are not in the truth) is within
               4 sigma + 3 % of the arrays the program allocated. Sigma is the profile's own standard deviation
               (sqrt of the Horvitz-Thompson variance estimate): 4 sigma fails an unbiased estimate with chance
               < 1e-4 per site; 3 % covers what the Poisson model of JVMTI's sampler leaves out (the sampler
               counts bytes per TLAB). At 3.5-8 KiB objects and 8 KiB sampling a site of 1000 arrays has sigma
               ~ 3 %. Exception: before JDK 25 the sampler loses track of allocations made outside TLABs
               (JDK-8356372), which 8 threads in a 64 MiB heap make often with these arrays: JDK 17 estimated
               4-16 % too few arrays there (Temurin 25, same program: within 5 %), so those runs get 20 %.
               Each context's elements per array equal the site's array length exactly (read with
               GetArrayLength) where the site's arrays have one size.
  - adaptive: the agent's default heap sampling (track_rate=500: the interval moves to track about 500 arrays
    a second) on JavaReplicas, G1, 4 threads (about 2 800 arrays of 3.5-8 KiB a second), recorded. Every check
    above holds there with the same tolerances (the counts' 4 sigma come from each object's weight at the
    interval it was sampled at), except that its planted sites are left out of the pooled reporting and bounds
    counts: tracking about 500 arrays a second rather than about all of them, it makes about half the
    comparisons of the 8 KiB runs, and in 5 s often reports only some planted sites. Before JDK 25 its counts
    spread wider than their sigma says, so there sigma counts 1.3 times: JDK-8356372 again, since the adaptive
    interval (37-140 KiB here) lies beyond G1's TLABs (about 100 KiB), so that lost outside-TLAB bytes move
    the sample points. (estimate - truth) / sigma had a standard deviation of 1.23 on JDK 17 (30 runs of the
    7 sites, 2026-11-26), 0.99 on Temurin 25 (16 runs) and 0.97 on JDK 17 with its TLABs held at 2 MiB
    (-XX:TLABSize=2m -XX:-ResizeTLAB, 14 runs). And
      rate:    the arrays tracked a second (heap_samples_tracked over heap_sampling_window_ms) are within a
               factor 2 of the target where the program allocates at least twice the target (the rule settles
               within a few per cent; the callbacks' own bound may hold the interval higher, never lower), and
               at most twice the target otherwise;
      replay:  the trace, whose objects each carry the interval they were sampled at, replays to the profile
               byte for byte.
  - defaults: JavaReplicas (G1, 4 threads) at the agent's defaults: no access is sampled (the start line and
    run.sampler say so, no sample and no watchpoint), and from whole objects alone every planted site is
    reported and ranked above every control, the true share inside the interval for more than half of them;
    rate=200 alone turns the sampler on (samples in a 1 s run).
  - exact: the exact verification mode on JavaReplicas (G1, 4 threads): every tracked array digested, nothing
    left out by a budget or a full table, and each site's largest identical group, pooled over its contexts by
    digest, equal to the program's own share, to the array, wherever the pool holds exactly the site's arrays
    (each array is judged by its contents at death); the profile is the same whether or not the relocation
    lagged behind allocations (an object evicted from the map by one is counted by its context).
  - robustness: JvmStress (thread churn, class unloading, System.gc() in a loop) prints the same with the agent
    as without it.
  - options: an unknown or malformed option stops the JVM with a message naming it; `help` lists the options
    and the program runs; ZGC is refused with a message and the program runs unprofiled; an unwritable output
    file is one line at start and the program runs unprofiled, with no file written anywhere else.
  - files: under umask 0 the profile and the trace are 0600; under a file-size limit smaller than both (as a
    full disk) the JVM runs to a normal exit, one line each says the profile and the trace could not be written
    (the trace where it ends), nothing says they were, and no partial profile is left.
  - dynamic attach: jcmd JVMTI.agent_load starts profiling a running JVM, `dump` writes a profile while it runs,
    `stop` writes it and stops; the program ends normally. A dump to a file that cannot be written fails (the
    attaching tool sees the failure).
Where the machine's debug registers do not work (the agent runs sampling only and says why in the profile),
there are no comparisons: every site must still be found, and the ranking, reporting and bounds checks are
skipped with the reason printed.
"""
import glob
import json
import os
import re
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "ground_truth"))
import check_profile  # noqa: E402

DEBIAN_JDK = "/usr/lib/jvm/java-17-openjdk-amd64"
TEST_OPTIONS = "rate=1000,interval=8k,quiet"


class Suite:
    def __init__(self, agent, sources, workdir, quick):
        self.agent = os.path.abspath(agent)
        self.sources = sources
        self.workdir = workdir
        self.quick = quick
        self.classes = os.path.join(workdir, "classes")
        self.problems = []
        self.planted_pairs = self.planted_reported = self.bounds_held = 0
        self.skipped_because = None

    def fail(self, message):
        print("  FAIL: " + message)
        self.problems.append(message)

    def java(self, jdk, *args, timeout=180, agent_options=None):
        command = [os.path.join(jdk, "bin", "java")]
        if agent_options is not None:
            command.append(f"-agentpath:{self.agent}={agent_options}")
        command += ["-cp", self.classes, *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout)

    def compile(self):
        os.makedirs(self.classes, exist_ok=True)
        sources = sorted(glob.glob(os.path.join(self.sources, "*.java")))
        subprocess.run([os.path.join(DEBIAN_JDK, "bin", "javac"), "--release", "11", "-d", self.classes, *sources],
                       check=True)

    # ---- replicas against the truth ----

    def replicas(self, jdk, name, jvm_flags, program_args, seed, expect_moves, record=False, options=TEST_OPTIONS,
                 tracking_target=None, pooled=True):
        profile = os.path.join(self.workdir, f"profile-{name}.json")
        truth = os.path.join(self.workdir, f"truth-{name}.json")
        trace = os.path.join(self.workdir, f"trace-{name}.ojxt")
        result = self.java(jdk, *jvm_flags, "JavaReplicas", "--seed", str(seed), "--truth", truth, *program_args,
                           agent_options=f"start,file={profile},seed={seed},{options}" +
                           (f",record={trace}" if record else ""))
        print(f"--- {name}: {' '.join(jvm_flags)} JavaReplicas {' '.join(program_args)}")
        if result.returncode != 0:
            self.fail(f"{name}: the program exited {result.returncode} under the agent: {result.stderr[-1500:]}")
            return
        sites = check_profile.read_truth(truth)
        contexts = check_profile.read_profile(profile)
        rows, _, failures = check_profile.check(contexts, sites)
        check_profile.print_table(rows)
        sampling_only = check_profile.sampling_only_reason(profile)
        if sampling_only:  # no debug register works here: nothing was compared, every site must still be found
            self.skipped_because = sampling_only
            failures = [failure for failure in failures if failure.startswith("found")]
            rows = []
        with open(profile, encoding="utf-8") as handle:
            run = json.load(handle)["run"]
        agent = run.get("agent", {})
        print(f"  samples {run['samples']}, comparisons {run['comparisons']}, collections relocated "
              f"{agent.get('collections_relocated')}, objects moved {agent.get('objects_moved_by_gc')}, "
              f"relocation check failures {agent.get('relocation_check_failures')}")
        for failure in failures:
            if failure.startswith("(a)") and "unreported" in failure.split("does not rank")[0]:
                continue  # an unreported planted site is counted below, not failed per run
            if failure.startswith("(b)"):
                continue  # bounds are counted over all runs
            self.fail(f"{name}: {failure}")
        for site, context, _ in rows if pooled else []:
            if site["role"] != "planted":
                continue
            self.planted_pairs += 1
            if context is not None and context["reported"]:
                self.planted_reported += 1
                self.bounds_held += (context["omega"] - check_profile.SLACK <= site["ratio"]
                                     <= context["gamma"] + check_profile.SLACK)
        # The collector is named from HotSpot's flags (G1 when none is chosen: 2 cores and 24 GiB make a server).
        chosen = [flag[len("-XX:+Use"):-len("GC")] for flag in jvm_flags if re.fullmatch(r"-XX:\+Use\w+GC", flag)]
        collector = chosen[0] if chosen else "G1"
        if not run.get("runtime", "").endswith(f"({collector})"):
            self.fail(f"{name}: run.runtime '{run.get('runtime')}' does not name the collector {collector}")
        self.allocation_counts(name, profile, truth, many_small_tlabs="-Xmx64m" in jvm_flags,
                               adaptive=tracking_target is not None)
        if agent.get("relocation_check_failures", 1) != 0:
            self.fail(f"{name}: {agent.get('relocation_check_failures')} relocated arrays had a wrong length")
        if expect_moves and not agent.get("collections_relocated"):
            self.fail(f"{name}: no collection was relocated under a small heap")
        if tracking_target is not None:
            self.tracked_rate(name, agent, truth, tracking_target)
        if record:
            if problem := check_profile.check_replay(trace, profile):
                self.fail(f"{name}: recording: {problem}")

    def tracked_rate(self, name, agent, truth, target):
        window_ms = agent.get("heap_sampling_window_ms", 0)
        if not window_ms or "heap_samples_tracked" not in agent:
            self.fail(f"{name}: run.agent says nothing of adaptive heap sampling: {agent}")
            return
        tracked = agent["heap_samples_tracked"] * 1000 / window_ms
        with open(truth, encoding="utf-8") as handle:
            document = json.load(handle)
        allocated = sum(site["objects"] for site in document["sites"]) / (window_ms / 1000)
        heavy = allocated >= 2 * target
        low = target / 2 if heavy else 0
        verdict = "ok" if low <= tracked <= 2 * target else "OUTSIDE"
        print(f"  tracked {tracked:.0f} arrays a second (target {target}; the program allocated at least "
              f"{allocated:.0f} a second): {verdict} [{low:.0f}, {2 * target}]; {agent['heap_samples']} samples, "
              f"{agent['heap_sampling_windows']} windows, interval at the end {agent.get('heap_sampling_interval')}")
        if verdict != "ok":
            self.fail(f"{name}: {tracked:.0f} arrays tracked a second, target {target}")

    def allocation_counts(self, name, profile, truth, many_small_tlabs, adaptive):
        with open(profile, encoding="utf-8") as handle:
            document = json.load(handle)
        major = re.search(r" (\d+)[.+]", document["run"].get("runtime", ""))
        before_fix = major is None or int(major.group(1)) < 25  # JDK-8356372
        slack = 0.20 if many_small_tlabs and before_fix else 0.03
        spread = 1.3 if adaptive and before_fix else 1.0
        with open(truth, encoding="utf-8") as handle:
            truth_sites = json.load(handle)["sites"]
        if "estimated" not in document["run"].get("allocation_counts", ""):
            self.fail(f"{name}: run.allocation_counts does not say the counts are estimated: "
                      f"{document['run'].get('allocation_counts')!r}")
        sites = check_profile.read_truth(truth)
        element_bytes = {"byte": 1, "boolean": 1, "short": 2, "char": 2, "int": 4, "float": 4, "long": 8, "double": 8}
        for site, truth_site in zip(sites, truth_sites):
            low, high = truth_site["object_bytes"]["min"], truth_site["object_bytes"]["max"]
            element = element_bytes[truth_site["type"][:-2]]
            estimate = variance = 0.0
            contexts = 0
            for context in document["contexts"]:
                view = {"frames": context["allocation"]["frames"]}
                if check_profile.site_of(view, sites) is not site or "allocated" not in context:
                    continue
                # A JDK constructor's arrays (the serialisation site's stream buffers) are not the site's objects.
                if any(".<init>(" in frame for frame in view["frames"] if not frame.startswith("JavaReplicas")):
                    continue
                if not context["allocated"]["estimated"]:
                    self.fail(f"{name}: a context of {site['function']} has exact counts under heap sampling")
                for entry in context["allocated"]["types"]:
                    if entry["type"] != truth_site["type"] or entry["instances"] <= 0:
                        continue
                    # Element bytes, as the truth counts them (the profile's bytes include the padding to 8).
                    mean_bytes = entry["elements"] / entry["instances"] * element
                    if not low - 1e-6 * low <= mean_bytes <= high + 1e-6 * high:
                        continue  # another array the site's code allocates (a stream's buffer), not the site's
                    contexts += 1
                    estimate += entry["instances"]
                    variance += entry["instances_variance"]
                    length = entry["elements"] / entry["instances"]
                    if low == high and abs(length - low / element) > 1e-6 * length:
                        self.fail(f"{name}: {site['function']}: {length:.3f} elements per array, the site's "
                                  f"arrays have {low // element}")
            tolerance = 4 * spread * variance ** 0.5 + slack * site["objects"]
            verdict = "ok" if abs(estimate - site["objects"]) <= tolerance else "OUTSIDE"
            print(f"  arrays {site['function']}: estimated {estimate:.0f} +- {variance ** 0.5:.0f} from {contexts} "
                  f"context(s), allocated {site['objects']} ({verdict}: tolerance {tolerance:.0f})")
            if verdict != "ok":
                self.fail(f"{name}: {site['function']}: estimated {estimate:.0f} arrays, the program allocated "
                          f"{site['objects']} (tolerance {tolerance:.0f})")

    # ---- the defaults ----

    def defaults(self, jdk, seconds):
        """At the defaults the agent samples no accesses (no timer, no breakpoint), and the planted sites are found
        from whole objects: each reported, ranked above the controls, the true share inside the interval for most;
        rate= alone turns the sampler on."""
        profile = os.path.join(self.workdir, "profile-defaults.json")
        truth = os.path.join(self.workdir, "truth-defaults.json")
        result = self.java(jdk, "-XX:+UseG1GC", "JavaReplicas", "--seed", "21", "--seconds", seconds, "--threads", "4",
                           "--truth", truth, agent_options=f"start,file={profile}")
        print("--- defaults: -XX:+UseG1GC JavaReplicas, 4 threads")
        if result.returncode != 0:
            return self.fail(f"defaults: the program exited {result.returncode}: {result.stderr[-1500:]}")
        with open(profile, encoding="utf-8") as handle:
            run = json.load(handle)["run"]
        print(f"  sampler: {run['sampler']}; watchpoints: {run['watchpoints']}; samples {run['samples']}, "
              f"objects digested {run['objects_digested']}")
        if not run["sampler"].startswith("no access sampling") or run["samples"] != 0:
            self.fail(f"defaults: accesses were sampled ({run['samples']} samples; sampler: {run['sampler']})")
        if not run["watchpoints"].startswith("none: no access sampling"):
            self.fail(f"defaults: watchpoints without a sampler: {run['watchpoints']}")
        if "accesses not sampled" not in result.stderr:
            self.fail("defaults: the start line does not say that accesses are not sampled")
        for problem in check_profile.whole_object_problems(profile, truth):
            self.fail(f"defaults: {problem}")

        sampled = os.path.join(self.workdir, "profile-defaults-rate.json")
        result = self.java(jdk, "JavaReplicas", "--seconds", "1", "--threads", "1",
                           agent_options=f"start,file={sampled},rate=200,quiet")
        if result.returncode != 0:
            return self.fail(f"defaults, rate=200: the program exited {result.returncode}: {result.stderr[-1500:]}")
        with open(sampled, encoding="utf-8") as handle:
            run = json.load(handle)["run"]
        print(f"  rate=200 alone: sampler: {run['sampler'][:90]}...; samples {run['samples']}")
        if run["sampler"].startswith("no access sampling") or run["samples"] == 0:
            self.fail(f"defaults: rate=200 did not turn the sampler on ({run['samples']} samples; {run['sampler']})")

    # ---- the exact verification mode ----

    def exact(self, jdk, seconds):
        """`exact`: every array tracked and digested (nothing left out by a budget or a full table), and each
        site's largest identical group, pooled over its contexts by digest, is the program's own."""
        profile = os.path.join(self.workdir, "profile-exact.json")
        truth = os.path.join(self.workdir, "truth-exact.json")
        result = self.java(jdk, "-XX:+UseG1GC", "JavaReplicas", "--seconds", seconds, "--threads", "4", "--truth",
                           truth, agent_options=f"start,file={profile},exact")
        print("--- exact: -XX:+UseG1GC JavaReplicas, 4 threads")
        if result.returncode != 0:
            return self.fail(f"exact: the program exited {result.returncode}: {result.stderr[-1500:]}")
        for problem in check_profile.exact_run_problems(profile, result.stderr):
            self.fail(f"exact: {problem}")
        with open(profile, encoding="utf-8") as handle:
            document = json.load(handle)
        sites = check_profile.read_truth(truth)
        for site in sites:
            groups = {}
            for context in document["contexts"]:
                frames = context["allocation"]["frames"]
                if check_profile.site_of({"frames": frames}, sites) is not site:
                    continue
                # A JDK constructor's arrays (the serialisation site's stream buffers) are not the site's objects.
                if any(".<init>(" in frame for frame in frames if not frame.startswith("JavaReplicas")):
                    continue
                for group in context.get("whole_objects", {}).get("groups", []):
                    groups[group["digest"]] = groups.get(group["digest"], 0) + group["objects"]
            objects = sum(groups.values())
            share = max(groups.values()) / objects if objects else 0
            # The serialisation site's contexts also hold the streams' growing buffers: pooled, they are not the
            # site's arrays alone, and only a pool of exactly the site's count is compared.
            comparable = objects == site["objects"]
            # Every array is judged by its contents at death (read at the start of the collection that frees it,
            # when no thread runs), or at exit, after the program's threads ended: the largest group is the
            # program's, to the array.
            apart = abs(share - site["ratio"]) * objects
            verdict = ("ok" if apart < 0.5 else "DIFFERS") if comparable else "not compared"
            print(f"  {site['function']:24} {objects:6} digested, largest group {share:.4f}; the program's "
                  f"{site['objects']}, {site['ratio']:.4f}: {verdict} ({apart:.0f} arrays apart)")
            if verdict == "DIFFERS":
                self.fail(f"exact: {site['function']}: largest group {share:.4f}, the program's {site['ratio']:.4f}")
            if not comparable and site["role"] == "planted" and site["function"] != "serializeSnapshotCopy":
                self.fail(f"exact: {site['function']}: {objects} arrays digested, the program allocated "
                          f"{site['objects']}")

    # ---- robustness ----

    def stress(self, jdk):
        print("--- JvmStress with and without the agent")
        args = ["JvmStress"] + (["--threads-total", "600"] if self.quick else [])
        plain = self.java(jdk, *args)
        profiled = self.java(jdk, *args, agent_options=f"start,file={self.workdir}/stress.json,{TEST_OPTIONS}")
        print(f"  without: exit {plain.returncode}: {plain.stdout.strip()[:200]}")
        print(f"  with:    exit {profiled.returncode}: {profiled.stdout.strip()[:200]}")
        if plain.returncode != 0 or profiled.returncode != 0:
            self.fail(f"JvmStress exits {plain.returncode} alone, {profiled.returncode} under the agent: "
                      f"{profiled.stderr[-1500:]}")
        elif plain.stdout != profiled.stdout:
            self.fail("JvmStress prints something else under the agent")
        if not os.path.exists(f"{self.workdir}/stress.json"):
            self.fail("JvmStress: no profile written")

    # ---- options ----

    def options(self, jdk):
        print("--- options")
        for options, expected, must_start in [("start,bogus=1", "bogus", False), ("rate=fast", "rate", False),
                                              ("sampler=magic", "precise", False), ("interval=-3", "interval", False),
                                              ("interval=8k,track_rate=500", "track_rate", False),
                                              ("track_rate=0", "track_rate", False),
                                              ("exact,interval=0", "exact", False),
                                              ("help", "track_rate", True)]:
            result = self.java(jdk, "JavaReplicas", "--seconds", "0.3", "--threads", "1", agent_options=options)
            said = " / ".join(line for line in result.stderr.splitlines() if line.startswith("ojx"))
            print(f"  {options}: exit {result.returncode}; {said[:200]}")
            if expected not in result.stderr:
                self.fail(f"{options}: the message does not name '{expected}'")
            if (result.returncode == 0) != must_start:
                self.fail(f"{options}: exit {result.returncode}, expected the JVM to "
                          f"{'run' if must_start else 'stop at start-up'}")
        result = self.java(jdk, "-XX:+UseZGC", "JavaReplicas", "--seconds", "0.3", "--threads", "1",
                           agent_options=f"start,file={self.workdir}/zgc.json")
        print(f"  ZGC: exit {result.returncode}; {result.stderr.strip()[:200]}")
        if result.returncode != 0 or "ZGC" not in result.stderr or os.path.exists(f"{self.workdir}/zgc.json"):
            self.fail("ZGC: expected a refusal naming the collector, no profile, and a normal exit")
        before = set(glob.glob("/tmp/ojx-*.json"))
        result = self.java(jdk, "JavaReplicas", "--seconds", "0.5", "--threads", "1",
                           agent_options="start,file=/nonexistent-dir/p.json,rate=100")
        said = [line for line in result.stderr.splitlines() if line.startswith("ojx")]
        print(f"  unwritable file: exit {result.returncode}; {' / '.join(said)[:200]}")
        if result.returncode != 0 or said != ["ojx: not profiling: cannot write the profile to /nonexistent-dir/p.json: "
                                              "No such file or directory"]:
            self.fail(f"unwritable output file: exit {result.returncode}, stderr {result.stderr[-500:]}")
        if set(glob.glob("/tmp/ojx-*.json")) != before:
            self.fail("unwritable output file: a profile was written somewhere else")

    # ---- files: modes, a file-size limit ----

    def files(self, jdk):
        print("--- files")
        directory = os.path.join(self.workdir, "files")
        os.makedirs(directory, exist_ok=True)
        profile, trace = os.path.join(directory, "modes.json"), os.path.join(directory, "modes.ojxt")
        command = [os.path.join(jdk, "bin", "java"), f"-agentpath:{self.agent}=start,file={profile},record={trace},"
                   f"{TEST_OPTIONS}", "-cp", self.classes, "JavaReplicas", "--seconds", "0.5", "--threads", "1"]
        result = subprocess.run(command, capture_output=True, text=True, timeout=120, preexec_fn=lambda: os.umask(0))
        modes = {os.path.basename(p): oct(os.stat(p).st_mode & 0o7777) if os.path.exists(p) else None
                 for p in (profile, trace)}
        print(f"  umask 0: exit {result.returncode}; modes {modes}")
        if result.returncode != 0 or set(modes.values()) != {"0o600"}:
            self.fail(f"files: under umask 0 expected 0600 files, got {modes} (exit {result.returncode})")

        profile, trace = os.path.join(directory, "limited.json"), os.path.join(directory, "limited.ojxt")
        for path in (profile, trace):
            if os.path.exists(path):
                os.remove(path)
        limit = 4096  # below the profile's size and a trace block's

        def small_files():
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

        # Dense heap sampling: the trace grows well past the limit (its run attributes and names alone may not).
        command = [os.path.join(jdk, "bin", "java"), f"-agentpath:{self.agent}=start,file={profile},record={trace},"
                   "rate=1000,interval=8k", "-cp", self.classes, "JavaReplicas", "--seconds", "1", "--threads", "1"]
        result = subprocess.run(command, capture_output=True, text=True, timeout=120, preexec_fn=small_files)
        said = [line for line in result.stderr.splitlines() if line.startswith("ojx") and "profiling pid" not in line]
        print(f"  file-size limit: exit {result.returncode}; {' / '.join(said)[:300]}")
        if result.returncode != 0:
            self.fail(f"files: the JVM exited {result.returncode} under a file-size limit")
        if said.count(f"ojx: could not write the profile to {profile}: File too large") != 1:
            self.fail(f"files: expected one line saying the profile could not be written: {said}")
        if sum(line.startswith(f"ojx: could not write the whole trace to {trace}: File too large; it ends after")
               for line in said) != 1:
            self.fail(f"files: expected one line saying where the trace ends: {said}")
        if any("written" in line and "could not" not in line for line in said):
            self.fail(f"files: a line claims a file was written: {said}")
        if os.path.exists(profile) or [n for n in os.listdir(directory) if n.startswith(".")]:
            self.fail(f"files: a partial profile or a temporary file is left: {os.listdir(directory)}")

    # ---- dynamic attach ----

    def attach(self, jdk):
        print("--- dynamic attach: start, dump, stop")
        # 20 s: each jcmd is a JVM start of its own (1-3 s on a loaded 2-core machine), and all four must reach the
        # program before it ends.
        profile = os.path.join(self.workdir, "attach.json")
        program = subprocess.Popen([os.path.join(jdk, "bin", "java"), "-cp", self.classes, "JavaReplicas",
                                    "--seconds", "20", "--threads", "2"], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        jcmd = os.path.join(jdk, "bin", "jcmd")

        def load(options):
            # jcmd splits its arguments at '=': the agent's options go in as one quoted string.
            return subprocess.run([jcmd, str(program.pid), "JVMTI.agent_load", self.agent, f'"{options}"'],
                                  capture_output=True, text=True, timeout=60)

        time.sleep(1.5)
        started = load(f"start,file={profile},{TEST_OPTIONS}")
        time.sleep(2)
        dumped = load("dump")
        dumped_profile = None
        if os.path.exists(profile):
            with open(profile, encoding="utf-8") as handle:
                dumped_profile = json.load(handle)
        time.sleep(1)
        unwritable = load("dump,file=/nonexistent-dir/dump.json")  # fails, and the agent goes on
        stopped = load("stop")
        again = load("dump")  # after stop: refused, the program unharmed
        out, err = program.communicate(timeout=60)
        print(f"  start: {started.stdout.strip()[-60:]!r}; dump: {dumped.stdout.strip()[-60:]!r}; stop: "
              f"{stopped.stdout.strip()[-60:]!r}; dump after stop: {again.stdout.strip()[-60:]!r}")
        print(f"  program exit {program.returncode}; agent said: "
              f"{' / '.join(line for line in err.splitlines() if line.startswith('ojx: a') or 'written' in line)}")
        if program.returncode != 0:
            self.fail(f"dynamic attach: the program exited {program.returncode}: {err[-1500:]}")
        for what, result in (("start", started), ("dump", dumped), ("stop", stopped)):
            if "return code: 0" not in result.stdout:
                self.fail(f"dynamic attach: {what} failed: {result.stdout[-300:]} {result.stderr[-300:]}")
        if "return code: 0" in again.stdout:
            self.fail("dynamic attach: a dump after stop should be refused")
        if "return code: 0" in unwritable.stdout or "return code" not in unwritable.stdout:
            self.fail(f"dynamic attach: a dump to an unwritable file should fail: {unwritable.stdout[-300:]}")
        if dumped_profile is None or not dumped_profile.get("contexts"):
            self.fail("dynamic attach: the dump wrote no profile with contexts")
        elif dumped_profile["run"]["samples"] == 0:
            self.fail("dynamic attach: no samples from the threads that were running before the attach")
        stopped_profile = None
        if os.path.exists(profile):
            with open(profile, encoding="utf-8") as handle:
                stopped_profile = json.load(handle)
        if (stopped_profile is None or dumped_profile is None
                or stopped_profile["run"]["samples"] <= dumped_profile["run"]["samples"]):
            self.fail("dynamic attach: the profile written at stop has no more samples than the dump before it")
        else:
            print(f"  samples at dump {dumped_profile['run']['samples']}, at stop {stopped_profile['run']['samples']}")

    def run(self):
        if not os.path.exists(os.path.join(DEBIAN_JDK, "bin", "javac")):
            print(f"Debian's JDK 17 is required ({DEBIAN_JDK})")
            return 2
        self.compile()
        seconds = "3" if self.quick else "5"
        seed = 1
        for gc in ("Serial", "Parallel", "G1"):
            self.replicas(DEBIAN_JDK, f"jdk17-{gc}-1thread", [f"-XX:+Use{gc}GC"],
                          ["--seconds", seconds, "--threads", "1"], seed, expect_moves=False)
            seed += 1
            # 8 threads on 2 cores, and many collections: twice as long for as much evidence.
            # Recorded under G1 and Serial (collections relocate objects): the trace must replay to the profile.
            self.replicas(DEBIAN_JDK, f"jdk17-{gc}-8threads-small-heap", [f"-XX:+Use{gc}GC", "-Xmx64m"],
                          ["--seconds", str(2 * int(seconds)), "--threads", "8", "--gc-pressure"], seed,
                          expect_moves=True, record=gc in ("G1", "Serial"))
            seed += 1
        # The default heap sampling, adaptive; 4 threads allocate well above its target.
        self.replicas(DEBIAN_JDK, "jdk17-G1-4threads-adaptive", ["-XX:+UseG1GC"],
                      ["--seconds", seconds, "--threads", "4"], seed, expect_moves=False, record=True,
                      options="rate=1000,quiet", tracking_target=500, pooled=False)
        seed += 1
        others = sorted(path for path in glob.glob("/usr/lib/jvm/*")
                        if os.path.exists(os.path.join(path, "bin", "java")) and not os.path.islink(path)
                        and os.path.realpath(path) != os.path.realpath(DEBIAN_JDK))
        for jdk in others:
            self.replicas(jdk, f"{os.path.basename(jdk)}-G1-4threads", ["-Xmx64m"],
                          ["--seconds", seconds, "--threads", "4", "--gc-pressure"], seed, expect_moves=True)
            seed += 1
        self.defaults(DEBIAN_JDK, seconds)
        self.exact(DEBIAN_JDK, seconds)
        self.stress(DEBIAN_JDK)
        self.options(DEBIAN_JDK)
        self.files(DEBIAN_JDK)
        self.attach(DEBIAN_JDK)
        reported = self.planted_reported / self.planted_pairs if self.planted_pairs else 0
        coverage = self.bounds_held / self.planted_reported if self.planted_reported else 0
        if self.skipped_because:
            print(f"SKIPPED ranking, reporting and bounds checks: the agent ran sampling only "
                  f"({self.skipped_because})")
        else:
            print(f"planted sites reported in {self.planted_reported} of {self.planted_pairs} (run, site) pairs: "
                  f"{reported:.0%} (need 80 %); bounds held in {self.bounds_held} of them: {coverage:.0%} "
                  "(need 80 %)")
            if reported < 0.8:
                self.fail(f"planted sites reported in only {reported:.0%} of (run, site) pairs")
            if coverage < 0.8:
                self.fail(f"bounds coverage {coverage:.0%} < 80 %")
        print("JVM agent suite: " + ("passed" if not self.problems else f"{len(self.problems)} problem(s)"))
        for problem in self.problems:
            print("FAIL: " + problem)
        return 0 if not self.problems else 1


def main(argv):
    positional = [a for a in argv[1:] if not a.startswith("--")]
    if len(positional) != 3:
        print(__doc__)
        return 2
    agent, sources, workdir = positional
    if not os.path.exists(agent):
        print(f"no agent at {agent}")
        return 2
    os.makedirs(workdir, exist_ok=True)
    return Suite(agent, sources, workdir, "--quick" in argv).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
