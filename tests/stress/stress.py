#!/usr/bin/env python3
"""Real programs under the ojx agents: a profiler must never harm the program it watches.

Each family runs real programs from Debian (python3, sqlite3, git, pigz, a C malloc loop; Lucene, H2, Xalan and
javac on the JVM) and small hostile C programs, first unprofiled, then under the agent in these configurations:

  defaults                      the agent's default options
  dense                         the densest documented settings (native: rate=1000,interval=0,copies=64, every
                                allocation tracked, each sampled load's value followed for 64 instructions; JVM:
                                interval=8k,rate=1000,copies=64)
  ... , ulimit -i 64            each of the above with RLIMIT_SIGPENDING 64 (a tiny real-time signal queue)
  ... , queue held              each of the above while another process of the same user holds queued signals,
                                so that only HEADROOM entries of the program's queue limit are free
  ... , queue full              each of the above with RLIMIT_SIGPENDING 64 while another process of the user holds
                                64 queued signals: no real-time signal can be queued at all (every timer_create and
                                sigqueue fails with EAGAIN, every overflowing fasync signal becomes SIGIO)
  defaults, record=             (closefds only) with a trace being recorded: its writer must not write into the
                                program's files

Every profiled run must
  - end by itself within its time limit; otherwise it is killed with SIGKILL and fails as a hang. The limit is
    max(MIN_LIMIT, SLOWDOWN_LIMIT x the unprofiled time), plus the CPU time that other processes took on the machine
    while the step ran, divided by the number of CPUs (at most MAX_STRETCH x the limit in all). Beside a build or
    another test (ctest -j2) a step gets much less CPU than its unprofiled run had, and a slow run is not a hung one;
    on a quiet machine the addition is next to nothing and a hung step is killed at its limit. The run's line says
    how much was added;
  - exit with the unprofiled run's status (a death by signal is named), print the same standard output and write
    the same output files, byte for byte;
  - leave no file of the agent's in the program's directory (profiles go only where file= says);
  - leave a readable JSON profile for every process it started (ojx-<pid>.json, json.load succeeds and it has
    "ojx_profile_version") unless the README documents that the way the process ends writes none (_exit, abort,
    a SIGTERM it sends itself, dash), or have the agent print why there is none: a line beginning "ojx" that says
    "no profile", "not written", "cannot profile", "could not write the profile", "cannot write the profile" or
    "program runs unprofiled" (a thread running unprofiled is not a reason for the process to have none);
  - never contradict itself: a profile the agent says it wrote must exist and be readable, and it must not say
    both that it could not write a file and that it wrote it;
  - at the defaults, not harm the heap: a native step's peak RSS at most RSS_RATIO x the unprofiled run's plus
    RSS_SLACK_MIB; a JVM step, whose every run logs its collections (-Xlog:gc, in every configuration, the
    unprofiled one too), at most PAUSE_RATIO x the unprofiled run's collection pauses plus PAUSE_SLACK, at most
    PAUSE_TIME_RATIO x their total time plus PAUSE_TIME_SLACK_MS, and a heap after collections at most
    AFTER_GC_RATIO x the unprofiled run's plus AFTER_GC_SLACK_MIB, collection by collection (the k-th against the
    unprofiled run's k-th: a run that collects once more, near its end, holds that moment's live data, which the
    unprofiled run never showed; the pause count judges the extra collection) (its peak RSS is shown, not judged:
    G1 sizes its heap by how long pauses run, which load changes). A tracked object that keeps the collector from
    reclaiming garbage shows in all three.
Standard error is not compared: the agents print their summary there. A hung run is reported with its threads'
states and CPU use and, where gdb is installed, its busiest thread's stack.

The user's signal queue is held within a limit set for the program (QUEUE_HELD_LIMIT), not the user's real
limit: filling the real one would starve every other process of the user (CI runs other tests beside this one).

usage: stress.py FAMILY --work DIR [--preload libojxpreload.so] [--jvm-agent libojx.so] [--configs TEXT]
Exit status: 0 every run passed; 1 some run failed (the table says which and how); 77 the family's program or a
tool it needs is not installed (the reason is printed); 2 usage.
"""
import argparse
import ctypes
import dataclasses
import glob
import hashlib
import json
import os
import random
import re
import resource
import select
import shutil
import signal
import subprocess
import sys
import time
from typing import Callable, List, Optional

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))

TINY_SIGPENDING = 64
QUEUE_HELD_LIMIT = 512
HEADROOM = 16
MIN_LIMIT = 60.0  # seconds a profiled step may take, at least
SLOWDOWN_LIMIT = 10.0  # ... or this many times its unprofiled time, whichever is more (profiled runs take < 6x here)
REFERENCE_LIMIT = 300.0
# A step's limit is stretched by the CPU time other processes took while it ran (a parallel build, ctest -j2),
# up to this many times the limit, so that a step that never ends is still killed on a machine that stays busy.
MAX_STRETCH = 4.0
POLL = 0.5  # seconds between looks at the machine's CPU while a step runs

# The heap at the defaults (judge_heap). G1 keeping humongous buffers alive showed as 12 pauses against 275 and a
# peak RSS three times the unprofiled one (FreeMarker), and as 20 pauses against 160 and 222 MiB against 307
# (HumongousStress). Beside other tests on two cores (ctest -j2, 2026-11-28) ojx's runs stayed within these with
# room: peak RSS +6 to +36 MiB (javac 246 → 289, Lucene 189 → 225: the JVM sizes its heap a little differently),
# the same pause count ±2, pause time up to 2.4x on a loaded machine (FreeMarker 110 → 267 ms). G1's peak RSS on
# FreeMarker spreads by itself: 595–697 MiB over twelve unprofiled runs, 636–745 MiB profiled (a clean-clone run
# failed at x1.15: 595 → 745 with 8 → 10 pauses), hence x1.30. The slacks absorb a small program's noise and the
# agent's fixed memory; collection time is the noisiest.
RSS_RATIO, RSS_SLACK_MIB = 1.30, 40
AFTER_GC_RATIO, AFTER_GC_SLACK_MIB = 1.30, 16
PAUSE_RATIO, PAUSE_SLACK = 1.20, 3
PAUSE_TIME_RATIO, PAUSE_TIME_SLACK_MS = 2.0, 300.0

NATIVE_DENSE = "rate=1000,interval=0,copies=64"
JVM_DENSE = "interval=8k,rate=1000,copies=64"


