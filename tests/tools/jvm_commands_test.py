#!/usr/bin/env python3
"""End-to-end: `ojx run`, `ojx attach` and `ojx dump` drive the JVM agent on Debian's JDK 17.

usage: jvm_commands_test.py OJX AGENT.so SOURCES WORKDIR

OJX is the ojx command, AGENT.so libojx.so (given with --agent, as a user with an unusual layout would), SOURCES
examples/java_replicas. Python 3's standard library only; about 40 s.

Checks:
  run:    `ojx run --file P -- java … JavaReplicas` exits 0 and leaves a profile (version 1, with contexts), and
          says where; SIGTERM sent to ojx reaches the JVM, which writes its profile at exit; ojx exits with the
          JVM's status (143).
  attach: a JavaReplicas started without the agent is profiled with `ojx attach PID`; `ojx dump PID` writes the
          profile while it keeps running; `ojx dump PID --stop --file F` writes F and stops; a dump after that
          fails with exit 1; the program exits 0.
  errors: attaching to a process that is not a JVM fails at once with exit 1 and a message naming the pid, and
          the process lives on (it is never sent SIGQUIT); a JVM started with -XX:+DisableAttachMechanism fails
          with exit 1 after the listener timeout and lives on; a JVM whose agent refuses to start (ZGC) lives on
          (HotSpot unloads such an agent); a nonexistent pid fails with exit 1; bad options
          and `ojx run` without `--` or without a command exit 2 with a one-line message naming the problem.
"""
import json
import os
import signal
import subprocess
import sys
import time

DEBIAN_JDK = "/usr/lib/jvm/java-17-openjdk-amd64"
# Dense settings, as the demo uses, so that a few seconds give evidence.
DENSE = ["--interval", "8k", "--rate", "1000"]


