#!/usr/bin/env python3
"""One heavy statement must not take `squall serve` down: the real `trino`
Python client (PyPI `trino`) against `squall serve` over TPC-H SF 0.1.

Usage: python3 trino_heavy.py [PATH_TO_SQUALL_BINARY]
Run by `cargo test --workspace` through tests/api/heavy_query.rs.

It generates TPC-H SF 0.1 with `squall tpch gen`, starts `squall serve
--port 0` on loopback (exchange objects in a folder of its own), and runs
HEAVY, a nested-loop join over lineitem x lineitem (3.6e11 pairs, minutes
of CPU on every core). While it runs:

- GET /v1/info answers, and a second client's TPC-H Q6 answers right;
- cursor.cancel() (DELETE nextUri) returns, the query ends USER_CANCELED,
  and the server process's CPU time (utime + stime from /proc/PID/stat)
  stops growing; its exchange objects are deleted;
- the same with Trino's kill endpoint, DELETE /v1/query/{queryId};
- the same cancel for GENERATED, a heavy query that reads no table (run in
  the server's own process) and whose operators never wait for input (an
  unnest cross joined with another: 10^12 rows);
- SIGTERM while it runs ends the server (exit 0), and the client gets
  SERVER_SHUTTING_DOWN.

Bounds are generous (a few tens of seconds): they say "it happened", and
the figures measured are printed. Exit 0 when every check passes, 1 on a
failed check, 3 when the `trino` module is missing.
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# The shared helpers; importing it exits 3 when `trino` is missing.
from trino_client import QUERIES, check, compare, squall_binary, start_server  # noqa: E402

import trino  # noqa: E402
import trino.exceptions  # noqa: E402

HEAVY = "SELECT count(*) FROM lineitem a, lineitem b WHERE a.l_orderkey + b.l_orderkey < 0"
GENERATED = (
    "SELECT count(*), sum(x * y) FROM (SELECT unnest(range(1, 10000000)) AS x) t "
    "CROSS JOIN (SELECT unnest(range(1, 100000)) AS y) u"
)
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    """utime + stime of a process, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # Fields 14 and 15 of stat(5), counted after the command name (field 2).
    return (int(fields[11]) + int(fields[12])) / TICKS


def cpu_busy(pid, seconds=2.0):
    """CPU seconds the process used over the next `seconds`."""
    before = cpu_seconds(pid)
    time.sleep(seconds)
    return cpu_seconds(pid) - before


def until_idle(pid, since, within=30.0, window=1.0, idle_cpu=0.05):
    """Seconds from `since` until the process's CPU time stopped growing:
    the start of the first `window` in which it grew by at most `idle_cpu`
    seconds. None if that did not happen within `within` seconds."""
    samples = [(time.time(), cpu_seconds(pid))]
    while time.time() - since < within:
        time.sleep(0.1)
        samples.append((time.time(), cpu_seconds(pid)))
        now, cpu = samples[-1]
        for t, c in samples:
            if now - t >= window:
                if cpu - c <= idle_cpu:
                    return t - since
            else:
                break
        samples = [s for s in samples if now - s[0] < window + 0.5]
    return None


def files_under(path):
    return sum(len(files) for _, _, files in os.walk(path))


def eventually(cond, within=30.0):
    deadline = time.time() + within
    while time.time() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


class Heavy:
    """HEAVY (or `sql`) running on its own connection, in a thread."""

    def __init__(self, host, port, user, sql=HEAVY):
        self.sql = sql
        self.conn = trino.dbapi.connect(
            host=host, port=port, user=user, catalog="squall", schema="tpch", http_scheme="http"
        )
        self.cur = self.conn.cursor()
        self.outcome = {}
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        deadline = time.time() + 120
        while time.time() < deadline:
            q = getattr(self.cur, "_query", None)
            if q is not None and q.query_id is not None and q.stats.get("state") == "RUNNING":
                break
            check(self.thread.is_alive(), f"the heavy query ended early: {self.outcome}")
            time.sleep(0.05)
        else:
            raise AssertionError("the heavy query never started running")
        self.query_id = self.cur._query.query_id

    def _run(self):
        try:
            self.cur.execute(self.sql)
            self.outcome["rows"] = self.cur.fetchall()
        except Exception as e:  # a stopped query surfaces as an error
            self.outcome["error"] = e

    def ended_with(self, name, within=30.0, quietly=False):
        """The heavy query ended with error `name` (or, `quietly`, without
        rows: the client stops fetching once its own cancel is answered)."""
        self.thread.join(timeout=within)
        check(not self.thread.is_alive(), "the heavy query did not end")
        err = self.outcome.get("error")
        if quietly and err is None:
            check(self.outcome.get("rows") == [], f"the cancelled query returned {self.outcome}")
            return
        check(err is not None, f"the heavy query did not fail: {self.outcome}")
        check(
            isinstance(err, trino.exceptions.TrinoQueryError) and err.error_name == name,
            f"the heavy query raised {err!r}, not {name}",
        )


def get(url, timeout=30):
    started = time.time()
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        check(resp.status == 200, f"GET {url}: {resp.status}")
        resp.read()
    return time.time() - started


def summary(base, query_id):
    with urllib.request.urlopen(f"{base}/v1/query/{query_id}", timeout=30) as resp:
        return json.load(resp)


