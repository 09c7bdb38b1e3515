#!/usr/bin/env python3
"""A large result through the Trino protocol: the serving process's peak
memory beside the result's size.

Usage: python3 bench/result_memory.py --catalog DIR [--sql SQL] [--binary PATH]
       [--backend local|aws] [-c KEY=VALUE]...

Starts `squall serve --port 0` on loopback over the catalog, runs SQL
(default: `select * from lineitem`) through the real `trino` Python client
(PyPI `trino`), fetching every row in batches and keeping none, and prints:

- rows received, and the JSON bytes the client received for them (every
  response body of the protocol, counted by a hook on the client's session);
- the server's peak resident memory (VmHWM of /proc/PID/status, read just
  before the server stops) and its resident memory while idle before the
  query;
- the wall time.

One final line sums it up: `rows R, JSON X MB, server peak Y MB (idle Z MB), T s`.
Exit 0 on success, 1 when the client saw an error, 3 when `trino` is missing.
"""

import argparse
import os
import signal
import subprocess
import sys
import time

try:
    import requests
    import trino
except ImportError:
    print("the trino module is missing: pip install trino", file=sys.stderr)
    sys.exit(3)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def status_kb(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--catalog", required=True)
    ap.add_argument("--sql", default="select * from lineitem")
    ap.add_argument("--binary", default=os.environ.get("SQUALL_BIN", os.path.join(ROOT, "target/release/squall")))
    ap.add_argument("--backend", default="local")
    ap.add_argument("-c", "--config", action="append", default=[])
    ap.add_argument("--fetch", type=int, default=10_000, help="rows per fetchmany")
    args = ap.parse_args()

    extra = []
    for c in args.config:
        extra += ["-c", c]
    env = dict(os.environ)
    env.pop("SQUALL_API_TOKEN", None)
    proc = subprocess.Popen(
        [args.binary, "serve", "--port", "0", "--backend", args.backend, "--catalog", args.catalog, *extra],
        stdout=subprocess.PIPE,
        stderr=sys.stderr,
        text=True,
        env=env,
    )
    line = proc.stdout.readline().strip()
    if not line.startswith("listening on http://"):
        print(f"unexpected first line from squall serve: {line!r}", file=sys.stderr)
        proc.kill()
        return 1
    host, port = line[len("listening on http://"):].rsplit(":", 1)
    idle_kb = status_kb(proc.pid, "VmRSS")

    received = [0]
    session = requests.Session()
    session.hooks["response"].append(lambda r, *a, **k: received.__setitem__(0, received[0] + len(r.content)))
    conn = trino.dbapi.connect(host=host, port=int(port), user="bench", http_scheme="http", http_session=session)
    rows = 0
    start = time.monotonic()
    failed = None
    try:
        cur = conn.cursor()
        cur.execute(args.sql)
        while True:
            batch = cur.fetchmany(args.fetch)
            if not batch:
                break
            rows += len(batch)
    except Exception as e:  # the client's error is the finding
        failed = e
    elapsed = time.monotonic() - start
    peak_kb = status_kb(proc.pid, "VmHWM")
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
    if failed is not None:
        print(f"the query failed: {failed}", file=sys.stderr)
        return 1
    print(
        f"rows {rows}, JSON {received[0] / 1e6:.0f} MB, server peak {peak_kb / 1024:.0f} MB "
        f"(idle {idle_kb / 1024:.0f} MB), {elapsed:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
