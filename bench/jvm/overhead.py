#!/usr/bin/env python3
"""Overhead of the ojx JVMTI agent (libojx.so) on real Java programs from Debian packages.

Runs each workload without and with -agentpath:LIB=start,file=OUT/<workload>-<i>.json[,OPTIONS], alternating
(without, with, without, with, ...) after an unmeasured warm-up run, and reports the medians of wall time and
peak RSS (ru_maxrss of the JVM process, from wait4) and their ratios, the geometric means of the ratios over the
workloads against the targets (<= 3 % runtime, <= 3 % memory), and the top contexts of each workload's last
profile. Every run's output checksum must be identical: a workload whose result changes under the agent (or
between plain runs) is an error.

Workloads (bench/jvm/README.md; install their packages with bench/jvm/install.sh):
  javac   javac (jdk.compiler, run as java -m jdk.compiler/com.sun.tools.javac.Main) compiling a slice of
          java.base from openjdk-17-source's lib/src.zip with --patch-module java.base=...
  h2      H2 SQL (libh2-java): in-memory order-entry database, inserts, joins, aggregates, updates
  lucene  Lucene 8 (liblucene8-java): index java.base sources, then a fixed mix of searches
  xalan   Xalan-Java XSLT (libxalan2-java, libxerces2-java): transform a generated catalog repeatedly
and, named with --workloads only, two whose garbage G1 must reclaim early (humongous text buffers):
  freemarker  FreeMarker (libfreemarker-java): three templates over 20 000 records, 60 rounds (--freemarker-rounds)
  humongous   tests/stress/java/HumongousStress.java: pages of 200 000 rows built in StringBuilders, 100 rounds
Every run logs its collections (-Xlog:gc): the table gives the median pause count and total pause time of each
side, so that an agent that keeps garbage alive shows (run with --jvm-args -XX:+UseParallelGC etc. per collector).

Examples:
  bench/jvm/overhead.py --agent build/dev/agents/jvm/libojx.so
  bench/jvm/overhead.py --agent libojx.so --options rate=500 --runs 7 --workloads h2,xalan
  bench/jvm/overhead.py --no-agent-only                 # the workloads alone (no agent needed)

Python 3.11 standard library only. Exit status: 0 all good, 1 a run failed or a checksum differed, 2 usage or
setup error (missing agent, missing Debian package).
"""
import argparse
import dataclasses
import glob
import hashlib
import json
import math
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
WORKLOAD_SOURCES = HERE / "workloads"
ALL_WORKLOADS = ("javac", "h2", "lucene", "xalan")
HEAP_WORKLOADS = ("freemarker", "humongous")
FREEMARKER_RECORDS, FREEMARKER_ROUNDS = 20000, 60
TARGET_PERCENT = 3.0


class SetupError(Exception):
    """Something the benchmark needs is missing (package, JDK tool, agent); exit status 2."""


class RunError(Exception):
    """A workload run failed or produced a different result; the workload is abandoned, exit status 1."""


# --------------------------------------------------------------------------------------------------------------
# Environment: the JDK and the Debian packages' jars


@dataclasses.dataclass
class Jdk:
    java: Path
    javac: Path
    home: Path
    src_zip: Path

    @staticmethod
    def find(java_arg, src_zip_arg):
        java = Path(shutil.which(java_arg) or java_arg)
        if not java.is_file():
            raise SetupError(f"java not found: {java_arg}")
        home = java.resolve().parent.parent
        javac = home / "bin" / "javac"
        if not javac.is_file():
            raise SetupError(f"javac not found next to {java.resolve()} (install openjdk-17-jdk-headless)")
        src_zip = Path(src_zip_arg) if src_zip_arg else home / "lib" / "src.zip"
        return Jdk(java, javac, home, src_zip)

    def version(self):
        result = subprocess.run([str(self.java), "-version"], capture_output=True, text=True)
        return result.stderr.strip().splitlines()[-1] if result.stderr.strip() else "?"


