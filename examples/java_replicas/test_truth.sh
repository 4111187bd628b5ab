#!/usr/bin/env bash
# Self-check of the Java test subjects, no agent involved: compiles JavaReplicas and JvmStress, runs JavaReplicas
# for 2 s and checks its truth (every planted site replicated, the partial one near its design ratio, every
# control not, enough objects everywhere), and runs JvmStress twice and checks that both printed the same.
# Exits nonzero if anything fails.
#
#   test_truth.sh
#
# Environment: JAVA (default java), JAVAC (default javac), PYTHON (default python3); JAVA_OPTS: extra JVM options
# for both programs (e.g. "-Xmx64m -XX:+UseSerialGC"); REPLICAS_ARGS: extra JavaReplicas options (e.g.
# --gc-pressure); STRESS_ARGS: extra JvmStress options (e.g. "--threads-total 1000").
set -euo pipefail
trap 'echo "FAIL: test_truth.sh line $LINENO: $BASH_COMMAND exited $?" >&2' ERR

here=$(cd "$(dirname "$0")" && pwd)
java=${JAVA:-java}
javac=${JAVAC:-javac}
python=${PYTHON:-python3}
read -r -a java_opts <<< "${JAVA_OPTS:-}"
read -r -a replicas_args <<< "${REPLICAS_ARGS:-}"
read -r -a stress_args <<< "${STRESS_ARGS:-}"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$javac" --release 11 -d "$work/classes" "$here/JavaReplicas.java" "$here/JvmStress.java"
echo "ok: compiled with $("$javac" -version 2>&1)"

"$java" "${java_opts[@]}" -cp "$work/classes" JavaReplicas --seconds 2 --truth "$work/truth.json" \
    "${replicas_args[@]}"

"$python" - "$work/truth.json" <<'EOF'
import json
import sys

MIN_OBJECTS = 100
ARRAY_HEADER = 16  # 64-bit HotSpot; bytes in the truth are element bytes

with open(sys.argv[1], encoding="utf-8") as handle:
    truth = json.load(handle)
failures = []
if truth.get("java_replicas_truth_version") != 1:
    failures.append(f"java_replicas_truth_version is {truth.get('java_replicas_truth_version')!r}, expected 1")
sites = truth.get("sites") or []
names = [site["function"] for site in sites]
for name in names:
    for other in names:
        if name != other and name in other:
            failures.append(f"site name {name} is a substring of {other}: a profile frame would match both")
if len(set(names)) != len(names):
    failures.append("a site name appears twice")
roles = [site["role"] for site in sites]
if "planted" not in roles or "control" not in roles:
    failures.append(f"expected planted and control sites, got roles {roles}")

for site in sites:
    name, role, ratio = site["function"], site["role"], site["largest_group_ratio"]
    sizes = site["object_bytes"]
    problems = []
    if site["objects"] <= MIN_OBJECTS:
        problems.append(f"only {site['objects']} objects (want > {MIN_OBJECTS})")
    if not 0 <= site["identical_pair_fraction"] <= 1 or not 0 < ratio <= 1:
        problems.append("ratio or pair fraction outside [0, 1]")
    if sizes["min"] + ARRAY_HEADER < 1024 or sizes["max"] + ARRAY_HEADER > 8192:
        problems.append(f"objects of {sizes['min']}-{sizes['max']} element bytes are not 1-8 KiB")
    if role == "planted" and site["kind"] == "partial":
        if abs(ratio - site["design_ratio"]) > 0.1:
            problems.append(f"partial replicas: ratio {ratio:.4f} is not within 0.1 of {site['design_ratio']}")
    elif role == "planted":
        if ratio < 0.5:
            problems.append(f"planted ratio {ratio:.4f} < 0.5")
    elif ratio > 0.05:
        problems.append(f"control ratio {ratio:.4f} > 0.05")
    print(f"  {name:24} {role:8} {site['kind']:17} objects {site['objects']:6}  ratio {ratio:.4f}  "
          f"pairs {site['identical_pair_fraction']:.4f}  {'ok' if not problems else 'FAIL'}")
    failures += [f"{name}: {problem}" for problem in problems]

for failure in failures:
    print(f"FAIL truth: {failure}")
sys.exit(1 if failures else 0)
EOF
echo "ok: JavaReplicas truth"

for run in 1 2; do
    "$java" "${java_opts[@]}" -cp "$work/classes" JvmStress "${stress_args[@]}" > "$work/stress$run.out"
done
if ! cmp -s "$work/stress1.out" "$work/stress2.out"; then
    echo "FAIL: JvmStress printed different output in two runs with the same arguments:"
    diff "$work/stress1.out" "$work/stress2.out" || true
    exit 1
fi
if [[ $(grep -c '^JvmStress: checksum ' "$work/stress1.out") -ne 1 ]]; then
    echo "FAIL: JvmStress printed no checksum:"
    cat "$work/stress1.out"
    exit 1
fi
sed 's/^/  /' "$work/stress1.out"
echo "ok: JvmStress output identical in two runs"
echo "test_truth: all checks passed"