class Skip(Exception):
    pass


@dataclasses.dataclass
class Step:
    argv: List[str]
    stdin: Optional[str] = None  # a file in the run directory
    status: int = 0  # the exit status the step must have unprofiled (negative: killed by that signal)
    # False where the README documents that this way of ending writes no profile ("Which exits write a profile":
    # _exit, abort, a fatal signal, a SIGTERM the process sends itself; dash, which ends with _exit). Any profile that
    # is there must still be readable.
    profile: bool = True


@dataclasses.dataclass
class Program:
    name: str
    kind: str  # "native" (LD_PRELOAD) or "jvm" (-agentpath)
    steps: List[Step]
    prepare: Optional[Callable[[str], None]] = None  # fills the fresh run directory
    outputs: List[str] = dataclasses.field(default_factory=list)  # files compared, relative to the run directory
    env: dict = dataclasses.field(default_factory=dict)
    # Checks the unprofiled and every profiled run's results on their own (e.g. a decompressed file against its
    # input): a list of problems, given the run directory and each step's standard output.
    check: Optional[Callable[[str, List[bytes]], List[str]]] = None
    # Start in the profile directory and name the profile by a relative path (the chdir program).
    relative_profile: bool = False
    extra_configs: list = dataclasses.field(default_factory=list)
    min_limit: float = MIN_LIMIT  # seconds a profiled step may take, at least
    # Only the configurations named here (None: all). The heap families run at the defaults, where the heap is
    # judged, and the densest settings: the signal-queue configurations are the other families' concern.
    configs: Optional[List[str]] = None


@dataclasses.dataclass
class Config:
    name: str
    profiled: bool = True
    dense: bool = False
    limit: Optional[str] = None  # None, "tiny", "held" or "full"
    options: str = ""  # added to the agent's options


CONFIGS = [
    Config("defaults"),
    Config("dense", dense=True),
    Config(f"defaults, ulimit -i {TINY_SIGPENDING}", limit="tiny"),
    Config(f"dense, ulimit -i {TINY_SIGPENDING}", dense=True, limit="tiny"),
    Config("defaults, queue held", limit="held"),
    Config("dense, queue held", dense=True, limit="held"),
    Config("defaults, queue full", limit="full"),
    Config("dense, queue full", dense=True, limit="full"),
]
UNPROFILED = Config("unprofiled", profiled=False)


@dataclasses.dataclass
class StepResult:
    argv: List[str]
    pid: int
    status: Optional[int]  # None: hung and killed
    seconds: float
    stdout: bytes
    stderr: str
    note: str = ""  # for a hung step: what its threads were doing
    stack: List[str] = dataclasses.field(default_factory=list)  # ... and where the busiest one was (gdb)
    limit: float = 0.0  # its time limit, seconds
    extra: float = 0.0  # seconds added to the limit for the CPU time other processes took while it ran
    max_rss_kib: int = 0  # the step's process's peak resident memory (wait4)
    gc: Optional["GcLog"] = None  # a JVM step's collections (-Xlog:gc)


@dataclasses.dataclass
class GcLog:
    pauses: int
    pause_ms: float
    after_mib: int  # the most the heap held right after a collection: what the collector could not reclaim
    afters: list = dataclasses.field(default_factory=list)  # the heap after each collection, in order (MiB)


GC_PAUSE = re.compile(r"\bPause\b.* ([0-9.]+)ms$")
GC_AFTER = re.compile(r"->(\d+)M\(")


def read_gc_log(path):
    """The collection pauses a JVM logged with -Xlog:gc ("GC(3) Pause Young (Normal) (G1 Evacuation Pause)
    24M->3M(256M) 2.345ms"; G1's concurrent cycle's Remark and Cleanup are pauses too) and the largest heap after
    one, or None without a log."""
    times, afters = [], []
    try:
        with open(path, errors="replace") as f:
            for line in f:
                if m := GC_PAUSE.search(line):
                    times.append(float(m.group(1)))
                    if a := GC_AFTER.search(line):
                        afters.append(int(a.group(1)))
    except OSError:
        return None
    return GcLog(len(times), sum(times), max(afters, default=0), afters)


# ---- Another process of the same user holding queued signals ----

HOLDER = r"""
import errno, signal, sys, threading
sig = signal.SIGRTMIN + 5
signal.pthread_sigmask(signal.SIG_BLOCK, {sig})
held = 0
while held < 1000000:
    try:
        signal.pthread_kill(threading.get_ident(), sig)
    except OSError as error:
        if error.errno != errno.EAGAIN:
            raise
        break
    held += 1
print(held, flush=True)
sys.stdin.read()
"""


_libc = ctypes.CDLL(None, use_errno=True)
PR_SET_PDEATHSIG = 1


def die_with_driver():
    """In a child before exec: SIGKILL it when the driver dies (ctest's timeout), so that a hung program, which may
    ignore SIGTERM, is not left running."""
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def sigpending_limit(value):
    def apply():
        if value is not None:
            resource.setrlimit(resource.RLIMIT_SIGPENDING, (value, value))
        die_with_driver()
    return apply


class QueueHolder:
    """A child that blocks a real-time signal and queues it to itself until the queue refuses (EAGAIN), with
    RLIMIT_SIGPENDING `limit`: the user's pending count is then that high. A program whose limit is QUEUE_HELD_LIMIT
    beside a holder of QUEUE_HELD_LIMIT - HEADROOM has HEADROOM entries left; beside a holder of its own limit,
    none."""

    def __init__(self, limit):
        self.limit = limit

    def __enter__(self):
        self.process = subprocess.Popen([sys.executable, "-c", HOLDER], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, preexec_fn=sigpending_limit(self.limit))
        ready, _, _ = select.select([self.process.stdout], [], [], 30)
        line = self.process.stdout.readline() if ready else b""
        if not line.strip().isdigit():
            self.__exit__(None, None, None)
            raise RuntimeError("the signal-queue holder did not start")
        # SigQ in /proc: the user's queued signals / this task's limit.
        with open(f"/proc/{self.process.pid}/status") as status:
            queued = int(re.search(r"^SigQ:\s*(\d+)/", status.read(), re.M).group(1))
        # The kernel stops one short of the limit on some versions: the program then has one entry more.
        if queued < self.limit - 2:
            self.__exit__(None, None, None)
            raise RuntimeError(f"the holder queued only {queued} signals")
        self.held = int(line)
        return self

    def __exit__(self, *exc):
        try:
            self.process.stdin.close()
            self.process.wait(timeout=10)
        except (subprocess.TimeoutExpired, OSError):
            self.process.kill()
            self.process.wait()
        return False