PACKAGES = ("openjdk-17-jdk-headless", "openjdk-17-source", "libh2-java", "liblucene8-java", "libxalan2-java",
            "libxerces2-java")


def package_versions():
    """Installed versions of the workloads' Debian packages, for the record ({} where dpkg-query is missing)."""
    try:
        result = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${Version}\\n"] + list(PACKAGES),
                                capture_output=True, text=True)
    except OSError:
        return {}
    return dict(line.split(" ", 1) for line in result.stdout.splitlines() if " " in line)


def jar(name, package, jars=("/usr/share/java",)):
    """The newest jar called name (a glob) in the first of the directories jars that has one (Debian installs
    versioned names, e.g. lucene-core-8.7.0.jar)."""
    for directory in jars:
        if matches := sorted(glob.glob(f"{directory}/{name}")):
            return matches[-1]
    raise SetupError(f"{name} not found in {', '.join(jars)}: install Debian package {package} "
                     "(bench/jvm/install.sh)")


def require_src_zip(jdk):
    if not jdk.src_zip.is_file():
        raise SetupError(f"{jdk.src_zip} not found: install Debian package openjdk-17-source "
                         "(bench/jvm/install.sh), or pass --src-zip")
    return str(jdk.src_zip)


# --------------------------------------------------------------------------------------------------------------
# Workloads


@dataclasses.dataclass
class Workload:
    name: str
    packages: str
    description: str
    classpath: list          # jars and class directories for the JVM
    main: list               # what follows the JVM options: main class (or -m module/class) and arguments
    checksum_from_output: bool = True   # else: checksum of the files the run wrote to its output directory
    output_dir: Path = None  # emptied before each run (javac's -d)

    def argv(self, java, jvm_args, agent_arg):
        argv = [str(java)] + jvm_args + ([agent_arg] if agent_arg else [])
        if self.classpath:
            argv += ["-cp", os.pathsep.join(str(entry) for entry in self.classpath)]
        return argv + self.main


def sources_stamp(paths, extra):
    digest = hashlib.sha256(extra.encode())
    for path in sorted(paths):
        digest.update(str(path).encode())
        digest.update(Path(path).read_bytes())
    return digest.hexdigest()


def build_driver(jdk, cache, source, classpath):
    """Compiles bench/jvm/workloads/SOURCE into CACHE/classes/<class>, unless already built from the same source
    with the same jars and javac."""
    classes = cache / "classes" / Path(source).stem
    source = WORKLOAD_SOURCES / source
    stamp_file = classes.with_suffix(".stamp")
    stamp = sources_stamp([source], os.pathsep.join(classpath) + str(jdk.javac.resolve()))
    if classes.is_dir() and stamp_file.is_file() and stamp_file.read_text() == stamp:
        return classes
    shutil.rmtree(classes, ignore_errors=True)
    classes.mkdir(parents=True)
    command = [str(jdk.javac), "-nowarn", "-encoding", "UTF-8", "-cp", os.pathsep.join(classpath),
               "-d", str(classes), str(source)]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise SetupError(f"building {source.name} failed:\n{shlex.join(command)}\n{result.stderr}")
    stamp_file.write_text(stamp)
    print(f"built {source.name} into {classes}", flush=True)
    return classes


# The javac slice: java.base's java.util (top level) and java.util.function,
# compiled as a patch of java.base. Only these files are extracted, so nothing else is compiled implicitly.
JAVAC_SLICE = {
    "full": ("java/util/", "java/util/function/"),
    "smoke": ("java/util/function/",),
}


