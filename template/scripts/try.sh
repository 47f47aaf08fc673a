#!/usr/bin/env bash
# A first look: builds the consumer, opens two accounts in a fresh
# database, feeds it the sample deliveries twice (a broker redelivering
# everything) and shows the result.
#
{%- if database == "postgres" %}
#   scripts/try.sh [SCHEMA]        (default: try; on the server DATABASE_URL names)
#
# The schema must not exist yet (with psql installed, an earlier `try` is
# dropped first), so that a second try starts from the same state.
{%- else %}
#   scripts/try.sh [DATABASE]      (default: try.db, recreated each time)
{%- endif %}
set -euo pipefail
cd "$(dirname "$0")/.."
{% if database == "postgres" %}
if [ -z "${DATABASE_URL:-}" ]; then
    echo "scripts/try.sh needs a PostgreSQL server: set DATABASE_URL, for example" >&2
    echo "  docker run -d --name pg -p 5432:5432 -e POSTGRES_HOST_AUTH_METHOD=trust postgres:15" >&2
    echo "  export DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres" >&2
    exit 1
fi
schema="${1:-try}"
export DATABASE_SCHEMA="$schema"
cargo build --quiet
consumer() { cargo run --quiet -- "$@"; }

if [ "$schema" = try ] && command -v psql >/dev/null; then
    psql --quiet "$DATABASE_URL" -c "DROP SCHEMA IF EXISTS try CASCADE" 2>/dev/null || true
fi
if consumer status >/dev/null 2>&1; then
    echo "the schema \"$schema\" already holds this consumer's tables: drop it first" >&2
    echo "  psql \"\$DATABASE_URL\" -c 'DROP SCHEMA \"$schema\" CASCADE'" >&2
    echo "or try in another one: scripts/try.sh ${schema}2" >&2
    exit 1
fi
{%- else %}
db="${1:-try.db}"
rm -f "$db" "$db-wal" "$db-shm"
cargo build --quiet
consumer() { cargo run --quiet -- --db "$db" "$@"; }
{%- endif %}

consumer open-account 1 1000
consumer open-account 2 500
echo
echo "== first delivery of samples/deliveries.jsonl (24 lines: duplicates, 4 bad lines and 3 refunds to refuse included)"
consumer run samples/deliveries.jsonl || echo "(exit code $?: some lines were rejected and some refunds refused, see above)"
echo
echo "== the broker redelivers the whole file: every message is a duplicate now"
consumer run samples/deliveries.jsonl 2>/dev/null || echo "(exit code $?: the same 4 lines rejected again)"
echo
echo "== state: 10 distinct payments of 10 from account 1, one of 25 from account 2, a refund of 5 back to account 1"
consumer status
echo
echo "== the refunds refused for good (a repeat under a new message id, one above its payment, one of a payment never captured)"
consumer dead-letters list
