#!/usr/bin/env bash
# Repeats the parallel tests many times: a race that shows up once in a
# thousand runs is still a race.
#
#   scripts/stress.sh [ITERATIONS]        repeat ITERATIONS times (default 200)
#   scripts/stress.sh --for DURATION      repeat until DURATION is up: 90s, 5m, 1h
#
# Before it starts it times one iteration and says how long the whole run
# will take (or how many iterations fit in DURATION), so a count that would
# take an hour is seen at once. The time budget covers the repetitions,
# not the build before them; the build says it is running, and is the one
# `cargo test` already made (the debug profile), so after `cargo test` it
# takes seconds. Ends with the iterations run and the rate.
#
# Which tests: every test in tests/conformance/ whose module or function
# name starts with `parallel`: `required::parallel`, which plays every
# subject of tests/support/subjects.rs (a new consumer is repeated as soon
# as it is in `subjects::all()`), and any `parallel_...` test of your own.
#
# Knobs (environment):
#   STRESS_WORKERS=8 STRESS_MESSAGES=200   harder schedules (defaults 4, 50)
#   STRESS_TESTS='(^|::)parallel'          which tests: a regular expression on test names
#   STRESS_RUNNER=loop                     use the plain loop even if cargo-nextest is installed
#   STRESS_PROFILE=release                 test an optimised build: more iterations per minute,
#                                          after a release build of its own (minutes, cold)
#   PARALLEL_ROUNDS=1                      rounds per test run (1 here, since repeating is this
#                                          script's job; a plain `cargo test` plays 10)
#   PARALLEL_RACED_SLICES=0                extra rounds until this many messages raced (0 here;
#                                          a plain `cargo test` insists on 200)
#
# Uses `cargo nextest run --stress-count/--stress-duration` when
# cargo-nextest is installed and a plain loop over the test binary
# otherwise. Stops at the first failing iteration and prints its output.
#
# A hang is a failure: the harness ends a test whose delivery waited 30 s
# (INBOX_TEST_HANG_SECONDS); nextest stops any test after 5 minutes
# (.config/nextest.toml); the plain loop stops an iteration that takes ten
# times the first one, and at least two minutes (with coreutils' timeout).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
    echo "usage: scripts/stress.sh [ITERATIONS] | --for DURATION   (ITERATIONS: a positive whole number, default 200; DURATION: e.g. 90s, 5m, 1h)" >&2
    exit 2
}

iterations="" budget=""
case "${1:-}" in
    --for)
        [[ $# -eq 2 ]] || usage
        if [[ "$2" =~ ^([1-9][0-9]*)([smh]?)$ ]]; then
            case "${BASH_REMATCH[2]}" in
                h) budget=$((BASH_REMATCH[1] * 3600)) ;;
                m) budget=$((BASH_REMATCH[1] * 60)) ;;
                *) budget=${BASH_REMATCH[1]} ;;
            esac
        else
            usage
        fi
        ;;
    "") iterations=200 ;;
    *)
        [[ $# -eq 1 && "$1" =~ ^[1-9][0-9]*$ ]] || usage
        iterations=$1
        ;;
esac
pattern="${STRESS_TESTS:-(^|::)parallel}"
export STRESS_WORKERS="${STRESS_WORKERS:-4}" STRESS_MESSAGES="${STRESS_MESSAGES:-50}"
export PARALLEL_ROUNDS="${PARALLEL_ROUNDS:-1}" PARALLEL_RACED_SLICES="${PARALLEL_RACED_SLICES:-0}"
case "${STRESS_PROFILE:-debug}" in
    release) profile=(--release) ;;
    debug) profile=() ;;
    *) echo "stress: STRESS_PROFILE must be release or debug" >&2; exit 2 ;;
esac

build_log=$(mktemp)
echo "stress: building the conformance tests (${STRESS_PROFILE:-debug} profile; the time budget starts after the build)..." >&2
build_started=$SECONDS
cargo test "${profile[@]}" --no-run --test conformance >"$build_log" 2>&1 || true
binary=$(sed -n 's/.*Executable.*(\(.*\))$/\1/p' "$build_log" | tail -n 1)
if [[ -z "$binary" || ! -x "$binary" ]]; then
    echo "stress: could not build the conformance tests (cargo test ${profile[*]} --no-run --test conformance); its last lines:" >&2
    tail -n 30 "$build_log" >&2
    rm -f "$build_log"
    exit 1