class Test:
    def __init__(self, ojx, agent, sources, workdir):
        self.ojx = os.path.abspath(ojx)
        self.agent = os.path.abspath(agent)
        self.sources = sources
        self.workdir = os.path.abspath(workdir)
        self.classes = os.path.join(self.workdir, "classes")
        self.java = os.path.join(DEBIAN_JDK, "bin", "java")
        self.problems = []

    def check(self, condition, message, detail=""):
        """Records a problem unless `condition`; `detail` (what happened) is shown only then."""
        if not condition and detail:
            message += f" ({detail.strip()[-500:]})"
        print(("  ok:   " if condition else "  FAIL: ") + message)
        if not condition:
            self.problems.append(message)
        return condition

    def ojx_command(self, *args, timeout=60, with_agent=True):
        command = [self.ojx, *args[:1]] + (["--agent", self.agent] if with_agent else []) + list(args[1:])
        started = time.monotonic()
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=self.workdir)
        result.seconds = time.monotonic() - started
        return result

    def program(self, *jvm_flags, seconds):
        return subprocess.Popen([self.java, *jvm_flags, "-cp", self.classes, "JavaReplicas", "--seconds", str(seconds),
                                 "--threads", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def profile(self, path):
        try:
            with open(path, encoding="utf-8") as handle:
                return json.load(handle)
        except (OSError, ValueError):
            return None

    def valid_profile(self, path, what):
        profile = self.profile(path)
        return self.check(profile is not None and profile.get("ojx_profile_version") == 1
                          and bool(profile.get("contexts")) and profile["run"]["samples"] > 0,
                          f"{what}: {path} is a version 1 profile with contexts and samples"), profile

    # ---- ojx run ----

    def run(self):
        print("--- ojx run")
        profile = os.path.join(self.workdir, "run.json")
        result = self.ojx_command("run", "--file", profile, *DENSE, "--", "java", "-cp", self.classes,
                                  "JavaReplicas", "--seconds", "4", "--threads", "2", timeout=60)
        print(f"  exit {result.returncode} in {result.seconds:.1f} s; {result.stderr.strip().splitlines()[-1:]}")
        self.check(result.returncode == 0, "ojx run exits 0", f"exit {result.returncode}: {result.stderr}")
        self.valid_profile(profile, "ojx run")
        self.check(f": {profile}" in result.stderr, "ojx run says where the profile is")
        # The Java profile through `ojx report`: a table whose first row is a planted site (JavaReplicas plants
        # its replicas at refillInputBuffer, computeSpectrumResult, serializeSnapshotCopy and cloneRoutingTable).
        report = self.ojx_command("report", "--top", "3", profile, with_agent=False)
        rows = [line for line in report.stdout.splitlines() if line.lstrip().startswith("1 ")]
        planted = ("refillInputBuffer", "computeSpectrumResult", "serializeSnapshotCopy", "cloneRoutingTable")
        self.check(report.returncode == 0 and rows and "byte[]" in report.stdout,
                   "ojx report reads the Java profile and lists its sites", report.stdout + report.stderr)
        full = self.ojx_command("report", "--top", "1", "--frames", "8", profile, with_agent=False)
        self.check(any(name in full.stdout for name in planted),
                   "the Java profile's #1 site is a planted one (its allocation frames name it)", full.stdout)

        print("--- ojx run, SIGTERM to ojx")
        profile = os.path.join(self.workdir, "run-term.json")
        command = [self.ojx, "run", "--agent", self.agent, "--file", profile, *DENSE, "--", "java", "-cp",
                   self.classes, "JavaReplicas", "--seconds", "30", "--threads", "1"]
        ojx = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=self.workdir)
        time.sleep(3)
        ojx.send_signal(signal.SIGTERM)
        try:
            _, err = ojx.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            ojx.kill()
            _, err = ojx.communicate()
        print(f"  exit {ojx.returncode}")
        self.check(ojx.returncode == 128 + signal.SIGTERM, "ojx run exits with the JVM's status after SIGTERM, 143",
                   f"exit {ojx.returncode}: {err}")
        self.check(self.profile(profile) is not None, "the JVM ended by the forwarded SIGTERM wrote its profile")

    # ---- ojx attach / dump ----

    def attach(self):
        print("--- ojx attach, dump, dump --stop")
        profile = os.path.join(self.workdir, "attach.json")
        final = os.path.join(self.workdir, "attach-stop.json")
        program = self.program(seconds=12)
        try:
            time.sleep(1.5)
            started = self.ojx_command("attach", str(program.pid), "--file", profile, *DENSE)
            print(f"  attach: exit {started.returncode} in {started.seconds:.1f} s: {started.stderr.strip()}")
            self.check(started.returncode == 0, "ojx attach PID exits 0", started.stderr)
            time.sleep(3)
            dumped = self.ojx_command("dump", str(program.pid), with_agent=False)
            print(f"  dump: exit {dumped.returncode}: {dumped.stderr.strip()}")
            self.check(dumped.returncode == 0, "ojx dump PID exits 0 (the agent found from the JVM's maps)")
            self.check(program.poll() is None, "the program runs on after the dump")
            _, at_dump = self.valid_profile(profile, "ojx dump")
            time.sleep(1)
            stopped = self.ojx_command("dump", str(program.pid), "--stop", "--file", "attach-stop.json")
            print(f"  dump --stop: exit {stopped.returncode}: {stopped.stderr.strip()}")
            self.check(stopped.returncode == 0, "ojx dump PID --stop --file F exits 0")
            _, at_stop = self.valid_profile(final, "ojx dump --stop --file (relative to ojx's directory)")
            if at_dump and at_stop:
                self.check(at_stop["run"]["samples"] > at_dump["run"]["samples"],
                           f"the profile at stop has more samples ({at_stop['run']['samples']}) than the dump "
                           f"before it ({at_dump['run']['samples']})")
            again = self.ojx_command("dump", str(program.pid))
            print(f"  dump after stop: exit {again.returncode}: {again.stderr.strip()}")
            self.check(again.returncode == 1 and str(program.pid) in again.stderr,
                       "a dump after stop fails with exit 1 and a message naming the pid")
            _, err = program.communicate(timeout=30)
        finally:
            if program.poll() is None:  # a failed check above, or the program hung
                program.kill()
                _, err = program.communicate()
        self.check(program.returncode == 0, "the attached program exits 0", f"exit {program.returncode}: {err}")

    # ---- errors ----

    def errors(self):
        print("--- errors")
        sleeper = subprocess.Popen(["sleep", "30"])
        try:
            time.sleep(0.2)
            result = self.ojx_command("attach", str(sleeper.pid))
            print(f"  attach to sleep: exit {result.returncode} in {result.seconds:.1f} s: {result.stderr.strip()}")
            self.check(result.returncode == 1 and str(sleeper.pid) in result.stderr and result.seconds < 10,
                       "attach to a non-JVM fails with exit 1, in time, naming the pid")
            time.sleep(0.2)
            self.check(sleeper.poll() is None, "the non-JVM process was not killed (no SIGQUIT sent to it)")
            result = self.ojx_command("dump", str(sleeper.pid), with_agent=False)
            print(f"  dump of sleep: exit {result.returncode}: {result.stderr.strip()}")
            self.check(result.returncode == 1 and str(sleeper.pid) in result.stderr,
                       "dump of a process without the agent fails with exit 1, naming the pid")
        finally:
            sleeper.kill()
            sleeper.wait()

        program = self.program("-XX:+DisableAttachMechanism", seconds=20)
        try:
            time.sleep(1)
            result = self.ojx_command("attach", str(program.pid))
            print(f"  attach to -XX:+DisableAttachMechanism: exit {result.returncode} in {result.seconds:.1f} s: "
                  f"{result.stderr.strip()}")
            self.check(result.returncode == 1 and str(program.pid) in result.stderr and result.seconds < 15,
                       "attach to a JVM without an attach listener fails with exit 1 after the timeout")
            self.check(program.poll() is None, "that JVM runs on")
        finally:
            program.kill()
            program.communicate()

        # The agent refuses ZGC: Agent_OnAttach fails after it registered its callbacks, and HotSpot unloads a
        # library whose Agent_OnAttach failed (unless it is linked -z nodelete, as libojx.so is), which crashes it.
        program = self.program("-XX:+UseZGC", seconds=4)
        try:
            time.sleep(1.5)
            result = self.ojx_command("attach", str(program.pid), "--file", os.path.join(self.workdir, "zgc.json"))
            print(f"  attach to a ZGC JVM: exit {result.returncode}: {result.stderr.strip()}")
            self.check(result.returncode == 1, "attach to a ZGC JVM is refused with exit 1", result.stderr)
            _, err = program.communicate(timeout=30)
            self.check(program.returncode == 0 and "ZGC" in err, "the ZGC JVM said why and runs to its end",
                       f"exit {program.returncode}: {err}")
        finally:
            if program.poll() is None:
                program.kill()
                program.communicate()

        with open("/proc/sys/kernel/pid_max", encoding="ascii") as handle:
            missing = int(handle.read()) + 1  # above every possible pid
        result = self.ojx_command("attach", str(missing))
        print(f"  attach to pid {missing}: exit {result.returncode}: {result.stderr.strip()}")
        self.check(result.returncode == 1 and "does not exist" in result.stderr, "a nonexistent pid: exit 1")

        for args, names in [(["attach", "1", "--bogus"], "--bogus"), (["attach", "1", "--rate", "fast"], "--rate"),
                            (["attach", "notapid"], "notapid"), (["dump"], "process id"),
                            (["run", "java", "-version"], "--"), (["run", "--"], "--"),
                            (["run", "--file", "a,b", "--", "java"], "--file"),
                            (["run", "--agent", "/nonexistent/libojx.so", "--", "java"], "--agent")]:
            result = self.ojx_command(*args, with_agent=False)
            line = result.stderr.strip()
            print(f"  ojx {' '.join(args)}: exit {result.returncode}: {line}")
            self.check(result.returncode == 2 and names in line and len(line.splitlines()) == 1,
                       f"ojx {' '.join(args)}: exit 2 and one line naming '{names}'")
        for command in ("run", "attach", "dump"):
            result = self.ojx_command(command, "--help", with_agent=False)
            self.check(result.returncode == 0 and "example" in result.stdout, f"ojx {command} --help")

    def main(self):
        if not os.path.exists(os.path.join(DEBIAN_JDK, "bin", "javac")):
            print(f"Debian's JDK 17 is required ({DEBIAN_JDK})")
            return 2
        os.makedirs(self.classes, exist_ok=True)
        subprocess.run([os.path.join(DEBIAN_JDK, "bin", "javac"), "--release", "11", "-d", self.classes,
                        os.path.join(self.sources, "JavaReplicas.java")], check=True)
        # `ojx run -- java` finds java on PATH: Debian's JDK 17 first.
        os.environ["PATH"] = os.path.join(DEBIAN_JDK, "bin") + os.pathsep + os.environ.get("PATH", "")
        self.run()
        self.attach()
        self.errors()
        print("ojx JVM commands: " + ("passed" if not self.problems else f"{len(self.problems)} problem(s)"))
        for problem in self.problems:
            print("FAIL: " + problem)
        return 0 if not self.problems else 1


if __name__ == "__main__":
    if len(sys.argv) != 5:
        print(__doc__)
        sys.exit(2)
    sys.exit(Test(*sys.argv[1:]).main())
