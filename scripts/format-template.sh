#!/usr/bin/env bash
# Formats the template's Rust sources, and the kit's suites' (kit-suites/), in
# place with rustfmt.
#
# The sources contain Liquid placeholders, so rustfmt cannot read them
# directly: this renders every variant of the template with its defaults
# (project name `orders-consumer`), formats the result, and copies each file
# back with the crate name turned into its placeholder again. Files with
# Liquid tags (`{% if %}` choosing a variant, like src/lib.rs) cannot be
# restored that way and are left alone; keep them formatted by hand.
set -euo pipefail
kit="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# One set of --define flags per variant (space-separated).
mapfile -t variants < <(grep -v '^#' "$kit/scripts/variants")

cargo build --quiet --manifest-path "$kit/Cargo.toml"
changed=0
for variant in "${variants[@]}"; do
    flags=()
    for define in $variant; do flags+=(--define "$define"); done
    folder="$work/${variant//[= ]/-}"
    mkdir -p "$folder"
    "$kit/target/debug/inbox-kit" new orders-consumer --destination "$folder" --no-format --kit-suites "${flags[@]}" >/dev/null 2>&1
    project="$folder/orders-consumer"
    (cd "$project" && cargo fmt)
    while IFS= read -r file; do
        relative="${file#"$project"/}"
        source="$kit/template/$relative"
        [[ -f "$source" ]] || source="$kit/template/kit-suites/$relative"
        [[ ! -f "$source" ]] && continue
        grep -q '{%' "$source" && continue
        # Compared as files, byte for byte: a command substitution would drop
        # trailing blank lines, which rustfmt removes and `fmt --check` reports.
        sed -e 's/orders_consumer/{{crate_name}}/g' -e 's/orders-consumer/{{project-name}}/g' "$file" >"$work/formatted"
        if ! cmp -s "$work/formatted" "$source"; then
            cp "$work/formatted" "$source"
            echo "formatted ${source#"$kit"/}"
            changed=1
        fi
    done < <(find "$project" -name '*.rs' -not -path '*/target/*')
done
[[ $changed -eq 1 ]] || echo "template sources already formatted"
