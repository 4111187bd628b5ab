"""The JVM end-to-end scripts' checks: each printed as it is made, the failed ones kept for the exit status."""

problems = []


def check(what, condition, detail=""):
    """Prints `what` as ok or FAIL (with `detail` when it failed) and remembers a failure."""
    print(f"  {'ok  ' if condition else 'FAIL'} {what}" + (f": {detail}" if detail and not condition else ""))
    if not condition:
        problems.append(what)


def finish():
    """Prints the verdict; the exit status: 0 passed, 1 a check failed."""
    print("PASSED" if not problems else f"FAILED: {len(problems)} checks")
    return 0 if not problems else 1
