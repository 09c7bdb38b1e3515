#!/usr/bin/env bash
# Checks that building one function crate alone (what `cargo lambda watch`
# and `sam build` do) resolves every dependency with the same features as the
# whole-workspace build (`cargo test --workspace`), so it reuses the
# workspace's compiled dependencies. When it fails, add the crate and the
# features it prints to functions/feature-unify/Cargo.toml.
# Needs only cargo (no build): it compares `cargo tree` outputs.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"

features() {
    # "name version features" per resolved package, workspace members left out.
    cargo tree "$@" -f '{p} {f}' --prefix none 2>/dev/null |
        grep -E '^\S+ v[0-9]' | sed 's/ (\*)//; s/ (proc-macro)//' |
        grep -v '^squall-' | sort -u
}

workspace="$(features --workspace -e normal,build,dev)"
status=0
for package in squall-worker-function squall-coordinator-function squall-api-function squall-cli; do
    extra="$(comm -13 <(echo "$workspace") <(features -p "$package" -e normal,build))"
    if [[ -n "$extra" ]]; then
        echo "check-feature-unify: $package alone resolves features the workspace build does not:" >&2
        echo "$extra" | sed 's/^/    /' >&2
        echo "  workspace build:" >&2
        while read -r name _; do
            echo "$workspace" | grep "^$name " | sed 's/^/    /' >&2
        done <<<"$extra"
        status=1
    fi
done
if ((status == 0)); then
    echo "check-feature-unify: the function crates build with the workspace's features" >&2
fi
exit "$status"
