#!/usr/bin/env python3
"""Checks ojx's pprof output with an independent consumer, `go tool pprof`.

usage: pprof_consumer_test.py [--copies | --copying-code | --exact] --pprof FILE.pb.gz --profile-json PROFILE.json
                              [-- COMMAND ARGS...]

PROFILE.json is an ojx JSON profile (docs/profile-format.md) and FILE.pb.gz the same profile as pprof. If a
COMMAND is given it is run first and must write FILE.pb.gz (e.g. `ojx report --pprof FILE.pb.gz PROFILE.json`,
or the test fixture, which writes both files). The expected totals are computed here from the JSON alone:

  objects           sum of contexts' objects
  allocated         sum of contexts' bytes
  comparisons       sum of contexts' comparisons.equal + comparisons.different
  replicated_bytes  sum of each reported context's bytes in all but one of its largest identical group,
                    (floor(low * objects * (1 + 1e-5)) - 1) * bytes / objects, rounded to a byte, low being the low end of
                    the site estimate's largest_share_ci (omega in profiles without one); objects and bytes are
                    the context's allocation metrics (allocated.types, estimates where allocations were sampled)
                    where the profile has them
  heap_replicated_bytes  sum of each context's heap saving's low end (heap.saves[0]; 0 without a heap view),
                    rounded to a byte

and compared with the totals pprof prints (-top) and with the sum of its raw samples (-raw). Then the top entries
must name what the JSON says replicates most: the allocated type (pprof's leaf) and, with the synthetic type frames
hidden, the allocation site's function; the sample's labels must carry the estimate.

With --copies, FILE.pb.gz is the profile's copy volume (`ojx report --value copied-bytes --pprof`): one sample per
edge of its copy section into a heap location (a field or a static location; uses by the consumer are not copies),
valued at copies (Σ period: `weight`) and copied_bytes (width × weight), which must sum to the section's totals;
and each edge's bytes must be where its stack says, flat at the leaf `[copied from SOURCE]` (the source node as
the report names it), at the destination location with the leaves hidden, and at the destination site's leaf
function with every synthetic frame hidden.

With --copying-code, FILE.pb.gz is the copy volume by the code that copied (`ojx report --value copying-code
--pprof`): each of those edges split over its `copied_by` contexts by their samples, its `copied_by_other` samples
under `[other code]` and the samples no code counts under `[code not recorded]`, its `weight` apportioned by
largest remainder; one sample per share, with exactly the share's copies and bytes, the same totals, and the bytes
flat at the source leaf, at `[into DESTINATION]` with the source hidden, and at the code's leaf function (or the
frame standing for it) with both hidden.

With --exact, FILE.pb.gz is the profile's exact counts (`ojx report --value exact-objects --pprof`): value types
exact_objects and never_allocated, summing to the section's objects and to its sites' objects − jvm_allocated
(where positive; 0 without jvm_reported); each site's count flat at its function, with the type leaves hidden,
whatever calling contexts it was split over.

Python 3 standard library only. Exit status: 0 passed, 1 failed, 77 skipped (no `go`), 2 bad usage.
"""

import argparse
import glob
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
VALUE_TYPES = ["objects", "allocated", "comparisons", "replicated_bytes", "heap_replicated_bytes"]

# The frame formats of docs/profile-format.md: `pkg.Class.method(File.java:42)` and `function (file.cpp:42)`. The
# location is the last parenthesised group; anything else is a function name as it is.
FRAME = re.compile(r"(?P<function>.+?) ?\((?P<file>[^()]+):(?P<line>[0-9]+)\)")


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


def find_go():
    """The go command: $GO, then PATH, then Debian's versioned directory (golang-go may not link it)."""
    candidates = [os.environ.get("GO"), shutil.which("go")] + sorted(glob.glob("/usr/lib/go-*/bin/go"), reverse=True)
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def function_of(frame):
    match = FRAME.fullmatch(frame)
    return match.group("function") if match else frame


