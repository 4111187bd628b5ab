#!/usr/bin/env python3
"""End to end: record the emulation demo, replay the trace with `ojx replay`, and require the same profile byte for
byte; rebuild its heap at the first collection with `ojx heap` (a census that adds up; a bad --at is refused); then
bad traces (missing, truncated, one flipped byte, a JSON profile), to `ojx replay` and `ojx heap`: exit 2, one line on standard error
naming the file, and no output file left behind.

usage: replay_test.py OJX SYNTHETIC_DEMO WORK_DIR
"""
import json
import os
import shutil
import subprocess
import sys


def run(*command):
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def fresh_directory(path):
    """`path`, emptied (made if missing)."""
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def main():
    ojx, demo, work = sys.argv[1:4]
    fresh_directory(work)
    live = os.path.join(work, "live.json")
    trace = os.path.join(work, "run.ojxt")
    replayed = os.path.join(work, "replayed.json")

    recorded = run(demo, "--json", live, "--record", trace)
    assert recorded.returncode == 0, recorded.stderr
    replay = run(ojx, "replay", trace, "-o", replayed)
    assert replay.returncode == 0, replay.stderr
    with open(live, "rb") as a, open(replayed, "rb") as b:
        assert a.read() == b.read(), "the replayed profile differs from the live run's"
    print(f"replayed {trace} ({os.path.getsize(trace)} bytes) to the live profile byte for byte")

    heap_json = os.path.join(work, "heap.json")
    heap = run(ojx, "heap", trace, "--at", "gc:1", "--json", heap_json)
    assert heap.returncode == 0, heap.stderr
    census = [line for line in heap.stdout.splitlines() if "live objects" in line]
    assert census and "sizes add up" in census[0], heap.stdout
    with open(heap_json) as f:
        assert json.load(f)["at"] == {"gc": 1}
    print(f"ojx heap --at gc:1: {census[0]}")
    for bad_at in ("gc:", "gc:999999", "event:0", "soon"):
        result = run(ojx, "heap", trace, "--at", bad_at)
        lines = result.stderr.splitlines()
        assert result.returncode == 2, f"--at {bad_at}: exit {result.returncode}: {result.stderr}"
        assert len(lines) == 1 and ("--at" in lines[0] or trace in lines[0]), f"--at {bad_at}: {result.stderr!r}"
        print(f"--at {bad_at}: {lines[0]}")

    with open(trace, "rb") as f:
        data = f.read()
    bad = {
        "missing.ojxt": None,
        "truncated.ojxt": data[: len(data) // 2],
        "flipped.ojxt": data[: len(data) // 3] + bytes([data[len(data) // 3] ^ 0x01]) + data[len(data) // 3 + 1:],
        "profile.json": open(live, "rb").read(),
    }
    for name, content in bad.items():
        path = os.path.join(work, name)
        if content is not None:
            with open(path, "wb") as f:
                f.write(content)
        output = os.path.join(work, name + ".replayed.json")
        result = run(ojx, "replay", path, "-o", output)
        lines = result.stderr.splitlines()
        assert result.returncode == 2, f"{name}: exit {result.returncode}: {result.stderr}"
        assert len(lines) == 1 and path in lines[0], f"{name}: expected one line naming the file: {result.stderr!r}"
        assert not os.path.exists(output), f"{name}: an output file was left behind"
        leftovers = [f for f in os.listdir(work) if f.startswith(name + ".replayed.json")]
        assert not leftovers, f"{name}: temporary files left behind: {leftovers}"
        print(f"{name}: {lines[0]}")
        heap = run(ojx, "heap", path, "--at", "gc:1")
        heap_lines = heap.stderr.splitlines()
        assert heap.returncode == 2, f"{name}: ojx heap exit {heap.returncode}: {heap.stderr}"
        assert len(heap_lines) == 1 and path in heap_lines[0], f"{name}: ojx heap: {heap.stderr!r}"
    return 0


if __name__ == "__main__":
    sys.exit(main())
