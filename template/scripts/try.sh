#!/usr/bin/env bash
# A first look: builds the consumer, opens two accounts in a fresh
# database, feeds it the sample deliveries twice (a broker redelivering
# everything) and shows the result.
#
#   scripts/try.sh [DATABASE]      (default: try.db, recreated each time)
set -euo pipefail
cd "$(dirname "$0")/.."

db="${1:-try.db}"
rm -f "$db" "$db-wal" "$db-shm"
cargo build --quiet
consumer() { cargo run --quiet -- --db "$db" "$@"; }

consumer open-account 1 1000
consumer open-account 2 500
echo
echo "== first delivery of samples/deliveries.jsonl (19 lines: duplicates and 4 bad lines included)"
consumer run samples/deliveries.jsonl || echo "(exit code $?: some lines were rejected, see above)"
echo
echo "== the broker redelivers the whole file: every message is a duplicate now"
consumer run samples/deliveries.jsonl 2>/dev/null || echo "(exit code $?: the same 4 lines rejected again)"
echo
echo "== state: 10 distinct payments of 10 from account 1, one of 25 from account 2"
consumer status