fi
rm -f "$build_log"
echo "stress: built in $((SECONDS - build_started))s" >&2
mapfile -t tests < <("$binary" --list --format terse | sed -n 's/: test$//p' | grep -E "$pattern" || true)
if [[ ${#tests[@]} -eq 0 ]]; then
    echo "stress: no test in tests/conformance matches '$pattern'" >&2
    exit 1
fi

now() { date +%s.%N; }
# One iteration of the plain loop, stopped after $1 seconds where
# coreutils' timeout is installed.
iteration() {
    local limit=$1
    shift
    if command -v timeout >/dev/null; then
        timeout -k 5 "$limit" "$@"
    else
        "$@"
    fi
}
seconds_since() { awk -v s="$1" -v e="$(now)" 'BEGIN { printf "%.2f", e - s }'; }
output=$(mktemp)
trap 'rm -f "$output"' EXIT

# One iteration, timed, before anything is promised: it also warms the
# database and the caches. Not counted.
started=$(now)
if ! iteration 300 "$binary" --exact "${tests[@]}" >"$output" 2>&1; then
    echo "stress: the first iteration failed:" >&2
    cat "$output" >&2
    echo "stress: FAILED at iteration 1: iterations=0"
    exit 1
fi
one=$(seconds_since "$started")
if [[ -n "$budget" ]]; then
    estimate=$(awk -v b="$budget" -v one="$one" 'BEGIN { printf "about %d iterations", (one > 0 ? b / one : 0) }')
    plan="for ${budget}s: $estimate"
else
    estimate=$(awk -v n="$iterations" -v one="$one" 'BEGIN { t = n * one; if (t < 120) printf "about %.0f s", t; else printf "about %.1f min", t / 60 }')
    plan="$iterations iterations: $estimate"
fi
echo "stress: ${#tests[@]} tests (${STRESS_WORKERS} workers x ${STRESS_MESSAGES} messages): ${tests[*]}" >&2
echo "stress: one iteration took ${one}s; $plan" >&2

finish() {
    local began="$1" done="$2" status="$3"
    local seconds rate
    seconds=$(seconds_since "$began")
    rate=$(awk -v n="$done" -v s="$seconds" 'BEGIN { printf "%.1f", (s > 0 ? n / s : 0) }')
    echo "stress: $status: iterations=$done seconds=$seconds rate=${rate}/s"
}

if [[ "${STRESS_RUNNER:-}" != loop ]] && cargo nextest --version >/dev/null 2>&1; then
    if [[ -n "$budget" ]]; then
        # nextest finishes the iteration under way when the duration is up,
        # and takes a moment to start: the budget keeps room for the timing
        # iteration, that last one and a second of start-up.
        repeat=(--stress-duration "$(awk -v b="$budget" -v one="$one" 'BEGIN { d = int(b - 2 * one - 1); printf "%ds", (d > 1 ? d : 1) }')")
    else
        repeat=(--stress-count "$iterations")
    fi
    began=$(now)
    if cargo nextest run "${profile[@]}" --test conformance -E "test(/$pattern/)" \
        "${repeat[@]}" --fail-fast \
        --status-level fail --final-status-level fail --failure-output immediate >"$output" 2>&1; then
        done=$(sed -n 's/.* \([0-9][0-9]*\) stress run iterations.*/\1/p' "$output" | tail -n 1)
        finish "$began" "${done:-$iterations}" passed
    else
        cat "$output" >&2
        finish "$began" "?" "FAILED (nextest output above)"
        exit 1
    fi
    exit 0
fi

# Plain loop: run the test binary directly, the chosen tests only.
limit=$(awk -v one="$one" 'BEGIN { l = int(10 * one) + 1; printf "%d", (l < 120 ? 120 : l) }')
began=$(now)
done=0
while :; do
    if [[ -n "$budget" ]]; then
        # Stop when one more iteration would overrun the budget.
        awk -v s="$started" -v e="$(now)" -v b="$budget" -v one="$one" 'BEGIN { exit !(e - s + one > b) }' && break
    else
        ((done < iterations)) || break
    fi
    if ! iteration "$limit" "$binary" --exact "${tests[@]}" >"$output" 2>&1; then
        echo "stress: iteration $((done + 1)) failed (or ran past ${limit}s):" >&2
        cat "$output" >&2
        finish "$began" "$done" "FAILED at iteration $((done + 1))"
        exit 1
    fi
    done=$((done + 1))
    if [[ -t 2 ]] && ((done % 10 == 0)); then
        printf '\rstress: %d done' "$done" >&2
    fi
done
if [[ -t 2 ]]; then printf '\r' >&2; fi
finish "$began" "$done" passed
