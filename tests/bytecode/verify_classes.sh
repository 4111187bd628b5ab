#!/bin/sh
# The JVM's verdict on instrumented code (bytecode_verify_* tests): compiles ojx/Counts and VerifyDriver with the
# corpus's JDK, runs the driver over every class of the corpus with -Xverify:all once without the agent and once
# per plan with it, and fails when a class fails with the agent in a way it does not without it (VerifyError,
# ClassFormatError, another LinkageError, or anything else but an initialiser's exception or a missing class).
# A last run with the agent's `paths,break=PREFIX` (max_stack 0 in every instrumented method of the classes named
# PREFIX*) must fail with VerifyErrors: the negative control, showing that the JVM does verify the rewritten classes. Exit 77 (ctest's skip) with the reason when the JDK, its javac or the agent is missing.
#
#   verify_classes.sh AGENT SOURCE_DIR WORK_DIR jdk17|temurin25|debian_jars PLAN...
#
# jdk17 and debian_jars run on Debian's OpenJDK 17 (OJX_JDK17_HOME), temurin25 on Temurin 25 (OJX_TEMURIN25_HOME).
set -eu
agent=$1
source=$2
work=$3/$4
corpus=$4
shift 4
plans=$*

skip() {
    echo "SKIPPED: $*"
    exit 77
}

case $corpus in
jdk17 | debian_jars) home=${OJX_JDK17_HOME:-/usr/lib/jvm/java-17-openjdk-amd64} ;;
temurin25) home=${OJX_TEMURIN25_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64} ;;
*)
    echo "unknown corpus $corpus (jdk17, temurin25 or debian_jars)"
    exit 2
    ;;
esac
[ -x "$home/bin/java" ] || skip "no JDK at $home"
[ -x "$home/bin/javac" ] || skip "the JDK at $home has no javac"
[ -f "$agent" ] || skip "the agent was not built (no JDK headers when configured): $agent"

rm -rf "$work"
mkdir -p "$work/boot" "$work/driver"
"$home/bin/javac" -nowarn -d "$work/boot" "$source/Counts.java"
"$home/bin/javac" -nowarn -d "$work/driver" "$source/VerifyDriver.java"

if [ "$corpus" = debian_jars ]; then
    # Each jar once: /usr/share/java holds versioned files and unversioned links to them.
    control=org/apache/
    targets=$(for jar in /usr/share/java/*.jar; do [ -e "$jar" ] && readlink -f "$jar"; done | sort -u)
    [ -n "$targets" ] || skip "no jars in /usr/share/java"
else
    control=javax/swing/
    targets=jrt
fi

# Runs the driver; $1 names the run, the rest are extra JVM options. (sh has no locals: run_* names are its own.)
run() {
    run_name=$1
    shift
    run_start=$(date +%s)
    run_status=0
    # shellcheck disable=SC2086
    "$home/bin/java" -Xshare:off -Xverify:all -Djava.awt.headless=true --add-modules ALL-SYSTEM "$@" \
        -cp "$work/driver" VerifyDriver $targets >"$work/$run_name.out" 2>"$work/$run_name.err" </dev/null ||
        run_status=$?
    # Compared by kind and class: messages may differ in detail between runs.
    grep '^FAIL ' "$work/$run_name.out" | sed 's/:.*//' | sort -u >"$work/$run_name.fail" || true
    echo "$run_name ($(($(date +%s) - run_start)) s, exit $run_status):" \
        "$(grep '^driver:' "$work/$run_name.out" || echo 'no summary')"
    grep '^ojx-verify-agent' "$work/$run_name.err" || true
    if ! grep -q '^driver:' "$work/$run_name.out"; then
        echo "FAILED the $run_name run did not finish; its stderr ends:"
        tail -20 "$work/$run_name.err"
        return 1
    fi
}

status=0
run plain || status=1
for plan in $plans; do
    run "$plan" "-agentpath:$agent=$plan" "-Xbootclasspath/a:$work/boot" || {
        status=1
        continue
    }
    # Failures only with the agent are the rewriting's.
    new=$(comm -13 "$work/plain.fail" "$work/$plan.fail")
    if [ -n "$new" ]; then
        echo "FAILED $plan: $(echo "$new" | wc -l) classes fail only with the agent:"
        echo "$new" | head -50 | while read -r line; do grep -F "$line:" "$work/$plan.out" | head -1; done
        status=1
    fi
    if grep -q 'class failed' "$work/$plan.err"; then
        echo "FAILED $plan: the agent could not instrument some classes"
        status=1
    fi
done
if run control "-agentpath:$agent=paths,break=$control" "-Xbootclasspath/a:$work/boot"; then
    broken=$(comm -13 "$work/plain.fail" "$work/control.fail" | grep -c '^FAIL VerifyError' || true)
    echo "control: $broken classes fail verification only when the instrumented methods of $control* get" \
        "max_stack 0"
    if [ "$broken" -eq 0 ]; then
        echo "FAILED the negative control: nothing was rejected, so the JVM did not verify the rewritten classes"
        status=1
    fi
else
    status=1
fi
exit $status
