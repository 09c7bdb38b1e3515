#!/usr/bin/env bash
# Checks that what the Lambda functions link is what they need: the normal
# dependency trees of the three function crates hold none of the tooling
# crates (the TPC-H generator and tooling, the progress bar, the argument
# parser, the command, the fuzzers). Needs only cargo (no build).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"

forbidden='^(tpchgen|tpchgen-arrow|indicatif|clap|squall-tpch|squall-cli|squall-worker-fuzz|squall-bloom-bench|bloomfilter) '
status=0
for package in squall-worker-function squall-coordinator-function squall-api-function; do
    tree="$(cargo tree -p "$package" -e normal --prefix none -f '{p}')"
    found="$(echo "$tree" | sed 's/ (\*)//; s/ (proc-macro)//' | sort -u | grep -E "$forbidden" || true)"
    if [[ -n "$found" ]]; then
        echo "check-function-deps: $package links tooling it does not need:" >&2
        echo "$found" | sed 's/^/    /' >&2
        status=1
    else
        echo "check-function-deps: $package: none of tpchgen, tpchgen-arrow, indicatif, clap, squall-tpch, squall-cli, squall-worker-fuzz, squall-bloom-bench, bloomfilter" >&2
    fi
done
exit "$status"