def extract_javac_slice(jdk, cache, size):
    src_zip = require_src_zip(jdk)
    root = cache / f"javac-src-{size}"
    listing = cache / f"javac-files-{size}.txt"
    stamp_file = cache / f"javac-src-{size}.stamp"
    info = os.stat(src_zip)
    stamp = f"{src_zip} {info.st_size} {info.st_mtime_ns} {JAVAC_SLICE[size]}"
    if root.is_dir() and listing.is_file() and stamp_file.is_file() and stamp_file.read_text() == stamp:
        return root, listing
    shutil.rmtree(root, ignore_errors=True)
    files = []
    with zipfile.ZipFile(src_zip) as archive:
        for name in sorted(archive.namelist()):
            if not name.startswith("java.base/") or not name.endswith(".java"):
                continue
            relative = name[len("java.base/"):]
            if any(relative.startswith(package) and "/" not in relative[len(package):]
                   for package in JAVAC_SLICE[size]):
                archive.extract(name, root)
                files.append(str(root / name))
    if not files:
        raise SetupError(f"no sources of the javac slice in {src_zip}")
    listing.write_text("".join(f"{shlex.quote(file)}\n" for file in files))
    stamp_file.write_text(stamp)
    print(f"extracted {len(files)} java.base sources for the javac workload into {root}", flush=True)
    return root, listing


# Work per workload: "full" is what is measured (each 2-14 s without an agent on the project's 2-core VMs);
# "smoke" is a seconds-long check of the harness itself.
SIZES = {
    "full": {"h2": ["30000", "3"], "lucene": ["800", "4000"], "xalan": ["4000", "12"]},
    "smoke": {"h2": ["5000", "1"], "lucene": ["100", "500"], "xalan": ["300", "2"]},
}


def make_workloads(names, jdk, cache, out, size, jars=("/usr/share/java",), freemarker_rounds=FREEMARKER_ROUNDS):
    h2_jar = [jar("h2.jar", "libh2-java", jars)] if "h2" in names else []
    lucene_jars = [jar(f"lucene-{module}-8*.jar", "liblucene8-java", jars)
                   for module in ("core", "analyzers-common", "queryparser", "queries")] if "lucene" in names else []
    freemarker_jar = [jar("freemarker.jar", "libfreemarker-java", jars)] if "freemarker" in names else []
    xalan_jars = [jar("xalan2.jar", "libxalan2-java", jars),
                  jar("serializer.jar", "libxalan2-java", jars),
                  jar("xercesImpl.jar", "libxerces2-java", jars)] if "xalan" in names else []
    workloads = {}
    work = SIZES[size]
    for name in names:
        if name == "javac":
            root, listing = extract_javac_slice(jdk, cache, size)
            output = out / "javac-out"
            count = len(listing.read_text().splitlines())
            workloads[name] = Workload(
                name, "openjdk-17-source, openjdk-17-jdk-headless",
                f"javac: {count} java.base sources ({', '.join(JAVAC_SLICE[size])})", [],
                ["-m", "jdk.compiler/com.sun.tools.javac.Main", "-proc:none", "-implicit:none", "-nowarn",
                 "-XDignore.symbol.file", "--patch-module", f"java.base={root / 'java.base'}",
                 "-d", str(output), f"@{listing}"],
                checksum_from_output=False, output_dir=output)
        elif name == "h2":
            workloads[name] = Workload(
                name, "libh2-java", f"H2 {Path(h2_jar[0]).resolve().name}: {work['h2'][0]} orders, "
                f"{work['h2'][1]} query rounds",
                [build_driver(jdk, cache, "H2Workload.java", h2_jar)] + h2_jar, ["H2Workload"] + work["h2"])
        elif name == "lucene":
            workloads[name] = Workload(
                name, "liblucene8-java, openjdk-17-source",
                f"Lucene {Path(lucene_jars[0]).name}: index {work['lucene'][0]} java.base sources, "
                f"{work['lucene'][1]} searches",
                [build_driver(jdk, cache, "LuceneWorkload.java", lucene_jars)] + lucene_jars,
                ["LuceneWorkload", require_src_zip(jdk)] + work["lucene"])
        elif name == "xalan":
            workloads[name] = Workload(
                name, "libxalan2-java, libxerces2-java",
                f"Xalan {Path(xalan_jars[0]).resolve().name}: {work['xalan'][0]}-item catalog, "
                f"{work['xalan'][1]} transformations",
                [build_driver(jdk, cache, "XalanWorkload.java", xalan_jars)] + xalan_jars,
                ["XalanWorkload", str(WORKLOAD_SOURCES / "report.xsl")] + work["xalan"])
        elif name == "freemarker":
            workloads[name] = Workload(
                name, "libfreemarker-java", f"FreeMarker {Path(freemarker_jar[0]).resolve().name}: "
                f"{FREEMARKER_RECORDS} records, {freemarker_rounds} rounds",
                [build_driver(jdk, cache, "FreeMarkerWorkload.java", freemarker_jar)] + freemarker_jar,
                ["FreeMarkerWorkload", str(FREEMARKER_RECORDS), str(freemarker_rounds)])
        elif name == "humongous":
            workloads[name] = Workload(
                name, "-", "HumongousStress: 100 pages of 200 000 rows",
                [build_driver(jdk, cache, REPO / "tests" / "stress" / "java" / "HumongousStress.java", [])],
                ["HumongousStress", "100"])
    return workloads


