#!/usr/bin/env python3
"""Every `ojx` command's command line, read by the one option reader (ojx/options.hpp).

usage: command_usage_test.py OJX PROFILE WORKDIR

Checks:
  help       for every command, `--help` and `-h` print the same help, exit 0, and the help names every option the
             command takes (the list an unknown option's message gives) and no option it does not take;
  errors     an unknown option, a bad value, a missing value and a missing operand: exit 2, nothing on standard
             output, one line on standard error, `ojx COMMAND: ` and the reader's words naming the option as written;
  spellings  `--name value`, `--name=value` and a short spelling (-o) read alike: the same report or merged profile.
PROFILE is a profile to report and merge (tests/tools/testdata/native-replicas.json); no trace or JDK is needed,
since every error here is found before any file is read.
"""
import os
import re
import subprocess
import sys

problems = []

# Options a command's help names that are another command's or program's, which the help tells about.
OTHERS_OPTIONS = {"attach": {"--stop"}, "replay": {"--record", "--record-accesses", "--copy-program"}}


def check(condition, message, detail=""):
    print(("  ok:   " if condition else "  FAIL: ") + message + ("" if condition or not detail else f" ({detail.strip()})"))
    if not condition:
        problems.append(message)


def ojx(command, *args):
    return subprocess.run([command, *args], capture_output=True, text=True, timeout=60)


def check_help(command, name):
    unknown = ojx(command, name, "--no-such-option")
    prefix = f"ojx {name}: unknown option '--no-such-option'; valid options are: "
    lines = unknown.stderr.splitlines()
    check(unknown.returncode == 2 and len(lines) == 1 and lines[0].startswith(prefix),
          f"{name}: an unknown option is one line listing the valid ones", unknown.stderr)
    if not lines or not lines[0].startswith(prefix):
        return
    valid = set(re.findall(r"--[a-z][a-z-]*", lines[0][len(prefix):]))
    shown = ojx(command, name, "--help")
    short = ojx(command, name, "-h")
    check(shown.returncode == 0 and short.returncode == 0 and shown.stdout == short.stdout and shown.stdout,
          f"{name}: --help and -h print the same help", shown.stderr + short.stderr)
    named = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*(?![\w-])", shown.stdout)) - {"--help"}
    named -= OTHERS_OPTIONS.get(name, set())
    check(valid - {"--help"} <= named, f"{name}: the help names every option", f"missing {sorted(valid - named)}")
    check(named <= valid, f"{name}: the help names no option the command does not take", f"{sorted(named - valid)}")


def check_error(command, args, expected):
    result = ojx(command, *args)
    lines = result.stderr.splitlines()
    check(result.returncode == 2 and not result.stdout and lines == [expected], f"ojx {' '.join(args)}: {expected}",
          f"exit {result.returncode}, stderr {result.stderr!r}")


def check_same(command, first, second, output=None):
    a, b = ojx(command, *first), ojx(command, *second)
    same = a.stdout == b.stdout if output is None else read(output[0]) == read(output[1])
    check(a.returncode == 0 and b.returncode == 0 and same,
          f"ojx {' '.join(first)} and ojx {' '.join(second)} read alike", a.stderr + b.stderr)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    command, profile, work = sys.argv[1:]
    os.makedirs(work, exist_ok=True)

    for name in ("report", "merge", "heap", "replay", "run", "attach", "dump"):
        check_help(command, name)

    count = "expected a count: a non-negative integer, e.g. 100"
    fraction = "expected a fraction: a number from 0 to 1, or a percentage, e.g. 0.6 or 60%"
    for args, expected in (
            (["report", "--top", "x", profile], f"option '--top x': {count}"),
            (["report", "--frames=-1", profile], f"option '--frames=-1': {count}"),
            (["report", "--min-share", "1.5", profile], f"option '--min-share 1.5': {fraction}"),
            (["report", "--min-share=60", profile], f"option '--min-share=60': {fraction}"),
            (["report", "--value=width", "--collapsed", "-", profile],
             "option '--value=width': expected one of replicated-bytes, heap-replicated-bytes, comparisons, objects, "
             "bytes, copied-bytes, copying-code, exact-objects, never-allocated"),
            (["report", "--rank=size", profile],
             "option '--rank=size': expected one of share, heap, churn"),
            (["report", profile, "--top"], "option '--top' needs a value: --top <count>"),
            (["report", "--text=yes", profile], "option '--text=yes': --text is a flag and takes no value"),
            (["report", "--top", "3"], "no profile given"),
            (["merge", profile, "-o"], "option '-o' needs a value: -o <text>"),
            (["merge", profile, "--output="], "option '--output=' needs a value: --output <text>"),
            (["merge", profile], "no output file: add -o OUT (or -o - for standard output)"),
            (["heap", "t.ojxt", "--at", "soon"],
             "option '--at soon': expected gc:N, event:K or an event number K (from 1)"),
            (["heap", "t.ojxt", "--at=gc:1", "--top", "all"], f"option '--top all': {count}"),
            (["heap", "t.ojxt", "--check-census", "--tolerance=-1"], f"option '--tolerance=-1': {count}"),
            (["heap", "t.ojxt", "--at", "gc:1", "--tolerance", "2"], "--tolerance goes with --check-census"),
            (["replay", "t.ojxt", "--slots", "many", "-o", "-"], f"option '--slots many': {count}"),
            (["replay", "t.ojxt", "--trigger=never", "-o", "-"],
             "option '--trigger=never': expected one of loads-and-stores, loads-only, sample"),
            (["replay", "t.ojxt", "--confidence", "2", "-o", "-"], f"option '--confidence 2': {fraction}"),
            # A value of the setting's kind that the setting does not take: named as written, too.
            (["replay", "t.ojxt", "--slots", "99", "-o", "-"], "option '--slots 99': expected 0 to 16 slots"),
            (["replay", "t.ojxt", "--period=0", "-o", "-"], "option '--period=0': expected a count of at least 1"),
            (["replay", "t.ojxt", "--compare", "slots=1,99"], "--compare: option 'slots=99': expected 0 to 16 slots"),
            (["replay", "t.ojxt", "-o"], "option '-o' needs a value: -o <text>"),
            (["replay", "-x", "t.ojxt"], None)):
        if expected is None:  # the start of the message: the list is the table's
            result = ojx(command, *args)
            check(result.returncode == 2 and result.stderr.startswith("ojx replay: unknown option '-x'; valid options "
                                                                      "are: --output, --compare, --compare-json"),
                  "ojx replay -x: an unknown short option, named as written", result.stderr)
            continue
        check_error(command, args, f"ojx {args[0]}: {expected} (ojx {args[0]} --help)")

    check_same(command, ["report", "--top", "2", "--min-share", "0.5", profile],
               ["report", profile, "--top=2", "--min-share=50%"])
    # Its older name, the same filter.
    check_same(command, ["report", "--top", "2", "--min-share", "0.5", profile],
               ["report", profile, "--top=2", "--min-theta=50%"])
    check_same(command, ["report", "--collapsed", "-", "--value", "objects", profile],
               ["report", "--value=objects", profile, "--collapsed=-"])
    outputs = [os.path.join(work, f"merged-{n}.json") for n in range(3)]
    check_same(command, ["merge", profile, profile, "-o", outputs[0]], ["merge", profile, "--output", outputs[1],
                                                                       profile], outputs[:2])
    check_same(command, ["merge", profile, profile, "-o", outputs[0]], ["merge", profile, profile,
                                                                        f"--output={outputs[2]}"], outputs[::2])

    if problems:
        print(f"{len(problems)} problem(s): " + "; ".join(problems))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
