#!/usr/bin/env bash
# Claude Code Stop hook (wired in .claude/settings.json): the work is not
# done while the required inbox tests fail.
#
# Claude Code passes JSON on stdin ({"session_id": ..., "stop_hook_active":
# ...}). Exit 0 lets the agent stop; exit 2 blocks it and hands stderr (the
# failing tests' output) back to the agent so it keeps working.
#
# `stop_hook_active` is true when the agent is already continuing because of
# this hook. Consecutive blocks are counted per session and capped at
# STOP_HOOK_MAX_BLOCKS (default 5), so the hook can never loop forever; at
# the cap it lets the stop through with a warning.
set -uo pipefail
cd "$(dirname "$0")/.."

input=$(cat)
session=$(printf '%s' "$input" | sed -n 's/.*"session_id"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' | head -n 1)
session=${session:-unknown}
active=false
if printf '%s' "$input" | grep -Eq '"stop_hook_active"[[:space:]]*:[[:space:]]*true'; then
    active=true
fi
max_blocks="${STOP_HOOK_MAX_BLOCKS:-5}"

state_dir="${CARGO_TARGET_DIR:-target}/stop-hook"
mkdir -p "$state_dir"
counter="$state_dir/${session//[^A-Za-z0-9_-]/_}.blocks"
if [[ "$active" == false ]]; then
    echo 0 >"$counter"
fi
blocks=$(cat "$counter" 2>/dev/null || echo 0)

output=$(cargo test --quiet --test conformance 2>&1)
status=$?
if [[ $status -eq 0 ]]; then
    rm -f "$counter"
    exit 0
fi

if ((blocks >= max_blocks)); then
    echo "stop hook: the required tests still fail after $blocks rounds; letting you stop." >&2
    echo "The work is NOT done: run 'cargo test --test conformance' and fix the code." >&2
    exit 0
fi
echo $((blocks + 1)) >"$counter"
{
    echo "The required inbox tests fail (cargo test --test conformance), so the work is not done."
    echo "Read the failures below, fix the code (never the tests), and run them again."
    echo "Round $((blocks + 1)) of $max_blocks."
    echo
    printf '%s\n' "$output" | tail -n 120
} >&2
exit 2
