#!/usr/bin/env python3
"""End-to-end: exact allocation counts on real programs equal the JVM's own count of the same run, site by site.

Each program runs under `count=paths,interval=0`: the counters count every allocation by bytecode site, and the JVM
reports every allocation it makes (JVMTI SampledObjectAlloc at heap sampling interval 0), which the agent adds up at
the site the event names (the profile's exact_counts.sites[].jvm_allocated). `threshold=1g` tracks no object, so
the run pays for the comparison and not for replica profiling. The programs: javac (the JDK's compiler in a loop),
H2 (SQL on a database on disk), Lucene (indexing, then two threads searching), Xalan (an XSLT transform) — the
stress suite's (tests/stress/java) — and tests/jvm/exact_counts/Planted.java (8 threads allocating at the same
sites, exceptions between allocations), on Debian's JDK 17. Checked:
  - with C1 alone (-XX:TieredStopAtLevel=1: no escape analysis, and no C2 intrinsic that allocates for its caller),
    where every bytecode allocation allocates: at every site of every program the count equals the JVM's, but for
    one object JVMTI never reports (the lock `new Object()` in java.lang.Thread's constructor as the launcher's
    DestroyJavaVM thread attaches at exit); at every array site the lengths added equal those of the arrays the JVM
    reported; and the program prints what it prints without the agent;
  - with the JVM's default compilers (C2's escape analysis on): the JVM never allocated more at a site than was
    counted there, and what it did not allocate (the JIT's eliminated allocations) is printed per program.

usage: jvm_counts_against_jvm.py AGENT.so WORKDIR
Exit status 0: passed; 1: a check failed; 77: no JDK 17 or a Debian jar missing.
"""
import glob
import json
import os
import shutil
import subprocess
import sys

from checks import check, finish

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
STRESS = os.path.join(HERE, "..", "stress", "java")
JDK = os.environ.get("OJX_JDK17_HOME", "/usr/lib/jvm/java-17-openjdk-amd64")
C1_ONLY = ["-XX:TieredStopAtLevel=1"]

def jar(pattern):
    found = sorted(glob.glob(os.path.join("/usr/share/java", pattern)))
    return found[-1] if found else None


def programs(work):
    """(name, classpath, main class and arguments) of each program, compiled into WORKDIR; None where a jar is missing."""
    lucene = [jar("lucene-core-4.10*.jar"), jar("lucene-queryparser-4.10*.jar"), jar("lucene-analyzers-common-4.10*.jar")]
    xalan = [jar("xalan2.jar"), jar("serializer.jar")]
    wanted = [
        ("planted", os.path.join(HERE, "exact_counts", "Planted.java"), [],
         ["Planted", os.path.join(work, "planted.truth.json"), "150"]),
        ("javac", os.path.join(STRESS, "JavacStress.java"), [], ["JavacStress", os.path.join(work, "javac-out"), "12", "2"]),
        ("h2", os.path.join(STRESS, "H2Stress.java"), [jar("h2.jar")], ["H2Stress", os.path.join(work, "h2-db"), "3000"]),
        ("lucene", os.path.join(STRESS, "LuceneStress.java"), lucene,
         ["LuceneStress", os.path.join(work, "lucene-index"), "3000", "200"]),
        ("xalan", os.path.join(STRESS, "XalanStress.java"), xalan,
         ["XalanStress", os.path.join(work, "xalan-out.html"), "2000", "2"]),
    ]
    out = []
    for name, source, jars, arguments in wanted:
        if any(j is None for j in jars):
            print(f"SKIPPED: {name}: a jar of its Debian package is missing from /usr/share/java")
            return None
        classes = os.path.join(work, name, "classes")
        os.makedirs(classes)
        command = [os.path.join(JDK, "bin", "javac"), "-nowarn", "-Xlint:none", "-d", classes]
        if jars:
            command += ["-cp", ":".join(jars)]
        subprocess.run(command + [source], check=True, stderr=subprocess.DEVNULL, timeout=300)
        out.append((name, ":".join(jars + [classes]), arguments))
    return out


def clean(work):
    """Removes what a program left in WORKDIR (javac's classes, H2's database files, Lucene's index)."""
    for leftover in glob.glob(os.path.join(work, "javac-out")) + glob.glob(os.path.join(work, "h2-db*")) + \
            glob.glob(os.path.join(work, "lucene-index")):
        if os.path.isdir(leftover):
            shutil.rmtree(leftover)
        else:
            os.remove(leftover)


