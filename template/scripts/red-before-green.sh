#!/usr/bin/env bash
# Red before green, checked from git history: the tests a change adds were
# seen failing, on their assertions, before the code that makes them pass.
#
#   scripts/red-before-green.sh [BASE]
#
# The change is the commits in BASE..HEAD (merge commits skipped). BASE is
# the argument, else $RED_GREEN_BASE, else where this branch left the main
# line: the merge-base with origin/HEAD, else with the branch's upstream
# (if HEAD is on either, all is pushed and there is nothing to check), else
# with a local main or master. A repository with no remote and its work on
# main is checked from its root commit; a red commit proven once is
# remembered, so each run builds only new ones. CI passes the pull
# request's base.
#
# If no commit of the change touches src/, there is nothing to check.
# Otherwise every commit that changes a file under tests/ is a "red" commit
# and must add or change #[test] functions (whitespace and trailing commas
# do not count, so `cargo fmt` is not a change) that:
#   1. build and FAIL at that commit, on an assertion: assert!, assert_eq!
#      and friends, an explicit panic! in the test code, or a judged
#      scenario of the harness that found a violation (its panic says
#      "violation: ..."). A build error, an unwrap()/expect() in the
#      set-up, todo!, unimplemented! or a panic outside tests/ is not a
#      verdict;
#   2. PASS at HEAD.
# So the implementation cannot come first or with the tests (they would pass
# at their own commit), and a test changed after the implementation must be
# seen failing again (a weakened one passes at its commit). Also rejected: a
# change to src/ with no red commit, a commit that deletes a test, and a
# change to tests/ support code (no test function) after src/ changed.
#
# A consumer's tests are its subject: the required tests
# (tests/conformance/required.rs) play every subject of
# tests/support/subjects.rs. So a commit that changes that file (a consumer
# added, its facts or its model changed) is a red commit whose tests are the
# required ones: at least one must fail there on a verdict (a required test
# that finds nothing wrong there, say one with nothing to play for the new
# subject, is shown and not held against it; none may fail on anything but
# a verdict), and all must pass at HEAD. A subject changed after its
# consumer's implementation must be seen failing again, like any test.
#
# A commit that changes no behaviour (a refactor) can say so with a line
# `Red-Green: exempt <why>` in its message: it is skipped, and shown as such.
#
# Tests are looked for in integration test targets (tests/NAME.rs,
# tests/NAME/main.rs and the modules beside it), with the module path taken
# from the file path. Earlier commits are built in a temporary git worktree
# with the same CARGO_TARGET_DIR, so dependencies are not rebuilt. Only
# commits are checked: uncommitted changes under src/ and tests/ are
# listed as NOT checked, file by file, and ignored.
#
# Prints the evidence: each test, how it failed at its red commit, and the
# passing run at HEAD. Exit 0: accepted (or nothing to check); 1: rejected;
# 2: usage or environment error. Needs git and bash 4 or newer. Verdicts and
# the earlier commits' builds live in $CARGO_TARGET_DIR/red-before-green/.
set -uo pipefail
export RUST_BACKTRACE=0 RUST_LIB_BACKTRACE=0 CARGO_TERM_COLOR=never CARGO_TERM_PROGRESS_WHEN=never
export LC_ALL=C

