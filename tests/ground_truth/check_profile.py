#!/usr/bin/env python3
"""Check an ojx profile of native_replicas against the program's ground truth.

    check_profile.py [--whole-objects] PROFILE.json TRUTH.json

PROFILE.json is the JSON profile the agent wrote (docs/profile-format.md); TRUTH.json is what
`native_replicas --truth FILE` wrote. Each profile context is mapped to a site by searching all of its
allocation frames, leaf first, for a site's function name (so a context shown through the agent's malloc or
operator new wrapper frames is still found); the first frame that names a site decides. A site may show up as
several contexts (different paths to it); its best-ranked context stands for it.

Ranking is the order of the profile's `contexts` (already sorted by evidence), except that every context with
`reported: false` counts as lowest, tied with every other unreported context.

Checks:
  found        every site of the truth has at least one context in the profile (its allocations were seen)
  (a) rank     every planted site's context ranks above every control's: it is reported, and before the
               control in the profile unless the control is unreported
  (b) bounds   for each planted site whose context is reported, the true largest-group ratio X_N/X lies in
               [omega, gamma] (profile numbers carry 6 significant digits, so 1e-5 of slack)
  (c) control  no reported context of a control site is "replicated" (omega >= 0.1)
  (d) heap     (--whole-objects) where the profile has a heap view and the truth says which planted sites keep
               their objects alive (kept_alive) and which free each at once (kept_alive 0): every kept planted
               site saves more in the heap than every transient one (the low ends of the sites' heap savings,
               the best of a site's contexts), and every transient one more in churn (the low end of its
               replicated bytes allocated) than every kept one: the two views rank them in opposite orders

With --whole-objects the checks judge the site's whole-object estimate instead of its comparisons (the agents
digest objects whole at their free and at exit: docs/design.md): a context is reported only where its estimate
rests on whole objects, and [omega, gamma] is the interval of its largest identical group's share. The run's
watchpoints do not matter then.

A profile of a run without watchpoints (run.watchpoints "none: …; sampling only") has no comparisons: only
`found` is checked, and the table says why.

Prints a table either way. Exit status: 0 all checks pass, 1 some check failed (one message per failure),
2 unreadable or malformed input.
"""

import json
import math
import os
import re
import subprocess
import sys

REPLICATED_OMEGA = 0.1
SLACK = 1e-5
ROLES = ("planted", "control")


class InputError(Exception):
    """The input cannot be read or does not have the expected shape."""


def load_json(path, what):
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except OSError as error:
        raise InputError(f"cannot read {what} {path}: {error.strerror or error}") from error
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise InputError(f"{what} {path} is not valid JSON: {error}") from error


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def field(mapping, key, where, check, expected):
    if not isinstance(mapping, dict) or key not in mapping:
        raise InputError(f"{where}: missing field '{key}'")
    value = mapping[key]
    if not check(value):
        raise InputError(f"{where}: field '{key}' should be {expected}, got {json.dumps(value)[:60]}")
    return value


def number(mapping, key, where):
    return field(mapping, key, where, is_number, "a number")


def count(mapping, key, where):
    return field(mapping, key, where,
                 lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0, "a non-negative integer")


def read_truth(path):
    doc = load_json(path, "truth")
    where = f"truth {path}"
    if not isinstance(doc, dict):
        raise InputError(f"{where}: expected a JSON object at the top level")
    entries = field(doc, "sites", where, lambda v: isinstance(v, list) and v, "a non-empty list")
    sites = []
    for i, entry in enumerate(entries):
        at = f"{where}: sites[{i}]"
        function = field(entry, "function", at, lambda v: isinstance(v, str) and v.strip(), "a non-empty string")
        site = {
            "function": function,
            "role": field(entry, "role", at, lambda v: v in ROLES, " or ".join(ROLES)),
            "objects": count(entry, "objects", at),
            "ratio": field(entry, "largest_group_ratio", at, lambda v: is_number(v) and 0 <= v <= 1,
                           "a number in [0, 1]"),
            "pair_fraction": entry.get("identical_pair_fraction") if is_number(
                entry.get("identical_pair_fraction")) else None,
            "kept_alive": entry.get("kept_alive") if is_number(entry.get("kept_alive")) else None,
        }
        if any(other["function"] == function for other in sites):
            raise InputError(f"{at}: function '{function}' appears twice")
        sites.append(site)
    return sites


