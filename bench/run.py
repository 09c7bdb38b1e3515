#!/usr/bin/env python3
"""TPC-H side by side: squall (embedded) against single-node DataFusion and
DuckDB over the same Parquet files, answers checked, time, memory, requests
and modelled AWS cost. `bench/run.sh` builds and installs what this needs
and calls it; see the README's performance section.

usage: run.py --sf 1 --squall PATH [--data DIR] [--runs 5] [--queries 1,3]
              [--engines squall,datafusion,duckdb] [--config squall.k=v]...

Protocol
  * one long-lived process per engine (squall: `squall tpch driver`; peers:
    peer_driver.py), so each engine keeps its caches as a user's would;
  * per query: the expected answer (carried at SF 0.1 / 1, single-node
    DataFusion otherwise, from a separate squall driver process), then one warm-up run on each
    engine, then N timed rounds; each round runs every engine once, the
    order rotating per round and per query, so machine drift hits all alike;
  * every run's answer (warm-up included) is checked cell by cell against the
    expected answer by `squall tpch check`, the one answer checker, the same
    code for every engine (squall's driver also checks its own answers). A wrong
    answer or an error makes the query a failure for that engine, never a time;
  * time: the engine's own clock around planning + execution + collecting the
    result (no process round trip, no CSV conversion); the median of N;
  * memory: the process's peak resident memory during the query (VmHWM after
    resetting it, see engines.py); the largest over the timed runs.

Writes bench/results/<stamp>-sf<SF>.csv (one row per engine and query),
<stamp>-sf<SF>.json (machine, versions, settings), <stamp>-sf<SF>-profile.json
(squall's profile and cost per query, for the scale model), then the summary
(report.py: Markdown table and SVG chart).
"""
import argparse
import csv
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import engines as eng  # noqa: E402
import report  # noqa: E402
import stats  # noqa: E402

QUERIES = os.path.join(HERE, "tpch", "queries")

FIELDS = [
    "engine", "query", "check", "median_ms", "min_ms", "max_ms", "runs_ms", "rows",
    "peak_rss_mb", "base_rss_mb",
    # squall only: the profile of the last timed run
    "stages", "tasks", "tasks_launched", "messages", "s3_get", "s3_put", "exchange_bytes",
    "row_groups_scanned", "row_groups_pruned", "scan_bytes",
    # squall only: the modelled AWS cost (planner/src/cost.rs)
    "cost_usd", "lambda_gb_seconds", "lambda_requests", "s3_get_billed", "s3_put_billed",
    "s3_list_billed", "sqs_requests",
]


def query_path(q):
    return os.path.join(QUERIES, f"q{q:02d}.sql")


def check_answer(squall, expected_path, actual_path, query_file):
    """'ok', 'MISMATCH: ...' or 'ERROR: ...' from `squall tpch check`."""
    cmd = [squall, "tpch", "check", expected_path, actual_path]
    if query_file:
        cmd += ["--query", query_file]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"ERROR: comparing answers: {e}"
    line = (out.stdout.strip().splitlines() or [""])[-1]
    if out.returncode == 0 and line == "ok":
        return "ok"
    if out.returncode == 1 and line.startswith("MISMATCH"):
        return line
    err = out.stderr.strip().splitlines()
    return f"ERROR: comparing answers: {err[-1] if err else line or out.returncode}"


def check_run(squall, reply, expected_path, actual_path, query_file):
    """'ok' or a failure message, for one run's reply and written answer."""
    if "error" in reply:
        return f"ERROR: {reply['error']}"
    own = reply.get("check")
    if own is not None and own != "ok":
        return own if own.startswith(("ERROR", "MISMATCH")) else f"MISMATCH: {own}"
    if not os.path.exists(actual_path):
        return f"ERROR: no answer written to {actual_path}"
    return check_answer(squall, expected_path, actual_path, query_file)


def rotate(items, k):
    k %= len(items)
    return items[k:] + items[:k]