# --------------------------------------------------------------------------------------------------------------
# Running and measuring


@dataclasses.dataclass
class Run:
    agent: bool
    index: int
    wall: float        # seconds
    rss: int           # peak resident set, KiB
    cpu: float         # user + system seconds
    checksum: str
    pauses: int = 0    # collection pauses (-Xlog:gc)
    pause_ms: float = 0.0


GC_PAUSE = re.compile(r"\bPause\b.* ([0-9.]+)ms$")


def gc_pauses(path):
    """(pauses, their total milliseconds) from a -Xlog:gc log; (0, 0) without one."""
    try:
        times = [float(m.group(1)) for m in map(GC_PAUSE.search, Path(path).read_text(errors="replace").splitlines())
                 if m]
    except OSError:
        return 0, 0.0
    return len(times), sum(times)


def tree_checksum(directory):
    digest = hashlib.sha256()
    count = 0
    for path in sorted(Path(directory).rglob("*")):
        if path.is_file():
            digest.update(str(path.relative_to(directory)).encode() + b"\0")
            digest.update(path.read_bytes())
            count += 1
    return f"{digest.hexdigest()} ({count} files)"


def tail(path, lines=15):
    try:
        text = Path(path).read_text(errors="replace").rstrip().splitlines()
    except OSError:
        return ""
    return "\n".join("    " + line for line in text[-lines:])


def run_once(workload, jdk, jvm_args, agent_arg, logs, label, timeout):
    if workload.output_dir is not None:
        shutil.rmtree(workload.output_dir, ignore_errors=True)
        workload.output_dir.mkdir(parents=True)
    gc_log = logs / f"{label}.gc.log"
    argv = workload.argv(jdk.java, [*jvm_args, f"-Xlog:gc:file={gc_log}"], agent_arg)
    stdout_path = logs / f"{label}.out"
    stderr_path = logs / f"{label}.err"
    (logs / f"{label}.cmd").write_text(shlex.join(argv) + "\n")
    with open(stdout_path, "wb") as stdout, open(stderr_path, "wb") as stderr:
        start = time.perf_counter()
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
                                   start_new_session=True)
        timed_out = threading.Event()

        def kill():
            timed_out.set()
            os.killpg(process.pid, signal.SIGKILL)
        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, usage = os.wait4(process.pid, 0)
        finally:
            timer.cancel()
        wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if timed_out.is_set():
        raise RunError(f"{workload.name} ({label}) took longer than {timeout} s and was killed; "
                       f"command in {logs / (label + '.cmd')}")
    if process.returncode != 0:
        output = tail(stderr_path) or tail(stdout_path)  # the JVM reports a failed agent load on stdout
        raise RunError(f"{workload.name} ({label}) exited with status {process.returncode}; "
                       f"command in {logs / (label + '.cmd')}, output:\n{output}")
    if workload.checksum_from_output:
        lines = [line for line in stdout_path.read_text(errors="replace").splitlines()
                 if line.startswith("checksum ")]
        if not lines:
            raise RunError(f"{workload.name} ({label}) printed no checksum line; stdout in {stdout_path}")
        checksum = lines[-1].split(None, 1)[1].strip()
    else:
        checksum = tree_checksum(workload.output_dir)
    return wall, usage.ru_maxrss, usage.ru_utime + usage.ru_stime, checksum, *gc_pauses(gc_log)