def exact_run_problems(path, agent_output):
    """What keeps the profile at `path`, written in the agents' exact verification mode (`exact`), from being
    exact: the start line (in `agent_output`) not saying the mode, digests left out by a budget, counts that are
    estimates, and contexts whose tracked objects were not all digested or whose contents were not all kept."""
    problems = []
    if "exact mode" not in agent_output:
        problems.append("the start line does not say the run is in the exact mode")
    with open(path, encoding="utf-8") as handle:
        document = json.load(handle)
    run = document["run"]
    if run["digests_skipped"]["budget"] != 0 or not run["allocation_counts"].startswith("exact"):
        problems.append(f"digests left out by a budget ({run['digests_skipped']}) or counts not exact "
                        f"({run['allocation_counts']})")
    for context in document["contexts"]:
        whole = context.get("whole_objects", {})
        unkept = whole.get("unkept", {}).get("objects", 0)
        if unkept != 0 or whole.get("objects", 0) != context["objects"]:
            problems.append(f"{context['allocation']['frames'][:2]}: {context['objects']} objects tracked, "
                            f"{whole.get('objects', 0)} digested, {unkept} unkept")
    return problems


def sampling_only_reason(path):
    """Why the run made no watchpoint comparisons (the agent says "none: REASON; sampling only" in
    run.watchpoints when no debug register works), or None when it had watchpoints or sampled no access (then
    there was no pair to compare, whatever the machine: "none: no access sampling, ...")."""
    watchpoints = load_json(path, "profile").get("run", {}).get("watchpoints", "")
    if not watchpoints.startswith("none") or watchpoints.startswith("none: no access sampling"):
        return None
    return watchpoints[len("none"):].lstrip(":( ").split("; sampling only")[0]


def read_profile(path, evidence="comparisons"):
    """The profile's contexts; with evidence="whole_objects", their reported flag, bounds and theta are those of the
    whole-object estimate (a context whose estimate rests on anything else counts as unreported)."""
    doc = load_json(path, "profile")
    where = f"profile {path}"
    if not isinstance(doc, dict):
        raise InputError(f"{where}: expected a JSON object at the top level")
    version = field(doc, "ojx_profile_version", where, is_number, "a number")
    if version != 1:
        raise InputError(f"{where}: ojx_profile_version {version} is not supported (this checker reads 1)")
    entries = field(doc, "contexts", where, lambda v: isinstance(v, list), "a list")
    contexts = []
    for i, entry in enumerate(entries):
        at = f"{where}: contexts[{i}]"
        allocation = field(entry, "allocation", at, lambda v: isinstance(v, dict), "an object")
        frames = field(allocation, "frames", at + ".allocation",
                       lambda v: isinstance(v, list) and all(isinstance(f, str) for f in v), "a list of strings")
        comparisons = field(entry, "comparisons", at, lambda v: isinstance(v, dict), "an object")
        contexts.append({
            "index": i,
            "frames": frames,
            "reported": field(entry, "reported", at, lambda v: isinstance(v, bool), "true or false"),
            "objects": count(entry, "objects", at),
            "comparisons": count(comparisons, "equal", at + ".comparisons")
            + count(comparisons, "different", at + ".comparisons"),
            "theta": number(entry, "theta", at),
            "omega": number(entry, "omega", at),
            "gamma": number(entry, "gamma", at),
            "heap_saves": heap_saves(entry),
            "churn_saves": churn_saves(entry),
        })
        if evidence == "whole_objects":
            contexts[-1].update(whole_object_bounds(entry, at))
    return contexts


def heap_saves(entry):
    """The low end of what sharing saves among the context's objects alive at the heap moment (0 without an
    estimate), or None where the profile has no heap view of it."""
    heap = entry.get("heap")
    if not isinstance(heap, dict):
        return None
    saves = heap.get("saves")
    return saves[0] if isinstance(saves, list) and saves else 0