def machine_info():
    info = {"platform": platform.platform(), "python": platform.python_version(),
            "cores": os.cpu_count()}
    try:
        with open("/proc/meminfo") as f:
            kb = int(f.readline().split()[1])
        info["memory_gib"] = round(kb / 1024 / 1024, 1)
    except (OSError, ValueError, IndexError):
        pass
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return info


def git_commit():
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True)
        return out.stdout.strip() if out.returncode == 0 else ""
    except OSError:
        return ""


def squall_columns(reply):
    p = reply.get("profile") or {}
    c = reply.get("cost") or {}
    i = c.get("inputs") or {}
    return {
        "stages": p.get("stages"), "tasks": p.get("tasks"), "tasks_launched": p.get("tasks_launched"),
        "messages": p.get("messages"), "s3_get": p.get("s3_get"), "s3_put": p.get("s3_put"),
        "exchange_bytes": p.get("exchange_bytes"), "row_groups_scanned": p.get("row_groups_scanned"),
        "row_groups_pruned": p.get("row_groups_pruned"), "scan_bytes": p.get("scan_bytes"),
        "cost_usd": c.get("total_usd"), "lambda_gb_seconds": c.get("lambda_gb_seconds"),
        "lambda_requests": c.get("lambda_requests"), "s3_get_billed": i.get("s3_get"),
        "s3_put_billed": i.get("s3_put"), "s3_list_billed": i.get("s3_list"),
        "sqs_requests": i.get("sqs_requests"),
    }