def measure(workload, jdk, args, out, agent_path):
    """Warm-up run(s), then args.runs pairs (or plain runs only). Returns the list of Runs."""
    logs = out / "logs"
    runs = []
    reference = None
    for i in range(1, args.warmup + 1):
        wall, rss, cpu, checksum, _, _ = run_once(workload, jdk, args.jvm_args, None, logs,
                                                  f"{workload.name}-warmup-{i}", args.timeout)
        print(f"  warm-up {i}: {wall:6.2f} s  {rss / 1024:7.1f} MiB  checksum {checksum[:16]}", flush=True)
        reference = reference or checksum
        if checksum != reference:
            raise RunError(f"{workload.name}: warm-up runs differ ({reference} vs {checksum}): not deterministic")
    for i in range(1, args.runs + 1):
        modes = [False] if agent_path is None else [False, True]
        for with_agent in modes:
            agent_arg = None
            if with_agent:
                profile = out / f"{workload.name}-{i}.json"
                options = f",{args.options}" if args.options else ""
                agent_arg = f"-agentpath:{agent_path}=start,file={profile}{options}"
            elif args.baseline_options is not None:  # the run "without" is the agent with the baseline's options
                profile = out / f"{workload.name}-baseline-{i}.json"
                options = f",{args.baseline_options}" if args.baseline_options else ""
                agent_arg = f"-agentpath:{agent_path}=start,file={profile}{options}"
            label = f"{workload.name}-{'agent' if with_agent else 'plain'}-{i}"
            wall, rss, cpu, checksum, pauses, pause_ms = run_once(workload, jdk, args.jvm_args, agent_arg, logs,
                                                                  label, args.timeout)
            runs.append(Run(with_agent, i, wall, rss, cpu, checksum, pauses, pause_ms))
            print(f"  {'with agent' if with_agent else 'without   '} {i}: {wall:6.2f} s  {rss / 1024:7.1f} MiB  "
                  f"cpu {cpu:6.2f} s  {pauses} pauses {pause_ms:.0f} ms  checksum {checksum[:16]}", flush=True)
            if reference is None:
                reference = checksum
            elif checksum != reference:
                what = "with the agent" if with_agent else "without the agent (the workload is not deterministic)"
                raise RunError(f"{workload.name}: output checksum differs {what}, run {i}: {checksum} != "
                               f"{reference}; logs in {logs}")
    return runs


# --------------------------------------------------------------------------------------------------------------
# Profiles


def frame_text(frames, depth=2):
    if not frames:
        return "(no frames)"
    shown = " <- ".join(str(frame) for frame in frames[:depth])
    return shown + (" <- ..." if len(frames) > depth else "")


def number(value, digits=3):
    return f"{value:.{digits}f}" if isinstance(value, (int, float)) and not isinstance(value, bool) else "?"


def describe_profile(path, top=3):
    """Lines describing a profile (docs/profile-format.md): run counters and the top contexts."""
    if not path.is_file():
        return [f"no profile at {path}"]
    try:
        text = path.read_text()
        if not text.strip():
            return [f"profile {path} is empty"]
        profile = json.loads(text)
    except (OSError, ValueError) as error:
        return [f"profile {path} unreadable: {error}"]
    if not isinstance(profile, dict):
        return [f"profile {path}: not a JSON object"]
    lines = []
    run = profile.get("run") if isinstance(profile.get("run"), dict) else {}
    counters = [f"{key} {run[key]}" for key in ("allocations", "samples", "traps", "comparisons") if key in run]
    if run.get("sampler") or counters:
        lines.append(f"run: {run.get('sampler', '?')}; {', '.join(counters) or 'no counters'}")
    contexts = profile.get("contexts") if isinstance(profile.get("contexts"), list) else []
    def estimate(context):
        value = context.get("estimate")
        return value if isinstance(value, dict) else {}

    def share_interval(context):
        interval = estimate(context).get("largest_share_ci")
        return interval if isinstance(interval, list) and len(interval) == 2 else None

    estimated = [c for c in contexts if isinstance(c, dict) and estimate(c).get("evidence", "none") != "none"]
    replicated = sum(1 for c in estimated if estimate(c).get("replicated") is True)
    lines.append(f"{len(contexts)} contexts, {len(estimated)} with an estimate, {replicated} replicated "
                 f"(largest identical group >= 10 % at the interval's low end, two objects or more)")
    for rank, context in enumerate(contexts[:top], 1):
        if not isinstance(context, dict):
            continue
        allocation = context.get("allocation") if isinstance(context.get("allocation"), dict) else {}
        evidence = estimate(context).get("evidence", "none")
        interval = share_interval(context)
        share = (f"largest identical group {number(interval[0])}..{number(interval[1])}"
                 if interval else "no estimate")
        lines.append(f"{rank}. {allocation.get('type', '?')} at {frame_text(allocation.get('frames') or [])}: "
                     f"{share} (evidence: {evidence})")
    return lines


