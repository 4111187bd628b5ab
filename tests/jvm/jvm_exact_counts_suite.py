#!/usr/bin/env python3
"""End-to-end: exact allocation counts (the JVM agent's count=) equal a planted program's own truth, site by site.

tests/jvm/exact_counts/Planted.java runs 8 threads allocating at sites in loops, branches, switches, try/catch with
exceptions thrown between allocations (caught in the same method, in callers, by a recursive caller, uncaught),
lambdas, throwing constructors, arrays of every kind and static initialisers; it counts each planted site itself
(marked `// S<n>` on the site's line) and writes the counts to a JSON file. On Debian's JDK 17 and Temurin 25, with
count=sites, paths and edges, each with and without -Xverify:all, checked:
  - the program exits 0 and prints exactly what it prints without the agent; no VerifyError or ClassFormatError;
  - every planted site's count in the profile's exact_counts equals the program's truth, exactly;
  - the exit summary has the exact counts line.
Then javac (JDK 17) compiles a few Java files under count=paths with -Xverify:all: exit 0, and the same class files
as without the agent, byte for byte.

usage: jvm_exact_counts_suite.py AGENT.so SOURCE_DIR WORKDIR   (SOURCE_DIR: tests/jvm/exact_counts)
Exit status 0: passed; 1: a check failed; 77: no JDK found.
"""
import filecmp
import json
import os
import re
import shutil
import subprocess
import sys

from checks import check, finish

SKIP = 77
JDKS = [("jdk17", os.environ.get("OJX_JDK17_HOME", "/usr/lib/jvm/java-17-openjdk-amd64")),
        ("temurin25", os.environ.get("OJX_TEMURIN25_HOME", "/usr/lib/jvm/temurin-25-jdk-amd64"))]
PLANS = ["sites", "paths", "edges"]
ROUNDS = "150"

def planted_lines(source):
    """Line number -> site label, from the `// S<n>` marks."""
    lines = {}
    with open(source) as f:
        for number, line in enumerate(f, 1):
            mark = re.search(r"// S(\d+)\b", line)
            if mark:
                lines[number] = mark.group(1)
    return lines


def counted(profile, lines):
    """Site label -> objects counted at its line of Planted.java."""
    with open(profile) as f:
        section = json.load(f).get("exact_counts")
    if section is None:
        return None, None
    got = {}
    for site in section["sites"]:
        at = re.search(r"\(Planted\.java:(\d+)\)$", site["frame"])
        if at and int(at.group(1)) in lines:
            label = lines[int(at.group(1))]
            got[label] = got.get(label, 0) + site["objects"]
    return got, section


def run_planted(home, agent, classes, work, name, plan, verify_all):
    truth_file = os.path.join(work, f"{name}.truth.json")
    command = [os.path.join(home, "bin", "java")]
    if plan:
        command.append(f"-agentpath:{agent}=count={plan},file={os.path.join(work, name + '.json')}")
    if verify_all:
        command.append("-Xverify:all")
    command += ["-cp", classes, "Planted", truth_file, ROUNDS]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    truth = None
    if os.path.exists(truth_file):
        with open(truth_file) as f:
            truth = json.load(f)
    return result, truth


