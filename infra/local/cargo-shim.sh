#!/usr/bin/env bash
# The `cargo` that `cargo lambda watch` runs (up.sh points $CARGO here).
#
# cargo lambda watch starts a function with `cargo run --bin NAME` from the
# workspace root. In a workspace whose default-members leave out the function
# crates, cargo answers "no bin target named `NAME` in default-run packages".
# This shim adds `--package PKG` for the package that owns NAME (looked up
# with `cargo metadata --no-deps`), builds it with the real cargo and runs
# the binary; every other command goes through unchanged.
#
# A function process that dies by a signal (an injected abort,
# `squall.fault.task_abort_rate`, or a kill -9) is started again at once, as
# Lambda replaces an execution environment whose process died: cargo lambda
# watch itself never restarts a killed instance, and every later invocation
# of the function would wait for it. The invocation the process died in
# never gets an answer, as on Lambda.
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
# "package<TAB>target directory" of the binary NAME.
found="$("$real" "${metadata_args[@]}" 2>/dev/null | python3 -c '
import json, sys
bin_name = sys.argv[1]
meta = json.load(sys.stdin)
for package in meta["packages"]:
    for target in package["targets"]:
        if target["name"] == bin_name and "bin" in target["kind"]:
            print(package["name"] + "\t" + meta["target_directory"])
            sys.exit(0)
' "$bin" || true)"

if [[ -z "$found" ]]; then
    exec "$real" "$@"
fi
package="${found%%$'\t'*}"
target_dir="${CARGO_TARGET_DIR:-${found#*$'\t'}}"
profile=debug
for a in "${args[@]}"; do
    [[ "$a" == "--release" ]] && profile=release
    [[ "$a" == "--" ]] && break
done
"$real" build --package "$package" "${args[@]:1}"
binary="$target_dir/$profile/$bin"
while true; do
    status=0
    "$binary" || status=$?
    if ((status > 128)); then
        echo "cargo-shim: $bin died (signal $((status - 128))); starting it again, as Lambda replaces a dead environment" >&2
        continue
    fi
    exit "$status"
done
