#!/usr/bin/env python3
"""End-to-end: what the native agent (libojxpreload.so) does with descriptors and files, on real processes.

Checks, each on the program's observable behaviour (exit status, its own output, the files left):
  descriptors  a program that closes every inherited descriptor, opens its output file and puts it at every number
               it had (tests/linux/descriptor_closer.cpp), run with record=: its file holds exactly what it wrote
               (no trace bytes, no lost last flush), the agent says in one line where the trace ends, and the
               trace is a readable prefix; and 30 runs more without recording, each output exact (the agent's
               unwinder keeps its own pipe apart from the program's descriptors)
  chdir        relative file=/record= land where the program started, though it changes directory before exit
  tree         python3 running the program twice: python (the root) writes file= as named, each child
               <name>.<pid>.json, all valid profiles
  concurrent   4 unrelated processes writing one file= leave one valid profile and no temporary files
  unwritable   file= in a missing directory: one line, the program runs unprofiled, no file
  file size    RLIMIT_FSIZE below the profile's and the trace's size (as a full disk): the program is not killed
               (no SIGXFSZ), one line each for the profile and the trace, no "written" line, no partial profile
  modes        profile and trace are 0600 under umask 0
  root (run with `root` as MODE; exit 77, a skip, when not root):
    planted link  a link another user planted in a world-writable sticky directory, pointing at a root-only
                  file, named as file= or record=: refused in one line, the file untouched
    setuid        the program drops root before exit: one line saying the profile could not be written, no
                  contradicting "profile written"

Options sampler=none,slots=0 keep the run to the agent's own descriptors (the trace's and the profile's); the
descriptor check is also run at the default options.

usage: agent_files_suite.py AGENT.so DESCRIPTOR_CLOSER WORKDIR [all|root]
"""
import json
import os
import resource
import shutil
import stat
import subprocess
import sys

SKIP = 77
QUIET = "sampler=none,slots=0"


def read(path, mode="r"):
    """The file's contents, or None where it cannot be read."""
    try:
        with open(path, mode) as f:
            return f.read()
    except OSError:
        return None


def expected_output(lines):
    return "".join(f"line {i}\n" for i in range(lines))


