#!/usr/bin/env python3
"""End-to-end: the `ojx` command writes the files it is asked for as asked, never replacing what the path names.

usage: output_paths_test.py OJX PROFILE WORKDIR [DEMO]       the outputs of `merge -o` and `report --html/--pprof`
                                                             (and of ojx_synthetic_demo --json, when given)
       output_paths_test.py --planted-link OJX PROFILE WORKDIR   as root: a planted link is refused

Checks (the first form): /dev/null stays a character device after `merge -o /dev/null` and `report --html
/dev/null --pprof /dev/null`; a FIFO given to -o is written through to its reader (the bytes of the same merge
written to a file) and stays a FIFO; a symbolic link given to -o stays a link and its target gets the output; a
new output is created 0600. The emulation demo, when given, writes its --json profile through a FIFO, which stays.
The second form, which needs root (it exits 77, a skip, otherwise): a link in a world-writable sticky directory,
owned by a uid that owns neither the directory nor runs ojx, pointing at a root-only file, is refused with exit 1
and a message naming it, and that file is untouched — the kernel's protected_symlinks rule, which ojx applies
itself since it resolves links before writing.
"""
import os
import stat
import subprocess
import sys
import threading

problems = []


def check(condition, message, detail=""):
    print(("  ok:   " if condition else "  FAIL: ") + message + ("" if condition or not detail else f" ({detail.strip()})"))
    if not condition:
        problems.append(message)


def ojx(command, *args):
    return subprocess.run([command, *args], capture_output=True, timeout=60)


def outputs(command, profile, work):
    reference = os.path.join(work, "reference.json")
    result = ojx(command, "merge", profile, "-o", reference)
    check(result.returncode == 0, "merge -o FILE exits 0", result.stderr.decode())
    check(stat.S_IMODE(os.stat(reference).st_mode) == 0o600, "a new output is created 0600")
    expected = open(reference, "rb").read()

    result = ojx(command, "merge", profile, "-o", "/dev/null")
    check(result.returncode == 0 and stat.S_ISCHR(os.stat("/dev/null").st_mode),
          "merge -o /dev/null exits 0 and /dev/null stays a character device", result.stderr.decode())
    result = ojx(command, "report", "--html", "/dev/null", "--pprof", "/dev/null", profile)
    check(result.returncode == 0 and stat.S_ISCHR(os.stat("/dev/null").st_mode),
          "report --html /dev/null --pprof /dev/null exits 0 and /dev/null stays a device", result.stderr.decode())

    fifo = os.path.join(work, "pipe")
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(open(fifo, "rb").read()))
    reader.start()
    result = ojx(command, "merge", profile, "-o", fifo)
    reader.join(timeout=30)
    check(result.returncode == 0 and received == [expected] and stat.S_ISFIFO(os.lstat(fifo).st_mode),
          "merge -o FIFO writes the merge through to its reader and the FIFO stays", result.stderr.decode())

    target = os.path.join(work, "target.json")
    open(target, "w").write("old")
    link = os.path.join(work, "link.json")
    os.symlink("target.json", link)
    result = ojx(command, "merge", profile, "-o", link)
    check(result.returncode == 0 and os.path.islink(link) and open(target, "rb").read() == expected,
          "merge -o LINK writes the link's target and the link stays", result.stderr.decode())


def demo_through_fifo(demo, work):
    fifo = os.path.join(work, "demo-pipe")
    os.mkfifo(fifo)
    received = []
    # A daemon: a reader left waiting (the demo never opened the FIFO) must not keep this script alive.
    reader = threading.Thread(target=lambda: received.append(open(fifo, "rb").read()), daemon=True)
    reader.start()
    result = subprocess.run([demo, "--json", fifo], capture_output=True, timeout=120)
    reader.join(timeout=30)
    check(result.returncode == 0 and received and received[0].startswith(b"{") and
          stat.S_ISFIFO(os.lstat(fifo).st_mode),
          "ojx_synthetic_demo --json FIFO writes the profile through to its reader and the FIFO stays",
          result.stderr.decode())


def planted_link(command, profile, work):
    if os.geteuid() != 0:
        print("skipped: a link owned by another uid can only be made by root (lchown), and the rule matters as root")
        return 77
    sticky = os.path.join(work, "sticky")
    os.mkdir(sticky)
    os.chmod(sticky, 0o1777)
    secret = os.path.join(work, "root-only")
    open(secret, "w").write("root's")
    os.chmod(secret, 0o600)
    link = os.path.join(sticky, "profile.json")
    os.symlink(secret, link)
    os.lchown(link, 4242, 4242)  # neither the directory's owner (root) nor ojx's user
    result = ojx(command, "merge", profile, "-o", link)
    message = result.stderr.decode()
    check(result.returncode == 1 and "not following the symbolic link" in message and link in message,
          "a link planted in a sticky world-writable directory is refused with exit 1, naming it", message)
    check(open(secret).read() == "root's" and os.path.islink(link), "the file it points to is untouched")
    # The same link owned by the directory's owner is followed, as the kernel would.
    os.lchown(link, 0, 0)
    result = ojx(command, "merge", profile, "-o", link)
    check(result.returncode == 0 and open(secret).read().startswith("{"),
          "the same link owned by the directory's owner is followed", result.stderr.decode())
    return 0


def main():
    args = sys.argv[1:]
    planted = args[:1] == ["--planted-link"]
    if planted:
        args = args[1:]
    if len(args) not in (3, 4) or (planted and len(args) != 3):
        sys.exit(__doc__)
    command, profile, work = (os.path.abspath(a) for a in args[:3])
    work = os.path.join(work, "planted" if planted else "outputs")
    subprocess.run(["rm", "-rf", work], check=True)
    os.makedirs(work)
    status = planted_link(command, profile, work) if planted else outputs(command, profile, work)
    if len(args) == 4 and args[3]:  # an empty DEMO: the build has no examples
        demo_through_fifo(os.path.abspath(args[3]), work)
    if status == 77:
        return 77
    print(f"{len(problems)} problem(s)" if problems else "all output path checks passed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