def main():
    binary = squall_binary()
    with tempfile.TemporaryDirectory(prefix="squall-heavy-") as tmp:
        catalog = os.path.join(tmp, "tpch")
        exchange = os.path.join(tmp, "exchange")
        os.makedirs(exchange)
        subprocess.run(
            [binary, "tpch", "gen", "--sf", "0.1", "--out", catalog],
            check=True,
            capture_output=True,
        )
        log_path = os.path.join(tmp, "serve.log")
        with open(log_path, "w") as log:
            proc, host, port = start_server(
                binary, catalog, log, "--config", f"squall.exchange_location={exchange}"
            )
            try:
                run_checks(binary, catalog, exchange, proc, host, port)
            except BaseException:
                proc.kill()
                proc.wait()
                with open(log_path) as f:
                    print(f"squall serve log:\n{f.read()[-20000:]}", file=sys.stderr)
                raise
    print("heavy query: all checks passed")


def run_checks(binary, catalog, exchange, proc, host, port):
    pid = proc.pid
    base = f"http://{host}:{port}"
    with open(os.path.join(QUERIES, "q06.sql")) as f:
        q6 = f.read()

    # 1. While the heavy query runs, the API and a second client answer.
    heavy = Heavy(host, port, "heavy")
    busy = cpu_busy(pid)
    check(busy >= 0.5, f"the heavy query is not using the CPU ({busy:.2f} s in 2 s)")
    print(f"heavy query running: {busy:.2f} s of CPU per 2 s")
    info_s = get(f"{base}/v1/info")
    other = trino.dbapi.connect(
        host=host, port=port, user="other", catalog="squall", schema="tpch", http_scheme="http"
    )
    started = time.time()
    cur = other.cursor()
    cur.execute(q6)
    rows = cur.fetchall()
    q6_s = time.time() - started
    check(heavy.thread.is_alive(), "the heavy query ended while the short one ran")
    compare("q6", cur, rows, binary, catalog, q6)
    print(f"while it runs: GET /v1/info {info_s * 1000:.0f} ms, TPC-H Q6 from another client {q6_s:.2f} s (right)")

    # 2. cursor.cancel() (DELETE nextUri) stops it: the process's CPU goes idle.
    cancelled = time.time()
    heavy.cur.cancel()
    cancel_s = time.time() - cancelled
    check(cancel_s < 20, f"the cancel took {cancel_s:.1f} s")
    heavy.ended_with("USER_CANCELED", quietly=True)
    check(summary(base, heavy.query_id)["state"] == "CANCELED", "the server did not cancel it")
    idle_s = until_idle(pid, cancelled)
    check(idle_s is not None, "the server's CPU time still grows 30 s after the cancel")
    check(eventually(lambda: files_under(exchange) == 0), "exchange objects left after the cancel")
    print(f"cancel (DELETE nextUri): answered in {cancel_s * 1000:.0f} ms; CPU idle {idle_s:.2f} s after it")

    # 2b. The same for a query the server runs in its own process, whose
    # operators never wait for input.
    heavy = Heavy(host, port, "heavy", GENERATED)
    check(cpu_busy(pid, 1.0) >= 0.25, "the generated heavy query is not using the CPU")
    cancelled = time.time()
    heavy.cur.cancel()
    heavy.ended_with("USER_CANCELED", quietly=True)
    check(summary(base, heavy.query_id)["state"] == "CANCELED", "the server did not cancel it")
    idle_s = until_idle(pid, cancelled)
    check(idle_s is not None, "the server's CPU time still grows 30 s after cancelling GENERATED")
    print(f"cancel of an unnest cross join run in the process: CPU idle {idle_s:.2f} s after it")

    # 3. The same through Trino's kill endpoint, DELETE /v1/query/{queryId}.
    heavy = Heavy(host, port, "heavy")
    check(cpu_busy(pid, 1.0) >= 0.25, "the second heavy query is not using the CPU")
    killed = time.time()
    req = urllib.request.Request(f"{base}/v1/query/{heavy.query_id}", method="DELETE")
    with urllib.request.urlopen(req, timeout=30) as resp:
        check(resp.status == 204, f"DELETE /v1/query/{heavy.query_id}: {resp.status}")
    kill_s = time.time() - killed
    heavy.ended_with("USER_CANCELED")
    check(summary(base, heavy.query_id)["state"] == "CANCELED", "the server did not kill it")
    idle_s = until_idle(pid, killed)
    check(idle_s is not None, "the server's CPU time still grows 30 s after the kill")
    check(eventually(lambda: files_under(exchange) == 0), "exchange objects left after the kill")
    print(f"kill (DELETE /v1/query/{{id}}): answered in {kill_s * 1000:.0f} ms; CPU idle {idle_s:.2f} s after it")
    check(get(f"{base}/v1/info") < 30, "the API after the kill")

    # 4. SIGTERM while it runs ends the server; the client learns why.
    heavy = Heavy(host, port, "heavy")
    check(cpu_busy(pid, 1.0) >= 0.25, "the third heavy query is not using the CPU")
    stopped = time.time()
    proc.send_signal(signal.SIGTERM)
    try:
        code = proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        raise AssertionError("squall serve did not stop within 30 s of SIGTERM")
    exit_s = time.time() - stopped
    check(code == 0, f"squall serve exited with {code}")
    heavy.ended_with("SERVER_SHUTTING_DOWN")
    check(files_under(exchange) == 0, "exchange objects left after SIGTERM")
    print(f"SIGTERM during the heavy query: exited 0 after {exit_s:.2f} s")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"FAILED: {e}", file=sys.stderr)
        sys.exit(1)