def replicated_bytes(context):
    """At least this many bytes would be saved if the context's largest identical group were one object (at the
    low end of its share's interval): of all
    the context's allocations (its allocation metrics, scaled where allocations were sampled) where the profile
    has them, else of its tracked objects."""
    if "allocated" in context:
        kinds = context["allocated"]["types"] + [context["allocated"].get("other_types", {"instances": 0, "bytes": 0})]
        objects = sum(kind["instances"] for kind in kinds)
        allocated = sum(kind["bytes"] for kind in kinds)
    else:
        objects, allocated = context["objects"], context["bytes"]
    # The site's one estimate (whole objects or comparisons) where the profile has it; older profiles: omega.
    estimate = context.get("estimate")
    if estimate is not None:
        if estimate["evidence"] == "none" or objects == 0:
            return 0.0
        low = estimate["largest_share_ci"][0]
    elif not context["reported"] or objects == 0:
        return 0.0
    else:
        low = context["omega"]
    identical = math.floor(low * objects * (1 + 1e-5))  # as site_estimate.hpp rounds it
    return (identical - 1) * (allocated / objects) if identical > 1 else 0.0


def expected_values(context):
    comparisons = context["comparisons"]
    return {
        "objects": context["objects"],
        "allocated": context["bytes"],
        "comparisons": comparisons["equal"] + comparisons["different"],
        "replicated_bytes": replicated_bytes(context),
        "heap_replicated_bytes": context["heap"]["saves"][0] if "heap" in context else 0.0,
    }


def totals(contexts):
    sums = dict.fromkeys(VALUE_TYPES, 0)
    for context in contexts:
        for name, value in expected_values(context).items():
            sums[name] += value
    return sums


def matches_total(value_type, pprof_value, expected):
    # Replicated bytes are fractional in the profile and whole bytes in pprof: the total is the sum rounded.
    if value_type in ("replicated_bytes", "heap_replicated_bytes"):
        return abs(pprof_value - expected) <= 0.5 + 1e-9 * max(1.0, expected)
    return pprof_value == expected


class Pprof:
    """Runs `go tool pprof` on one file in a clean, offline environment."""

    def __init__(self, go, path, scratch):
        self.go = go
        self.path = path
        home = os.path.join(scratch, "home")
        os.makedirs(home, exist_ok=True)
        self.env = dict(os.environ, HOME=home, GOCACHE=os.path.join(scratch, "gocache"),
                        GOPATH=os.path.join(scratch, "gopath"), PPROF_TMPDIR=os.path.join(scratch, "pprof"),
                        GOFLAGS="", GOPROXY="off", GOTOOLCHAIN="local")

    def run(self, *options):
        command = [self.go, "tool", "pprof", *options, self.path]
        result = subprocess.run(command, env=self.env, capture_output=True, text=True, timeout=300)
        check(result.returncode == 0, "%s failed (%d):\n%s" % (" ".join(command), result.returncode, result.stderr))
        # Nothing on standard error: pprof warns there when it has to guess (e.g. looks for binaries to symbolize).
        check(result.stderr.strip() == "", "%s warned:\n%s" % (" ".join(command), result.stderr))
        return result.stdout

    def top(self, value_type, *options):
        """(total, [(flat, name)]) of -top, in whole units (bytes, counts), all nodes."""
        output = self.run("-top", "-nodecount=1000000", "-nodefraction=0", "-unit=B",
                          "-sample_index=" + value_type, *options)
        header = re.search(r"^Showing nodes accounting for .*? of (-?[0-9]+)B? total$", output, re.MULTILINE)
        check(header, "no total in -top output:\n" + output)
        rows = []
        for line in output.splitlines():
            row = re.match(r"^\s*(-?[0-9]+)B?\s+\S+%\s+\S+%\s+-?[0-9]+B?\s+\S+%\s+(.+)$", line)
            if row:
                rows.append((int(row.group(1)), row.group(2)))
        return int(header.group(1)), rows

    def raw(self):
        """The raw samples: the value type names in order and each sample's values and label text."""
        output = self.run("-raw")
        lines = output.splitlines()
        check("Samples:" in lines, "no samples in -raw output:\n" + output)
        at = lines.index("Samples:") + 1
        names = [re.sub(r"\[dflt\]$", "", field).split("/")[0] for field in lines[at].split()]
        samples = []
        for line in lines[at + 1:]:
            if not line.startswith(" "):
                break  # the next section (Locations)
            values = re.match(r"^\s*(-?[0-9]+(?:\s+-?[0-9]+)*):", line)
            if values:
                samples.append({"values": [int(v) for v in values.group(1).split()], "labels": ""})
            elif samples:
                samples[-1]["labels"] += line.strip() + " "
        return names, samples


