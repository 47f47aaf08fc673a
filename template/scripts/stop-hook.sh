#!/usr/bin/env bash
# Claude Code Stop hook: the agent may say "done" only when done holds.
#
# Wired in .claude/settings.json (and in the inbox-kit plugin). When the
# agent tries to stop, this runs, with RUST_BACKTRACE=0:
#
#   cargo fmt --check
#   cargo clippy --all-targets -- -D warnings
#   cargo test --lib --bins                the unit tests
#   cargo test --test conformance          the required tests
#   scripts/red-before-green.sh            once those pass, if the change touches src/
#
# and blocks the stop while any of them fails. It leaves to CI what is too
# slow to run on every stop: the stress loop (1,000 runs of the parallel
# tests), doc tests and the release build.
#
# A hang is a failure. Everything it runs shares one budget,
# STOP_HOOK_BUDGET_SECONDS (default 540, well inside the 600 s that
# .claude/settings.json gives the hook): a check still running when the
# budget is spent is stopped, and the stop is blocked, saying which check
# ran out of time, after how long, and which tests had not finished. (The
# required tests fail a hang themselves long before that: the harness's
# watchdog ends a test that waited 30 s for one delivery, and this hook
# reads its `test NAME ... HUNG` report like any failed test.) A check that
# ran out of time is never remembered as green.
#
# Claude Code sends JSON on stdin ({"session_id": ..., "stop_hook_active":
# ...}). The answer is always exit 0: to block, {"decision": "block",
# "reason": ...} on stdout (the reason goes to the agent: the failing tests'
# names first, then their failures, at most a few KB); to let the stop
# through, nothing, or {"systemMessage": ...} for the person watching.
# Exit 2 is avoided on purpose: some Claude Code versions treat it as
# non-blocking depending on what stderr says.
#
# It never blocks forever. Blocks are counted per session in the target
# directory, whatever `stop_hook_active` says (Claude Code does not always
# set it); the count starts again when everything passes. The stop goes
# through, with a message saying the work is NOT done, after
# STOP_HOOK_MAX_BLOCKS blocks (default 5; 0 never blocks, to pause on
# purpose while tests fail), or when the checks still fail and nothing
# (files or commit) changed since the last block (no progress).
#
# A green verdict is remembered by a hash of the project's files (every
# file git does not ignore, committed or not): stopping again with nothing
# changed answers in well under a second, without running cargo.
#
# Knobs (environment):
#   STOP_HOOK_MAX_BLOCKS=5          blocks per session before giving up (0: never block)
#   STOP_HOOK_REQUIRED_TESTS=...    cargo test arguments of the required tests
#                                   (default: --test conformance if tests/conformance
#                                   exists, else every integration test: --test '*')
#   STOP_HOOK_REASON_BYTES=8000     longest reason handed to the agent
#   STOP_HOOK_BUDGET_SECONDS=540    time for every check together (keep it below the
#                                   hook's timeout in .claude/settings.json)
#   STOP_HOOK_SKIP="clippy fmt"     checks to leave out (fmt clippy unit required
#                                   red-green), e.g. while an adopted codebase still
#                                   carries lint debt
# No `set -u`: bash before 4.4 calls an empty array unbound, and a hook that
# dies lets every stop through without a word.
set -o pipefail
export RUST_BACKTRACE=0 RUST_LIB_BACKTRACE=0 CARGO_TERM_COLOR=never CARGO_TERM_PROGRESS_WHEN=never
export LC_ALL=C

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# The project: Claude Code's project folder, else the one holding this script.
project=${CLAUDE_PROJECT_DIR:-$here/..}
cd "$project" 2>/dev/null || exit 0
# Installed as a plugin, the hook also runs in projects that are not Rust.
[[ -f Cargo.toml ]] && command -v cargo >/dev/null || exit 0

