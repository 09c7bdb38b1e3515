#!/usr/bin/env python3
"""Figures of the emulated AWS path, printed as a Markdown table.

Run it on a stack just started by infra/local/up.sh, with the functions
already compiled (`cargo build --workspace` or a previous run) and the
client environment loaded:

    infra/local/up.sh && source infra/local/env.sh
    python3 infra/local/measure.py --squall target/debug/squall

1. Start-up under `cargo lambda watch`: the first invocation of each function
   starts its process (`cargo run` finding the binary up to date, exec, the
   function's own initialisation) and handles one event; the second one
   reaches the warm instance. Start-up = first - second (median of --repeat
   fresh instances is not possible without restarting the emulator, so run
   the script on a fresh stack; it refuses a warm one).
2. Per-task overhead: the same queries with `squall query` on the embedded
   backend (local files) and on the aws backend (every task an emulated
   Lambda invocation, S3 and SQS on moto), from EXPLAIN ANALYZE's wall time
   and task count: (aws - embedded) / tasks.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time
import urllib.request
import uuid

import boto3


def invoke(client, function, payload):
    started = time.monotonic()
    response = client.invoke(FunctionName=function, Payload=json.dumps(payload).encode())
    body = response["Payload"].read()
    return time.monotonic() - started, body


def http_get(url):
    started = time.monotonic()
    with urllib.request.urlopen(url, timeout=600) as r:
        r.read()
    return time.monotonic() - started


def start_up(args):
    lam = boto3.client("lambda", endpoint_url=os.environ["AWS_ENDPOINT_URL_LAMBDA"])
    rows = []
    # worker: an event that is not a task (no reply address): decoded, refused, answered.
    first, body = invoke(lam, "worker", {"probe": True})
    if b"failed" not in body:
        sys.exit(f"measure: unexpected worker answer {body!r}")
    second, _ = invoke(lam, "worker", {"probe": True})
    rows.append(("worker", first, second))
    # coordinator: a query id with no record and a statement over no table.
    request = {"query_id": uuid.uuid4().hex, "sql": "select 1", "slug": "probe"}
    first, body = invoke(lam, "coordinator", request)
    if b"FINISHED" not in body:
        sys.exit(f"measure: unexpected coordinator answer {body!r}")
    request["query_id"] = uuid.uuid4().hex
    second, _ = invoke(lam, "coordinator", request)
    rows.append(("coordinator", first, second))
    # api: GET /v1/info through the function URL.
    info = os.environ["SQUALL_API_URL"].rstrip("/") + "/v1/info"
    first = http_get(info)
    second = http_get(info)
    rows.append(("api", first, second))
    print("| function | first invocation (s) | warm invocation (s) | start-up (s) |")
    print("|---|---|---|---|")
    for name, first, second in rows:
        if first < 0.2:
            sys.exit(f"measure: {name} answered its first invocation in {first:.3f}s: the stack is not fresh")
        print(f"| {name} | {first:.2f} | {second:.3f} | {first - second:.2f} |")


PROFILE = re.compile(r"query \S+: (\d+) ms, \d+ rows, (\d+) stages, (\d+) tasks")


def profiled(args, backend, sql):
    cmd = [args.squall, "query", "--backend", backend]
    if backend == "local":
        cmd += ["--catalog", args.data]
    for s in args.config:
        cmd += ["--config", s]
    cmd.append("explain analyze " + sql)
    env = dict(os.environ)
    if backend == "local":
        # env.sh points these at S3; the embedded backend uses a temporary folder.
        env.pop("SQUALL_EXCHANGE_LOCATION", None)
        env.pop("SQUALL_STATE_LOCATION", None)
    started = time.monotonic()
    out = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    elapsed = time.monotonic() - started
    m = PROFILE.search(out.stdout)
    if out.returncode != 0 or not m:
        sys.exit(f"measure: {' '.join(cmd[:4])} failed: {out.stderr or out.stdout}")
    wall, stages, tasks = (int(g) for g in m.groups())
    return wall, stages, tasks, elapsed


def per_task(args):
    queries = {
        "q1": "select l_returnflag, l_linestatus, sum(l_quantity), count(*) from lineitem "
              "where l_shipdate <= date '1998-09-02' group by 1, 2 order by 1, 2",
        "q6": "select sum(l_extendedprice * l_discount) from lineitem where l_shipdate >= date '1994-01-01' "
              "and l_shipdate < date '1995-01-01' and l_discount between 0.05 and 0.07 and l_quantity < 24",
        "q3": open(os.path.join(args.root, "bench/tpch/queries/q03.sql")).read(),
    }
    print()
    print("| query | tasks | stages | embedded wall (ms) | emulated wall (ms) | overhead per task (ms) |")
    print("|---|---|---|---|---|---|")
    for name, sql in queries.items():
        local = profiled(args, "local", sql)
        aws = profiled(args, "aws", sql)
        if local[2] != aws[2]:
            print(f"measure: {name}: {local[2]} tasks embedded, {aws[2]} emulated", file=sys.stderr)
        print(f"| {name} | {aws[2]} | {aws[1]} | {local[0]} | {aws[0]} | {(aws[0] - local[0]) / max(aws[2], 1):.0f} |")


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--squall", default="squall", help="the squall binary")
    parser.add_argument("--root", default=os.path.normpath(os.path.join(here, "../..")))
    parser.add_argument("--data", default=os.path.normpath(os.path.join(here, "../../data/tpch/sf0.1")))
    parser.add_argument("--config", action="append", default=[], help="KEY=VALUE for both backends")
    parser.add_argument("--skip-start-up", action="store_true")
    args = parser.parse_args()
    if not args.skip_start_up:
        start_up(args)
    per_task(args)