def leaders(scores, sites):
    """The names whose score is the largest, within the byte per site that rounding can move a sum by."""
    best = max(scores.values())
    return {name for name, score in scores.items() if score >= best - sites}


def check_profile(pprof, profile):
    contexts = profile["contexts"]
    check(contexts, "the profile has no contexts: nothing to compare")
    expected = totals(contexts)

    names, samples = pprof.raw()
    check(names == VALUE_TYPES, "value types %s, expected %s" % (names, VALUE_TYPES))
    check(len(samples) == len(contexts), "%d samples for %d contexts" % (len(samples), len(contexts)))
    for index, value_type in enumerate(VALUE_TYPES):
        raw_sum = sum(sample["values"][index] for sample in samples)
        check(matches_total(value_type, raw_sum, expected[value_type]),
              "%s: raw samples sum to %d, the profile's total is %s" % (value_type, raw_sum, expected[value_type]))
        top_total, rows = pprof.top(value_type)
        check(matches_total(value_type, top_total, expected[value_type]),
              "%s: pprof -top total %d, the profile's total is %s" % (value_type, top_total, expected[value_type]))
        check(sum(flat for flat, _ in rows) == top_total, "%s: -top flat values do not add up to its total" % value_type)
        print("%-17s total %d (profile: %s)" % (value_type, top_total, expected[value_type]))

    # The top entries. -symbolize=none shows names as the profile carries them (pprof's default shortens C++-looking
    # names); -hide removes the synthetic type frames so that the allocation site becomes the leaf.
    by_type, by_site = {}, {}
    for context in contexts:
        value = replicated_bytes(context)
        type_frame = "[%s]" % context["allocation"]["type"]
        by_type[type_frame] = by_type.get(type_frame, 0) + value
        frames = context["allocation"]["frames"]
        if frames:
            site = function_of(frames[0])
            by_site[site] = by_site.get(site, 0) + value
    check(max(by_type.values()) > 0, "no context of the profile is replicated: nothing to rank")
    _, rows = pprof.top("replicated_bytes", "-symbolize=none")
    check(rows and rows[0][1] in leaders(by_type, len(contexts)),
          "top type is %s, expected one of %s" % (rows[0][1] if rows else None, sorted(leaders(by_type, len(contexts)))))
    _, rows = pprof.top("replicated_bytes", "-symbolize=none", r"-hide=^\[")
    check(rows and rows[0][1] in leaders(by_site, len(contexts)),
          "top allocation site is %s, expected one of %s" % (rows[0][1] if rows else None, sorted(leaders(by_site, len(contexts)))))
    print("top type %s, top allocation site %s" % (sorted(leaders(by_type, len(contexts))), sorted(leaders(by_site, len(contexts)))))

    # Each sample is one context, in the profile's order: its labels name its type and carry its estimate.
    for context, sample in zip(contexts, samples):
        check(sample["values"][:3] == [expected_values(context)[name] for name in VALUE_TYPES[:3]],
              "sample %s does not match context %s" % (sample["values"], context["allocation"]))
        check("type:[%s]" % context["allocation"]["type"] in sample["labels"],
              "sample of %s has labels %s" % (context["allocation"], sample["labels"]))
        # The site's estimate, whatever it rests on; the comparisons' omega where they are enough for their own.
        estimate = context.get("estimate")
        if estimate and estimate["evidence"] != "none":
            low = "largest_share_low:[%d percent]" % round(100 * estimate["largest_share_ci"][0])
            check(low in sample["labels"], "sample of %s: no %s in %s" % (context["allocation"], low,
                                                                         sample["labels"]))
        if context["reported"]:
            omega = "omega:[%d percent]" % round(100 * context["omega"])
            check(omega in sample["labels"], "sample of %s: no %s in %s" % (context["allocation"], omega,
                                                                           sample["labels"]))


def node_name(sites, node, with_site=True):
    """A copy node as copies_view.hpp names it: "Record+8", "long[] elements", "new Record", "static 0x…", each
    site's with " at " its leaf frame."""
    if node["kind"] == "static":
        return "static 0x%x" % node["address"]
    site = sites[node["site"]]
    if node["kind"] == "allocation":
        name = "new " + site["type"]
    elif node["offset"] == "elements":
        name = site["type"] + " elements"
    else:
        name = "%s+%d" % (site["type"], node["offset"])
    if not with_site:
        return name
    return name + " at " + (site["frames"][0] if site["frames"] else "(no frames)")


