#!/usr/bin/env python3
"""End-to-end: a recorded JVM run with many collections rebuilds, at every collection, the heap the JVM itself counts.

usage: jvm_census_suite.py AGENT.so SOURCES WORKDIR     (the ojx command in the environment variable OJX)

Under Serial, Parallel and G1, JavaReplicas runs with -Xmx64m and --gc-pressure (dozens of collections in a few
seconds) under the agent with record= and census=1: after every relocated collection the agent counts its tracked
objects by a JVMTI heap walk over the objects it tagged (agents/jvm/tagged_census.hpp) and writes the count
into the trace. Then:
  - `ojx heap TRACE --check-census` must pass: every consistency check of the rebuilt heap holds over the whole
    trace (no overlap, no free or move of an unknown object, totals that add up at every census), and every
    census agrees with the heap rebuilt at its event, type by type, objects and bytes, within the tolerance of
    0 objects: the walk and the trace follow the very same objects (the agent tags and walks under the lock its
    registry changes under, and drops a census that a collection overtook), so any difference is a bug;
  - at least 8 censuses were taken per run, and the agent's counters say as many;
  - `ojx replay` of the trace gives the live profile byte for byte (the census records change nothing).
"""
import glob
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "ground_truth"))
import check_profile  # noqa: E402

DEBIAN_JDK = "/usr/lib/jvm/java-17-openjdk-amd64"
TOLERANCE = 0  # live objects per census on which the walk and the rebuilt heap may disagree (see above)
MIN_CENSUSES = 8


def main(argv):
    if len(argv) != 4:
        print(__doc__)
        return 2
    agent, sources, workdir = (os.path.abspath(a) for a in argv[1:])
    ojx = os.environ.get("OJX")
    if not ojx:
        print("the ojx command is needed (environment variable OJX)")
        return 2
    if not os.path.exists(os.path.join(DEBIAN_JDK, "bin", "javac")):
        print(f"Debian's JDK 17 is required ({DEBIAN_JDK})")
        return 2
    classes = os.path.join(workdir, "classes")
    os.makedirs(classes, exist_ok=True)
    subprocess.run([os.path.join(DEBIAN_JDK, "bin", "javac"), "--release", "11", "-d", classes,
                    os.path.join(sources, "JavaReplicas.java")], check=True)
    problems = []
    for seed, gc in enumerate(("Serial", "Parallel", "G1"), start=1):
        profile = os.path.join(workdir, f"census-{gc}.json")
        trace = os.path.join(workdir, f"census-{gc}.ojxt")
        options = f"start,file={profile},record={trace},census=1,seed={seed},rate=1000,interval=8k,quiet"
        run = subprocess.run([os.path.join(DEBIAN_JDK, "bin", "java"), f"-XX:+Use{gc}GC", "-Xmx64m",
                              f"-agentpath:{agent}={options}", "-cp", classes, "JavaReplicas", "--seed", str(seed),
                              "--seconds", "3", "--threads", "4", "--gc-pressure"],
                             capture_output=True, text=True, timeout=120)
        print(f"--- {gc}: -Xmx64m JavaReplicas --threads 4 --gc-pressure, census=1")
        if run.returncode != 0:
            problems.append(f"{gc}: the program exited {run.returncode}: {run.stderr[-1500:]}")
            continue
        check = subprocess.run([ojx, "heap", trace, "--check-census", "--tolerance", str(TOLERANCE)],
                               capture_output=True, text=True, timeout=120)
        print("  " + check.stdout.strip().replace("\n", "\n  ")[-3000:])
        if check.returncode != 0:
            problems.append(f"{gc}: ojx heap --check-census exited {check.returncode}: {check.stderr.strip()}")
        summary = re.search(r": (\d+) census(?:es)?: (\d+) agree exactly, (\d+) within", check.stdout)
        with open(profile, encoding="utf-8") as handle:
            counters = json.load(handle)["run"].get("agent", {})
        print(f"  agent: censuses {counters.get('censuses')}, skipped {counters.get('censuses_skipped')}, "
              f"collections relocated {counters.get('collections_relocated')}")
        if not summary:
            problems.append(f"{gc}: no census summary from ojx heap")
        elif int(summary.group(1)) < MIN_CENSUSES:
            problems.append(f"{gc}: only {summary.group(1)} censuses (need {MIN_CENSUSES})")
        elif int(summary.group(1)) != counters.get("censuses"):
            problems.append(f"{gc}: the trace holds {summary.group(1)} censuses, the agent says it took "
                            f"{counters.get('censuses')}")
        if problem := check_profile.check_replay(trace, profile):
            problems.append(f"{gc}: {problem}")
    print("JVM census suite: " + ("passed" if not problems else f"{len(problems)} problem(s)"))
    for problem in problems:
        print("FAIL: " + problem)
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
