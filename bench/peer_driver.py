#!/usr/bin/env python3
"""A peer engine (single-node DataFusion or DuckDB, Python) behind the same
line protocol as `squall tpch driver`, so the runner drives every engine alike.

usage: peer_driver.py --engine datafusion|duckdb --data DIR

First line out: {"ready": true, "pid": ..., "engine": ..., "version": ...}
Commands in, one per line, one JSON line out for each:
  run N [ACTUAL.csv]  -> {"query": N, "wall_ms": ..., "rows": ...}; the result
                         is written as CSV (header, NULL as empty) to ACTUAL.csv
  quit                -> exit
`wall_ms` covers planning, running and collecting the result as Arrow, not
the CSV conversion. Errors are replies ({"query": N, "error": ...}).
The answer is checked by the runner, with the same code for every engine.
"""
import argparse
import csv
import datetime
import decimal
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
QUERIES = os.path.join(HERE, "tpch", "queries")
TABLES = ["nation", "region", "part", "supplier", "partsupp", "customer", "orders", "lineitem"]


def datafusion_engine(data):
    import datafusion
    ctx = datafusion.SessionContext()
    for t in TABLES:
        ctx.register_parquet(t, os.path.join(data, t) + "/")

    def run(sql):
        import pyarrow as pa
        df = ctx.sql(sql)
        return pa.Table.from_batches(df.collect(), schema=df.schema())
    return run, "datafusion " + datafusion.__version__


def duckdb_engine(data):
    import duckdb
    con = duckdb.connect()
    for t in TABLES:
        con.execute(f"create view {t} as select * from read_parquet('{os.path.join(data, t)}/*.parquet')")

    def run(sql):
        return con.sql(sql).to_arrow_table()
    return run, "duckdb " + duckdb.__version__


def cell(v):
    """One value as the expected-answer CSVs write it."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, (datetime.date, datetime.datetime)):
        return v.isoformat()
    return str(v)


def to_rows(result):
    """(header, rows) of an Arrow table."""
    header = list(result.column_names)
    cols = [result.column(i).to_pylist() for i in range(result.num_columns)]
    rows = [[cell(c[i]) for c in cols] for i in range(result.num_rows)]
    return header, rows


def write_csv(path, header, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", required=True, choices=["datafusion", "duckdb"])
    ap.add_argument("--data", required=True)
    a = ap.parse_args()
    run, version = {"datafusion": datafusion_engine, "duckdb": duckdb_engine}[a.engine](a.data)
    out = sys.stdout

    def reply(obj):
        out.write(json.dumps(obj) + "\n")
        out.flush()

    reply({"ready": True, "pid": os.getpid(), "engine": a.engine, "version": version})
    for line in sys.stdin:
        words = line.split()
        if not words:
            reply({"error": "empty command"})
            continue
        if words[0] in ("quit", "exit"):
            break
        if words[0] != "run" or len(words) not in (2, 3):
            reply({"error": f"unknown command {line.strip()!r}"})
            continue
        try:
            q = int(words[1].lstrip("qQ"))
            sql = open(os.path.join(QUERIES, f"q{q:02d}.sql")).read()
        except (ValueError, OSError) as e:
            reply({"error": f"no query {words[1]!r}: {e}"})
            continue
        try:
            started = time.perf_counter()
            result = run(sql)
            wall_ms = (time.perf_counter() - started) * 1000.0
        except Exception as e:  # the engine's own error is the reply
            reply({"query": q, "error": f"{type(e).__name__}: {e}"})
            continue
        header, rows = to_rows(result)
        if len(words) == 3:
            write_csv(words[2], header, rows)
        reply({"query": q, "wall_ms": wall_ms, "rows": len(rows)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
