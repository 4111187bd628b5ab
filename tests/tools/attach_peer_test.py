#!/usr/bin/env python3
"""`ojx attach` to a fake peer: a process that serves /tmp/.java_pid<PID> as a JVM's attach listener would, but
answers as a hostile process might. No JDK needed.

usage: attach_peer_test.py OJX WORKDIR                  the answers and the peer's identity
       attach_peer_test.py --foreign-owner OJX WORKDIR  as root: a socket owned by another uid (77 elsewhere)

Checks:
  endless:  a peer that answers without end is read up to 1 MiB: ojx exits 1 within seconds, with a message
            saying so, and its peak memory stays within 8 MiB of what a short answer takes (the same build: a
            sanitizer's makes ojx several times larger).
  escapes:  a peer whose answer holds escape sequences, BEL and an 8-bit CSI: ojx prints none of those bytes (they
            appear as \\xNN), and it does not claim the --file it asked for as where the profile goes.
  imposter: a process that serves another process's socket is refused (SO_PEERCRED names the server, not the
            target), and nothing is sent to it.
  foreign owner (root only): a socket owned by another uid is refused before connecting, as the JDK refuses it.
"""
import os
import socket
import subprocess
import sys
import tempfile
import time

problems = []


def check(condition, message, detail=""):
    print(("  ok:   " if condition else "  FAIL: ") + message + ("" if condition or not detail else f" ({detail!r})"))
    if not condition:
        problems.append(message)


def serve(mode, socket_pid, log):
    """The fake peer: listens on the attach socket of process socket_pid and answers one request as `mode` says."""
    path = f"/tmp/.java_pid{socket_pid}"
    if os.path.lexists(path):
        os.unlink(path)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    os.chmod(path, 0o600)
    if mode == "foreign":
        os.chown(path, 4242, 4242)
    server.listen(1)
    print("listening", flush=True)
    server.settimeout(30)
    try:
        connection, _ = server.accept()
    except socket.timeout:
        return
    finally:
        server.close()
        os.unlink(path)
    with open(log, "w") as record:
        record.write("connected\n")
    connection.settimeout(5)
    try:
        connection.recv(4096)
        if mode == "endless":
            connection.sendall(b"0\n")
            chunk = b"A" * 65536
            while True:
                connection.sendall(chunk)
        else:
            connection.sendall(b"0\nreturn code: 0\n\x1b]0;owned\x07\x1b[2J\x9b31mcannot write the profile; it will "
                               b"go to /tmp/ojx-1.json\n")
    except OSError:
        pass  # ojx stopped reading: what an endless answer should come to
    connection.close()


class Peer:
    """The fake peer in a process of its own; it serves its own pid's socket (0 to the server) or socket_pid's."""

    def __init__(self, work, mode, socket_pid=None):
        self.log = os.path.join(work, f"peer-{mode}.log")
        if os.path.exists(self.log):
            os.unlink(self.log)
        args = [sys.executable, os.path.abspath(__file__), "--serve", mode, str(socket_pid or 0), self.log]
        self.process = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
        self.pid = self.process.pid
        self.process.stdout.readline()  # "listening"

    def connected(self):
        # The peer notes the connection after accept() returns, which may be after ojx has already refused it and
        # exited: give it a moment.
        deadline = time.monotonic() + 10
        while not os.path.exists(self.log) and time.monotonic() < deadline and self.process.poll() is None:
            time.sleep(0.01)
        return os.path.exists(self.log)

    def stop(self):
        self.process.kill()
        self.process.wait()


def attach(ojx, pid, *args):
    """Runs `ojx attach`; the result has its output, exit status, seconds and its own peak RSS (wait4's, of that
    process alone: RUSAGE_CHILDREN would be the largest of every child waited for)."""
    started = time.monotonic()
    command = [ojx, "attach", str(pid), "--agent", ojx, *args]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(command, stdout=out, stderr=err)
        while True:
            waited, status, usage = os.wait4(process.pid, os.WNOHANG)
            if waited:
                break
            if time.monotonic() > started + 120:
                process.kill()
                waited, status, usage = os.wait4(process.pid, 0)
                break
            time.sleep(0.01)
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        result = subprocess.CompletedProcess(command, process.returncode, out.read(), err.read())
    result.seconds = time.monotonic() - started
    result.max_rss_kib = usage.ru_maxrss
    return result


def answers(ojx, work):
    peer = Peer(work, "endless")
    try:
        result = attach(ojx, peer.pid)
    finally:
        peer.stop()
    message = result.stderr.decode(errors="replace")
    check(result.returncode == 1 and "more than 1 MiB" in message and result.seconds < 20,
          f"an endless answer stops at 1 MiB with exit 1 ({result.seconds:.1f} s)", message)
    endless_rss = result.max_rss_kib

    peer = Peer(work, "escapes")
    try:
        result = attach(ojx, peer.pid, "--file", os.path.join(work, "asked.json"))
    finally:
        peer.stop()
    raw = result.stderr
    check(result.returncode == 0, "a peer that says its agent started gives exit 0", raw)
    # Against ojx's own size in this build (a sanitizer's runtime and shadow memory make it several times larger):
    # the endless answer may add what ojx keeps of it, 1 MiB, and its buffers, never the stream.
    check(endless_rss < result.max_rss_kib + 8 * 1024,
          f"ojx's memory stays small: {endless_rss} KiB at most reading the endless answer, {result.max_rss_kib} KiB "
          f"for a short one")
    check(not any(byte in raw for byte in (0x1b, 0x07, 0x9b)) and b"\\x1b]0;owned\\x07" in raw,
          "escape sequences, BEL and 8-bit CSI in the answer are printed as \\xNN, never raw", raw)
    check(b"unless its answer above says otherwise" in raw and b"it will go to /tmp/ojx-1.json" in raw,
          "ojx reports what the peer said instead of claiming the file it asked for", raw)

    sleeper = subprocess.Popen(["sleep", "60"])
    peer = Peer(work, "imposter", sleeper.pid)
    try:
        result = attach(ojx, sleeper.pid)
        connected = peer.connected()
    finally:
        peer.stop()
        sleeper.kill()
        sleeper.wait()
    message = result.stderr.decode(errors="replace")
    check(result.returncode == 1 and f"is served by process {peer.pid}" in message,
          "a socket served by another process than the target is refused, naming the server", message)
    check(connected, "(the refusal came after connecting, from the peer's credentials)")


def foreign_owner(ojx, work):
    if os.geteuid() != 0:
        print("skipped: only root can make a socket another uid owns")
        return 77
    peer = Peer(work, "foreign")
    try:
        result = attach(ojx, peer.pid)
        time.sleep(0.2)
        connected = peer.connected()
    finally:
        peer.stop()
    message = result.stderr.decode(errors="replace")
    check(result.returncode == 1 and "is owned by uid 4242" in message,
          "a socket owned by another uid is refused, naming the owner", message)
    check(not connected, "ojx never connected to it")
    return 0


def main():
    args = sys.argv[1:]
    if args[:1] == ["--serve"]:
        mode, socket_pid, log = args[1], int(args[2]), args[3]
        serve(mode, socket_pid or os.getpid(), log)
        return 0
    foreign = args[:1] == ["--foreign-owner"]
    if foreign:
        args = args[1:]
    if len(args) != 2:
        sys.exit(__doc__)
    ojx, work = (os.path.abspath(a) for a in args)
    os.makedirs(work, exist_ok=True)
    if foreign:
        if foreign_owner(ojx, work) == 77:
            return 77
    else:
        answers(ojx, work)
    print(f"{len(problems)} problem(s)" if problems else "all attach peer checks passed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
