#!/usr/bin/env python3
"""End to end, value flow in a trace: record a generated copy program with its value flow
(ojx_synthetic_demo --copy-program --record-accesses), replay it with `ojx replay` and require the live profile,
copy section included, byte for byte; replay it at another period and sampler seed and require a copy section of
that period that differs from the recorded one and finds most of its edges again.

usage: copy_replay_test.py OJX SYNTHETIC_DEMO WORK_DIR
"""
import json
import os
import sys

from replay_test import fresh_directory, run


def read(path):
    with open(path, "rb") as f:
        return f.read()


def edges(section):
    """The section's edges by their nodes, sites named (site indexes differ between sections)."""
    def node(n):
        named = dict(n)
        if "site" in named:
            named["site"] = json.dumps(section["sites"][named["site"]], sort_keys=True)
        return json.dumps(named, sort_keys=True)
    return {(node(e["from"]), node(e["to"]), e["width"]) for e in section["edges"]}


def main():
    ojx, demo, work = sys.argv[1:4]
    live, trace = (os.path.join(fresh_directory(work), name) for name in ("live.json", "copies.ojxt"))

    recorded = run(demo, "--copy-program", "--seed", "5", "--json", live, "--record-accesses", trace)
    assert recorded.returncode == 0, recorded.stderr
    live_copies = json.loads(read(live))["copies"]
    assert live_copies["edges"], "the live run sampled no copy edge"

    replayed = os.path.join(work, "replayed.json")
    replay = run(ojx, "replay", trace, "-o", replayed)
    assert replay.returncode == 0, replay.stderr
    assert read(live) == read(replayed), "the replayed profile differs from the live run's"
    print(f"replayed {trace} ({os.path.getsize(trace)} bytes) to the live profile and copy section byte for byte")

    other = os.path.join(work, "period-8.json")
    replay = run(ojx, "replay", trace, "--period", "8", "--sampler-seed", "3", "-o", other)
    assert replay.returncode == 0, replay.stderr
    copies = json.loads(read(other))["copies"]
    assert copies["sampling"] == ["emulated (randomized period 8): each sampled load followed for 8 value flow "
                                  "events"], copies["sampling"]
    assert copies["edges"] != live_copies["edges"], "another period gave the recorded copy edges"
    # The same program's copies, sampled otherwise: most of the edges the recording sampled are sampled again.
    found = len(edges(copies) & edges(live_copies))
    assert 2 * found >= len(live_copies["edges"]), (found, len(live_copies["edges"]))
    print(f"replayed at period 8: {len(copies['edges'])} copy edges (recorded at period 16: "
          f"{len(live_copies['edges'])})")


if __name__ == "__main__":
    main()
