#!/usr/bin/env bash
# The `cargo` that `cargo lambda watch` runs (up.sh points $CARGO here).
#
# cargo lambda watch starts a function with `cargo run --bin NAME` from the
# workspace root. In a workspace whose default-members leave out the function
# crates, cargo answers "no bin target named `NAME` in default-run packages".
# This shim adds `--package PKG` for the package that owns NAME (looked up
# with `cargo metadata --no-deps`) and runs the real cargo; every other
# command goes through unchanged.
set -euo pipefail

real="${SQUALL_REAL_CARGO:-}"
if [[ -z "$real" || "$real" == "${BASH_SOURCE[0]}" ]]; then
    echo "cargo-shim: SQUALL_REAL_CARGO must name the real cargo" >&2
    exit 1
fi

if [[ "${1:-}" != "run" ]]; then
    exec "$real" "$@"
fi

bin=""
manifest=""
args=("$@")
for ((i = 1; i < ${#args[@]}; i++)); do
    case "${args[i]}" in
        -p | --package | --package=*) exec "$real" "$@" ;;
        --) break ;;
        --bin) bin="${args[i + 1]:-}" ;;
        --bin=*) bin="${args[i]#--bin=}" ;;
        --manifest-path) manifest="${args[i + 1]:-}" ;;
        --manifest-path=*) manifest="${args[i]#--manifest-path=}" ;;
    esac
done
if [[ -z "$bin" ]]; then
    exec "$real" "$@"
fi

metadata_args=(metadata --no-deps --format-version 1)
if [[ -n "$manifest" ]]; then
    metadata_args+=(--manifest-path "$manifest")
fi
package="$("$real" "${metadata_args[@]}" 2>/dev/null | python3 -c '
import json, sys
bin_name = sys.argv[1]
for package in json.load(sys.stdin)["packages"]:
    for target in package["targets"]:
        if target["name"] == bin_name and "bin" in target["kind"]:
            print(package["name"])
            sys.exit(0)
' "$bin" || true)"

if [[ -z "$package" ]]; then
    exec "$real" "$@"
fi
exec "$real" run --package "$package" "${args[@]:1}"