# ---- Running one program in one configuration ----

class Runner:
    def __init__(self, args):
        self.preload = args.preload
        self.jvm_agent = args.jvm_agent
        self.work = args.work

    def agent_options(self, program, config, profiles):
        profile = "ojx-%p.json" if program.relative_profile else os.path.join(profiles, "ojx-%p.json")
        parts = ["start"] if program.kind == "jvm" else []
        parts.append(f"file={profile}")
        if config.dense:
            parts.append(JVM_DENSE if program.kind == "jvm" else NATIVE_DENSE)
        if config.options:
            parts.append(config.options.format(profiles=profiles))
        return ",".join(parts)

    def run(self, program, config, limits):
        """Runs every step of the program in a fresh directory; `limits` holds each step's time limit."""
        root = os.path.join(self.work, program.name, re.sub(r"[^a-z0-9]+", "-", config.name.lower()).strip("-"))
        shutil.rmtree(root, ignore_errors=True)
        run_dir, profiles = os.path.join(root, "run"), os.path.join(root, "profiles")
        os.makedirs(run_dir)
        os.makedirs(profiles)
        if program.prepare:
            program.prepare(run_dir)
        env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "OJX_OPTIONS", "JAVA_TOOL_OPTIONS",
                                                                  "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS")}
        env.update({"LC_ALL": "C", "TZ": "UTC"})
        env.update({k: v.format(run=run_dir) for k, v in program.env.items()})
        options = self.agent_options(program, config, profiles) if config.profiled else None
        preexec = die_with_driver
        if config.limit == "tiny":
            preexec = sigpending_limit(TINY_SIGPENDING)
        elif config.limit == "held":
            preexec = sigpending_limit(QUEUE_HELD_LIMIT)
        elif config.limit == "full":
            preexec = sigpending_limit(TINY_SIGPENDING)
        holder = {"held": QueueHolder(QUEUE_HELD_LIMIT - HEADROOM),
                  "full": QueueHolder(TINY_SIGPENDING)}.get(config.limit)
        results = []
        if holder:
            holder.__enter__()
        try:
            for index, step in enumerate(program.steps):
                argv = [a.format(run=run_dir) for a in step.argv]
                step_env = dict(env)
                if options is not None and program.kind == "native":
                    step_env["LD_PRELOAD"] = self.preload
                    step_env["OJX_OPTIONS"] = options
                elif options is not None:
                    argv.insert(1, f"-agentpath:{self.jvm_agent}={options}")
                if program.kind == "jvm":
                    argv.insert(1, f"-Xlog:gc:file={os.path.join(root, f'step{index}.gc.log')}")
                results.append(self.run_step(argv, step, step_env, profiles if program.relative_profile else run_dir,
                                             run_dir, root, index, preexec, limits[index]))
                if results[-1].status is None:
                    break  # hung: the steps after it would run on its half-done work
        finally:
            if holder:
                holder.__exit__(None, None, None)
        return results, run_dir, profiles

    @staticmethod
    def run_step(argv, step, env, cwd, run_dir, root, index, preexec, limit):
        out_path, err_path = os.path.join(root, f"step{index}.out"), os.path.join(root, f"step{index}.err")
        stdin = open(os.path.join(run_dir, step.stdin), "rb") if step.stdin else subprocess.DEVNULL
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            started = time.monotonic()
            machine_before = machine_cpu_seconds()
            process = subprocess.Popen(argv, cwd=cwd, env=env, stdin=stdin, stdout=out, stderr=err,
                                       start_new_session=True, preexec_fn=preexec)
            note, stacks, allowed, max_rss = "", [], limit, 0
            while True:
                status = reap(process, max(0.0, min(POLL, started + allowed - time.monotonic())))
                if status is not None:
                    status, max_rss = status
                    break
                # The wall time the step lost to other processes: their CPU time spread over all the CPUs. On a
                # quiet machine that is next to nothing, and a hung step (spinning or blocked) is killed at its
                # limit; on a busy one the step is slow, not hung. (The machine's ticks and the group's are counted
                # apart: on a quiet machine the difference can be a tick or two below zero.)
                others = machine_cpu_seconds() - machine_before - group_cpu_seconds(process.pid)
                allowed = min(limit + max(0.0, others) / os.cpu_count(), MAX_STRETCH * limit)
                if time.monotonic() - started >= allowed:
                    status = None
                    break
            if status is None:
                note, busiest = hang_note(process.pid)
                stacks = backtrace(busiest, os.path.join(root, f"step{index}.gdb.txt"))
            seconds = time.monotonic() - started
            # Whatever is left of its process group (children of a hung step; nothing after a clean exit).
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            if status is None:
                process.wait()
        gc = read_gc_log(os.path.join(root, f"step{index}.gc.log"))
        if step.stdin:
            stdin.close()
        with open(out_path, "rb") as out, open(err_path, "rb") as err:
            return StepResult(argv, process.pid, status, seconds, out.read(), err.read().decode(errors="replace"),
                              note, stacks, limit, allowed - limit, max_rss, gc)


def reap(process, timeout):
    """Waits up to `timeout` seconds for the process to end: (its status as Popen gives it, its peak RSS in KiB),
    or None while it runs. wait4 is what tells one child's peak; Popen.wait would not."""
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid == process.pid:
            process.returncode = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
            return process.returncode, usage.ru_maxrss
        if time.monotonic() >= deadline:
            return None
        time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))


def thread_times(group):
    """Every thread of the processes in a process group: (pid, tid) -> name, state, CPU time (clock ticks)."""
    threads = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            name = stat[stat.index("(") + 1:stat.rindex(")")]
            fields = stat[stat.rindex(")") + 2:].split()
            if fields[2] != str(group):  # not in the step's process group
                break
            threads[(pid, tid)] = (name, fields[0], int(fields[11]) + int(fields[12]))
    return threads


