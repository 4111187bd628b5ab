#!/usr/bin/env python3
"""The README's commands, checked against what they name.

Every shell block of README.md is read line by line: `scripts/…` must exist and parse (`bash -n`); every `ojx …`
line must name a command whose `--help` succeeds, and every option it gives before `--` must be one that command's
help lists. Comments after `#` are ignored. So a renamed option or command fails here before a user meets it.

  readme_commands.py OJX README.md
"""
import re
import shlex
import subprocess
import sys


def shell_lines(readme):
    inside = False
    for line in readme.splitlines():
        if line.startswith("```"):
            inside = line.strip() == "```sh"
            continue
        if inside and line.strip():
            yield line


def main():
    ojx, path = sys.argv[1], sys.argv[2]
    with open(path, encoding="utf-8") as handle:
        readme = handle.read()
    problems, checked = [], 0
    helps = {}
    for line in shell_lines(readme):
        command = line.split(" #", 1)[0].strip()
        # A line may chain commands (`ojx attach …; ojx dump …`, `… && go tool pprof …`).
        for part in re.split(r";|&&|\|", command):
            words = shlex.split(part.strip())
            if not words:
                continue
            if words[0].startswith("scripts/"):
                script = words[0]
                result = subprocess.run(["bash", "-n", script], capture_output=True, text=True, cwd=sys.argv[3]
                                        if len(sys.argv) > 3 else None)
                checked += 1
                if result.returncode != 0:
                    problems.append(f"{line}: {script}: {result.stderr.strip() or 'missing'}")
                continue
            if words[0] != "ojx":
                continue
            checked += 1
            if len(words) < 2:
                problems.append(f"{line}: no command")
                continue
            sub = words[1]
            if sub not in helps:
                result = subprocess.run([ojx, sub, "--help"], capture_output=True, text=True, timeout=30)
                helps[sub] = result.stdout + result.stderr if result.returncode == 0 else None
            if helps[sub] is None:
                problems.append(f"{line}: `ojx {sub} --help` fails")
                continue
            for word in words[2:]:
                if word == "--":
                    break
                if word.startswith("--"):
                    option = word.split("=", 1)[0]
                    if not re.search(re.escape(option) + r"\b", helps[sub]):
                        problems.append(f"{line}: `ojx {sub}` lists no option {option}")
    for problem in problems:
        print("problem: " + problem)
    print(f"README commands: {checked} checked, {len(problems)} problem(s)")
    return 1 if problems or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
