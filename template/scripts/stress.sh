#!/usr/bin/env bash
# Repeats the parallel tests many times: a race that shows up once in a
# thousand runs is still a race.
#
#   scripts/stress.sh [ITERATIONS]        (default 200)
#
# Which tests: every test in tests/conformance/ whose module or function
# name starts with `parallel` (`parallel::...`, `loyalty::parallel_...`), so
# name a new consumer's parallel test `parallel_...` and it is repeated too.
#
# Knobs (environment):
#   STRESS_WORKERS=8 STRESS_MESSAGES=200   harder schedules (defaults 4, 50)
#   STRESS_TESTS='(^|::)parallel'          which tests: a regular expression on test names
#   STRESS_RUNNER=loop                     use the plain loop even if cargo-nextest is installed
#   STRESS_PROFILE=debug                   test the debug build (default: release, faster per run)
#   PARALLEL_ROUNDS=1                      rounds per test run (1 here, since repeating is this
#                                          script's job; a plain `cargo test` plays 10)
#   PARALLEL_RACED_SLICES=0                extra rounds until this many messages raced (0 here;
#                                          a plain `cargo test` insists on 200)
#
# Uses `cargo nextest run --stress-count` when cargo-nextest is installed and
# a plain loop over the test binary otherwise. Stops at the first failing
# iteration and prints its output. Ends with the iterations run and the rate.
set -euo pipefail
cd "$(dirname "$0")/.."

iterations="${1:-200}"
if ! [[ "$iterations" =~ ^[1-9][0-9]*$ ]]; then
    echo "usage: scripts/stress.sh [ITERATIONS]   (a positive whole number, default 200)" >&2
    exit 2
fi
pattern="${STRESS_TESTS:-(^|::)parallel}"
export STRESS_WORKERS="${STRESS_WORKERS:-4}" STRESS_MESSAGES="${STRESS_MESSAGES:-50}"
export PARALLEL_ROUNDS="${PARALLEL_ROUNDS:-1}" PARALLEL_RACED_SLICES="${PARALLEL_RACED_SLICES:-0}"
case "${STRESS_PROFILE:-release}" in
    release) profile=(--release) ;;
    debug) profile=() ;;
    *) echo "stress: STRESS_PROFILE must be release or debug" >&2; exit 2 ;;
esac

binary=$(cargo test "${profile[@]}" --no-run --test conformance 2>&1 | sed -n 's/.*Executable.*(\(.*\))$/\1/p' | tail -n 1)
if [[ -z "$binary" || ! -x "$binary" ]]; then
    echo "stress: could not build the conformance tests (cargo test ${profile[*]} --no-run --test conformance)" >&2
    exit 1
fi
mapfile -t tests < <("$binary" --list --format terse | sed -n 's/: test$//p' | grep -E "$pattern" || true)
if [[ ${#tests[@]} -eq 0 ]]; then
    echo "stress: no test in tests/conformance matches '$pattern'" >&2
    exit 1
fi
echo "stress: $iterations iterations of ${#tests[@]} tests (${STRESS_WORKERS} workers x ${STRESS_MESSAGES} messages): ${tests[*]}" >&2

finish() {
    local started="$1" done="$2" status="$3"
    local seconds rate
    seconds=$(awk -v s="$started" -v e="$(date +%s.%N)" 'BEGIN { printf "%.2f", e - s }')
    rate=$(awk -v n="$done" -v s="$seconds" 'BEGIN { printf "%.1f", (s > 0 ? n / s : 0) }')
    echo "stress: $status: iterations=$done seconds=$seconds rate=${rate}/s"
}

if [[ "${STRESS_RUNNER:-}" != loop ]] && cargo nextest --version >/dev/null 2>&1; then
    started=$(date +%s.%N)
    if cargo nextest run "${profile[@]}" --test conformance -E "test(/$pattern/)" \
        --stress-count "$iterations" --fail-fast \
        --status-level fail --final-status-level fail --failure-output immediate; then
        finish "$started" "$iterations" passed
    else
        finish "$started" "?" "FAILED (nextest output above)"
        exit 1
    fi
    exit 0
fi

# Plain loop: run the test binary directly, the chosen tests only.
output=$(mktemp)
trap 'rm -f "$output"' EXIT
started=$(date +%s.%N)
for ((i = 1; i <= iterations; i++)); do
    if ! "$binary" --exact "${tests[@]}" >"$output" 2>&1; then
        echo "stress: iteration $i failed:" >&2
        cat "$output" >&2
        finish "$started" "$((i - 1))" "FAILED at iteration $i"
        exit 1
    fi
    if [[ -t 2 ]] && ((i % 10 == 0)); then
        printf '\rstress: %d/%d' "$i" "$iterations" >&2
    fi
done
if [[ -t 2 ]]; then printf '\r' >&2; fi
finish "$started" "$iterations" passed