def machine_cpu_seconds():
    """The CPU time every CPU has spent on anything but idling and waiting for I/O since boot (/proc/stat). Steal is
    counted: in a virtual machine it is time the host gave to others, which the step could not have either."""
    with open("/proc/stat") as f:
        user, nice, system, idle, iowait, irq, softirq, steal = map(int, f.readline().split()[1:9])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def group_cpu_seconds(group):
    """The CPU time the processes of a process group have used: their own threads' (living or ended) and that of
    the children they have waited for (a child's time moves into its parent's cutime, cstime when it is reaped)."""
    ticks = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[2] == str(group):
            ticks += sum(int(field) for field in fields[11:15])  # utime stime cutime cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def hang_note(group):
    """A hung step's processes and threads over one second: a livelock burns CPU, a deadlock sleeps. Returns the
    text and the busiest (pid, tid), or the step's own process when none is busy."""
    before = thread_times(group)
    time.sleep(1)
    after = thread_times(group)
    if not after:
        return "", None
    ticks = os.sysconf("SC_CLK_TCK")
    busy = sorted(((after[t][2] - before[t][2]) / ticks, after[t][0], t) for t in after if t in before)
    busy = [b for b in reversed(busy) if b[0] > 0.05]
    states = {}
    for name, state, _ in after.values():
        states[state] = states.get(state, 0) + 1
    processes = len({pid for pid, _ in after})
    text = (f"{processes} process{'es' if processes > 1 else ''}, {len(after)} threads "
            f"({', '.join(f'{n} {s}' for s, n in sorted(states.items()))})")
    if busy:
        text += "; busy: " + ", ".join(f"{name} (pid {pid} tid {tid}) {cpu:.0%} CPU"
                                       for cpu, name, (pid, tid) in busy[:3])
    else:
        text += "; none using CPU"
    busiest = busy[0][2] if busy else (str(group), str(group))
    pending = pending_signals(*busiest)
    if pending:
        text += f"; pending for tid {busiest[1]}: {pending}"
    return text, busiest


def pending_signals(pid, tid):
    """The signals pending for a thread and its process (SigPnd, ShdPnd in /proc), by name: a trap storm shows as
    a SIGTRAP that is always pending."""
    names = set()
    for path, field in ((f"/proc/{pid}/task/{tid}/status", "SigPnd"), (f"/proc/{pid}/status", "ShdPnd")):
        try:
            with open(path) as f:
                mask = int(re.search(rf"^{field}:\s*([0-9a-f]+)", f.read(), re.M).group(1), 16)
        except (OSError, AttributeError):
            continue
        for number in range(1, 65):
            if mask & (1 << (number - 1)):
                try:
                    names.add(signal.Signals(number).name)
                except ValueError:
                    names.add(f"SIGRTMIN+{number - signal.SIGRTMIN}" if number >= signal.SIGRTMIN else str(number))
    return ", ".join(sorted(names))


def backtrace(busiest, path):
    """Where a hung step's busiest thread is (or its own main thread, when none is busy), from gdb where it is
    installed; every thread of that process is saved to `path`. The fixer's first question about a hang."""
    gdb = shutil.which("gdb")
    if not gdb or busiest is None:
        return []
    pid, tid = busiest
    try:
        result = subprocess.run([gdb, "-batch", "-nx", "-p", str(pid), "-ex", "set pagination off",
                                 "-ex", "thread apply all bt 20"], capture_output=True, text=True, timeout=60,
                                errors="replace")
    except (subprocess.TimeoutExpired, OSError):
        return ["(gdb could not take a backtrace in 60 s)"]
    with open(path, "w") as f:
        f.write(result.stdout)
    block, inside = [], False
    for line in result.stdout.splitlines():
        if line.startswith("Thread "):
            inside = f"LWP {tid})" in line
        elif inside and line.startswith("#"):
            block.append(re.sub(r"\s+", " ", line)[:160])
    return block[:10] + [f"(every thread: {path})"]


# ---- Judging a run against the unprofiled one ----

def describe_status(status):
    if status is None:
        return "hung"
    if status < 0:
        try:
            name = signal.Signals(-status).name
        except ValueError:
            name = f"signal {-status}"
        return f"killed by {name} (exit {status})"
    return f"exit {status}"


def describe_limit(limit, extra):
    """A time limit and what other processes' CPU time added to it (run_step)."""
    text = f"limit {limit:.0f} s"
    return text + f" + {extra:.0f} s that other processes took" if round(extra) else text


def first_difference(got, want):
    if len(got) != len(want) and (want.startswith(got) or got.startswith(want)):
        return f"{len(got)} bytes, unprofiled {len(want)} bytes (one is a prefix of the other: truncated?)"
    got_lines, want_lines = got.split(b"\n"), want.split(b"\n")
    for number, (g, w) in enumerate(zip(got_lines, want_lines), 1):
        if g != w:
            show = lambda b: b[:120].decode(errors="replace")
            return f"line {number}: {show(g)!r}, unprofiled {show(w)!r}"
    return f"{len(got_lines)} lines, unprofiled {len(want_lines)} lines"


