#!/usr/bin/env bash
# Regenerates template/Cargo.lock.liquid: one lock file per template
# variant, each with the generated project's own entry placed where Cargo
# would sort it whatever the project's name.
#
#   scripts/update-locks.sh
#
# Cargo sorts the packages of a lock file by name. The generated project is
# one of them, and its name is only known at generation time, so a lock
# file with the project at a fixed place is re-sorted (rewritten) by the
# first build of a project whose name sorts elsewhere. Here the project's
# entry is printed in every gap between two packages, guarded by a Liquid
# condition that is true for exactly one gap (Liquid compares strings byte
# by byte, like Cargo); the entry itself is captured once per variant.
#
# Versions are kept: each variant is resolved starting from its current
# lock file, so only dependencies that were added or removed change. To
# move to newer versions, delete template/Cargo.lock.liquid first (the
# resolver then picks the newest versions that build on the template's
# rust-version).
set -euo pipefail
kit="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
probe=lockfile-probe
output="$kit/template/Cargo.lock.liquid"

# Every variant (scripts/variants), as the --define flags that select it
# and the Liquid condition that is true for it.
variants=()
while read -r defines; do
    condition="$(sed -E 's/([a-z_]+)=([a-z]+)/\1 == "\2"/g; s/ ([a-z_]+ ==)/ and \1/g' <<<"$defines")"
    variants+=("${defines// /,}|$condition")
done < <(grep -v '^#' "$kit/scripts/variants")

cargo build --quiet --manifest-path "$kit/Cargo.toml"
kit_binary="$kit/target/debug/inbox-kit"

{
    first=1
    for variant in "${variants[@]}"; do
        defines="${variant%%|*}"
        condition="${variant#*|}"
        define_flags=()
        for define in ${defines//,/ }; do define_flags+=(--define "$define"); done
        folder="$work/${defines//[=,]/-}"
        mkdir -p "$folder"
        "$kit_binary" new "$probe" --destination "$folder" --no-format "${define_flags[@]}" >/dev/null 2>&1
        project="$folder/$probe"
        # Start from this variant's current lock (as generated), if any.
        if [[ ! -s "$project/Cargo.lock" ]]; then rm -f "$project/Cargo.lock"; fi
        (cd "$project" && cargo metadata --quiet --format-version 1 >/dev/null)
        # Each tag trims the line break after it, never the one before it:
        # that one ends the previous variant's file.
        if [[ $first -eq 1 ]]; then tag="if"; first=0; else tag="elsif"; fi
        printf '{%% %s %s -%%}\n' "$tag" "$condition"
        awk -v probe="$probe" '
            BEGIN { RS = ""; ORS = "" }
            NR == 1 { header = $0; next }
            {
                if (index($0, "name = \"" probe "\"\n") > 0) {
                    root = $0
                    sub("name = \"" probe "\"", "name = \"{{project-name}}\"", root)
                } else {
                    names[++count] = $0
                    split($0, lines, "\n")
                    sub(/^name = "/, "", lines[2]); sub(/"$/, "", lines[2])
                    package[count] = lines[2]
                }
            }
            END {
                # The project entry is written once (captured) and printed
                # in whichever gap its name falls.
                print "{% capture root %}" root "\n\n{% endcapture %}" header "\n\n"
                for (i = 1; i <= count; i++) {
                    if (i == 1) {
                        condition = "project-name < \"" package[1] "\""
                    } else {
                        condition = "project-name > \"" package[i - 1] "\" and project-name < \"" package[i] "\""
                    }
                    if (i == 1 || package[i] != package[i - 1]) {
                        print "{% if " condition " %}{{ root }}{% endif %}"
                    }
                    print names[i] "\n"
                    if (i < count) print "\n"
                }
                print "{% if project-name > \"" package[count] "\" %}\n{{ root | rstrip }}\n{% endif %}"
            }
        ' "$project/Cargo.lock"
    done
    printf '{%% endif %%}'
} >"$work/Cargo.lock.liquid"
mv "$work/Cargo.lock.liquid" "$output"
echo "wrote $output (${#variants[@]} variants)"
