#!/usr/bin/env python3
"""End-to-end: how programs end by SIGTERM, SIGINT and SIGHUP under the native agent (libojxpreload.so).

Each case runs tests/linux/exit_signal_program.cpp unprofiled, then under the agent, sends the same signal from
this process at the same point (after the program printed "ready"), and requires the same wait status (a death by
signal is the signal) and the same standard output. The profile must then be as README.md ("Which exits write a
profile") says:
  wait       SIGTERM, SIGINT, SIGHUP at their default: the process dies by the signal and leaves a readable
             profile of the allocations it made (run.allocations > 0)
  handler    the program's own handler (sigaction, and signal()) is called, and its exit() writes the profile
  ignore     SIG_IGN: the program keeps running after the signal, exits 0, profile written
  blocked    the signal blocked and taken by sigwait: the same, profile written
  query      sigaction and signal report the default action while ojx's catcher stands in for it
  raise      a signal the program sends itself ends it at once, as the default would (nothing after raise runs)
  reraise    a handler that cleans up, puts the default back and raises again: dies by the signal
  fork       a child made by fork (no exec) and killed by SIGTERM dies by SIGTERM
  timeout    `timeout 2 PROGRAM wait` (coreutils sends SIGTERM): timeout exits 124, the program leaves a profile;
             also with timeout itself profiled (the program's profile is then NAME.<pid>.json)

usage: exit_signals_suite.py AGENT.so PROGRAM WORKDIR
Exit status 0: every check passed; 1: some failed (listed).
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

OPTIONS = "rate=500"
LIMIT = 60  # seconds any run may take


def describe(status):
    return f"signal {-status} ({signal.Signals(-status).name})" if status < 0 else f"exit {status}"


class Suite:
    def __init__(self, agent, program, workdir):
        self.agent, self.program, self.workdir = agent, program, workdir
        self.problems = []

    def check(self, what, condition, detail=""):
        print(f"  {'ok  ' if condition else 'FAIL'} {what}" + (f": {detail}" if detail and not condition else ""))
        if not condition:
            self.problems.append(f"{what}: {detail}")
        return condition

    def fresh(self, name):
        path = os.path.join(self.workdir, name)
        shutil.rmtree(path, ignore_errors=True)
        os.makedirs(path)
        return path

    def env(self, profile):
        env = {k: v for k, v in os.environ.items() if not k.startswith("OJX_AGENT_ROOT") and k != "LD_PRELOAD"}
        if profile is not None:
            env.update(LD_PRELOAD=self.agent, OJX_OPTIONS=f"{OPTIONS},file={profile}")
        return env

    def run(self, args, profile, send=None, then_line=False, ready="ready"):
        """Runs `args` (profiled when `profile` names a file), sends `send` once it printed a line starting with
        `ready` (to the pid on that line when it has one, else to the program), writes a line to its stdin
        when `then_line`. Returns (wait status, stdout, stderr)."""
        process = subprocess.Popen(args, env=self.env(profile), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        out = []
        try:
            if send is not None:
                while True:
                    line = process.stdout.readline()
                    if not line:
                        break
                    out.append(line)
                    if line.startswith(ready):
                        words = line.split()
                        target = int(words[-1]) if words[-1].isdigit() else process.pid
                        time.sleep(0.3)  # some allocations under way
                        os.kill(target, send)
                        break
            if then_line:
                time.sleep(0.3)
                process.stdin.write("go\n")
                process.stdin.flush()
            rest, err = process.communicate(timeout=LIMIT)
        except subprocess.TimeoutExpired:
            process.kill()
            rest, err = process.communicate()
            err += "\n(killed: the run took longer than %d s)" % LIMIT
        return process.returncode, "".join(out) + rest, err

    def profile_ok(self, path):
        """Why `path` is not a readable profile of some allocations, or None."""
        try:
            with open(path) as f:
                profile = json.load(f)
        except (OSError, ValueError) as e:
            return f"not readable: {e}"
        if "ojx_profile_version" not in profile:
            return "no ojx_profile_version"
        if profile.get("run", {}).get("allocations", 0) <= 0:
            return "no allocations recorded"
        return None

    def case(self, name, args, send=None, then_line=False, status=None, profile=True, ready="ready"):
        """One program run unprofiled and profiled: the same status and output; the profile as `profile` says
        (True: written and readable; False: none). `status`: the unprofiled status expected."""
        print(f"{name}:")
        d = self.fresh(name)
        plain_status, plain_out, plain_err = self.run(args, None, send, then_line, ready)
        if status is not None:
            self.check("unprofiled, it ends as expected", plain_status == status,
                       f"{describe(plain_status)}, expected {describe(status)}; {plain_err[-500:]}")
        path = os.path.join(d, "p.json")
        got_status, got_out, got_err = self.run(args, path, send, then_line, ready)
        self.check("profiled, the same wait status", got_status == plain_status,
                   f"{describe(got_status)}, unprofiled {describe(plain_status)}; stderr: {got_err[-1500:]}")
        same = re.sub(r"child ready \d+", "child ready", got_out) == re.sub(r"child ready \d+", "child ready", plain_out)
        self.check("profiled, the same output (a child's pid aside)", same, f"{got_out!r} against {plain_out!r}")
        if profile:
            why = self.profile_ok(path)
            self.check("a readable profile", why is None, f"{why}; stderr: {got_err[-1500:]}")
        else:
            self.check("no profile", not os.path.exists(path), "a profile was written")
        return got_out, got_err

    def wait_cases(self):
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            self.case(f"wait-{sig.name}", [self.program, "wait"], send=sig, status=-sig)

    def handler_cases(self):
        for mode in ("handler", "signal"):
            out, _ = self.case(f"{mode}-SIGTERM", [self.program, mode, "15"], send=signal.SIGTERM, status=0)
            self.check("the program's handler was called", "handled 15" in out, out)

    def other_cases(self):
        out, _ = self.case("ignore-SIGTERM", [self.program, "ignore", "15"], send=signal.SIGTERM, then_line=True,
                           status=0)
        self.check("it kept running", "still here" in out, out)
        out, _ = self.case("blocked-SIGTERM", [self.program, "blocked", "15"], send=signal.SIGTERM, then_line=True,
                           status=0)
        self.check("sigwait took the signal", "sigwait 15" in out, out)
        out, _ = self.case("query", [self.program, "query"], status=0)
        self.check("every signal reads as the default at start and after the default is put back",
                   out.count("at start default (flags 0), replaced default") == 3 and out.count("now default") == 3,
                   out)
        out, _ = self.case("raise-SIGTERM", [self.program, "raise", "15"], status=-signal.SIGTERM, profile=False)
        self.check("nothing after raise ran", "raise returned" not in out, out)
        out, _ = self.case("reraise-SIGTERM", [self.program, "reraise", "15"], send=signal.SIGTERM,
                           status=-signal.SIGTERM, profile=False)
        self.check("its handler cleaned up", "cleaning up" in out, out)
        out, _ = self.case("fork-SIGTERM", [self.program, "fork"], send=signal.SIGTERM, status=0,
                           ready="child ready")
        self.check("the child died by SIGTERM", "child: signal 15" in out, out)
        children = [n for n in os.listdir(os.path.join(self.workdir, "fork-SIGTERM")) if n != "p.json"]
        self.check("the child left no profile", children == [], str(children))

    def untouched_cases(self):
        """exit_signals=untouched: the agent starts no thread of its own, and SIGTERM takes its default action."""
        print("untouched-SIGTERM:")
        d = self.fresh("untouched-SIGTERM")
        path = os.path.join(d, "p.json")
        env = self.env(path)
        env["OJX_OPTIONS"] += ",exit_signals=untouched"
        process = subprocess.Popen([self.program, "wait"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        line = process.stdout.readline()
        with open(f"/proc/{process.pid}/status") as status:
            threads = [int(row.split()[1]) for row in status if row.startswith("Threads:")]
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=LIMIT)
        self.check("the program was ready", line.startswith("ready"), line)
        self.check("one thread: the agent started none", threads == [1], str(threads))
        self.check("SIGTERM ended it by the default action", process.returncode == -signal.SIGTERM,
                   f"{describe(process.returncode)}; {err[-1500:]}")
        self.check("no profile", not os.path.exists(path), "a profile was written")

    def timeout_cases(self):
        timeout = shutil.which("timeout")
        if timeout is None:
            self.check("coreutils' timeout is installed", False, "not found on PATH")
            return
        print("timeout (the program profiled):")
        d = self.fresh("timeout")
        path = os.path.join(d, "p.json")
        env = self.env(None)
        started = time.monotonic()
        result = subprocess.run([timeout, "2", "env", f"LD_PRELOAD={self.agent}", f"OJX_OPTIONS={OPTIONS},file={path}",
                                 self.program, "wait"], env=env, capture_output=True, text=True, timeout=LIMIT)
        took = time.monotonic() - started
        self.check("timeout exits 124 (its program ended by SIGTERM)", result.returncode == 124,
                   f"{describe(result.returncode)}; {result.stderr[-1500:]}")
        self.check("within a few seconds of the 2 s", took < 12, f"{took:.1f} s")
        why = self.profile_ok(path)
        self.check("the program's profile is readable", why is None, f"{why}; {result.stderr[-1500:]}")

        print("timeout (timeout profiled too):")
        d = self.fresh("timeout-profiled")
        path = os.path.join(d, "p.json")
        result = subprocess.run([timeout, "2", self.program, "wait"], env=self.env(path), capture_output=True,
                                text=True, timeout=LIMIT)
        self.check("timeout exits 124", result.returncode == 124,
                   f"{describe(result.returncode)}; {result.stderr[-1500:]}")
        children = [n for n in os.listdir(d) if n.startswith("p.") and n != "p.json"]
        self.check("the program's profile (p.<pid>.json) is readable",
                   len(children) == 1 and self.profile_ok(os.path.join(d, children[0])) is None,
                   f"{os.listdir(d)}; {result.stderr[-1500:]}")


def main(argv):
    if len(argv) != 4:
        print(__doc__)
        return 2
    agent, program, workdir = (os.path.abspath(a) for a in argv[1:4])
    os.makedirs(workdir, exist_ok=True)
    suite = Suite(agent, program, workdir)
    suite.wait_cases()
    suite.handler_cases()
    suite.untouched_cases()
    suite.other_cases()
    suite.timeout_cases()
    for problem in suite.problems:
        print("FAIL: " + problem)
    print("exit signals suite: " + ("passed" if not suite.problems else f"{len(suite.problems)} problem(s)"))
    return 0 if not suite.problems else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