def file_digest(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


REASON = re.compile(r"no profile|not written|cannot profile|could not write the profile|cannot write the profile|"
                    r"program runs unprofiled", re.I)


def read_profile(path):
    """None if the file is a readable ojx profile, else what is wrong with it."""
    try:
        with open(path) as f:
            profile = json.load(f)
    except (OSError, ValueError) as error:
        return f"{type(error).__name__}: {error}"
    if not isinstance(profile, dict) or "ojx_profile_version" not in profile:
        return "not an ojx profile (no ojx_profile_version)"
    return None


def condense(problems, keep=3):
    """The first problems in full; the rest (often the later steps failing because an earlier one did) counted."""
    if len(problems) <= keep + 1:
        return problems
    return problems[:keep] + [f"and {len(problems) - keep} more (later steps)"]


# Access samples whose Java stack AsyncGetCallTrace could not walk at the interrupted pc, in HotSpot's arraycopy
# stubs and the like, are attributed to the calling Java method (jvm_agent.cpp, walk_from_caller). Without that,
# 24-63 % of the access samples of Lucene and xalan had no Java frame at all. Checked where a run has enough
# access samples for a share to mean something.
UNWALKED = ("[unknown Java]", "[not walkable Java]")
UNWALKED_MIN_SAMPLES = 20
UNWALKED_MAX_SHARE = 0.25


def unwalked_java(profiles):
    total = unwalked = 0
    for name in sorted(os.listdir(profiles)):
        try:
            with open(os.path.join(profiles, name)) as f:
                contexts = json.load(f).get("contexts", [])
        except (OSError, ValueError):
            continue  # an unreadable profile is a problem of its own, reported above
        for context in contexts:
            for access in context.get("accesses", []):
                total += access.get("samples", 0)
                if access.get("frames", [None])[0] in UNWALKED:
                    unwalked += access.get("samples", 0)
    if total >= UNWALKED_MIN_SAMPLES and unwalked > UNWALKED_MAX_SHARE * total:
        return [f"{unwalked} of {total} access samples have no Java frame ({', '.join(UNWALKED)})"]
    return []


def judge_heap(results, ref_results):
    """What the agent did to the heap, step by step, against the unprofiled run (the docstring's tolerances). A JVM
    is judged by its collections, not its RSS: G1 grows its heap when a pause runs long, and on a loaded machine
    one did (62 ms), doubling a profiled run's RSS (222 → 430 MiB) while every collection still emptied the heap
    (179M->8M); garbage kept alive shows as a fuller heap after collections and as more of them."""
    problems = []
    for index, (got, want) in enumerate(zip(results, ref_results)):
        if got.status is None:
            continue
        prefix = f"step {index + 1}: " if len(results) > 1 else ""
        if got.gc and want.gc:
            if got.gc.pauses > PAUSE_RATIO * want.gc.pauses + PAUSE_SLACK:
                problems.append(f"{prefix}{got.gc.pauses} collection pauses, unprofiled {want.gc.pauses}")
            if got.gc.pause_ms > PAUSE_TIME_RATIO * want.gc.pause_ms + PAUSE_TIME_SLACK_MS:
                problems.append(f"{prefix}collection pauses {got.gc.pause_ms:.0f} ms, unprofiled "
                                f"{want.gc.pause_ms:.0f} ms")
            for k, (after, unprofiled) in enumerate(zip(got.gc.afters, want.gc.afters)):
                allowed_mib = AFTER_GC_RATIO * unprofiled + AFTER_GC_SLACK_MIB
                if after > allowed_mib:
                    problems.append(f"{prefix}heap after collection {k + 1}: {after} MiB, unprofiled {unprofiled} "
                                    f"MiB (allowed {allowed_mib:.0f})")
                    break
            continue
        allowed_kib = RSS_RATIO * want.max_rss_kib + RSS_SLACK_MIB * 1024
        if want.max_rss_kib and got.max_rss_kib > allowed_kib:
            problems.append(f"{prefix}peak RSS {got.max_rss_kib // 1024} MiB, unprofiled {want.max_rss_kib // 1024} "
                            f"MiB (allowed {allowed_kib / 1024:.0f})")
    return problems


def heap_line(results):
    """A run's heap figures for its table row: peak RSS, and a JVM's collection pauses."""
    rss = max((r.max_rss_kib for r in results), default=0) // 1024
    pauses = [r.gc for r in results if r.gc]
    text = f"{rss} MiB"
    if pauses:
        text += f", {sum(g.pauses for g in pauses)} pauses {sum(g.pause_ms for g in pauses):.0f} ms"
    return text


def judge(program, config, results, run_dir, profiles, reference):
    """The list of problems of a run: empty when it behaved as the unprofiled run."""
    problems = []
    ref_results, ref_dir = reference
    for index, (got, want) in enumerate(zip(results, ref_results)):
        label = f"step {index + 1} ({os.path.basename(got.argv[0])})" if len(program.steps) > 1 else ""
        prefix = label + ": " if label else ""
        if got.status is None:
            problems.append(f"{prefix}hung: killed after {got.seconds:.0f} s ({describe_limit(got.limit, got.extra)})"
                            + (f" [{got.note}]" if got.note else ""))
            continue
        if got.status != want.status:
            problems.append(f"{prefix}{describe_status(got.status)}, unprofiled {describe_status(want.status)}")
        if got.stdout != want.stdout:
            problems.append(f"{prefix}stdout differs: {first_difference(got.stdout, want.stdout)}")
    problems = condense(problems)
    hung = any(r.status is None for r in results)
    if len(results) < len(program.steps) and not hung:
        problems.append("not every step ran")
    if not hung:
        for name in program.outputs:
            got, want = os.path.join(run_dir, name), os.path.join(ref_dir, name)
            if not os.path.exists(got):
                problems.append(f"output file {name} missing")
            elif os.path.getsize(got) != os.path.getsize(want):
                problems.append(f"output file {name}: {os.path.getsize(got)} bytes, unprofiled "
                                f"{os.path.getsize(want)}")
            elif file_digest(got) != file_digest(want):
                problems.append(f"output file {name} differs (same size)")
        if program.check:
            problems += program.check(run_dir, [r.stdout for r in results])
    # The agent writes only where asked.
    for directory, _, files in os.walk(run_dir):
        for name in files:
            if name.startswith("ojx") or name.endswith(".ojxt"):
                problems.append(f"agent file {os.path.relpath(os.path.join(directory, name), run_dir)} in the "
                                "program's directory")
    if not config.profiled:
        return problems
    if config.name == "defaults":
        problems += judge_heap(results, ref_results)
    for name in sorted(os.listdir(profiles)):
        if name.endswith(".ojxt"):
            continue  # traces (record=) are read by ojx replay, not json
        error = read_profile(os.path.join(profiles, name))
        if error:
            problems.append(f"profile {name} unreadable: {error}")
    if program.kind == "jvm":
        problems += unwalked_java(profiles)
    for index, result in enumerate(results):
        if result.status is None:
            continue
        prefix = f"step {index + 1}: " if len(program.steps) > 1 else ""
        lines = [line for line in result.stderr.splitlines() if line.startswith("ojx")]
        # "profile written to P", "profile written at exit to P"; a path may end the sentence or a clause.
        said_written = set(re.findall(r"profile written (?:[a-z ]+ )?to (\S+?)[;:,.]?(?=\s|$)", result.stderr, re.M))
        said_failed = set(re.findall(r"(?:could not|cannot) write the profile to (\S+?)[;:,.]?(?=\s|$)",
                                     result.stderr, re.M))
        for path in said_written:
            full = os.path.join(profiles, path) if not os.path.isabs(path) else path
            if path in said_failed:
                problems.append(f"{prefix}the agent said both that it could not write {path} and that it wrote it")
            elif not os.path.exists(full):
                problems.append(f"{prefix}the agent said it wrote {path}, which is not there (relative to where the "
                                "program started)" if not os.path.isabs(path) else
                                f"{prefix}the agent said it wrote {path}, which does not exist")
            elif read_profile(full):
                problems.append(f"{prefix}the agent said it wrote {path}, which is unreadable: {read_profile(full)}")
        own = os.path.join(profiles, f"ojx-{result.pid}.json")
        if not os.path.exists(own) and program.steps[index].profile:
            reasons = [line for line in lines if REASON.search(line) and not re.search(r"\bthread", line, re.I)]
            if not reasons:
                problems.append(f"{prefix}no profile ojx-{result.pid}.json and no reason from the agent")
    return problems


# ---- The families ----

def need(tool, package):
    path = shutil.which(tool)
    if not path:
        raise Skip(f"{tool} is not installed (Debian package {package})")
    return path


def compile_c(family_dir, source, name):
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise Skip("no C compiler (cc) to build the test programs")
    os.makedirs(os.path.join(family_dir, "bin"), exist_ok=True)
    out = os.path.join(family_dir, "bin", name)
    subprocess.run([cc, "-O2", "-g", "-pthread", "-Wall", "-o", out, os.path.join(HERE, "native", source)],
                   check=True)
    return out


def java_home():
    candidates = [os.environ.get("JAVA_HOME", ""), "/usr/lib/jvm/java-17-openjdk-amd64", "/usr/lib/jvm/default-java"]
    javac = shutil.which("javac")
    if javac:
        candidates.append(os.path.dirname(os.path.dirname(os.path.realpath(javac))))
    for home in candidates:
        if home and os.access(os.path.join(home, "bin", "javac"), os.X_OK):
            return home
    raise Skip("no JDK with javac (Debian package openjdk-17-jdk-headless)")


def jar(pattern, package):
    found = sorted(glob.glob(os.path.join("/usr/share/java", pattern)))
    if not found:
        raise Skip(f"/usr/share/java/{pattern} not found (Debian package {package})")
    return found[-1]


def compile_java(family_dir, source, classpath):
    """Compiles `source`, a file of tests/stress/java or a path of its own (a benchmark's workload)."""
    home = java_home()
    classes = os.path.join(family_dir, "classes")
    os.makedirs(classes, exist_ok=True)
    command = [os.path.join(home, "bin", "javac"), "-nowarn", "-Xlint:none", "-d", classes]
    if classpath:
        command += ["-cp", classpath]
    subprocess.run(command + [os.path.join(HERE, "java", source)], check=True, stderr=subprocess.DEVNULL)
    return os.path.join(home, "bin", "java"), classes


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


PYTHON_WORKLOAD = r"""
import hashlib, sys
n = int(sys.argv[1])
digest = hashlib.sha256()
table, chunks = {}, []
for i in range(n):
    key = "k%d" % (i * 7919 % 1000003)
    value = (key.encode() * (1 + (1024 + i % 3072) // len(key)))[: 1024 + i % 3072]  # bytes of 1-4 KiB
    table[key] = value
    if i % 3 == 0:
        chunks.append(bytearray(value))
    if len(chunks) > 400:
        joined = b"".join(chunks)
        digest.update(joined[::97])
        chunks.clear()
    if i % 5 == 0:
        old = table.pop("k%d" % ((i // 2) * 7919 % 1000003), None)
        if old is not None:
            digest.update(old[:16])
rows = [[j * i for j in range(300)] for i in range(n // 10)]
digest.update(str(sum(map(sum, rows))).encode())
items = sorted(table.items())
for key, value in items[:: max(1, len(items) // 2000)]:
    digest.update(key.encode() + value[-8:])
inverse = {value[:40]: key for key, value in table.items()}
digest.update(repr(sorted(inverse.values())[:50]).encode())
print(len(table), len(inverse), digest.hexdigest())
"""


def family_python3(family_dir):
    # Debian's interpreter, not whichever python3 comes first in PATH.
    python = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else need("python3", "python3")
    write(os.path.join(family_dir, "workload.py"), PYTHON_WORKLOAD)
    return [Program("python3", "native", [Step([python, os.path.join(family_dir, "workload.py"), "200000"])],
                    env={"PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"})]


SQLITE_SCRIPT = """
PRAGMA page_size = 4096;
CREATE TABLE t(id INTEGER PRIMARY KEY, grp INTEGER, name TEXT, body TEXT);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 60000)
INSERT INTO t SELECT x, (x * 2654435761) % 97, printf('name-%08x', (x * 2654435761) % 4294967296),
    replace(hex(zeroblob(300 + x % 1700)), '00', char(97 + x % 26)) FROM c;
CREATE INDEX t_grp ON t(grp);
CREATE INDEX t_name ON t(name);
SELECT grp, count(*), sum(length(body)), min(name), max(name) FROM t GROUP BY grp ORDER BY grp LIMIT 12;
SELECT count(*) FROM t a JOIN t b ON a.grp = b.grp AND a.id < b.id WHERE a.id % 40 = 0 AND b.id % 40 = 1;
UPDATE t SET body = body || body WHERE id % 7 = 0;
DELETE FROM t WHERE id % 11 = 0;
SELECT grp, avg(length(body)), group_concat(substr(name, 6, 2), '')
    FROM (SELECT * FROM t WHERE grp < 5 ORDER BY id LIMIT 200) GROUP BY grp;
SELECT id, rank() OVER (PARTITION BY grp ORDER BY length(body) DESC, id) AS r FROM t WHERE grp = 3
    ORDER BY r, id LIMIT 10;
SELECT name FROM t WHERE name LIKE 'name-00%' ORDER BY name LIMIT 5;
VACUUM;
PRAGMA integrity_check;
SELECT count(*), sum(length(body)), total(grp) FROM t;
"""


def family_sqlite3(family_dir):
    sqlite = need("sqlite3", "sqlite3")
    return [Program("sqlite3", "native", [Step([sqlite, "-batch", "{run}/db.sqlite"], stdin="script.sql")],
                    prepare=lambda run: write(os.path.join(run, "script.sql"), SQLITE_SCRIPT))]


def git_tree(run):
    """Two versions of a source tree: the second changes a third of the files, deletes some and adds some."""
    rng = random.Random(5)
    words = ["alpha", "beta", "gamma", "delta", "return", "if", "else", "for", "while", "value", "object", "count"]
    for version in (1, 2):
        rng.seed(5)
        for n in range(360):
            if version == 2 and n % 17 == 0:
                continue
            lines = [" ".join(rng.choice(words) for _ in range(8)) for _ in range(40 + n % 200)]
            if version == 2 and n % 3 == 0:
                lines[len(lines) // 2:len(lines) // 2] = [f"changed in version 2: {n} {i}" for i in range(10)]
            write(os.path.join(run, f"src{version}", f"dir{n % 12}", f"file{n}.txt"), "\n".join(lines) + "\n")
        if version == 2:
            for n in range(20):
                write(os.path.join(run, "src2", "new", f"added{n}.txt"), f"new file {n}\n" * (50 + n))


def family_git(family_dir):
    git = need("git", "git")
    g = [git, "-C", "{run}", "--git-dir=repo.git", "-c", "gc.autoDetach=false", "-c", "pack.threads=4"]
    steps = [Step([git, "init", "-q", "--bare", "-b", "main", "{run}/repo.git"]),
             Step(g + ["--work-tree=src1", "add", "-A"]),
             Step(g + ["--work-tree=src1", "commit", "-q", "-m", "first"]),
             Step(g + ["--work-tree=src2", "add", "-A"]),
             Step(g + ["--work-tree=src2", "commit", "-q", "-m", "second"]),
             Step(g + ["tag", "-a", "v1", "-m", "version 1"]),
             Step(g + ["gc", "-q", "--prune=now"]),
             Step(g + ["fsck", "--full", "--strict", "--no-dangling"]),
             Step(g + ["rev-parse", "HEAD", "v1"]),
             Step(g + ["log", "--stat", "--format=%H %an %ad %s"]),
             Step(g + ["cat-file", "--batch-all-objects", "--batch-check"])]
    fixed = "1600000000 +0000"
    env = {"HOME": "{run}", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
           "GIT_AUTHOR_NAME": "Stress Test", "GIT_AUTHOR_EMAIL": "stress@example.org", "GIT_AUTHOR_DATE": fixed,
           "GIT_COMMITTER_NAME": "Stress Test", "GIT_COMMITTER_EMAIL": "stress@example.org",
           "GIT_COMMITTER_DATE": fixed}
    return [Program("git", "native", steps, prepare=git_tree, env=env)]


def family_pigz(family_dir):
    pigz = need("pigz", "pigz")
    data = os.path.join(family_dir, "data")
    rng = random.Random(9)
    words = [("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9))))
             for _ in range(5000)]
    with open(data, "w") as f:
        for _ in range(300000):
            f.write(" ".join(rng.choices(words, k=12)) + "\n")
    data_sha = file_digest(data)

    def prepare(run):
        shutil.copyfile(data, os.path.join(run, "data"))

    def check(run, stdouts):
        problems = []
        if len(stdouts) > 1 and hashlib.sha256(stdouts[1]).hexdigest() != data_sha:
            problems.append("pigz -d did not give back the input")
        if len(stdouts) > 2 and not stdouts[2].startswith(data_sha.encode()):
            problems.append("the pipe pigz | pigz -d did not give back the input")
        return problems

    steps = [Step([pigz, "-p4", "-n", "-k", "{run}/data"]),
             Step([pigz, "-d", "-p4", "-c", "{run}/data.gz"]),
             # In a pipe, where output lost under the agent still ends with exit status 0: only the checksum tells.
             Step(["/bin/sh", "-c", f"{pigz} -p4 -n -c {{run}}/data | {pigz} -d -c | sha256sum"], profile=False)]
    return [Program("pigz", "native", steps, prepare=prepare, outputs=["data.gz", "data"], check=check)]


def family_malloc_loop(family_dir):
    program = compile_c(family_dir, "malloc_loop.c", "malloc_loop")
    return [Program("malloc_loop", "native", [Step([program, "4", "1000000"])])]


HOSTILE_LIMIT = 20.0  # the hostile programs take well under a second unprofiled


def family_hostile(family_dir):
    hostile = compile_c(family_dir, "hostile.c", "hostile")

    def with_dir(run):
        os.makedirs(os.path.join(run, "elsewhere"))

    record = Config("defaults, record=", options="record={profiles}/trace-%p.ojxt")
    programs = [
        Program("closefds", "native", [Step([hostile, "closefds", "{run}/output"])],
                outputs=["output", "output.raw"], extra_configs=[record]),
        Program("sigtrap", "native", [Step([hostile, "sigtrap"])]),
        Program("sigio", "native", [Step([hostile, "sigio"])]),
        Program("altstack", "native", [Step([hostile, "altstack"])]),
        Program("rtmin2", "native", [Step([hostile, "rtmin2"])]),
        Program("blocked", "native", [Step([hostile, "blocked"])]),
        Program("chdir", "native", [Step([hostile, "chdir", "{run}/elsewhere"])], prepare=with_dir,
                outputs=["elsewhere/after-chdir.txt"], relative_profile=True),
        Program("exit_underscore", "native", [Step([hostile, "exit_underscore"], status=3, profile=False)]),
        Program("abort", "native", [Step([hostile, "abort"], status=-signal.SIGABRT, profile=False)]),
        Program("raise_term", "native", [Step([hostile, "raise_term"], status=-signal.SIGTERM, profile=False)]),
    ]
    for program in programs:
        program.min_limit = HOSTILE_LIMIT
    return programs


def family_lucene(family_dir):
    jars = [jar("lucene-core-4.10*.jar", "liblucene4.10-java"), jar("lucene-queryparser-4.10*.jar",
            "liblucene4.10-java"), jar("lucene-analyzers-common-4.10*.jar", "liblucene4.10-java")]
    java, classes = compile_java(family_dir, "LuceneStress.java", ":".join(jars))
    classpath = ":".join(jars + [classes])
    return [Program("lucene", "jvm", [Step([java, "-cp", classpath, "LuceneStress", "{run}/index", "8000", "600"])])]


def family_h2(family_dir):
    h2 = jar("h2.jar", "libh2-java")
    java, classes = compile_java(family_dir, "H2Stress.java", h2)
    return [Program("h2", "jvm", [Step([java, "-cp", f"{h2}:{classes}", "H2Stress", "{run}/db", "12000"])])]


def family_xalan(family_dir):
    jars = [jar("xalan2.jar", "libxalan2-java"), jar("serializer.jar", "libxalan2-java")]
    java, classes = compile_java(family_dir, "XalanStress.java", ":".join(jars))
    return [Program("xalan", "jvm", [Step([java, "-cp", ":".join(jars + [classes]), "XalanStress", "{run}/out.html",
                                           "6000", "4"])], outputs=["out.html"])]


def family_javac(family_dir):
    java, classes = compile_java(family_dir, "JavacStress.java", None)
    return [Program("javac", "jvm", [Step([java, "-cp", classes, "JavacStress", "{run}/work", "30", "3"])])]


# The heap families: programs whose garbage G1 reclaims early only if nothing refers to it, under each collector
# the JVM agent supports.
COLLECTORS = ("G1", "Parallel", "Serial")
HEAP_CONFIGS = ["defaults", "dense"]
FREEMARKER_WORKLOAD = os.path.join(HERE, "..", "..", "bench", "jvm", "workloads", "FreeMarkerWorkload.java")


def family_humongous(family_dir):
    java, classes = compile_java(family_dir, "HumongousStress.java", None)
    return [Program(f"humongous-{gc.lower()}", "jvm",
                    [Step([java, f"-XX:+Use{gc}GC", "-cp", classes, "HumongousStress", "100"])],
                    configs=HEAP_CONFIGS if gc == "G1" else ["defaults"]) for gc in COLLECTORS]


def family_freemarker(family_dir):
    freemarker = jar("freemarker.jar", "libfreemarker-java")
    java, classes = compile_java(family_dir, FREEMARKER_WORKLOAD, freemarker)
    return [Program(f"freemarker-{gc.lower()}", "jvm",
                    [Step([java, f"-XX:+Use{gc}GC", "-cp", f"{freemarker}:{classes}", "FreeMarkerWorkload", "20000",
                           "30"])],
                    configs=HEAP_CONFIGS if gc == "G1" else ["defaults"]) for gc in COLLECTORS]


FAMILIES = {
    "native_python3": family_python3,
    "native_sqlite3": family_sqlite3,
    "native_git": family_git,
    "native_pigz": family_pigz,
    "native_malloc_loop": family_malloc_loop,
    "hostile": family_hostile,
    "jvm_lucene": family_lucene,
    "jvm_h2": family_h2,
    "jvm_xalan": family_xalan,
    "jvm_javac": family_javac,
    "jvm_humongous": family_humongous,
    "jvm_freemarker": family_freemarker,
}


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("family", choices=sorted(FAMILIES))
    parser.add_argument("--work", required=True)
    parser.add_argument("--preload")
    parser.add_argument("--jvm-agent")
    parser.add_argument("--configs", help="only the configurations whose name contains this text")
    args = parser.parse_args(argv)
    # The programs run in directories of their own: the agents' paths must not be relative.
    args.preload = os.path.abspath(args.preload) if args.preload else None
    args.jvm_agent = os.path.abspath(args.jvm_agent) if args.jvm_agent else None
    family_dir = os.path.join(os.path.abspath(args.work), args.family)
    shutil.rmtree(family_dir, ignore_errors=True)
    os.makedirs(family_dir)
    args.work = family_dir
    try:
        programs = FAMILIES[args.family](family_dir)
    except Skip as reason:
        print(f"SKIP {args.family}: {reason}")
        return SKIP
    agent = args.jvm_agent if programs[0].kind == "jvm" else args.preload
    if not agent or not os.path.exists(agent):
        print(f"error: {args.family} needs the {'JVM' if programs[0].kind == 'jvm' else 'native'} agent")
        return 2
    runner = Runner(args)
    started = time.monotonic()
    rows, failures = [], 0
    for program in programs:
        results, run_dir, _ = runner.run(program, UNPROFILED, [REFERENCE_LIMIT] * len(program.steps))
        bad = [f"step {i + 1}: {describe_status(r.status)}, expected {describe_status(step.status)}"
               for i, (r, step) in enumerate(zip(results, program.steps)) if r.status != step.status]
        if program.check and not bad:
            bad += program.check(run_dir, [r.stdout for r in results])
        reference_seconds = sum(r.seconds for r in results)
        rows.append((program.name, "unprofiled", not bad, reference_seconds, bad))
        print(f"  {program.name} / unprofiled: {reference_seconds:.1f} s, {heap_line(results)}", flush=True)
        if bad:
            # Without a sound reference nothing can be compared: the workload itself is broken here.
            failures += 1
            continue
        reference = (results, run_dir)
        limits = [max(program.min_limit, SLOWDOWN_LIMIT * r.seconds) for r in results]
        for config in CONFIGS + program.extra_configs:
            if (args.configs and args.configs not in config.name) or (program.configs and
                                                                      config.name not in program.configs):
                continue
            try:
                got, got_dir, profiles = runner.run(program, config, limits)
                problems = judge(program, config, got, got_dir, profiles, reference)
            except RuntimeError as error:
                got, problems = [], [f"could not set up the run: {error}"]
            seconds = sum(r.seconds for r in got)
            rows.append((program.name, config.name, not problems, seconds, problems))
            failures += bool(problems)
            limit = describe_limit(sum(r.limit for r in got), sum(r.extra for r in got))
            print(f"  {program.name} / {config.name}: {'PASS' if not problems else 'FAIL'} ({seconds:.1f} s, {limit}; "
                  f"{heap_line(got)})", flush=True)
            if problems:
                # The standard error of the first step that went wrong (the agent's messages are there).
                ref_results = reference[0]
                wrong = [r for r, want in zip(got, ref_results) if r.status != want.status or r.stdout != want.stdout]
                shown = (wrong or got or [None])[0]
                tail = [line for line in (shown.stderr.splitlines() if shown else []) if line.strip()][-6:]
                for line in tail:
                    print(f"      stderr| {line[:200]}")
                for line in shown.stack if shown else []:
                    print(f"      stack | {line}")
    print()
    print(f"{'program':<16} {'configuration':<28} {'result':<6} {'seconds':>8}  symptoms")
    for name, config, ok, seconds, problems in rows:
        print(f"{name:<16} {config:<28} {'PASS' if ok else 'FAIL':<6} {seconds:8.1f}  {'; '.join(problems)}")
    print(f"\n{args.family}: {len(rows) - failures} of {len(rows)} runs passed in {time.monotonic() - started:.0f} s"
          f" (work directory {family_dir})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