def copy_edges(profile):
    """The copy section's sites and its edges into a heap location (a field or a static location; uses by the
    consumer are not copies)."""
    check("copies" in profile, "the profile has no copy section: nothing to compare")
    edges = [edge for edge in profile["copies"]["edges"] if edge["to"]["kind"] in ("field", "static")]
    check(edges, "the copy section has no copy into a heap location: nothing to compare")
    return profile["copies"]["sites"], edges


def check_copy_samples(pprof, edges, values):
    """The value types, the samples' (copies, copied_bytes) exactly `values` in any order, and their totals, in the
    raw samples and in -top, the section's."""
    expected = {"copies": sum(edge["weight"] for edge in edges),
                "copied_bytes": sum(edge["width"] * edge["weight"] for edge in edges)}
    names, samples = pprof.raw()
    check(names == list(expected), "value types %s, expected %s" % (names, list(expected)))
    check(sorted(tuple(sample["values"]) for sample in samples) == sorted(values),
          "samples' values %s, expected %s" % (sorted(tuple(sample["values"]) for sample in samples), sorted(values)))
    check_totals(pprof, names, samples, expected)


def check_totals(pprof, names, samples, expected):
    """Each value type's total, summed over the raw samples and as -top prints it, is the section's."""
    for index, value_type in enumerate(names):
        raw_sum = sum(sample["values"][index] for sample in samples)
        top_total, _ = pprof.top(value_type)
        check(raw_sum == expected[value_type] and top_total == expected[value_type],
              "%s: raw samples sum to %d, -top total %d, the section's total is %d"
              % (value_type, raw_sum, top_total, expected[value_type]))
        print("%-15s total %d (profile: %d)" % (value_type, top_total, expected[value_type]))


def check_flat(pprof, expectations):
    """Each (flat copied bytes by name, -hide options): -top shows those flat values for those names."""
    for expected_flat, hide in expectations:
        _, rows = pprof.top("copied_bytes", "-symbolize=none", *hide)
        flat = {name: value for value, name in rows if name in expected_flat}
        check(flat == expected_flat, "-top %s: flat copied bytes %s, expected %s" % (" ".join(hide), flat,
                                                                                   expected_flat))


def add_to(sums, name, value):
    sums[name] = sums.get(name, 0) + value


def source_frame(sites, edge):
    return "[copied from %s]" % node_name(sites, edge["from"])


def check_copies(pprof, profile):
    sites, copies = copy_edges(profile)
    check_copy_samples(pprof, copies, [(edge["weight"], edge["width"] * edge["weight"]) for edge in copies])
    # Each edge's bytes, flat where its stack puts them: the source leaf, the destination location, its site.
    by_source, by_location, by_site = {}, {}, {}
    for edge in copies:
        volume = edge["width"] * edge["weight"]
        add_to(by_source, source_frame(sites, edge), volume)
        add_to(by_location, "[%s]" % node_name(sites, edge["to"], with_site=False), volume)
        if edge["to"]["kind"] == "field" and sites[edge["to"]["site"]]["frames"]:
            add_to(by_site, function_of(sites[edge["to"]["site"]]["frames"][0]), volume)
    check_flat(pprof, ((by_source, []), (by_location, [r"-hide=^\[copied from "]), (by_site, [r"-hide=^\["])))
    heaviest = max(by_source, key=by_source.get)
    print("%d copy edges; heaviest source %s (%d bytes)" % (len(copies), heaviest, by_source[heaviest]))


