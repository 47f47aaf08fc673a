#!/usr/bin/env bash
# Formats the template's Rust sources in place with rustfmt.
#
# The sources contain Liquid placeholders, so rustfmt cannot read them
# directly: this renders the template with its defaults (project name
# `orders-consumer`), formats the result, and copies each file back with the
# crate name turned into its placeholder again. Files with Liquid tags
# (`{% if %}` choosing a variant, like src/lib.rs) cannot be restored that
# way and are left alone; keep them formatted by hand.
set -euo pipefail
kit="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cargo run --quiet --manifest-path "$kit/Cargo.toml" -- new orders-consumer --destination "$work" --no-format >/dev/null
project="$work/orders-consumer"
(cd "$project" && cargo fmt)

changed=0
while IFS= read -r file; do
    relative="${file#"$project"/}"
    source="$kit/template/$relative"
    [[ ! -f "$source" ]] && continue
    grep -q '{%' "$source" && continue
    formatted="$(sed -e 's/orders_consumer/{{crate_name}}/g' -e 's/orders-consumer/{{project-name}}/g' "$file")"
    if [[ "$formatted" != "$(cat "$source")" ]]; then
        printf '%s\n' "$formatted" >"$source"
        echo "formatted template/$relative"
        changed=1
    fi
done < <(find "$project" -name '*.rs' -not -path '*/target/*')
[[ $changed -eq 1 ]] || echo "template sources already formatted"