class Suite:
    def __init__(self, agent, closer, workdir):
        self.agent, self.closer, self.workdir = agent, closer, workdir
        self.problems = []

    def fresh(self, name):
        path = os.path.join(self.workdir, name)
        shutil.rmtree(path, ignore_errors=True)
        os.makedirs(path)
        return path

    def run(self, args, options, cwd=None, preexec=None, timeout=120):
        env = {k: v for k, v in os.environ.items() if not k.startswith("OJX_AGENT_ROOT")}
        env.update(LD_PRELOAD=self.agent, OJX_OPTIONS=options)
        return subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                              preexec_fn=preexec)

    def check(self, what, condition, detail=""):
        print(f"  {'ok  ' if condition else 'FAIL'} {what}" + (f": {detail}" if detail and not condition else ""))
        if not condition:
            self.problems.append(f"{what}: {detail}")

    def ojx_lines(self, result):
        return [line for line in result.stderr.splitlines() if line.startswith("ojx:")]

    def valid_profile(self, path):
        try:
            with open(path) as f:
                profile = json.load(f)
            return isinstance(profile, dict) and "contexts" in profile
        except (OSError, ValueError):
            return False

    def descriptors(self, options, label):
        print(f"descriptors ({label}):")
        d = self.fresh(f"descriptors-{label}")
        out, trace, profile = (os.path.join(d, n) for n in ("out.txt", "t.ojxt", "p.json"))
        result = self.run([self.closer, out, "--close-all", "--take", "--lines", "300"],
                          f"{options},file={profile},record={trace}")
        self.check("the program exits 0", result.returncode == 0, f"exit {result.returncode}: {result.stderr[-1500:]}")
        text = read(out, "rb") or b""
        self.check("its output file holds exactly what it wrote", text == expected_output(300).encode(),
                   f"{len(text)} bytes, expected {len(expected_output(300))}; starts {text[:40]!r}")
        said = [line for line in self.ojx_lines(result) if "closed the descriptor of the trace" in line]
        self.check("one line says where the trace ends", len(said) == 1, "\n".join(self.ojx_lines(result)))
        self.check("no line claims the trace was written",
                   not any("trace written" in line for line in self.ojx_lines(result)))
        head = (read(trace, "rb") or b"")[:12]
        self.check("the trace keeps what it recorded before (a trace header)", head[:4] == b"OJXT",
                   repr(head))
        if ojx := os.environ.get("OJX"):
            info = subprocess.run([ojx, "replay", trace, "-o", os.path.join(d, "replayed.json")],
                                  capture_output=True, text=True, timeout=120)
            self.check("ojx reads the trace as one that stopped early (not as a damaged file)",
                       "truncated" not in info.stderr and "bad" not in info.stderr,
                       info.stderr[-500:])
        self.check("the profile is written", self.valid_profile(profile))

    def repeated_descriptors(self, runs=30):
        """The descriptor case again and again: the agent's unwinder (libunwind) keeps a pipe of its own and, once
        the program has closed it, would read, write and close whatever the program had put at its numbers unless
        the agent keeps that pipe apart (agents/native/unwinder_descriptors.hpp; without it the program's output
        was lost in 6 of 80 runs)."""
        print(f"descriptors, {runs} runs:")
        d = self.fresh("descriptors-repeated")
        lost = []
        for run in range(runs):
            out = os.path.join(d, f"out-{run}.txt")
            result = self.run([self.closer, out, "--close-all", "--take", "--lines", "300"],
                              f"{QUIET},file={os.path.join(d, f'p-{run}.json')}")
            text = read(out, "rb") or b""
            if result.returncode != 0 or text != expected_output(300).encode():
                lost.append(f"run {run}: exit {result.returncode}, {len(text)} bytes")
        self.check(f"every run's output file holds exactly what it wrote ({runs} runs)", not lost, "; ".join(lost))

    def chdir(self):
        print("chdir:")
        start = self.fresh("chdir-start")
        elsewhere = self.fresh("chdir-elsewhere")
        result = self.run([self.closer, "out.txt", "--lines", "5", "--chdir", elsewhere],
                          f"{QUIET},file=p.json,record=t.ojxt", cwd=start)
        self.check("the program exits 0", result.returncode == 0, result.stderr[-1000:])
        self.check("the profile is where the program started", self.valid_profile(os.path.join(start, "p.json")))
        self.check("the trace is where the program started", os.path.exists(os.path.join(start, "t.ojxt")))
        self.check("nothing lands where it moved", os.listdir(elsewhere) == [], str(os.listdir(elsewhere)))

    def tree(self):
        print("tree:")
        d = self.fresh("tree")
        # The root is a program that returns from main (dash, for one, leaves with _exit: no profile of its own).
        script = (f"import subprocess\nfor name in ('a.txt', 'b.txt'):\n"
                  f"    subprocess.run([{self.closer!r}, name, '--lines', '5'], check=True)\n")
        result = self.run([sys.executable, "-c", script], f"{QUIET},file=tree.json", cwd=d)
        self.check("the tree exits 0", result.returncode == 0, result.stderr[-1000:])
        children = sorted(n for n in os.listdir(d) if n.startswith("tree.") and n != "tree.json")
        self.check("the root writes the name given", self.valid_profile(os.path.join(d, "tree.json")))
        self.check("each child writes tree.<pid>.json", len(children) == 2 and all(
            n.split(".")[1].isdigit() and n.endswith(".json") for n in children), str(os.listdir(d)))
        self.check("every child's profile is valid", all(self.valid_profile(os.path.join(d, n)) for n in children))
        # The first process speaks for the tree: one start line, and the children stay quiet.
        self.check("one start line for the tree", result.stderr.count("ojx: profiling pid") == 1,
                   "\n".join(self.ojx_lines(result)))
        self.check("no child says anything", "descends from profiled pid" not in result.stderr,
                   "\n".join(self.ojx_lines(result)))
        result = self.run([sys.executable, "-c", script], f"{QUIET},verbose,file=tree-verbose.json", cwd=d)
        self.check("verbose: each child says whose name it derives from",
                   result.stderr.count("descends from profiled pid") == 2, "\n".join(self.ojx_lines(result)))

    def concurrent(self):
        print("concurrent:")
        d = self.fresh("concurrent")
        target = os.path.join(d, "c.json")
        for round_ in range(2):
            env = {k: v for k, v in os.environ.items() if not k.startswith("OJX_AGENT_ROOT")}
            env.update(LD_PRELOAD=self.agent, OJX_OPTIONS=f"{QUIET},quiet,file={target}")
            processes = [subprocess.Popen([self.closer, os.path.join(d, f"o{round_}-{i}.txt"), "--lines", "50"],
                                          env=env, stderr=subprocess.PIPE) for i in range(4)]
            codes = [p.wait(timeout=120) for p in processes]
            for p in processes:
                p.stderr.close()
            self.check(f"round {round_}: all 4 exit 0", codes == [0] * 4, str(codes))
            self.check(f"round {round_}: one valid profile", self.valid_profile(target))
        leftovers = [n for n in os.listdir(d) if n.startswith(".")]
        self.check("no temporary file is left", leftovers == [], str(leftovers))

    def unwritable(self):
        print("unwritable:")
        d = self.fresh("unwritable")
        missing = os.path.join(d, "missing", "p.json")
        result = self.run([self.closer, os.path.join(d, "o.txt"), "--lines", "5"], f"{QUIET},file={missing}")
        lines = self.ojx_lines(result)
        self.check("the program exits 0", result.returncode == 0, result.stderr[-1000:])
        self.check("one line names the file and why, and says it does not profile",
                   lines == [f"ojx: cannot write the profile to {missing}: No such file or directory",
                             "ojx: not profiling"], "\n".join(lines))

    def file_size(self):
        print("file size:")
        d = self.fresh("file-size")
        profile, trace = os.path.join(d, "p.json"), os.path.join(d, "t.ojxt")
        limit = 2500  # the program's own output is 790 bytes; the profile (4 KiB) and a trace block are larger

        def small_files():
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

        result = self.run([self.closer, os.path.join(d, "o.txt"), "--lines", "100"],
                          f"{QUIET},file={profile},record={trace}", preexec=small_files)
        lines = self.ojx_lines(result)
        self.check("the program exits 0 (no SIGXFSZ)", result.returncode == 0, f"exit {result.returncode}")
        self.check("one line: the profile could not be written", sum(
            line == f"ojx: could not write the profile to {profile}: File too large" for line in lines) == 1,
            "\n".join(lines))
        self.check("one line: the trace could not be written whole, and where it ends", sum(
            line.startswith(f"ojx: could not write the whole trace to {trace}: File too large; it ends after")
            for line in lines) == 1, "\n".join(lines))
        self.check("no line says anything was written",
                   not any("written to" in line for line in lines), "\n".join(lines))
        self.check("no partial profile, no temporary file",
                   sorted(os.listdir(d)) == ["o.txt", "t.ojxt"], str(os.listdir(d)))
        self.check("the trace stays within the limit", os.path.getsize(trace) <= limit)

    def modes(self):
        print("modes:")
        d = self.fresh("modes")
        profile, trace = os.path.join(d, "p.json"), os.path.join(d, "t.ojxt")
        result = self.run([self.closer, os.path.join(d, "o.txt"), "--lines", "5"],
                          f"{QUIET},file={profile},record={trace}", preexec=lambda: os.umask(0))
        self.check("the program exits 0", result.returncode == 0, result.stderr[-1000:])
        for path in (profile, trace):
            mode = stat.S_IMODE(os.stat(path).st_mode) if os.path.exists(path) else None
            self.check(f"{os.path.basename(path)} is 0600", mode == 0o600, oct(mode) if mode is not None else "missing")

    def planted_link(self):
        print("planted link (root):")
        shared = self.fresh("sticky")
        os.chmod(shared, 0o1777)
        private = self.fresh("private")
        victim = os.path.join(private, "secret")
        with open(victim, "w") as f:
            f.write("root's")
        os.chmod(victim, 0o600)
        for option, noun in (("file", "profile"), ("record", "trace")):
            link = os.path.join(shared, f"planted-{option}")
            os.symlink(victim, link)
            os.lchown(link, 65534, 65534)
            result = self.run([self.closer, os.path.join(private, "o.txt"), "--lines", "5"],
                              f"{QUIET},file={os.path.join(private, 'p.json')},{option}={link}")
            lines = self.ojx_lines(result)
            self.check(f"{option}=: the program exits 0", result.returncode == 0, result.stderr[-1000:])
            self.check(f"{option}=: refused in one line naming the link",
                       any(f"cannot write the {noun} to {link}" in line and "not followed" in line for line in lines),
                       "\n".join(lines))
            self.check(f"{option}=: the file it points at is untouched", read(victim, "rb") == b"root's")

    def setuid(self):
        print("setuid (root):")
        d = self.fresh("setuid")
        os.chmod(d, 0o755)  # nobody may not create files here
        profile = os.path.join(d, "p.json")
        result = self.run([self.closer, "/dev/null", "--lines", "5", "--setuid", "65534"], f"{QUIET},file={profile}")
        lines = self.ojx_lines(result)
        self.check("the program exits 0", result.returncode == 0, result.stderr[-1000:])
        self.check("one line says the profile could not be written, and none that it was",
                   sum("could not write the profile" in line for line in lines) == 1
                   and not any("profile written" in line for line in lines), "\n".join(lines))
        self.check("no file, no partial file", os.listdir(d) == [], str(os.listdir(d)))


def main(argv):
    if len(argv) < 4:
        print(__doc__)
        return 2
    agent, closer, workdir = (os.path.abspath(a) for a in argv[1:4])
    mode = argv[4] if len(argv) > 4 else "all"
    os.makedirs(workdir, exist_ok=True)
    suite = Suite(agent, closer, workdir)
    if mode == "root":
        if os.geteuid() != 0:
            print("SKIPPED: the root checks (planted links, setuid) need root")
            return SKIP
        suite.planted_link()
        suite.setuid()
    else:
        suite.descriptors(QUIET, "agent-descriptors-only")
        suite.descriptors("", "defaults")
        suite.repeated_descriptors()
        suite.chdir()
        suite.tree()
        suite.concurrent()
        suite.unwritable()
        suite.file_size()
        suite.modes()
    for problem in suite.problems:
        print("FAIL: " + problem)
    print(f"agent files suite ({mode}): " + ("passed" if not suite.problems else f"{len(suite.problems)} problem(s)"))
    return 0 if not suite.problems else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