def churn_saves(entry):
    """The low end of the replicated bytes the context allocated (docs/profile-format.md, "Bytes a fix would
    save"): (floor(low * X) - 1) * B / X over its allocated instances X and bytes B."""
    estimate = entry.get("estimate")
    if not isinstance(estimate, dict) or estimate.get("evidence") in (None, "none"):
        return 0
    low = estimate["largest_share_ci"][0]
    allocated = entry.get("allocated")
    if isinstance(allocated, dict):
        kinds = list(allocated.get("types", [])) + ([allocated["other_types"]] if "other_types" in allocated else [])
        instances = sum(t.get("instances", 0) for t in kinds)
        size = sum(t.get("bytes", 0) for t in kinds)
    else:
        instances, size = entry.get("objects", 0), entry.get("bytes", 0)
    if instances <= 0:
        return 0
    identical = math.floor(low * instances * (1 + 1e-5))
    return (identical - 1) * size / instances if identical > 1 else 0


def whole_object_bounds(entry, where):
    """A context's reported flag, theta (the largest group's share), [omega, gamma] (its interval) and comparisons
    (objects digested) from its whole-object estimate."""
    estimate = field(entry, "estimate", where, lambda v: isinstance(v, dict), "an object")
    if estimate.get("evidence") != "whole_objects":
        return {"reported": False, "theta": 0, "omega": 0, "gamma": 1, "comparisons": 0}
    low, high = field(estimate, "largest_share_ci", where + ".estimate",
                      lambda v: isinstance(v, list) and len(v) == 2 and all(is_number(x) for x in v),
                      "two numbers")
    whole = field(entry, "whole_objects", where, lambda v: isinstance(v, dict), "an object")
    return {"reported": True, "theta": number(estimate, "largest_share", where + ".estimate"), "omega": low,
            "gamma": high, "comparisons": count(whole, "objects", where + ".whole_objects")}


def site_of(context, sites):
    """The site a context belongs to: the first frame, leaf first, that names a site function. If one frame
    names several (one name inside another), the longest name wins."""
    for frame in context["frames"]:
        named = [site for site in sites if site["function"] in frame]
        if named:
            return max(named, key=lambda site: len(site["function"]))
    return None


def ranks_above(planted, control):
    """Unreported contexts are all lowest: a planted site ranks above a control only if it is reported."""
    if not planted["reported"]:
        return False
    return not control["reported"] or planted["index"] < control["index"]


def rank_key(context):
    return (not context["reported"], context["index"])


def describe(context):
    return f"#{context['index'] + 1}" + ("" if context["reported"] else " unreported")