def apportioned(total, parts):
    """`total` split in proportion to `parts` by largest remainder: each part's exact share rounded down, then one
    more to the parts with the largest remainders, the first of equal ones first, until the split sums to `total`."""
    whole = sum(parts)
    shares = [total * part // whole for part in parts]
    order = sorted(range(len(parts)), key=lambda i: -(total * parts[i] % whole))
    for i in order[:total - sum(shares)]:
        shares[i] += 1
    return shares


def code_shares(profile, edge):
    """The edge's samples by the code that took them, as pprof's leaf names the code: (name, samples)."""
    contexts = profile["copies"].get("code_contexts", [])
    shares = []
    for code in edge.get("copied_by", []):
        frames = contexts[code["context"]]["frames"]
        shares.append((function_of(frames[0]) if frames else "(no frames)", code["samples"]))
    other = edge.get("copied_by_other", 0)
    shares.append(("[other code]", other))
    shares.append(("[code not recorded]", edge["samples"] - sum(samples for _, samples in shares)))
    return [(name, samples) for name, samples in shares if samples > 0]


def check_copying_code(pprof, profile):
    sites, copies = copy_edges(profile)
    values, by_source, by_into, by_code = [], {}, {}, {}
    for edge in copies:
        shares = code_shares(profile, edge)
        for (code, _), share in zip(shares, apportioned(edge["weight"], [samples for _, samples in shares])):
            volume = edge["width"] * share
            values.append((share, volume))
            add_to(by_source, source_frame(sites, edge), volume)
            add_to(by_into, "[into %s]" % node_name(sites, edge["to"]), volume)
            add_to(by_code, code, volume)
    check(len(by_code) > 1, "the section names no code that copied: nothing to split")
    check_copy_samples(pprof, copies, values)
    check_flat(pprof, ((by_source, []), (by_into, [r"-hide=^\[copied from "]),
                       (by_code, [r"-hide=^\[(copied from|into) "])))
    heaviest = max(by_code, key=by_code.get)
    print("%d copy edges in %d shares; heaviest code %s (%d bytes)" % (len(copies), len(values), heaviest,
                                                                      by_code[heaviest]))


def check_exact(pprof, profile):
    section = profile.get("exact_counts")
    check(section and section["sites"], "the profile has no exact counts: nothing to compare")
    never = lambda site: max(site["objects"] - site["jvm_allocated"], 0) if section.get("jvm_reported") else 0
    expected = {"exact_objects": sum(site["objects"] for site in section["sites"]),
                "never_allocated": sum(never(site) for site in section["sites"])}
    names, samples = pprof.raw()
    check(names == list(expected), "value types %s, expected %s" % (names, list(expected)))
    check_totals(pprof, names, samples, expected)
    by_function = {}
    for site in section["sites"]:
        add_to(by_function, function_of(site["frame"]), site["objects"])
    _, rows = pprof.top("exact_objects", "-symbolize=none", r"-hide=^\[")
    flat = {name: value for value, name in rows if value != 0}  # callers show with no flat value
    check(flat == by_function, "-top with the type leaves hidden: flat exact objects %s, expected %s"
          % (sorted(flat.items())[:5], sorted(by_function.items())[:5]))
    print("%d counted sites in %d samples, each site's count flat at its function" % (len(section["sites"]), len(samples)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    kind = parser.add_mutually_exclusive_group()
    kind.add_argument("--copies", action="store_true", help="the pprof file is the profile's copy volume")
    kind.add_argument("--copying-code", action="store_true",
                      help="the pprof file is the profile's copy volume by the code that copied")
    kind.add_argument("--exact", action="store_true", help="the pprof file is the profile's exact counts")
    parser.add_argument("--pprof", required=True, help="the pprof file (.pb.gz) to check")
    parser.add_argument("--profile-json", required=True, help="the ojx JSON profile it was made from")
    parser.add_argument("command", nargs="*", help="after --: a command that writes the pprof file first")
    args = parser.parse_args()

    go = find_go()
    if go is None:
        print("SKIP: `go` is not installed (Debian: apt-get install golang-go); `go tool pprof` is the consumer")
        return SKIP
    if args.command:
        result = subprocess.run(args.command)
        if result.returncode != 0:
            print("FAIL: %s exited with %d" % (" ".join(args.command), result.returncode))
            return 1
    try:
        with open(args.profile_json, encoding="utf-8") as f:
            profile = json.load(f)
    except (OSError, ValueError) as error:
        print("FAIL: %s: %s" % (args.profile_json, error))
        return 1
    if not os.path.isfile(args.pprof):
        print("FAIL: %s: no such file" % args.pprof)
        return 1

    with tempfile.TemporaryDirectory(prefix="ojx-pprof-") as scratch:
        try:
            check_output = (check_copies if args.copies else check_copying_code if args.copying_code
                            else check_exact if args.exact else check_profile)
            check_output(Pprof(go, args.pprof, scratch), profile)
        except Failure as failure:
            print("FAIL: %s" % failure)
            return 1
    print("PASS: go tool pprof reads %s with the totals of %s" % (args.pprof, args.profile_json))
    return 0


if __name__ == "__main__":
    sys.exit(main())