def main(argv):
    if len(argv) != 4:
        print(__doc__)
        return 2
    agent, source, work = (os.path.abspath(a) for a in argv[1:4])
    jdks = [(name, home) for name, home in JDKS
            if os.access(os.path.join(home, "bin", "java"), os.X_OK) and os.access(os.path.join(home, "bin", "javac"), os.X_OK)]
    if not jdks:
        print("SKIPPED: neither JDK 17 nor Temurin 25 (with javac) is installed: " + ", ".join(h for _, h in JDKS))
        return SKIP
    for name, home in JDKS:
        if (name, home) not in jdks:
            print(f"note: {name} not installed at {home}; not run")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    planted = os.path.join(source, "Planted.java")
    lines = planted_lines(planted)
    for jdk, home in jdks:
        print(f"{jdk} ({home}):")
        classes = os.path.join(work, jdk, "classes")
        os.makedirs(classes)
        subprocess.run([os.path.join(home, "bin", "javac"), "-d", classes, planted], check=True, timeout=300)
        plain, plain_truth = run_planted(home, agent, classes, os.path.join(work, jdk), "plain", None, False)
        check(f"{jdk}: the program runs without the agent", plain.returncode == 0 and plain_truth is not None,
              plain.stderr[-2000:])
        if plain.returncode != 0 or plain_truth is None:
            continue
        for plan in PLANS:
            for verify_all in (False, True):
                name = f"{plan}{'-verify' if verify_all else ''}"
                result, truth = run_planted(home, agent, classes, os.path.join(work, jdk), name, plan, verify_all)
                what = f"{jdk} count={plan}{' -Xverify:all' if verify_all else ''}"
                check(f"{what}: exits 0 and prints what it prints without the agent",
                      result.returncode == 0 and result.stdout == plain.stdout,
                      f"exit {result.returncode}, {result.stdout!r} vs {plain.stdout!r}; {result.stderr[-3000:]}")
                check(f"{what}: no VerifyError or ClassFormatError",
                      "VerifyError" not in result.stderr and "ClassFormatError" not in result.stderr,
                      result.stderr[-3000:])
                check(f"{what}: the exit report says what was counted",
                      re.search(r"Exact allocation counts \(count=" + plan + r"\): \d+ objects at \d+ bytecode sites",
                                result.stderr) is not None, result.stderr[-2000:])
                profile = os.path.join(work, jdk, name + ".json")
                if truth is None or not os.path.exists(profile):
                    check(f"{what}: the truth and the profile are written", False)
                    continue
                got, section = counted(profile, lines)
                if got is None:
                    check(f"{what}: the profile has exact_counts", False)
                    continue
                wrong = [f"S{label} (line {line}): counted {got.get(label, 0)}, truth {truth[label]}"
                         for line, label in sorted(lines.items(), key=lambda x: int(x[1]))
                         if got.get(label, 0) != truth[label]]
                check(f"{what}: all {len(lines)} planted sites counted exactly "
                      f"({sum(truth[l] for l in lines.values())} objects; {section['increments']} increments, "
                      f"{section['corrections']} frames corrected)", not wrong, "; ".join(wrong))

    # javac under count=paths, -Xverify:all: the same class files as without the agent.
    jdk17 = dict(jdks).get("jdk17")
    if jdk17 is not None:
        print("javac (jdk17) under count=paths -Xverify:all:")
        sources = [planted, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "jvm",
                                         "counts_storage", "CountsStorageBench.java")]
        outputs = {}
        for name, extra in (("plain", []), ("counted", [f"-J-agentpath:{agent}=count=paths,file={os.path.join(work, 'javac.json')}",
                                                         "-J-Xverify:all"])):
            out = os.path.join(work, "javac", name)
            os.makedirs(out)
            result = subprocess.run([os.path.join(jdk17, "bin", "javac")] + extra +
                                    ["--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED", "-d", out] + sources,
                                    capture_output=True, text=True, timeout=600)
            outputs[name] = (out, result)
        out_plain, plain = outputs["plain"]
        out_counted, counted_run = outputs["counted"]
        check("javac exits 0 under the agent", counted_run.returncode == 0 and plain.returncode == 0,
              counted_run.stderr[-3000:])
        names = sorted(os.path.relpath(os.path.join(d, f), out_plain) for d, _, fs in os.walk(out_plain) for f in fs)
        same = names and all(os.path.exists(os.path.join(out_counted, n)) and
                             filecmp.cmp(os.path.join(out_plain, n), os.path.join(out_counted, n), shallow=False)
                             for n in names)
        check(f"javac writes the same {len(names)} class files, byte for byte", bool(same))
        summary = re.search(r"Exact allocation counts \(count=paths\).*", counted_run.stderr)
        check("javac's exit report says what was counted", summary is not None, counted_run.stderr[-2000:])
        if summary:
            print("    " + summary.group(0))

    return finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