def write_results(base, rows, meta, profiles, load_start):
    """The run's files; written after every query, so a stopped run keeps what it measured."""
    with open(base + ".csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in FIELDS})
    meta["load_average_start_end"] = [load_start, list(os.getloadavg())]
    with open(base + ".json", "w") as f:
        json.dump(meta, f, indent=2)
    with open(base + "-profile.json", "w") as f:
        json.dump({"scale_factor": meta["scale_factor"], "stamp": meta["stamp"], "queries": profiles,
                   "ready": meta["engines"].get("squall", {})}, f, indent=1)


def run_bench(args):
    names = [e.strip() for e in args.engines.split(",") if e.strip()]
    if "squall" not in names:
        raise SystemExit("the squall engine is required (it supplies the expected answers)")
    queries = [int(q) for q in args.queries.split(",") if q.strip()] or list(range(1, 23))
    data = os.path.abspath(args.data or os.path.join(HERE, "..", "data", "tpch", f"sf{args.sf:g}"))
    out_dir = os.path.abspath(args.out)
    os.makedirs(out_dir, exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    base = os.path.join(out_dir, f"{stamp}-sf{args.sf:g}")
    work = tempfile.mkdtemp(prefix=f"{stamp}-", suffix=".tmp", dir=out_dir)

    # Other work on the machine skews every engine's times: recorded, not hidden.
    load_start = list(os.getloadavg())
    procs = {}
    oracle = None
    try:
        # The oracle first: a squall driver that only supplies expected
        # answers (and generates the data if it is missing), in its own
        # process, so that computing a reference answer (single-node
        # DataFusion, at scale factors without carried answers) never counts
        # in the measured squall process's memory or caches.
        oracle = eng.squall(args.squall, args.sf, data, [], os.path.join(work, "oracle.stderr"), name="oracle")
        procs["squall"] = eng.squall(args.squall, args.sf, data, args.config,
                                     os.path.join(work, "squall.stderr"))
        for n in names:
            if n != "squall":
                procs[n] = eng.peer(n, data, os.path.join(work, f"{n}.stderr"))
        meta = {
            "stamp": stamp, "scale_factor": args.sf, "data": data, "runs": args.runs,
            "engines": {n: {k: v for k, v in p.ready.items() if k not in ("ready", "pid")}
                        for n, p in procs.items()},
            "squall_settings": args.config, "machine": machine_info(), "squall_commit": git_commit(),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        }
        rows, profiles = [], []
        dead = {}
        order = [n for n in names]
        print(f"{'query':>5} " + " ".join(f"{n:>20}" for n in order), flush=True)
        for qi, q in enumerate(queries):
            qfile = query_path(q)
            expected = os.path.join(work, f"expected-q{q:02d}.csv")
            reply = oracle.ask(f"expected {q} {expected}")
            if "error" in reply:
                raise SystemExit(f"no expected answer for q{q:02d}: {reply['error']}")
            times = {n: [] for n in order}
            peaks = {n: [] for n in order}
            checks = {n: "ok" for n in order}
            last = {n: {} for n in order}
            base_rss = {}
            for rnd in range(args.runs + 1):  # round 0 is the warm-up
                for n in rotate(order, qi + rnd):
                    if n in dead:
                        checks[n] = f"ERROR: {dead[n]}"
                        continue
                    p = procs[n]
                    actual = os.path.join(work, f"{n}-q{q:02d}.csv")
                    if os.path.exists(actual):
                        os.remove(actual)
                    try:
                        if rnd == 1:
                            base_rss[n] = p.memory_mb()[0]
                        p.reset_peak()
                        r = p.ask(f"run {q} {actual} {expected}" if n == "squall" else f"run {q} {actual}")
                        peak = p.memory_mb()[1]
                    except (eng.EngineDied, OSError) as e:
                        dead[n] = str(e)
                        checks[n] = f"ERROR: {e}"
                        continue
                    c = check_run(args.squall, r, expected, actual, qfile)
                    if c != "ok" and checks[n] == "ok":
                        checks[n] = c
                    if rnd > 0 and "wall_ms" in r:
                        times[n].append(r["wall_ms"])
                        peaks[n].append(peak)
                    last[n] = r
            cells = []
            for n in order:
                r = last[n]
                row = {"engine": n, "query": q, "check": checks[n], "rows": r.get("rows")}
                if times[n]:
                    row.update(median_ms=round(stats.median(times[n]), 3), min_ms=round(min(times[n]), 3),
                               max_ms=round(max(times[n]), 3),
                               runs_ms=";".join(f"{t:.3f}" for t in times[n]))
                if peaks[n]:
                    row["peak_rss_mb"] = round(max(peaks[n]), 1)
                if n in base_rss:
                    row["base_rss_mb"] = round(base_rss[n], 1)
                if n == "squall":
                    row.update(squall_columns(r))
                    profiles.append({"query": q, "wall_ms": r.get("wall_ms"), "median_ms": row.get("median_ms"),
                                     "profile": r.get("profile"), "cost": r.get("cost")})
                rows.append(row)
                cells.append(f"{row.get('median_ms', 0):>9.1f}ms {row.get('peak_rss_mb', 0):>5.0f}MB "
                             f"{'ok' if checks[n] == 'ok' else 'FAIL':>2}")
            print(f"  q{q:02d} " + " ".join(f"{c:>20}" for c in cells), flush=True)
            for n in order:
                if checks[n] != "ok":
                    print(f"      {n} q{q:02d}: {checks[n][:300]}", flush=True)
            write_results(base, rows, meta, profiles, load_start)
    finally:
        for p in list(procs.values()) + ([oracle] if oracle else []):
            p.close()

    write_results(base, rows, meta, profiles, load_start)
    if args.keep_work:
        print(f"answers and engine logs kept in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    print(f"results: {base}.csv")
    md, svg = report.render(base + ".csv")
    print(open(md).read())
    print(f"summary: {md}\nchart:   {svg}")
    failures = sum(1 for r in rows if r["check"] != "ok")
    return 1 if failures else 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sf", type=float, default=1.0)
    ap.add_argument("--squall", required=True, help="the squall binary")
    ap.add_argument("--data", help="data folder (default data/tpch/sf{SF}; generated if missing)")
    ap.add_argument("--runs", type=int, default=5, help="timed runs per query and engine")
    ap.add_argument("--queries", default="", help="comma-separated query numbers (default all 22)")
    ap.add_argument("--engines", default="squall,datafusion,duckdb")
    ap.add_argument("--config", action="append", default=[], help="squall setting KEY=VALUE (repeatable)")
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--keep-work", action="store_true", help="keep answers and engine logs")
    return run_bench(ap.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