# --------------------------------------------------------------------------------------------------------------
# Report


def spread(values):
    middle = statistics.median(values)
    return 100 * (max(values) - min(values)) / middle if middle else 0.0


def geometric_mean(values):
    return math.exp(sum(math.log(value) for value in values) / len(values))


def report(results, agent, smoke=False):
    rows = []
    if agent:
        print("| workload | pairs | wall without | wall with | ratio | peak RSS without | peak RSS with | ratio "
              "| CPU ratio | GC pauses without / with | pause ms without / with | wall spread without / with "
              "| RSS spread without / with |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    else:
        print("| workload | runs | wall (median) | wall min..max | spread | peak RSS (median) | RSS min..max "
              "| CPU (median) |")
        print("|---|---|---|---|---|---|---|---|")
    for name, runs in results.items():
        plain = [run for run in runs if not run.agent]
        profiled = [run for run in runs if run.agent]
        if not plain:
            continue
        wall = statistics.median(run.wall for run in plain)
        rss = statistics.median(run.rss for run in plain)
        if agent and profiled:
            wall_with = statistics.median(run.wall for run in profiled)
            rss_with = statistics.median(run.rss for run in profiled)
            cpu = statistics.median(run.cpu for run in plain)
            cpu_with = statistics.median(run.cpu for run in profiled)
            rows.append((wall_with / wall, rss_with / rss))
            print(f"| {name} | {len(profiled)} | {wall:.2f} s | {wall_with:.2f} s | {wall_with / wall:.3f} "
                  f"| {rss / 1024:.0f} MiB | {rss_with / 1024:.0f} MiB | {rss_with / rss:.3f} "
                  f"| {cpu_with / cpu:.3f} "
                  f"| {statistics.median(r.pauses for r in plain):.0f} / {statistics.median(r.pauses for r in profiled):.0f} "
                  f"| {statistics.median(r.pause_ms for r in plain):.0f} / "
                  f"{statistics.median(r.pause_ms for r in profiled):.0f} "
                  f"| {spread([r.wall for r in plain]):.0f} % / {spread([r.wall for r in profiled]):.0f} % "
                  f"| {spread([r.rss for r in plain]):.0f} % / {spread([r.rss for r in profiled]):.0f} % |")
        elif not agent:
            walls = [run.wall for run in plain]
            rsses = [run.rss / 1024 for run in plain]
            print(f"| {name} | {len(plain)} | {wall:.2f} s | {min(walls):.2f}..{max(walls):.2f} s "
                  f"| {spread(walls):.0f} % | {rss / 1024:.0f} MiB | {min(rsses):.0f}..{max(rsses):.0f} MiB "
                  f"| {statistics.median(run.cpu for run in plain):.2f} s |")
    if agent and rows:
        time_ratio = geometric_mean([row[0] for row in rows])
        memory_ratio = geometric_mean([row[1] for row in rows])
        print()
        for what, ratio in (("runtime", time_ratio), ("memory", memory_ratio)):
            overhead = 100 * (ratio - 1)
            verdict = "met" if overhead <= TARGET_PERCENT else "NOT met"
            if smoke:
                verdict = "smoke sizes, not a measurement"
            print(f"{what} overhead (geometric mean of the median ratios of {len(rows)} workloads): "
                  f"{overhead:+.1f} % (target <= {TARGET_PERCENT:.0f} %: {verdict})")
        return time_ratio, memory_ratio
    return None, None


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agent", help="path of libojx.so")
    parser.add_argument("--options", default="",
                        help="agent options appended after start,file=... (e.g. 'interval=...,rate=...'); "
                             "default: none (the agent's defaults)")
    parser.add_argument("--baseline-options", default=None,
                        help="the run 'without' of each pair runs the agent too, with these options ('' for its "
                             "defaults): compares two agent settings, e.g. --baseline-options '' --options record=T")
    parser.add_argument("--no-agent-only", action="store_true", help="time the workloads alone; no agent needed")
    parser.add_argument("--runs", type=int, default=5, help="pairs (or plain runs) per workload (default 5)")
    parser.add_argument("--warmup", type=int, default=1, help="unmeasured plain runs first (default 1)")
    parser.add_argument("--workloads", default=",".join(ALL_WORKLOADS),
                        help=f"comma-separated subset of {','.join(ALL_WORKLOADS + HEAP_WORKLOADS)} (default the "
                             f"first four)")
    parser.add_argument("--out", help="directory for profiles, logs and results.json "
                                      "(default build/bench-jvm/run-<time>)")
    parser.add_argument("--cache", default=str(REPO / "build" / "bench-jvm"),
                        help="where drivers are built and the javac slice extracted (default build/bench-jvm)")
    parser.add_argument("--jars", action="append", default=[],
                        help="a directory searched for the packages' jars before /usr/share/java (repeatable): e.g. "
                             "liblucene8-java unpacked with dpkg-deb -x where it conflicts with liblucene4.10-java")
    parser.add_argument("--java", default="java", help="the java launcher (default: java on PATH)")
    parser.add_argument("--src-zip", help="the JDK sources (default: JAVA_HOME/lib/src.zip)")
    parser.add_argument("--jvm-args", default="", help="extra JVM options for every run, e.g. '-Xmx2g'")
    parser.add_argument("--freemarker-rounds", type=int, default=FREEMARKER_ROUNDS,
                        help=f"rounds of the freemarker workload (default {FREEMARKER_ROUNDS})")
    parser.add_argument("--smoke", action="store_true", help="tiny work sizes: checks the harness, not overhead")
    parser.add_argument("--timeout", type=float, default=600, help="seconds before a run is killed (default 600)")
    parser.add_argument("--top", type=int, default=3, help="contexts shown per profile (default 3)")
    args = parser.parse_args(argv)

    if args.no_agent_only and args.agent:
        parser.error("--agent and --no-agent-only exclude each other")
    agent_path = None
    if not args.no_agent_only:
        if not args.agent:
            print("overhead.py: no agent given: pass --agent /path/to/libojx.so, or --no-agent-only to time the "
                  "workloads alone", file=sys.stderr)
            return 2
        agent_path = Path(args.agent).resolve()
        if not agent_path.is_file():
            what = "a directory, not a file" if agent_path.is_dir() else "no such file"
            print(f"overhead.py: agent not found: {args.agent} ({what}; build libojx.so first, or use "
                  "--no-agent-only)", file=sys.stderr)
            return 2
    names = [name.strip() for name in args.workloads.split(",") if name.strip()]
    unknown = [name for name in names if name not in ALL_WORKLOADS + HEAP_WORKLOADS]
    if unknown or not names:
        parser.error(f"unknown workload(s) {','.join(unknown)}; choose from "
                     f"{','.join(ALL_WORKLOADS + HEAP_WORKLOADS)}")
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    args.jvm_args = shlex.split(args.jvm_args)
    args.options = args.options.strip(",")
    if args.baseline_options is not None:
        args.baseline_options = args.baseline_options.strip(",")

    out = Path(args.out) if args.out else Path(args.cache) / time.strftime("run-%Y%m%d-%H%M%S")
    out = out.resolve()
    cache = Path(args.cache).resolve()
    try:
        (out / "logs").mkdir(parents=True, exist_ok=True)
        cache.mkdir(parents=True, exist_ok=True)
        jdk = Jdk.find(args.java, args.src_zip)
        workloads = make_workloads(names, jdk, cache, out, "smoke" if args.smoke else "full",
                                   [*args.jars, "/usr/share/java"], args.freemarker_rounds)
    except SetupError as error:
        print(f"overhead.py: {error}", file=sys.stderr)
        return 2

    load = os.getloadavg()
    print(f"{jdk.version()}; {os.cpu_count()} CPUs; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    if load[0] > 0.5:
        print("warning: the machine is busy (load average above 0.5): timings will be noisy")
    versions = package_versions()
    print("packages: " + (", ".join(f"{name} {version}" for name, version in versions.items()) or "?"))
    print(f"agent: {agent_path or 'none (--no-agent-only)'}"
          f"{'; options ' + args.options if agent_path and args.options else ''}")
    if agent_path and args.baseline_options is not None:
        print(f"baseline ('without'): the agent with options '{args.baseline_options}'")
    print(f"{'smoke sizes; ' if args.smoke else ''}{args.warmup} warm-up + {args.runs} "
          f"{'alternating pairs' if agent_path else 'plain runs'} per workload; output in {out}")
    if args.runs < 5:
        print("note: the overhead requirement asks for at least 5 runs each")

    results = {}
    failures = []
    started = time.monotonic()
    for name, workload in workloads.items():
        print(f"\n{name}: {workload.description} [{workload.packages}]", flush=True)
        try:
            results[name] = measure(workload, jdk, args, out, agent_path)
            if workload.output_dir is not None:
                shutil.rmtree(workload.output_dir, ignore_errors=True)
        except RunError as error:
            failures.append(str(error))
            print(f"ERROR: {error}", file=sys.stderr, flush=True)
    elapsed = time.monotonic() - started
    load_end = os.getloadavg()

    print(f"\nResults ({elapsed / 60:.1f} min; load average {load_end[0]:.2f} at the end)\n")
    if results:
        time_ratio, memory_ratio = report(results, agent_path is not None, args.smoke)
    else:
        time_ratio, memory_ratio = None, None
        print("no workload completed")
    profiles = {}
    if agent_path is not None and any(run.agent for runs in results.values() for run in runs):
        print(f"\nProfiles (last run with the agent of each workload, top {args.top} contexts)")
        for name, runs in results.items():
            last = max((run.index for run in runs if run.agent), default=None)
            if last is None:
                continue
            path = out / f"{name}-{last}.json"
            profiles[name] = describe_profile(path, args.top)
            print(f"\n{name} ({path.name}):")
            for line in profiles[name]:
                print(f"  {line}")

    record = {
        "java": jdk.version(), "packages": versions, "cpus": os.cpu_count(),
        "load_average": {"start": load, "end": load_end},
        "agent": str(agent_path) if agent_path else None, "options": args.options, "jvm_args": args.jvm_args,
        "smoke": args.smoke, "warmup": args.warmup, "runs": args.runs,
        "workloads": {name: {"description": workloads[name].description, "packages": workloads[name].packages,
                             "command": shlex.join(workloads[name].argv(jdk.java, args.jvm_args, None)),
                             "runs": [dataclasses.asdict(run) for run in results.get(name, [])]}
                      for name in workloads},
        "geometric_mean_ratio": {"wall": time_ratio, "peak_rss": memory_ratio},
        "profiles": profiles, "failures": failures,
    }
    (out / "results.json").write_text(json.dumps(record, indent=2) + "\n")
    print(f"\nraw measurements: {out / 'results.json'}")
    if failures:
        print(f"\n{len(failures)} workload(s) failed:", file=sys.stderr)
        for failure in failures:
            print(f"  {failure.splitlines()[0]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
