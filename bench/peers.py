#!/usr/bin/env python3
"""Time the 22 TPC-H queries on single-node peers over the same Parquet files.

usage: bench/peers.py DATA_DIR [--engine datafusion|duckdb] [--runs N] [--queries 1,2]

One warm-up run, then N timed runs per query (median reported), in one
process per engine. Prints `query,median_ms` CSV lines. Answers are not
checked here (the full runner in bench/ checks every engine's answers).
"""
import argparse, os, statistics, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
QUERIES = os.path.join(HERE, "..", "planner", "src", "tpch", "queries")
TABLES = ["nation", "region", "part", "supplier", "partsupp", "customer", "orders", "lineitem"]


def datafusion_runner(data):
    import datafusion
    ctx = datafusion.SessionContext()
    for t in TABLES:
        ctx.register_parquet(t, os.path.join(data, t) + "/")
    return lambda sql: ctx.sql(sql).collect()


def duckdb_runner(data):
    import duckdb
    con = duckdb.connect()
    for t in TABLES:
        con.execute(f"create view {t} as select * from read_parquet('{os.path.join(data, t)}/*.parquet')")
    return lambda sql: con.execute(sql).fetchall()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("--engine", default="datafusion", choices=["datafusion", "duckdb"])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--queries", default="")
    a = ap.parse_args()
    run = {"datafusion": datafusion_runner, "duckdb": duckdb_runner}[a.engine](a.data)
    qs = [int(q) for q in a.queries.split(",") if q] or list(range(1, 23))
    for q in qs:
        sql = open(os.path.join(QUERIES, f"q{q:02d}.sql")).read()
        run(sql)
        times = []
        for _ in range(a.runs):
            t = time.perf_counter()
            run(sql)
            times.append((time.perf_counter() - t) * 1000)
        print(f"q{q:02d},{statistics.median(times):.1f}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