input=$(cat)
session=unknown
if [[ $input =~ \"session_id\"[[:space:]]*:[[:space:]]*\"([^\"]*)\" ]]; then
    session=${BASH_REMATCH[1]//[^A-Za-z0-9_-]/_}
fi
# `stop_hook_active` is deliberately not read: it is not always set, and the
# session's own block count below does its job.

max_blocks=${STOP_HOOK_MAX_BLOCKS:-5}
[[ $max_blocks =~ ^[0-9]+$ ]] || max_blocks=5
reason_bytes=${STOP_HOOK_REASON_BYTES:-8000}
[[ $reason_bytes =~ ^[0-9]+$ ]] || reason_bytes=8000
budget=${STOP_HOOK_BUDGET_SECONDS:-540}
[[ $budget =~ ^[0-9]+$ ]] || budget=540

target=${CARGO_TARGET_DIR:-target}
[[ $target == /* ]] || target="$PWD/$target"
state="$target/stop-hook"
mkdir -p "$state/green" || exit 0
work=$(mktemp -d "${TMPDIR:-/tmp}/stop-hook.XXXXXX") || exit 0
trap 'rm -rf "$work"' EXIT
started=$(date +%s)
deadline=$((started + budget))

# ---------------------------------------------------------------- output

# Reads text on stdin and prints it as a JSON string: quotes, backslashes
# and control characters escaped, invalid UTF-8 replaced by U+FFFD.
json_string() {
    tr -d '\000' | awk '
        BEGIN { for (i = 1; i < 256; i++) ord[sprintf("%c", i)] = i; printf "\"" }
        NR > 1 { printf "\\n" }
        { printf "%s", escape($0) }
        END { printf "\"" }
        function cont(s, i, lo, hi,   b) { b = ord[substr(s, i, 1)]; return b >= lo && b <= hi }
        function escape(s,   out, n, i, c, b, need, lo, hi, k, ok) {
            out = ""; n = length(s)
            for (i = 1; i <= n; i++) {
                c = substr(s, i, 1); b = ord[c]
                if (c == "\\") out = out "\\\\"
                else if (c == "\"") out = out "\\\""
                else if (b == 9) out = out "\\t"
                else if (b == 13) out = out "\\r"
                else if (b < 32) out = out sprintf("\\u%04x", b)
                else if (b < 128) out = out c
                else {
                    # A multi-byte UTF-8 sequence, copied only if valid.
                    need = 0; lo = 128; hi = 191
                    if (b >= 194 && b <= 223) need = 1
                    else if (b >= 224 && b <= 239) { need = 2; if (b == 224) lo = 160; if (b == 237) hi = 159 }
                    else if (b >= 240 && b <= 244) { need = 3; if (b == 240) lo = 144; if (b == 244) hi = 143 }
                    ok = need > 0 && i + need <= n && cont(s, i + 1, lo, hi)
                    for (k = 2; ok && k <= need; k++) ok = cont(s, i + k, 128, 191)
                    if (ok) { out = out substr(s, i, need + 1); i += need }
                    else out = out "\\ufffd"
                }
            }
            return out
        }'
}

allow() { exit 0; }

# Lets the stop through with a message for the person running Claude Code.
allow_with() {
    printf '{"systemMessage": %s}\n' "$(printf '%s' "$1" | json_string)"
    exit 0
}

block() {
    printf '{"decision": "block", "reason": %s}\n' "$(printf '%s' "$1" | json_string)"
    exit 0
}

log() {
    printf '%s session=%s seconds=%s %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$session" "$(($(date +%s) - started))" "$1" >>"$state/log"
}

# ---------------------------------------------------------------- budget

# Seconds left of the budget, keeping 20 to say what did not finish and
# write the answer.
remaining() { echo $((deadline - $(date +%s) - 20)); }

# Kills a process and everything it started (the fallback below).
kill_tree() {
    local child
    for child in $(pgrep -P "$1" 2>/dev/null); do kill_tree "$child"; done
    kill -KILL "$1" 2>/dev/null
}

# Runs a command with what is left of the budget; its exit status, or 124
# if the budget ran out first (the command and everything it started are
# stopped then). coreutils' timeout stops the whole process group; where
# there is none (macOS without coreutils), a watcher does it.
bounded() {
    local seconds
    seconds=$(remaining)
    ((seconds > 0)) || return 124
    if command -v timeout >/dev/null; then
        timeout -k 10 "$seconds" "$@"
        return
    elif command -v gtimeout >/dev/null; then
        gtimeout -k 10 "$seconds" "$@"
        return
    fi
    "$@" &
    local pid=$! watcher status
    (sleep "$seconds" && kill_tree "$pid" && touch "$work/expired") &
    watcher=$!
    wait "$pid"
    status=$?
    kill "$watcher" 2>/dev/null
    if [[ -e $work/expired ]]; then
        rm -f "$work/expired"
        return 124
    fi
    return "$status"
}

# What a check that ran out of time is told: how long it ran, and that
# this counts as a failure.
out_of_time() {
    printf '%s ran out of time: stopped after %s s (the hook'"'"'s budget is STOP_HOOK_BUDGET_SECONDS=%s in all); a hang counts as a failure' \
        "$1" "$(($(date +%s) - $2))" "$budget"
}

# ---------------------------------------------------------------- tree key

hash() {
    if command -v sha256sum >/dev/null; then sha256sum | cut -c1-64
    elif command -v shasum >/dev/null; then shasum -a 256 | cut -c1-64
    else cksum | tr -c '0-9\n' _; fi
}

# A hash of every file the project holds, ignored files excepted: git's tree
# of the working copy, staged into a throw-away index (cheap: unchanged files
# are not read again), else a hash of each file.
tree_hash() {
    local tree="" index tmp prefix
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        index=$(git rev-parse --git-path index)
        tmp="$work/index"
        [[ -f $index ]] && cp "$index" "$tmp"
        # Leave out this hook's own state if it sits in the project without
        # being ignored (naming an ignored path would make `git add` fail).
        local skip=()
        if [[ $state == "$PWD"/* ]] && ! git check-ignore -q "${state#"$PWD"/}"; then
            skip=(":(exclude)${state#"$PWD"/}")
        fi
        if GIT_INDEX_FILE=$tmp git add -A -- . "${skip[@]}" >/dev/null 2>&1; then
            tree=$(GIT_INDEX_FILE=$tmp git write-tree 2>/dev/null)
            prefix=$(git rev-parse --show-prefix)
            [[ -n $tree && -n $prefix ]] && tree=$(git rev-parse "$tree:${prefix%/}" 2>/dev/null)
        fi
    fi
    if [[ -z $tree ]]; then
        tree=$(find . \( -path ./.git -o -path ./target -o -path "./${target#"$PWD"/}" \) -prune \
            -o -type f -print0 | sort -z | xargs -0 cat -- 2>/dev/null | hash)
        tree="files-$tree"
    fi
    printf '%s\n' "$tree"
}

# ---------------------------------------------------------------- checks

if [[ -n ${STOP_HOOK_REQUIRED_TESTS+set} ]]; then
    read -r -a required <<<"$STOP_HOOK_REQUIRED_TESTS"
elif [[ -d tests/conformance || -f tests/conformance.rs ]]; then
    required=(--test conformance)
elif compgen -G 'tests/*.rs' >/dev/null || compgen -G 'tests/*/main.rs' >/dev/null; then
    required=(--test '*')
else
    required=()
fi
unit=(--bins)
[[ -f src/lib.rs ]] && unit=(--lib --bins)
skip=" ${STOP_HOOK_SKIP:-} "
wanted() { [[ $skip != *" $1 "* ]]; }

# A session's state, per project (a CARGO_TARGET_DIR may be shared).
session_dir="$state/sessions/$session-$(printf '%s' "$PWD" | hash | cut -c1-12)"
mkdir -p "$session_dir" || exit 0

tree_key() { { tree_hash; printf '%s\n' "$PWD" "${required[*]}" "$skip" "$(rustc --version 2>/dev/null)" "${RUSTFLAGS:-}"; } | hash; }
key=$(tree_key)
head=$(git rev-parse -q --verify HEAD 2>/dev/null || echo none)

summary=()   # one phrase per failing check
names=()     # every failing test: "name  (cargo test ARGS)"
sections=()  # one text per failing test, each already bounded
details=()   # build, clippy and fmt diagnostics, each already bounded
notes=()     # what could not be checked
build_broken=0
history_rejected=0
# A build cut short by the budget is not "no progress": cargo keeps what it
# built, so the next stop goes on from there.
build_cut_short=0

# Stdin cut to its first $1 bytes, at a line end where possible, never
# inside a UTF-8 character.
first_bytes() {
    awk -v max="$1" '
        { line = $0 "\n"
          if (used + length(line) > max) {
              if (used < max / 2) { line = substr(line, 1, max - used); sub(/[\200-\377]+$/, "", line); printf "%s\n", line }
              cut = 1; exit
          }
          printf "%s", line; used += length(line) }
        END { if (cut) printf "[... cut]\n" }'
}

# Cargo's diagnostics without its progress lines.
diagnostics() {
    grep -v -E '^[[:space:]]*(Compiling|Checking|Finished|Running|Blocking|Updating|Locking|Adding|Downloading|Downloaded|Fresh|Doc-tests) '
}

# Reads libtest's output; writes the failing tests' names to $1 and the
# failures to $2, one section each (cut to $3 bytes), each ended by an
# ASCII record separator (some awks cannot print a NUL).
parse_libtest() {
    awk -v names="$1" -v sections="$2" -v cap="$3" '
        function add(n) { if (!(n in seen)) { seen[n] = 1; print n > names } }
        function flush(   more) {
            if (current == "") return
            sub(/^\n+/, "", text); sub(/\n+$/, "", text)
            if (length(text) > cap) {
                more = length(text) - cap
                text = substr(text, 1, cap); sub(/[\200-\377]+$/, "", text)
                text = text "\n[... " more " more bytes of this failure cut]"
            }
            printf "---- %s ----\n%s\n\036", current, text > sections
            current = ""
        }
        /^test .+ \.\.\. (FAILED|HUNG)$/ { n = $0; sub(/^test /, "", n); sub(/ \.\.\. (FAILED|HUNG)$/, "", n); add(n); next }
        /^---- .+ (stdout|hung) ----$/ {
            flush(); current = $0; sub(/^---- /, "", current); sub(/ (stdout|hung) ----$/, "", current)
            add(current); text = ""; next
        }
        /^failures:$/ || /^test result: / || /^---- end of hang report ----$/ { flush(); next }
        current != "" { text = text $0 "\n" }
        END { flush(); close(names); close(sections) }'
}

check_fmt() {
    if ! cargo fmt --version >/dev/null 2>&1; then
        notes+=("rustfmt is not installed: formatting was not checked")
        return
    fi
    local began status
    began=$(date +%s)
    bounded cargo fmt --check >"$work/out" 2>"$work/err"
    status=$?
    ((status == 0)) && return
    if ((status == 124)); then
        summary+=("$(out_of_time "cargo fmt --check" "$began")")
        return
    fi
    local files
    files=$(sed -n -e 's/^Diff in \(.*\) at line [0-9]*:$/\1/p' -e 's/^Diff in \(.*\):[0-9]*:$/\1/p' "$work/out" | sed "s|^$PWD/||" | sort -u | head -n 20)
    summary+=("the code is not formatted (cargo fmt --check)")
    details+=("== cargo fmt --check: not formatted; run \`cargo fmt\` ==
${files:+Files: ${files//$'\n'/, }
}$( { diagnostics <"$work/err"; cat "$work/out"; } | first_bytes 1200)")
}

check_clippy() {
    if ! cargo clippy --version >/dev/null 2>&1; then
        notes+=("clippy is not installed: lints were not checked")
        return
    fi
    local began status
    began=$(date +%s)
    bounded cargo clippy --all-targets -- -D warnings >"$work/out" 2>"$work/err"
    status=$?
    ((status == 0)) && return
    if ((status == 124)); then
        build_cut_short=1
        summary+=("$(out_of_time "cargo clippy --all-targets -- -D warnings" "$began") (cargo keeps what it built: stopping again goes on from there)")
        return
    fi
    grep -q 'could not compile' "$work/err" && build_broken=1
    summary+=("clippy fails (cargo clippy --all-targets -- -D warnings)")
    details+=("== cargo clippy --all-targets -- -D warnings: the first diagnostics ==
$(diagnostics <"$work/err" | first_bytes 2000)")
}

# The tests of `cargo test ARGS` that did not finish in $work/out: every
# test that runs by default, less those reported; the ones libtest said
# had been running for over 60 seconds first.
unfinished_tests() {
    {
        sed -n 's/^test \(.*\) has been running for over [0-9]* seconds$/\1 (running for over a minute)/p' "$work/out"
        comm -23 <(test_names "$@" | LC_ALL=C sort -u) \
            <({ test_names "$@" --ignored; sed -n 's/^test \(.*\) \.\.\. .*$/\1/p' "$work/out"; } | LC_ALL=C sort -u)
    } | awk '!seen[$1]++' | head -n 20
}

# The names of the tests `cargo test ARGS -- [--ignored]` runs, from the
# binaries already built (a few seconds at most).
test_names() {
    local args=("$@") extra=()
    if [[ ${args[-1]} == --ignored ]]; then
        unset 'args[-1]'
        extra=(--ignored)
    fi
    briefly cargo test "${args[@]}" -- --list --format terse "${extra[@]}" 2>/dev/null | sed -n 's/: test$//p'
}

# Runs a short command past the budget's end, for at most 10 s (the budget
# keeps 20 s for this and the answer).
briefly() {
    if command -v timeout >/dev/null; then
        timeout -k 2 10 "$@"
    else
        "$@"
    fi
}

check_tests() {
    local label="cargo test $*" began status
    began=$(date +%s)
    bounded cargo test --no-run "$@" >"$work/out" 2>"$work/err"
    status=$?
    if ((status == 124)); then
        build_cut_short=1
        summary+=("$(out_of_time "building the tests ($label)" "$began") (cargo keeps what it built: stopping again goes on from there)")
        return
    elif ((status != 0)); then
        summary+=("the tests do not build ($label)")
        # Clippy's diagnostics already show a broken build.
        ((build_broken)) || details+=("== $label: the build fails ==
$(diagnostics <"$work/err" | first_bytes 2000)")
        return
    fi
    began=$(date +%s)
    bounded cargo test --no-fail-fast "$@" >"$work/out" 2>"$work/err"
    status=$?
    ((status == 0)) && return
    if ((status == 124)); then
        local still
        still=$(unfinished_tests "$@")
        summary+=("$(out_of_time "$label" "$began")")
        details+=("== $label: ran out of time; the tests that had not finished ==
${still:-(libtest named none)}")
    fi
    : >"$work/names"
    : >"$work/sections"
    parse_libtest "$work/names" "$work/sections" 1500 <"$work/out"
    local name section found=0
    # libtest reports failures in the order the tests finished, which
    # depends on the machine's speed: sorted by name, the reason is the same
    # on every run.
    while IFS= read -r name; do
        names+=("$name  ($label)")
        found=$((found + 1))
    done < <(LC_ALL=C sort "$work/names")
    while IFS= read -r -d '' section; do
        sections+=("$section")
    done < <(tr '\036' '\000' <"$work/sections" | LC_ALL=C sort -z)
    if ((status == 124)); then
        return
    elif ((found > 0)); then
        local hung
        hung=$(grep -c ' \.\.\. HUNG$' "$work/out")
        if ((hung > 0)); then
            summary+=("$found test(s) fail ($label), $hung of them hung: a hang counts as a failure")
        else
            summary+=("$found test(s) fail ($label)")
        fi
    else
        summary+=("a test binary crashed ($label)")
        details+=("== $label: no test result ==
$(diagnostics <"$work/err" | first_bytes 2000)")
    fi
}

# The answer for a tree with these files and this HEAD was green before: no
# cargo run at all.
if [[ -e $state/green/$key ]]; then
    cached=1
else
    cached=0
    wanted fmt && check_fmt
    wanted clippy && check_clippy
    wanted unit && check_tests "${unit[@]}"
    wanted required && ((${#required[@]})) && check_tests "${required[@]}"
    # Cargo may have rewritten Cargo.lock: the verdict is about the files as
    # the checks left them.
    key=$(tree_key)
    ((${#summary[@]})) || touch "$state/green/$key"
fi

# Red before green: only once the checks pass (a failing test already
# blocks), only in git, and only for a change that touches src/ (the
# script says when there is nothing to check, and caches by commit).
if ((${#summary[@]} == 0)) && wanted red-green && [[ -x $here/red-before-green.sh ]] && git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    began=$(date +%s)
    bounded env CLAUDE_PROJECT_DIR="$PWD" "$here/red-before-green.sh" >"$work/red-green" 2>&1
    case $? in
        0) ;;
        124)
            build_cut_short=1
            summary+=("$(out_of_time "scripts/red-before-green.sh" "$began") (what it proved is remembered: stopping again goes on from there)")
            ;;
        1)
            history_rejected=1
            summary+=("the new tests were not seen failing before the implementation (scripts/red-before-green.sh)")
            details+=("== scripts/red-before-green.sh: rejected ==
$(first_bytes 4000 <"$work/red-green")")
            ;;
        *) notes+=("red-before-green was not checked: $(tail -n 1 "$work/red-green")") ;;
    esac
fi

# ---------------------------------------------------------------- verdict

if ((${#summary[@]} == 0)); then
    rm -f "$session_dir/blocks" "$session_dir/last"
    if ((cached)); then log "green (cached)"; else log "green"; fi
    ((${#notes[@]})) && allow_with "Stop hook: checks pass. $(printf '%s. ' "${notes[@]}")"
    allow
fi

joined=$(printf '%s; ' "${summary[@]}")
joined=${joined%; }
headline="Not done: $joined."
name_list=""
if ((${#names[@]})); then
    name_list=$'Failing tests:\n'$(printf '  - %s\n' "${names[@]:0:60}")
    ((${#names[@]} > 60)) && name_list+=$'\n'"  ... and $((${#names[@]} - 60)) more"
fi

# No progress: still failing with the same files and the same commit as at
# the last block, whichever tests fail (under load a flaky one may differ).
signature=$(printf '%s\n' "$key" "$head" | hash)
blocks=$(cat "$session_dir/blocks" 2>/dev/null)
[[ $blocks =~ ^[0-9]+$ ]] || blocks=0
not_done="The work is NOT done: $joined.${name_list:+
$name_list}"

if ((max_blocks == 0)); then
    log "red, not blocking (STOP_HOOK_MAX_BLOCKS=0)"
    allow_with "Stop hook: STOP_HOOK_MAX_BLOCKS=0, so the agent may stop. $not_done"
fi
if [[ $(cat "$session_dir/last" 2>/dev/null) == "$signature" ]]; then
    rm -f "$session_dir/blocks"
    log "red, no progress: letting the stop through"
    allow_with "Stop hook: still failing, and nothing changed since the last block (files and commit), so blocking again would not help; letting the agent stop. $not_done"
fi
((build_cut_short)) || echo "$signature" >"$session_dir/last"
if ((blocks >= max_blocks)); then
    rm -f "$session_dir/blocks"
    log "red, $blocks blocks: letting the stop through"
    allow_with "Stop hook: blocked $blocks times in this session (STOP_HOOK_MAX_BLOCKS=$max_blocks) and still failing; letting the agent stop. $not_done"
fi
blocks=$((blocks + 1))
echo "$blocks" >"$session_dir/blocks"

# The reason: headline, every failing name, what to do, then the failures
# until the budget is spent, then the other checks' diagnostics.
if ((history_rejected && ${#summary[@]} == 1)); then
    advice="Rewrite the change's history so the failing tests come first: commit the new tests with a stub (they must build and fail on their assertions), then the implementation; a test changed after the implementation must be seen failing again. If the change alters no behaviour, say so with a line \`Red-Green: exempt <why>\` in its commit message."
else
    advice="Fix the code, never the tests."
fi
reason="$headline${name_list:+
$name_list}
$advice Then stop again (block $blocks of $max_blocks in this session; stopping again without changing anything is let through).
"
tail_text=""
for detail in "${details[@]}"; do tail_text+=$'\n'"$detail"$'\n'; done
budget=$((reason_bytes - ${#reason} - ${#tail_text}))
((budget < 1500)) && budget=1500
# Every failure gets an equal share (at least 500 bytes: its name and the
# start of its message), so that one long failure never hides the others.
share=$budget
((${#sections[@]} > 0)) && share=$((budget / ${#sections[@]} - 1))
((share < 500)) && share=500
shown=0
failures=""
for section in "${sections[@]}"; do
    ((${#section} > share)) && section=$(printf '%s\n' "$section" | first_bytes "$((share - 12))")
    if ((${#failures} + ${#section} + 1 > budget)); then break; fi
    failures+=$'\n'"$section"
    shown=$((shown + 1))
done
if ((shown < ${#sections[@]})); then
    failures+=$'\n'"[... $((${#sections[@]} - shown)) more failures not shown: run the cargo test command named above to see them]"$'\n'
fi
reason+="$failures$tail_text"
if ((${#reason} > reason_bytes)); then
    reason=$(printf '%s' "$reason" | first_bytes "$((reason_bytes - 16))")
fi
log "red, block $blocks of $max_blocks"
block "$reason"
