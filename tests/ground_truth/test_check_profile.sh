#!/usr/bin/env bash
# Runs check_profile.py on the hand-made fixtures in testdata/ and asserts its exit status (0 pass, 1 a check
# failed, 2 unreadable or malformed input) and the message that names the reason. Exits nonzero on any mismatch.
#   test_check_profile.sh            (uses python3, or $PYTHON)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
checker="$here/check_profile.py"
data="$here/testdata"
python=${PYTHON:-python3}
failures=0

# expect STATUS TEXT ARGS...: the checker exits with STATUS and its output (stdout and stderr) contains TEXT.
expect() {
    local status=$1 text=$2
    shift 2
    local output actual=0
    output=$("$python" "$checker" "$@" 2>&1) || actual=$?
    if [[ $actual -ne $status ]]; then
        echo "FAIL: check_profile.py $* exited $actual, expected $status"
        echo "$output" | sed 's/^/    /'
        failures=$((failures + 1))
    elif [[ $output != *"$text"* ]]; then
        echo "FAIL: check_profile.py $* exited $status as expected but did not say '$text'"
        echo "$output" | sed 's/^/    /'
        failures=$((failures + 1))
    else
        echo "ok: exit $status: $(basename "${1:-}") ${2:+$(basename "$2")}"
    fi
}

truth="$data/truth.json"
expect 0 "all checks passed" "$data/profile_pass.json" "$truth"
expect 0 "read_input_chunks appears as 2 contexts" "$data/profile_pass.json" "$truth"
expect 1 "(a) rank: planted allocate_lookup_tables (#3) does not rank above control allocate_random_buffers (#2)" \
    "$data/profile_control_above_planted.json" "$truth"
expect 1 "(b) bounds: planted allocate_lookup_tables: true ratio 0.4873 is outside" \
    "$data/profile_ratio_outside_bounds.json" "$truth"
expect 1 "(c) control: control allocate_sparse_rows is replicated" "$data/profile_control_replicated.json" "$truth"
expect 1 "planted allocate_config_blocks (#6 unreported) does not rank above" \
    "$data/profile_planted_unreported.json" "$truth"
expect 1 "found: control site allocate_sparse_rows has no context" "$data/profile_site_missing.json" "$truth"
expect 2 "is not valid JSON" "$data/profile_truncated.json" "$truth"
expect 2 "missing field 'omega'" "$data/profile_missing_field.json" "$truth"
expect 2 "field 'role' should be planted or control" "$data/profile_pass.json" "$data/truth_bad_role.json"
expect 2 "cannot read truth" "$data/profile_pass.json" "$data/no_such_truth.json"
expect 2 "usage: check_profile.py" "$data/profile_pass.json"

if [[ $failures -ne 0 ]]; then
    echo "test_check_profile: $failures case(s) failed"
    exit 1
fi
echo "test_check_profile: all cases passed"