def run(name, classpath, arguments, work, jit, agent=None):
    clean(work)
    command = [os.path.join(JDK, "bin", "java")] + jit
    if agent:
        command.append(f"-agentpath:{agent}=count=paths,interval=0,threshold=1g,quiet,"
                       f"file={os.path.join(work, name + '.json')}")
    command += ["-cp", classpath] + arguments
    return subprocess.run(command, capture_output=True, text=True, timeout=900)


def sites_of(profile):
    with open(profile) as f:
        return json.load(f).get("exact_counts")


def main(argv):
    if len(argv) != 3:
        print(__doc__)
        return 2
    agent, work = (os.path.abspath(a) for a in argv[1:3])
    if not (os.access(os.path.join(JDK, "bin", "java"), os.X_OK) and os.access(os.path.join(JDK, "bin", "javac"), os.X_OK)):
        print(f"SKIPPED: no JDK 17 with javac at {JDK}")
        return SKIP
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    listed = programs(work)
    if listed is None:
        return SKIP
    for name, classpath, arguments in listed:
        print(f"{name}:")
        plain = run(name, classpath, arguments, work, C1_ONLY)
        check(f"{name} runs without the agent", plain.returncode == 0, plain.stderr[-2000:])
        for jit, label in ((C1_ONLY, "C1 alone"), ([], "default compilers")):
            result = run(name, classpath, arguments, work, jit, agent)
            what = f"{name} ({label})"
            check(f"{what}: exits 0 and prints what it prints without the agent",
                  result.returncode == 0 and result.stdout == plain.stdout, result.stderr[-3000:])
            profile = os.path.join(work, name + ".json")
            section = sites_of(profile) if os.path.exists(profile) else None
            if section is None or not section.get("jvm_reported"):
                check(f"{what}: the profile has exact counts compared with the JVM's", False, result.stderr[-2000:])
                continue
            sites = section["sites"]
            counted = sum(s["objects"] for s in sites)
            allocated = sum(s["jvm_allocated"] for s in sites)
            if jit == C1_ONLY:
                # JVMTI reports no allocation of a thread being attached through JNI: the launcher's DestroyJavaVM
                # thread at exit constructs its java.lang.Thread so, whose one `new Object()` is counted.
                attached = [s for s in sites if s["frame"].startswith("java.lang.Thread.<init>(")
                            and s["type"] == "java.lang.Object" and s["objects"] == s["jvm_allocated"] + 1]
                wrong = [f"{s['type']} at {s['frame']} (bci {s['bci']}): counted {s['objects']}, the JVM "
                         f"{s['jvm_allocated']}" for s in sites if s["objects"] != s["jvm_allocated"]
                         and s not in attached[:1]]
                arrays = [s for s in sites if "elements" in s]
                wrong += [f"{s['type']} at {s['frame']} (bci {s['bci']}): {s['elements']} elements counted, the JVM's "
                          f"arrays {s['jvm_elements']}" for s in arrays if s["elements"] != s["jvm_elements"]]
                check(f"{what}: every one of {len(sites)} sites counted what the JVM allocated ({counted} objects, "
                      f"{sum(s['elements'] for s in arrays)} elements at {len(arrays)} array sites; "
                      f"{section['increments']} increments, {section['corrections']} frames corrected)",
                      not wrong, f"{len(wrong)} sites differ: " + "; ".join(wrong[:10]))
            else:
                beyond = [s for s in sites if s["jvm_allocated"] > s["objects"]]
                check(f"{what}: the JVM allocated no more than was counted at any of {len(sites)} sites", not beyond,
                      "; ".join(f"{s['frame']} bci {s['bci']}: {s['jvm_allocated']} > {s['objects']}" for s in beyond[:10]))
                removed = sorted(sites, key=lambda s: s["jvm_allocated"] - s["objects"])[:3]
                print(f"    counted {counted}, allocated {allocated}: {counted - allocated} never allocated "
                      f"({100.0 * (counted - allocated) / max(counted, 1):.1f} %); most at " +
                      ", ".join(f"{s['type']} {s['frame']} ({s['objects'] - s['jvm_allocated']})"
                                for s in removed if s["objects"] > s["jvm_allocated"]))
    return finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
