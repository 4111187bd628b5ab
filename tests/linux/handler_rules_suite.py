#!/usr/bin/env python3
"""End-to-end: ojx's signal handlers allocate nothing and take no lock, on real signals, in both agents.

Every handler of ojx's marks the time its own code runs on a thread (ojx/hardware/handler_scope.hpp); the
preloaded library handler_rules.cpp aborts the process when that thread then calls the allocator, operator
new/delete, a blocking pthread lock or semaphore, or a loader lock taker, and at exit says how many handler runs
it watched. Checked:
  - the check itself: handler_rules_probe's own handler, marked as ours, passes when it does nothing and is
    aborted, with the function named, when it calls malloc or pthread_mutex_lock;
  - native (AGENT is libojxpreload.so, PROGRAM native_replicas): the program under the agent at 1000 samples a
    second with watchpoints exits 0, its handlers ran (sampling, steps, traps and the fault guard's loads), and
    the profile has samples;
  - jvm (AGENT is libojx.so): a Java program of three allocating and reading threads under the agent exits 0
    with its output, the handlers ran, the profile has samples and Java access contexts; then the agent attached
    to a running JVM (its probe signal goes to every thread) finds the running threads, and the JVM exits 0.

usage: handler_rules_suite.py RULES.so PROBE native AGENT.so PROGRAM WORKDIR
       handler_rules_suite.py RULES.so PROBE jvm AGENT.so WORKDIR
Exit status 0: passed; 1: a check failed; 77: (jvm) no JDK on PATH.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

SKIP = 77

JAVA_PROGRAM = """
public class Handlers {
    static volatile long sink;
    public static void main(String[] args) throws Exception {
        final long millis = Long.parseLong(args[0]);
        Runnable work = () -> {
            long end = System.nanoTime() + millis * 1_000_000L;
            long sum = 0;
            byte[][] kept = new byte[64][];
            int at = 0;
            while (System.nanoTime() < end) {
                byte[] block = new byte[4096];
                for (int i = 0; i < block.length; i += 64) block[i] = (byte) (i >> 6);
                kept[at++ & 63] = block;
                for (byte[] b : kept)
                    if (b != null) for (int i = 0; i < b.length; i += 8) sum += b[i];
            }
            sink = sum;
        };
        Thread[] others = {new Thread(work), new Thread(work)};
        for (Thread t : others) t.start();
        work.run();
        for (Thread t : others) t.join();
        System.out.println("done");
    }
}
"""


class suite:
    def __init__(self, rules, workdir):
        self.rules = rules
        self.workdir = workdir
        self.problems = []

    def check(self, what, condition, detail=""):
        print(f"  {'ok  ' if condition else 'FAIL'} {what}" + (f": {detail}" if detail and not condition else ""))
        if not condition:
            self.problems.append(what)

    def env(self, preload, **extra):
        env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "OJX_OPTIONS")}
        env["LD_PRELOAD"] = preload
        env.update(extra)
        return env

    def handler_runs(self, stderr):
        found = re.search(r"handler_rules: (\d+) handler runs watched", stderr)
        return int(found.group(1)) if found else 0

    def violation(self, stderr):
        found = re.search(r"handler_rules: .* called inside an ojx signal handler.*", stderr)
        return found.group(0) if found else None

    def probe(self, probe):
        print("--- the check itself")
        clean = subprocess.run([probe, "clean"], env=self.env(self.rules), capture_output=True, text=True, timeout=60)
        self.check("a marked handler that neither allocates nor locks passes",
                   clean.returncode == 0 and self.handler_runs(clean.stderr) == 1,
                   f"exit {clean.returncode}: {clean.stderr[-500:]}")
        for action, function in (("malloc", "malloc"), ("lock", "pthread_mutex_lock")):
            broken = subprocess.run([probe, action], env=self.env(self.rules), capture_output=True, text=True,
                                    timeout=60)
            said = self.violation(broken.stderr) or ""
            self.check(f"a marked handler that calls {function} is aborted, and the call named",
                       broken.returncode == -signal.SIGABRT and f"handler_rules: {function} called" in said,
                       f"exit {broken.returncode}: {broken.stderr[-500:]}")

    def profile_run(self, path):
        try:
            with open(path) as f:
                return json.load(f).get("run", {})
        except (OSError, ValueError) as e:
            self.check("the profile is readable", False, str(e))
            return {}

    def native(self, agent, program):
        print("--- native agent")
        profile = os.path.join(self.workdir, "native.json")
        # copies=8: following sampled loads single-steps inside the handlers too.
        env = self.env(f"{self.rules}:{agent}", OJX_OPTIONS=f"file={profile},rate=1000,seed=3,copies=8")
        result = subprocess.run([program, "--seconds", "3", "--threads", "2"], env=env, capture_output=True,
                                text=True, timeout=300)
        self.check("no handler allocated or locked", self.violation(result.stderr) is None,
                   self.violation(result.stderr))
        self.check("the program exits 0", result.returncode == 0, f"exit {result.returncode}: {result.stderr[-1500:]}")
        runs = self.handler_runs(result.stderr)
        run = self.profile_run(profile)
        print(f"  ({runs} handler runs watched; profile: {run.get('samples', 0)} samples, {run.get('traps', 0)} traps)")
        self.check("the handlers ran under the check", runs >= 100, str(runs))
        self.check("the profile has samples", run.get("samples", 0) > 0, str(run)[:500])
        self.check("values were followed", run.get("agent", {}).get("values_followed", 0) > 0,
                   str(run.get("agent"))[:500])

    def jvm(self, agent):
        java, javac = shutil.which("java"), shutil.which("javac")
        if java is None or javac is None:
            print("SKIPPED: no JDK (java and javac) on PATH")
            return SKIP
        with open(os.path.join(self.workdir, "Handlers.java"), "w") as f:
            f.write(JAVA_PROGRAM)
        subprocess.run([javac, "-d", self.workdir, os.path.join(self.workdir, "Handlers.java")], check=True,
                       timeout=300)
        print("--- JVM agent, from the start")
        profile = os.path.join(self.workdir, "jvm.json")
        result = subprocess.run([java, f"-agentpath:{agent}=start,rate=1000,copies=8,file={profile}", "-cp", self.workdir,
                                 "Handlers", "3000"], env=self.env(self.rules), capture_output=True, text=True,
                                timeout=300)
        self.check("no handler allocated or locked", self.violation(result.stderr) is None,
                   self.violation(result.stderr))
        self.check("the program exits 0 and prints what it prints", result.returncode == 0 and result.stdout == "done\n",
                   f"exit {result.returncode}, {result.stdout!r}: {result.stderr[-1500:]}")
        runs = self.handler_runs(result.stderr)
        run = self.profile_run(profile)
        agent_counters = run.get("agent", {})
        print(f"  ({runs} handler runs watched; profile: {run.get('samples', 0)} samples, {run.get('traps', 0)} "
              f"traps; stack walk failures {agent_counters.get('stack_walk_failures')}, without env "
              f"{agent_counters.get('stack_walks_without_env')})")
        self.check("the handlers ran under the check", runs >= 100, str(runs))
        self.check("the profile has samples", run.get("samples", 0) > 0, str(run)[:500])
        try:
            with open(profile) as f:
                text = f.read()
        except OSError:
            text = ""
        self.check("accesses are attributed to Java methods", "Handlers.lambda$main$0" in text)
        self.check("every sampled thread's env was known", agent_counters.get("stack_walks_without_env", 1) == 0,
                   str(agent_counters))

        print("--- JVM agent, attached to a running JVM")
        jcmd = os.path.join(os.path.dirname(os.path.realpath(java)), "jcmd")
        attached_profile = os.path.join(self.workdir, "attached.json")
        program = subprocess.Popen([java, "-cp", self.workdir, "Handlers", "8000"],
                                   env=self.env(self.rules), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            time.sleep(2)
            tool_env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
            loaded = subprocess.run([jcmd, str(program.pid), "JVMTI.agent_load", agent,
                                     f'"start,rate=1000,file={attached_profile}"'], env=tool_env,
                                    capture_output=True, text=True, timeout=120)
            self.check("the agent attaches", "return code: 0" in loaded.stdout, loaded.stdout[-500:] + loaded.stderr[-500:])
            out, err = program.communicate(timeout=300)
        finally:
            if program.poll() is None:
                program.kill()
                program.wait()
        self.check("no handler allocated or locked", self.violation(err) is None, self.violation(err))
        self.check("the program exits 0 and prints what it prints", program.returncode == 0 and out == "done\n",
                   f"exit {program.returncode}, {out!r}: {err[-1500:]}")
        found = re.search(r"attached to (\d+) running Java threads", err)
        print(f"  ({self.handler_runs(err)} handler runs watched; {found.group(0) if found else 'no attach line'})")
        # The three working threads, at least (JVMTI also lists the JVM's own Java threads).
        self.check("the running threads were found", found is not None and int(found.group(1)) >= 3, err[-1500:])
        attached_counters = self.profile_run(attached_profile).get("agent", {})
        self.check("every sampled thread's env was known", attached_counters.get("stack_walks_without_env", 1) == 0,
                   str(attached_counters))
        return 0


def main(argv):
    if len(argv) < 6 or argv[3] not in ("native", "jvm") or len(argv) != (7 if argv[3] == "native" else 6):
        print(__doc__)
        return 2
    rules, probe, mode, agent = os.path.abspath(argv[1]), os.path.abspath(argv[2]), argv[3], os.path.abspath(argv[4])
    workdir = os.path.abspath(argv[-1])
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    s = suite(rules, workdir)
    s.probe(probe)
    if mode == "native":
        s.native(agent, os.path.abspath(argv[5]))
    elif s.jvm(agent) == SKIP:
        return SKIP
    print("handler rules suite: " + ("passed" if not s.problems else f"{len(s.problems)} problem(s)"))
    return 0 if not s.problems else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
