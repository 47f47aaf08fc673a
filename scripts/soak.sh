#!/usr/bin/env bash
# Soak: every variant's whole `cargo test`, several times in a row, while
# busy loops hold every core. A test whose verdict depends on the machine's
# speed shows up here as a failure count above zero.
#
#   scripts/soak.sh [RUNS] [VARIANT...]
#
# RUNS: runs of `cargo test` per variant (default 5). VARIANT: sqlite,
# postgres, sqlite-nats, postgres-nats, sqlite-kafka, postgres-kafka
# (default: all, as scripts/variants lists them). Needs the servers the
# variants need (DATABASE_URL, NATS_URL; the local ones by default) and,
# for Kafka, `tansu` on the PATH.
# SOAK_BUSY sets the number of busy loops (default 2, one per core here).
#
# Each variant is generated into a temporary folder and built once (target
# directory: target/soak), then tested RUNS times. At the end, a Markdown
# table: per variant, the runs that passed and every test that failed, with
# how often. Exit code 1 if any run failed.
set -euo pipefail
kit="$(cd "$(dirname "$0")/.." && pwd)"

runs="${1:-5}"
if ! [[ "$runs" =~ ^[1-9][0-9]*$ ]]; then
    echo "usage: scripts/soak.sh [RUNS] [VARIANT...]   (RUNS: a positive whole number, default 5)" >&2
    exit 2
fi
shift || true
# Each variant's name: its database, then its broker unless none.
declare -A defines=()
all=()
while read -r line; do
    name="$(sed -E 's/database=([a-z]+) broker=([a-z]+)/\1-\2/; s/-none$//' <<<"$line")"
    defines[$name]="$line"
    all+=("$name")
done < <(grep -v '^#' "$kit/scripts/variants")
variants=("$@")
if [[ ${#variants[@]} -eq 0 ]]; then
    variants=("${all[@]}")
fi
for variant in "${variants[@]}"; do
    [[ -n "${defines[$variant]:-}" ]] || { echo "soak: unknown variant $variant (known: ${!defines[*]})" >&2; exit 2; }
done
export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}"
export NATS_URL="${NATS_URL:-nats://127.0.0.1:4222}"
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
export CARGO_TARGET_DIR="$kit/target/soak"
unset RUST_BACKTRACE

work="$(mktemp -d)"
busy=()
cleanup() {
    for pid in "${busy[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

cargo build --quiet --manifest-path "$kit/Cargo.toml"
report="$work/report.md"
{
    echo "| variant | runs passed | failures (test: count) |"
    echo "|---|---|---|"
} >"$report"
failed_any=0
for variant in "${variants[@]}"; do
    flags=()
    for define in ${defines[$variant]}; do flags+=(--define "$define"); done
    name="soak-${variant}"
    "$CARGO_TARGET_DIR/debug/inbox-kit" new "$name" --destination "$work" "${flags[@]}" >"$work/new.log" 2>&1 || {
        cat "$work/new.log" >&2
        echo "soak: could not generate the $variant project" >&2
        exit 1
    }
    project="$work/$name"
    echo "soak: $variant: building" >&2
    (cd "$project" && cargo test --no-run --quiet 2>&1) >"$work/build.log" || {
        cat "$work/build.log" >&2
        echo "soak: $variant does not build" >&2
        exit 1
    }
    for ((n = 0; n < ${SOAK_BUSY:-2}; n++)); do
        (while :; do :; done) &
        busy+=($!)
    done
    passed=0
    : >"$work/failures"
    for ((run = 1; run <= runs; run++)); do
        started=$(date +%s)
        if (cd "$project" && cargo test --quiet 2>&1) >"$work/run.log"; then
            passed=$((passed + 1))
            verdict=passed
        else
            verdict=FAILED
            failed_any=1
            # `Running <binary>` names the test binary; `test <name> ... FAILED`
            # (and the failures list) name each test that failed.
            awk '/^ *Running / { binary = $2 }
                 / \.\.\. FAILED$/ { sub(/^test /, ""); sub(/ \.\.\. FAILED$/, ""); print binary ": " $0 }' \
                "$work/run.log" >>"$work/failures"
            grep -q "FAILED$" "$work/run.log" || echo "(no test named: build or harness failure)" >>"$work/failures"
            cp "$work/run.log" "$kit/target/soak-$variant-run$run.log"
        fi
        echo "soak: $variant run $run/$runs: $verdict in $(($(date +%s) - started)) s" >&2
    done
    for pid in "${busy[@]}"; do kill "$pid" 2>/dev/null || true; done
    busy=()
    failures=$(sort "$work/failures" | uniq -c | awk '{ count = $1; $1 = ""; printf "%s%s: %d", (n++ ? "; " : ""), substr($0, 2), count }')
    echo "| $variant | $passed/$runs | ${failures:-none} |" >>"$report"
done
echo
cat "$report"
if ((failed_any)); then
    echo
    echo "soak: logs of the failed runs: $kit/target/soak-*.log"
fi
exit "$failed_any"
