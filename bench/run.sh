#!/usr/bin/env bash
# The TPC-H benchmark, end to end, on a fresh machine:
#   bench/run.sh --sf 1 [--runs 5] [--queries 1,3] [--engines squall,datafusion,duckdb] [--config squall.k=v]
#
# 1. builds squall in release mode (`cargo build --release --bin squall`; a
#    no-op when up to date, ~40 min the first time on a 2-core machine);
# 2. installs the peers' Python packages when missing (PyPI duckdb, datafusion, pyarrow);
# 3. generates TPC-H data at the scale factor into data/tpch/sf{SF} when missing;
# 4. runs bench/run.py: the 22 queries on squall (embedded) and the peers,
#    answers checked, time, peak memory, requests and modelled cost, and
#    writes bench/results/<stamp>-sf{SF}.{csv,json,md,svg}.
# Set SQUALL_BIN to use an existing binary instead of building.
set -euo pipefail
cd "$(dirname "$0")/.."

sf=1
args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --sf) sf="$2"; args+=("$1" "$2"); shift 2 ;;
    --sf=*) sf="${1#--sf=}"; args+=("$1"); shift ;;
    *) args+=("$1"); shift ;;
  esac
done
[[ " ${args[*]-} " == *" --sf"* ]] || args+=(--sf "$sf")

if [[ -n "${SQUALL_BIN:-}" ]]; then
  squall="$SQUALL_BIN"
else
  echo "== building squall (release)"
  cargo build --release --locked --bin squall
  squall="${CARGO_TARGET_DIR:-target}/release/squall"
fi
[[ -x "$squall" ]] || { echo "no squall binary at $squall" >&2; exit 1; }

echo "== Python packages for the peers"
if ! python3 -c 'import duckdb, datafusion, pyarrow' 2>/dev/null; then
  python3 -m pip install --quiet duckdb datafusion pyarrow
fi

data="data/tpch/sf${sf}"
if [[ ! -f "$data/_SUCCESS" ]]; then
  echo "== generating TPC-H SF${sf} into $data"
  "$squall" tpch gen --sf "$sf" --out "$data"
fi

echo "== running"
exec python3 bench/run.py --squall "$squall" --data "$data" "${args[@]}"