def check(contexts, sites, evidence="comparisons"):
    """Returns (table rows, notes, failures). `evidence`: what the contexts' estimates rest on (read_profile's);
    judged by comparisons, a transient planted site (kept_alive 0: each object freed at once) is not required to
    rank above the controls: its objects die before a watchpoint on them can trap, so comparisons see almost
    none of them (its whole objects, digested at their death, do)."""
    matched = {site["function"]: [] for site in sites}
    for context in contexts:
        site = site_of(context, sites)
        if site is not None:
            matched[site["function"]].append(context)

    failures, notes = [], []
    best = {}
    for site in sites:
        found = sorted(matched[site["function"]], key=rank_key)
        if not found:
            failures.append(f"found: {site['role']} site {site['function']} has no context in the profile "
                            f"(no allocation frame names it; were its allocations seen?)")
            continue
        best[site["function"]] = found[0]
        if len(found) > 1:
            notes.append(f"{site['function']} appears as {len(found)} contexts "
                         f"({', '.join(describe(c) for c in found)}); using {describe(found[0])}")

    planted = [s for s in sites if s["role"] == "planted" and s["function"] in best]
    controls = sorted((s for s in sites if s["role"] == "control" and s["function"] in best),
                      key=lambda s: rank_key(best[s["function"]]))
    verdicts = {site["function"]: [] for site in sites}
    for site in sites:
        if site["function"] not in best:
            verdicts[site["function"]].append("MISSING")

    for p in planted:
        p_context = best[p["function"]]
        if evidence == "comparisons" and p["kept_alive"] == 0 and not p_context["reported"]:
            notes.append(f"{p['function']}: transient (each object freed at once), too few comparisons for an "
                         "estimate; not ranked")
            continue
        beaten_by = [c for c in controls if not ranks_above(p_context, best[c["function"]])]
        for c in beaten_by:
            failures.append(f"(a) rank: planted {p['function']} ({describe(p_context)}) does not rank above "
                            f"control {c['function']} ({describe(best[c['function']])})")
        if beaten_by:
            verdicts[p["function"]].append("RANK")

        if p_context["reported"]:
            omega, gamma, ratio = p_context["omega"], p_context["gamma"], p["ratio"]
            if not omega - SLACK <= ratio <= gamma + SLACK:
                failures.append(f"(b) bounds: planted {p['function']}: true ratio {ratio:.4f} is outside "
                                f"[omega, gamma] = [{omega:.4f}, {gamma:.4f}] ({describe(p_context)}, "
                                f"{p_context['comparisons']} comparisons, theta {p_context['theta']:.4f})")
                verdicts[p["function"]].append("BOUNDS")

    # (d) heap against churn, where the profile has a heap view and the truth says which sites keep their objects.
    # Judged where the estimates rest on whole objects (the defaults): a comparisons run's heap view is as thin
    # as its digests, which access sampling does not add to.
    with_heap = evidence == "whole_objects" and any(context["heap_saves"] is not None for context in contexts)
    kept = [s for s in planted if s["kept_alive"]]
    transient = [s for s in planted if s["kept_alive"] == 0]
    if with_heap and kept and transient:
        def best_of(site, key):
            return max((context[key] or 0) for context in matched[site["function"]])
        for k in kept:
            for t in transient:
                if not best_of(k, "heap_saves") > best_of(t, "heap_saves"):
                    failures.append(f"(d) heap: kept {k['function']} saves {best_of(k, 'heap_saves'):.0f} bytes in "
                                    f"the heap, transient {t['function']} {best_of(t, 'heap_saves'):.0f}")
                    verdicts[k["function"]].append("HEAP")
                if not best_of(t, "churn_saves") > best_of(k, "churn_saves"):
                    failures.append(f"(d) churn: transient {t['function']} saves {best_of(t, 'churn_saves'):.0f} "
                                    f"bytes of churn, kept {k['function']} {best_of(k, 'churn_saves'):.0f}")
                    verdicts[t["function"]].append("CHURN")
        notes.append(f"heap against churn: {len(kept)} kept planted site(s) rank above {len(transient)} transient "
                     "one(s) by heap saved, below them by churn saved" if not any(
                         f.startswith("(d)") for f in failures) else "heap against churn: see the failures")

    for c in controls:
        for context in matched[c["function"]]:
            if context["reported"] and context["omega"] >= REPLICATED_OMEGA:
                failures.append(f"(c) control: control {c['function']} is replicated in {describe(context)}: "
                                f"omega {context['omega']:.4f} >= {REPLICATED_OMEGA} (true ratio {c['ratio']:.4f}, "
                                f"theta {context['theta']:.4f}, {context['comparisons']} comparisons)")
                if "REPLICATED" not in verdicts[c["function"]]:
                    verdicts[c["function"]].append("REPLICATED")

    rows = []
    missing_last = (True, True, 0)
    for site in sorted(sites, key=lambda s: (False, *rank_key(best[s["function"]])) if s["function"] in best
                       else missing_last):
        context = best.get(site["function"])
        rows.append((site, context, verdicts[site["function"]] or ["ok"]))

    others = len(contexts) - sum(len(found) for found in matched.values())
    if others:
        notes.append(f"{others} other context(s) name no site (the program's runtime, the truth records); ignored")
    return rows, notes, failures


def fmt(value, digits=3):
    return "-" if value is None else f"{value:.{digits}f}"


