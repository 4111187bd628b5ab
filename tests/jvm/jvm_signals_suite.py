#!/usr/bin/env python3
"""End-to-end: the JVM agent notices native code that takes its timer signal, though it cannot interpose sigaction.

A Java program allocates on two threads for 3 s under the agent (sampler=timer,slots=0: no perf-event trigger and no watchpoint trap runs ojx's handlers,
so only the agent's thread's poll can notice), with tests/jvm/signal_taker.cpp preloaded: once the agent samples,
it installs its own handler for the agent's timer signal with the C library's sigaction. Checked:
  - the program prints what it prints unprofiled and exits 0;
  - the taker took a signal, and the profile's run.agent says handlers_displaced_by_program = 1, as does the exit
    summary (without the agent thread's poll nothing would notice: every timer signal now reaches the taker's
    handler, and no trap runs ojx's);
  - how many signals the taker's handler received is printed (at most one per sampled thread whether or not the
    poll switched the timers off: each is re-armed only by ojx's handler).

usage: jvm_signals_suite.py AGENT.so SIGNAL_TAKER.so WORKDIR
Exit status 0: passed; 1: a check failed; 77: no JDK (java and javac) on PATH.
"""
import json
import os
import re
import shutil
import subprocess
import sys

SKIP = 77

PROGRAM = """
public class Allocating {
    static volatile long sink;
    public static void main(String[] args) throws Exception {
        Runnable work = () -> {
            long end = System.nanoTime() + 3_000_000_000L;
            long sum = 0;
            while (System.nanoTime() < end) {
                byte[] block = new byte[4096];
                block[17] = (byte) sum;
                sum += block[17] + block.length;
            }
            sink = sum;
        };
        Thread other = new Thread(work);
        other.start();
        work.run();
        other.join();
        System.out.println("done");
    }
}
"""


def main(argv):
    if len(argv) != 4:
        print(__doc__)
        return 2
    agent, taker, workdir = (os.path.abspath(a) for a in argv[1:4])
    java, javac = shutil.which("java"), shutil.which("javac")
    if java is None or javac is None:
        print("SKIPPED: no JDK (java and javac) on PATH")
        return SKIP
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    with open(os.path.join(workdir, "Allocating.java"), "w") as f:
        f.write(PROGRAM)
    subprocess.run([javac, "-d", workdir, os.path.join(workdir, "Allocating.java")], check=True, timeout=300)
    profile = os.path.join(workdir, "p.json")
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    env["LD_PRELOAD"] = taker
    result = subprocess.run([java, f"-agentpath:{agent}=start,sampler=timer,slots=0,file={profile}", "-cp", workdir,
                             "Allocating"], env=env, capture_output=True, text=True, timeout=300)
    problems = []

    def check(what, condition, detail=""):
        print(f"  {'ok  ' if condition else 'FAIL'} {what}" + (f": {detail}" if detail and not condition else ""))
        if not condition:
            problems.append(what)

    check("the program exits 0 and prints what it prints", result.returncode == 0 and result.stdout == "done\n",
          f"exit {result.returncode}, {result.stdout!r}; {result.stderr[-2000:]}")
    taken = re.search(r"signal_taker: took signal (\d+)", result.stderr)
    check("the native library took a real-time signal", taken is not None, result.stderr[-2000:])
    try:
        with open(profile) as f:
            agent_counters = json.load(f).get("run", {}).get("agent", {})
    except (OSError, ValueError) as e:
        agent_counters = {}
        check("the profile is readable", False, str(e))
    check("the profile says the program displaced ojx's handlers",
          agent_counters.get("handlers_displaced_by_program") == 1, str(agent_counters))
    check("so does the exit summary", "time the program installed its own handler" in result.stderr,
          result.stderr[-2000:])
    received = re.search(r"signal_taker: (\d+) signals received", result.stderr)
    print("  (the library's handler received " + (received.group(1) if received else "an unknown number of") +
          " signals: each thread's timer is re-armed only by ojx's handler, so at most one per sampled thread)")
    print("JVM signals suite: " + ("passed" if not problems else f"{len(problems)} problem(s)"))
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