usage() { echo "usage: scripts/red-before-green.sh [BASE]   (a commit; default: where this branch forked)" >&2; exit 2; }
fail() { echo "red-before-green: $*" >&2; exit 2; }
case "${1:-}" in -h | --help) usage ;; -*) usage ;; esac
(($# <= 1)) || usage

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
project=${CLAUDE_PROJECT_DIR:-$here/..}
cd "$project" 2>/dev/null || fail "no project folder at $project"
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || fail "not a git repository: nothing to check against"
git rev-parse -q --verify HEAD >/dev/null || fail "no commit yet"
head=$(git rev-parse HEAD)
top=$(git rev-parse --show-toplevel)
prefix=$(git rev-parse --show-prefix) # the project's folder inside the repository

hash() {
    if command -v sha256sum >/dev/null; then sha256sum | cut -c1-64
    elif command -v shasum >/dev/null; then shasum -a 256 | cut -c1-64
    else cksum | tr -c '0-9\n' _; fi
}
short() { git rev-parse --short "$1"; }
subject() { git log -1 --format=%s "$1"; }

# ---------------------------------------------------------------- the change

base_from=""
if [[ -n ${1:-} ]]; then
    base=$1 base_from="argument"
elif [[ -n ${RED_GREEN_BASE:-} ]]; then
    base=$RED_GREEN_BASE base_from="RED_GREEN_BASE"
else
    base=""
    for ref in origin/HEAD '@{upstream}' main master; do
        git rev-parse -q --verify "$ref^{commit}" >/dev/null 2>&1 || continue
        fork=$(git merge-base HEAD "$ref" 2>/dev/null) || continue
        if [[ $fork == "$head" ]]; then
            # HEAD is on that line. On a remote's, everything is pushed (and
            # was checked there); on a local main, there is no fork point.
            [[ $ref == main || $ref == master ]] && continue
            base=$head base_from="HEAD is on $ref"
            break
        fi
        base=$fork base_from="merge-base with $ref"
        break
    done
    if [[ -z $base ]]; then
        base=$(git rev-list --max-parents=0 HEAD | tail -n 1)
        base_from="the root commit: no remote and no branch to fork from; set RED_GREEN_BASE to check less"
    fi
fi
base=$(git rev-parse -q --verify "$base^{commit}") || fail "unknown base commit: ${1:-${RED_GREEN_BASE:-}}"

mapfile -t commits < <(git rev-list --reverse --no-merges "$base..HEAD")
echo "red-before-green: change $(short "$base")..$(short "$head") ($base_from), ${#commits[@]} commit(s)"

# Files a commit changes under $1 (relative to the project).
changed() { git diff-tree --no-commit-id --name-only -r --relative "$2" -- "$1"; }
exempt() { git log -1 --format=%B "$1" | grep -iE '^red-green:[[:space:]]*exempt' | head -n 1; }

src_commits=()
for c in "${commits[@]}"; do
    [[ -n $(changed src "$c") ]] || continue
    if why=$(exempt "$c") && [[ -n $why ]]; then
        echo "  exempt: $(short "$c") \"$(subject "$c")\": $why"
        continue
    fi
    src_commits+=("$c")
done
if ((${#src_commits[@]} == 0)); then
    echo "nothing to check: no commit in the change touches src/"
    exit 0
fi
uncommitted=$(git status --porcelain -- src tests)
if [[ -n $uncommitted ]]; then
    echo "  NOT checked: uncommitted changes under src/ or tests/ (only commits are judged; commit them, then run this again):"
    sed 's/^/    /' <<<"$uncommitted"
fi

main_target="${CARGO_TARGET_DIR:-target}"
[[ $main_target == /* ]] || main_target="$PWD/$main_target"
state="$main_target/red-before-green"
# Earlier commits build into a target directory of their own: cargo does not
# tell two checkouts of one package apart, so sharing the project's would
# leave it holding binaries of the older commit, which it would then run as
# if they were fresh. (Built once, it stays warm across runs.)
worktree_target="$state/target"
mkdir -p "$state/accepted"
script_hash=$(hash <"${BASH_SOURCE[0]}")
verdict_key=$(printf '%s\n' "$base" "$head" "$script_hash" | hash)
mkdir -p "$state/red"
if [[ -e $state/accepted/$verdict_key ]]; then
    echo "(checked before: the evidence of that run follows)"
    cat "$state/accepted/$verdict_key"
    exit 0
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/red-before-green.XXXXXX") || fail "no temporary folder"
worktree="${TMPDIR:-/tmp}/red-before-green-$(printf '%s' "$top" | hash | cut -c1-12)"
cleanup() {
    rm -rf "$work"
    if [[ -e $worktree ]]; then
        git worktree remove --force "$worktree" >/dev/null 2>&1 || rm -rf "$worktree"
        git worktree prune >/dev/null 2>&1
    fi
}
trap cleanup EXIT
evidence="$work/evidence"
: >"$evidence"
say() { printf '%s\n' "$*" | tee -a "$evidence"; }
reject() {
    say "REJECTED: $*"
    exit 1
}

# ---------------------------------------------------------------- test functions

# Separates fields in the lists below (not a tab: bash merges empty fields
# between tabs when reading).
sep=$'\037'

# Prints "name<TAB>text" for each #[test] function of a Rust file on stdin,
# the text without whitespace or trailing commas. A function ends at the
# first line that is a `}` at its own indentation (formatted code).
test_functions() {
    awk '
        function norm(s) { gsub(/[[:space:]]+/, "", s); gsub(/,\)/, ")", s); gsub(/,\]/, "]", s); gsub(/,}/, "}", s); return s }
        function emit() { print name "\t" norm(text); capturing = 0; text = "" }
        capturing { text = text "\n" $0; if ($0 ~ ("^" indent "}[[:space:]]*$")) emit(); next }
        /^[[:space:]]*#\[([A-Za-z_]+::)*test(\(.*\))?\][[:space:]]*$/ { pending = 1; text = $0; next }
        pending && /^[[:space:]]*#\[/ { text = text "\n" $0; next }
        pending && /^[[:space:]]*(\/\/.*)?$/ { next }
        pending && /^[[:space:]]*(pub(\([^)]*\))?[[:space:]]+)?(async[[:space:]]+)?fn[[:space:]]+[A-Za-z_]/ {
            pending = 0; line = $0
            match(line, /fn[[:space:]]+[A-Za-z_][A-Za-z0-9_]*/)
            name = substr(line, RSTART, RLENGTH); sub(/^fn[[:space:]]+/, "", name)
            indent = line; sub(/[^[:space:]].*$/, "", indent)
            text = text "\n" line; capturing = 1
            opened = gsub(/\{/, "{", line); closed = gsub(/\}/, "}", line)
            if (opened > 0 && opened == closed) emit()
            next
        }
        { pending = 0 }'
}

# The whole file without whitespace or trailing commas.
normalized() { tr -d ' \t\r\n' | sed -e 's/,)/)/g' -e 's/,]/]/g' -e 's/,}/}/g'; }

# "target<sep>module prefix" of an integration test file at a commit, or
# nothing if the file is not part of a test target.
target_of() {
    local file=$1 commit=$2 rest dir
    rest=${file#tests/}
    if [[ $rest != */* ]]; then
        printf '%s\037\n' "${rest%.rs}"
        return
    fi
    dir=${rest%%/*}
    git cat-file -e "$commit:${prefix}tests/$dir/main.rs" 2>/dev/null || return
    rest=${rest#"$dir"/}
    rest=${rest%.rs}
    rest=${rest%/mod}
    [[ $rest == main ]] && rest="" || rest="${rest//\//::}::"
    printf '%s\037%s\n' "$dir" "$rest"
}

show() { git show "$1:$prefix$2" 2>/dev/null; }

# The consumers as the required tests see them, and those tests.
subjects_file=tests/support/subjects.rs
required_file=tests/conformance/required.rs

# For each red commit: its tests, as lines
# "target<sep>prefix<sep>name<sep>file<sep>kind", kind "subjects" for the
# required tests a change to the subjects brings (at least one must fail),
# empty for the tests a commit adds or changes (each must fail).
declare -A red_tests=()
red_commits=()
src_seen=0
for c in "${commits[@]}"; do
    touches_src=0
    [[ -n $(changed src "$c") ]] && touches_src=1
    if why=$(exempt "$c") && [[ -n $why ]]; then
        continue
    fi
    mapfile -t files < <(changed tests "$c")
    tests_here=""
    support_change=""
    for file in "${files[@]}"; do
        [[ $(show "$c^" "$file" | normalized) == "$(show "$c" "$file" | normalized)" ]] && continue # formatting only
        if [[ $file == "$subjects_file" ]] && where=$(target_of "$required_file" "$c") && [[ -n $where ]] &&
            git cat-file -e "$c:$prefix$required_file" 2>/dev/null; then
            while IFS=$'\t' read -r name _; do
                tests_here+="$where$sep$name$sep$required_file${sep}subjects"$'\n'
            done < <(show "$c" "$required_file" | test_functions)
            continue
        fi
        if [[ $file != *.rs ]]; then
            support_change=$file
            continue
        fi
        show "$c^" "$file" | test_functions | sort >"$work/before"
        show "$c" "$file" | test_functions | sort >"$work/after"
        # Deleted tests: a name present before and gone after.
        removed=$(comm -23 <(cut -f1 "$work/before" | sort -u) <(cut -f1 "$work/after" | sort -u))
        if [[ -n $removed ]]; then
            reject "commit $(short "$c") \"$(subject "$c")\" deletes tests from $file: ${removed//$'\n'/, }"
        fi
        mapfile -t new < <(comm -13 "$work/before" "$work/after" | cut -f1 | sort -u)
        if ((${#new[@]} == 0)); then
            support_change=$file
            continue
        fi
        where=$(target_of "$file" "$c")
        if [[ -z $where ]]; then
            say "  note: $file is not an integration test target; its tests are not checked"
            continue
        fi
        for name in "${new[@]}"; do
            tests_here+="$where$sep$name$sep$file"$'\n'
        done
    done
    if [[ -n $tests_here ]]; then
        red_commits+=("$c")
        red_tests[$c]=$tests_here
    elif [[ -n $support_change ]] && ((src_seen)); then
        reject "commit $(short "$c") \"$(subject "$c")\" changes $support_change, test code that is not a test, after src/ changed: it could make the tests weaker without a failing test to show for it (if it does not, say so with a \`Red-Green: exempt <why>\` line in its message)"
    fi
    ((touches_src)) && src_seen=1
done

if ((${#red_commits[@]} == 0)); then
    reject "src/ changed in $(short "${src_commits[0]}") \"$(subject "${src_commits[0]}")\" but no commit of the change adds or changes a test. Commit failing tests first (with a stub so they build), then the implementation; or, if the change alters no behaviour, add a \`Red-Green: exempt <why>\` line to its commit message"
fi

# ---------------------------------------------------------------- running

checkout() {
    if [[ ! -e $worktree/.git ]]; then
        git worktree remove --force "$worktree" >/dev/null 2>&1
        rm -rf "$worktree"
        git worktree prune >/dev/null 2>&1
        git worktree add --detach --force "$worktree" "$1" >/dev/null 2>&1 || fail "could not create a worktree at $worktree"
    else
        git -C "$worktree" checkout --detach --force "$1" >/dev/null 2>&1 || fail "could not check out $(short "$1") in $worktree"
    fi
    printf '%s\n' "$worktree/$prefix"
}

# Runs the tests listed in $work/list ("target<sep>prefix<sep>name<sep>file")
# in folder $1; the output of each target goes to $work/run.TARGET.
run_tests() {
    local dir=$1 target names build_target=$main_target
    [[ $dir == "$worktree"* ]] && build_target=$worktree_target
    cut -d "$sep" -f1 "$work/list" | sort -u >"$work/targets"
    while IFS= read -r target; do
        # A required test by its module path: its bare name may be a
        # substring of many other tests' names.
        mapfile -t names < <(awk -F'\037' -v t="$target" '$1 == t { print ($5 == "subjects" ? $2 $3 : $3) }' "$work/list" | sort -u)
        (cd "$dir" && CARGO_TARGET_DIR=$build_target cargo test --no-fail-fast --test "$target" -- "${names[@]}") >"$work/run.$target" 2>"$work/err.$target"
    done <"$work/targets"
}

# The result of one test in a libtest output: first line "full-name<TAB>status"
# (status ok, FAILED, ignored or missing), second line the panic's location
# ("file:line:col", "should_panic" or empty), then its message.
result_of() {
    awk -v prefix="$2" -v fname="$3" '
        function matches(n) {
            return n == prefix fname || (index(n, prefix) == 1 && length(n) > length(fname) + 2 && substr(n, length(n) - length(fname) - 1) == "::" fname)
        }
        /^test [^ ]+ \.\.\. / {
            if (want == "" && matches($2)) { want = $2; status = $4; sub(/,.*/, "", status) }
            next
        }
        /^---- .+ stdout ----$/ { n = $0; sub(/^---- /, "", n); sub(/ stdout ----$/, "", n); inside = (n == want); next }
        /^failures:$/ { inside = 0 }
        inside {
            if ($0 ~ /^thread .* panicked at .*:[0-9]+:[0-9]+:$/) {
                thread = $0; sub(/^thread \047/, "", thread); sub(/\047.*/, "", thread)
                loc = $0; sub(/.* panicked at /, "", loc); sub(/:$/, "", loc)
                panics++; ploc[panics] = loc; pthread[panics] = thread; pmsg[panics] = ""; collecting = 1
                next
            }
            if ($0 ~ /^note: test did not panic as expected/) { should = 1 }
            if (collecting) {
                if ($0 == "" || $0 ~ /^note: /) collecting = 0
                else if (lines[panics]++ < 8) pmsg[panics] = pmsg[panics] $0 "\n"
            }
        }
        END {
            if (want == "") { print prefix fname "\tmissing"; exit }
            print want "\t" status
            chosen = panics
            for (i = 1; i <= panics; i++) if (pthread[i] == want) chosen = i
            if (should) print "should_panic"
            else if (chosen > 0) { print ploc[chosen]; printf "%s", pmsg[chosen] }
            else print ""
        }' "$1"
}

# Why a failure is a verdict ("assertion ...") or not ("not: ...").
judge() {
    local dir=$1 loc=$2 message=$3 file line col text token
    case $loc in
        should_panic) echo "assertion (did not panic as expected)"; return ;;
        "") echo "not: it failed without a panic (a test returning Err from \`?\` in its set-up?)"; return ;;
    esac
    case $message in
        # A judged scenario that failed (tests/support/harness: a Violation
        # prints as "violation: ..."): the harness's assertion on the state.
        *"violation: "*) echo "assertion (the harness judged the scenario)"; return ;;
        "called \`Result::unwrap()\`"* | "called \`Option::unwrap()\`"*) echo "not: an unwrap() failed in the set-up"; return ;;
        "not yet implemented"* | "not implemented"*) echo "not: it reached todo!/unimplemented!"; return ;;
    esac
    col=${loc##*:}
    loc=${loc%:*}
    line=${loc##*:}
    file=${loc%:*}
    [[ $file == "$dir"/* ]] && file=${file#"$dir"/}
    if [[ $file != tests/* ]]; then
        echo "not: it panicked in $file:$line, outside the test code"
        return
    fi
    text=$(sed -n "${line}p" "$dir/$file" 2>/dev/null)
    token=${text:col-1}
    case $token in
        assert* | debug_assert*) echo "assertion" ;;
        panic!*) echo "assertion (an explicit panic! in the test)" ;;
        unwrap* | expect*) echo "not: an unwrap()/expect() failed in the set-up ($file:$line)" ;;
        todo!* | unimplemented!*) echo "not: it reached todo!/unimplemented! ($file:$line)" ;;
        *) echo "not: it panicked at $file:$line, not on an assertion" ;;
    esac
}

# Red: newest first, so a test weakened at the end is caught before anything
# else is built. Every test of a commit is judged before rejecting it.
for ((i = ${#red_commits[@]} - 1; i >= 0; i--)); do
    c=${red_commits[i]}
    at="$(short "$c") \"$(subject "$c")\""
    printf '%s' "${red_tests[$c]}" >"$work/list"
    # A commit's tests fail there or not whatever comes after it: a red
    # commit proven once is not built again.
    proven="$state/red/$c-$script_hash"
    if [[ -s $proven ]]; then
        say "$(cat "$proven")"
        continue
    fi
    mark=$(wc -l <"$evidence")
    own=$(awk -F'\037' '$5 != "subjects"' "$work/list" | wc -l | tr -d ' ')
    required=$(awk -F'\037' '$5 == "subjects"' "$work/list" | wc -l | tr -d ' ')
    if ((required)); then
        say "red commit $at: $own new or changed test(s), which must fail there, and it changes $subjects_file: the $required required tests play every subject, and at least one must fail there"
    else
        say "red commit $at: $own new or changed test(s), which must fail there"
    fi
    dir=$(checkout "$c")
    run_tests "$dir"
    for target in $(cut -d "$sep" -f1 "$work/list" | sort -u); do
        if ! grep -q '^running [0-9]* tests*$' "$work/run.$target"; then
            say "$(grep -E -A 6 '^error' "$work/err.$target" | head -n 24)"
            reject "the tests of $(short "$c") do not build there (cargo test --test $target): a red test must build and fail on an assertion; commit a stub with them so they compile"
        fi
    done
    problems=()
    subjects_red=0
    while IFS=$sep read -r target modprefix name file kind; do
        result_of "$work/run.$target" "$modprefix" "$name" >"$work/result"
        IFS=$'\t' read -r full status <"$work/result"
        loc=$(sed -n 2p "$work/result")
        message=$(sed -n '3,$p' "$work/result")
        if [[ $kind == subjects && $status == ok ]]; then
            say "  passes, finding nothing wrong here  $full"
            continue
        fi
        case $status in
            ok) problems+=("$full passes at $(short "$c")")
                say "  PASSES, but must fail here  $full"
                continue ;;
            ignored) problems+=("$full is #[ignore]d at $(short "$c")")
                say "  IGNORED, but must fail here  $full"
                continue ;;
            missing) problems+=("$full did not run at $(short "$c") (cargo test --test $target)")
                say "  DID NOT RUN  $full"
                continue ;;
        esac
        verdict=$(judge "$dir" "$loc" "$message")
        if [[ $verdict == not:* ]]; then
            problems+=("$full fails at $(short "$c") but not on an assertion: ${verdict#not: }")
            say "  FAILS, but not on an assertion  $full"
        else
            say "  FAILS as it should  $full"
            [[ $kind == subjects ]] && subjects_red=$((subjects_red + 1))
        fi
        say "      at $loc, ${verdict#not: }:"
        say "$(printf '%s' "$message" | sed 's/^/      /')"
    done <"$work/list"
    if ((required && !subjects_red)); then
        problems+=("no required test fails at $(short "$c"), which changes $subjects_file: every one passes at $(short "$c")")
    fi
    if ((${#problems[@]})); then
        say "REJECTED: the tests added or changed in $at must fail there, on an assertion:"
        printf '  - %s\n' "${problems[@]}" | tee -a "$evidence"
        if printf '%s\n' "${problems[@]}" | grep -q ' passes at '; then
            say "A test that passes where it was added or changed came with or after its implementation, or was changed after it (weakened?)."
        fi
        if printf '%s\n' "${problems[@]}" | grep -q 'not on an assertion'; then
            say "A red test must reach its assertions: make the stub return a value (not todo!()) and the set-up succeed, so that what fails is the expected value."
        fi
        exit 1
    fi
    tail -n +"$((mark + 1))" "$evidence" >"$proven"
done

# Green: every red test passes at HEAD.
for c in "${red_commits[@]}"; do printf '%s' "${red_tests[$c]}"; done | sort -u >"$work/list"
if [[ -z $(git status --porcelain -- .) ]]; then
    dir=$PWD
    where="the working tree, which is HEAD"
else
    dir=$(checkout "$head")
    where="a clean checkout of HEAD"
fi
say "green at HEAD $(short "$head") ($where):"
run_tests "$dir"
while IFS=$sep read -r target modprefix name file; do
    result_of "$work/run.$target" "$modprefix" "$name" >"$work/result"
    IFS=$'\t' read -r full status <"$work/result"
    case $status in
        ok) say "  PASSES  $full  (cargo test --test $target)" ;;
        missing) reject "$full did not run at HEAD (does it build? cargo test --test $target)" ;;
        *) reject "$full is $status at HEAD: the implementation does not make it pass" ;;
    esac
done <"$work/list"

say "ACCEPTED: $(wc -l <"$work/list" | tr -d ' ') test(s) failed on their assertions at the commit that added them and pass at HEAD."
cp "$evidence" "$state/accepted/$verdict_key"
exit 0
