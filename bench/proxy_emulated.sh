#!/usr/bin/env bash
# The scale proxy on the emulated AWS stack beside the embedded backend.
#
# Usage: bench/proxy_emulated.sh DATA_DIR OUT_DIR [QUERY...]   (default: 1 3 18)
#
# DATA_DIR is TPC-H SF1 with small row groups (`squall tpch gen --sf 1
# --row-group-rows 6000 --out DATA_DIR`). The script brings up the local
# stack (infra/local/up.sh, functions not restarted on source edits),
# uploads DATA_DIR to s3://squall-local/tpch/proxy-sf1, and runs each query
# twice with SF1000-like task counts (one row group per scan task, 1,000
# hash partitions, reduce stages as small as one task):
#   - `squall query --backend aws`: every task an emulated Lambda invocation,
#     every completion an SQS message in moto, exchange objects in moto's S3;
#   - `squall query --backend local` on DATA_DIR with the same settings.
# Each answer is checked against bench/tpch/answers/sf1 (`squall tpch check`),
# each profile written to OUT_DIR/q{NN}-{aws,local}-profile.json, and one
# line per run printed: wall, tasks, invocations, attempts beside silent
# ones, SQS requests, S3 requests. The stack is stopped at the end.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
data="${1:?usage: $0 DATA_DIR OUT_DIR [QUERY...]}"
out="${2:?usage: $0 DATA_DIR OUT_DIR [QUERY...]}"
shift 2
queries=("$@")
[ ${#queries[@]} -gt 0 ] || queries=(1 3 18)
bin="${SQUALL_BIN:-$root/target/debug/squall}"
[ -x "$bin" ] || { echo "no squall binary at $bin (cargo build --workspace)" >&2; exit 2; }
[ -d "$data/lineitem" ] || { echo "$data has no lineitem table" >&2; exit 2; }
mkdir -p "$out"
# Staged throughout on both backends (embedded, a query is otherwise one task).
settings=(-c squall.scan.target_task_bytes=1 -c squall.shuffle.partitions=1000
    -c squall.shuffle.min_tasks=1 -c squall.query.single_task_bytes=0)

SQUALL_LAMBDA_IGNORE_CHANGES=1 bash "$root/infra/local/up.sh"
trap 'bash "$root/infra/local/down.sh"' EXIT
# shellcheck disable=SC1091
source "$root/infra/local/env.sh"

python3 - "$data" <<'EOF'
import os, sys, boto3
data = sys.argv[1]
s3 = boto3.client("s3")
n = 0
for dirpath, _, files in os.walk(data):
    for f in files:
        if not f.endswith(".parquet"):
            continue
        path = os.path.join(dirpath, f)
        key = "tpch/proxy-sf1/" + os.path.relpath(path, data)
        s3.upload_file(path, "squall-local", key)
        n += 1
print(f"proxy: {n} files uploaded to s3://squall-local/tpch/proxy-sf1", file=sys.stderr)
EOF

summary() {
    python3 - "$1" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1]))
p = p.get("profile", p)
r = p["requests"]
def total(k):
    return sum(r[w][k] for w in ("planning", "coordinator", "tasks", "state") if w in r)
sqs = sum(total(k) for k in ("sqs_create_queue", "sqs_delete_batch", "sqs_delete_queue", "sqs_receive", "sqs_send"))
print(f"wall {p['wall_ms']/1000:.1f} s, tasks {p['tasks']}, invocations {total('invoke')}, "
      f"beside silent {p['speculative']}, retries {p['retries']}, SQS {sqs} (sends {total('sqs_send')}), "
      f"GET/HEAD/PUT/DELETE/LIST {total('get')}/{total('head')}/{total('put')}/{total('delete')}/{total('list')}")
EOF
}

status=0
for q in "${queries[@]}"; do
    qq=$(printf '%02d' "$q")
    sql="$root/bench/tpch/queries/q$qq.sql"
    for backend in aws local; do
        catalog="s3://squall-local/tpch/proxy-sf1"
        [ "$backend" = local ] && catalog="$data"
        csv="$out/q$qq-$backend.csv"
        profile="$out/q$qq-$backend-profile.json"
        if "$bin" query --backend "$backend" --catalog "$catalog" "${settings[@]}" \
            --format csv --profile "$profile" "$(cat "$sql")" >"$csv"; then
            if "$bin" tpch check --query "$sql" "$root/bench/tpch/answers/sf1/q$qq.csv" "$csv" >/dev/null; then
                answer=right
            else
                answer=WRONG; status=1
            fi
            echo "q$qq $backend: $answer, $(summary "$profile")"
        else
            echo "q$qq $backend: FAILED"; status=1
        fi
    done
done
exit $status
