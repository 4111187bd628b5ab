#!/usr/bin/env python3
"""End to end, a trace of every access: record the emulation demo with --record-accesses, replay it with `ojx replay`
and require the live profile byte for byte; replay it with other policies twice and require the same bytes (and a
different profile); compare a grid of configurations (--compare) and check the table and its JSON against each
other and against the truth; and require a trace of samples and traps to refuse, with one line naming the setting,
what only a trace of every access can answer.

usage: access_replay_test.py OJX SYNTHETIC_DEMO WORK_DIR
"""
import json
import os
import sys

from replay_test import fresh_directory, run


def read(path):
    with open(path, "rb") as f:
        return f.read()


def main():
    ojx, demo, work = sys.argv[1:4]
    live, every, sampled = (os.path.join(fresh_directory(work), name)
                            for name in ("live.json", "every.ojxt", "sampled.ojxt"))

    recorded = run(demo, "--json", live, "--record-accesses", every)
    assert recorded.returncode == 0, recorded.stderr
    replayed = os.path.join(work, "replayed.json")
    replay = run(ojx, "replay", every, "-o", replayed)
    assert replay.returncode == 0, replay.stderr
    assert read(live) == read(replayed), "the replayed profile differs from the live run's"
    print(f"replayed {every} ({os.path.getsize(every)} bytes) to the live profile byte for byte")

    other = ["--slots", "2", "--replacement", "oldest-first", "--pairing", "recent", "--period", "50",
             "--sampler-seed", "3", "--trigger", "at-sample"]
    first, second = os.path.join(work, "other-1.json"), os.path.join(work, "other-2.json")
    for path in (first, second):
        result = run(ojx, "replay", every, *other, "-o", path)
        assert result.returncode == 0, result.stderr
    assert read(first) == read(second), "the same trace, settings and seeds gave two profiles"
    assert read(first) != read(live), "other policies gave the recorded profile"
    facts = json.loads(read(first))["run"]
    assert facts["pairing"] == "recent" and facts["replacement"] == "oldest-first", facts
    assert "2 slots" in facts["watchpoints"] and "period 50" in facts["sampler"], facts
    print(f"other policies, twice: the same profile ({facts['sampler']}, {facts['watchpoints']})")

    comparison_json = os.path.join(work, "comparison.json")
    compared = run(ojx, "replay", every, "--compare", "slots=1,4", "--compare", "replacement=reservoir,keep-armed",
                   "--compare-json", comparison_json)
    assert compared.returncode == 0, compared.stderr
    lines = compared.stdout.splitlines()
    labels = [f"slots={s} replacement={r}" for s in (1, 4) for r in ("reservoir", "keep-armed")]
    header = next(i for i, line in enumerate(lines) if line.startswith("configuration"))
    rows = [line.split() for line in lines[header + 1:header + 5]]
    assert [" ".join(row[:2]) for row in rows] == labels, lines[header:header + 5]
    with open(comparison_json) as f:
        table = json.load(f)
    assert [c["label"] for c in table["configurations"]] == labels
    for row, configuration in zip(rows, table["configurations"]):
        assert int(row[2]) == configuration["comparisons"], (row, configuration["comparisons"])
        assert int(row[3]) == configuration["traps"]
        covered = sum(1 for s in configuration["sites"] if s.get("covers_largest_group_ratio"))
        assert row[5] == f"{covered}/6", (row, covered)
        for site in configuration["sites"]:
            if site["estimated"]:
                inside = site["omega"] <= site["true_largest_group_ratio"] <= site["gamma"]
                assert inside == site["covers_largest_group_ratio"], site
    four, one = table["configurations"][2]["comparisons"], table["configurations"][0]["comparisons"]
    assert four > one, f"4 slots made {four} comparisons, 1 slot {one}"
    print("\n".join(lines[header:header + 5]))

    recorded = run(demo, "--record", sampled)
    assert recorded.returncode == 0, recorded.stderr
    for option, value in (("--slots", "2"), ("--pairing", "recent"), ("--trigger", "at-sample")):
        output = os.path.join(work, "refused.json")
        result = run(ojx, "replay", sampled, option, value, "-o", output)
        refused = result.stderr.splitlines()
        assert result.returncode == 2, f"{option}: exit {result.returncode}: {result.stderr}"
        assert len(refused) == 1 and sampled in refused[0] and f"'{option[2:]}' needs a trace of every access" in \
            refused[0], refused
        assert not os.path.exists(output), f"{option}: an output file was left behind"
    print(f"sampled trace, {option} {value}: {refused[0]}")
    estimator = run(ojx, "replay", sampled, "--compare", "confidence=0.9,0.99")
    assert estimator.returncode == 0, estimator.stderr
    assert "No truth" in estimator.stdout, estimator.stdout

    for bad in (["--slots", "99", "-o", "x.json"], ["--compare", "slots"], ["--compare", "slot=1,2"],
                ["--compare", "slots=1", "-o", "x.json"], ["--compare-json", "x.json", "-o", "y.json"]):
        result = run(ojx, "replay", every, *bad)
        assert result.returncode == 2 and len(result.stderr.splitlines()) == 1, (bad, result.stderr)
        print(f"{' '.join(bad)}: {result.stderr.strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
