#!/usr/bin/env bash
# The plugin (plugin/) ships some of the template's commands and its hook
# scripts. Their one source is the template: this copies them into the
# plugin. tests/plugin.rs fails while a copy differs.
#
# Copies, not symlinks: Claude Code copies a plugin into its cache on
# install, and symlinks leaving the plugin's folder have been dropped or
# left dangling there in several releases (and git on Windows checks them
# out as text files).
#
# /add-handler is not shipped: it relies on files only a generated project
# has (tests/support/subjects.rs, src/handlers/mod.rs, scripts/stress.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

commands=(retrofit-inbox review-key diagnose-parallel)
scripts=(stop-hook.sh red-before-green.sh)

rm -f plugin/commands/*.md plugin/scripts/*
for command in "${commands[@]}"; do
    cp template/.claude/commands/"$command".md plugin/commands/
done
for script in "${scripts[@]}"; do
    cp -p template/scripts/"$script" plugin/scripts/
done
echo "plugin/: ${#commands[@]} commands and ${#scripts[@]} scripts copied from template/"