def print_table(rows):
    header = ("site", "role", "context", "objects", "cmp", "theta", "omega", "gamma", "true X_N/X", "true theta",
              "check")
    lines = []
    for site, context, verdict in rows:
        if context is None:
            lines.append((site["function"], site["role"], "-", f"-/{site['objects']}", "-", "-", "-", "-",
                          fmt(site["ratio"], 4), fmt(site["pair_fraction"], 4), ",".join(verdict)))
        else:
            lines.append((site["function"], site["role"], describe(context),
                          f"{context['objects']}/{site['objects']}", str(context["comparisons"]),
                          fmt(context["theta"]), fmt(context["omega"]), fmt(context["gamma"]),
                          fmt(site["ratio"], 4), fmt(site["pair_fraction"], 4), ",".join(verdict)))
    widths = [max(len(str(row[i])) for row in [header] + lines) for i in range(len(header))]
    for row in [header] + lines:
        print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip())
    print("(context: rank in the profile; objects: profile/truth; cmp: comparisons; "
          "true theta: fraction of identical pairs)")


def whole_object_problems(profile, truth):
    """A run at an agent's defaults judged by its whole-object estimates (the table printed): every failure but
    the bounds', and the bounds' only when the true share lies outside the interval for half the planted sites
    or more (a short run's intervals are 95 % ones)."""
    rows, _, failures = check(read_profile(profile, "whole_objects"), read_truth(truth), "whole_objects")
    print_table(rows)
    planted = [row for row in rows if row[0]["role"] == "planted"]
    outside = [failure for failure in failures if failure.startswith("(b)")]
    for failure in failures:
        print("  " + failure)
    problems = [failure for failure in failures if not failure.startswith("(b)")]
    if len(outside) * 2 >= len(planted):
        problems.append(f"the true share lies outside the whole-object interval for {len(outside)} of "
                        f"{len(planted)} planted sites")
    return problems


def check_replay(trace, profile):
    """`ojx replay` of a recorded trace (the ojx command in the environment variable OJX) must give the live run's
    profile byte for byte, with no record lost. Prints what the trace holds; returns the problem, or None. Without
    OJX (the command not built), says so and returns None."""
    ojx = os.environ.get("OJX")
    if not ojx:
        print("  SKIPPED the replay of the recorded trace: the ojx command is not built (OJX is not set)")
        return None
    replayed = trace + ".replayed.json"
    result = subprocess.run([ojx, "replay", trace, "-o", replayed], capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        return f"ojx replay exited {result.returncode}: {result.stderr.strip()[-500:]}"
    events = re.search(r"(\d+) events from", result.stderr)
    size = os.path.getsize(trace)
    count = int(events.group(1)) if events else 0
    print(f"  recorded trace: {size} bytes, {count} events" + (f" ({size / count:.1f} bytes per event)" if count else ""))
    if "lost" in result.stderr:
        return f"the recording lost records: {result.stderr.strip()}"
    with open(profile, "rb") as live, open(replayed, "rb") as again:
        if live.read() != again.read():
            return f"ojx replay of {trace} differs from the live profile {profile}"
    return None


def main(argv):
    if argv[1:] in (["-h"], ["--help"]):
        print(__doc__.strip())
        return 0
    evidence = "comparisons"
    if argv[1:2] == ["--whole-objects"]:
        evidence = "whole_objects"
        argv = argv[:1] + argv[2:]
    if len(argv) != 3:
        print("usage: check_profile.py [--whole-objects] PROFILE.json TRUTH.json  (--help explains the checks)",
              file=sys.stderr)
        return 2
    try:
        sites = read_truth(argv[2])
        contexts = read_profile(argv[1], evidence)
    except InputError as error:
        print(f"check_profile: {error}", file=sys.stderr)
        return 2

    rows, notes, failures = check(contexts, sites, evidence)
    print_table(rows)
    for note in notes:
        print(f"note: {note}")
    sampling_only = sampling_only_reason(argv[1]) if evidence == "comparisons" else None
    if sampling_only:
        failures = [failure for failure in failures if failure.startswith("found")]
        print(f"note: the run compared nothing, so only 'found' is checked: no watchpoints ({sampling_only})")
    if failures:
        for failure in failures:
            print(f"FAIL {failure}")
        print(f"check_profile: {len(failures)} failure(s)")
        return 1
    print(f"check_profile: all checks passed ({len(sites)} sites, {len(contexts)} contexts)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
