#!/usr/bin/env python3
"""dbt (PyPI `dbt-core` and `dbt-trino`, the adapter Trino users run)
against `squall serve`.

Usage: python3 dbt_project.py [PATH_TO_SQUALL_BINARY]
Run by `cargo test --workspace` through tests/api/dbt_project.rs.

It generates TPC-H SF 0.01, starts `squall serve` on loopback, and runs the
project in tests/dbt/ with a profile pointing at it: `dbt seed`, `dbt run`
(a schema created, a view, two tables, an incremental model), `dbt run`
again (the tables rebuilt and swapped in by ALTER TABLE ... RENAME, the
incremental model's last month deleted and inserted again), and
`dbt test` (unique, not_null, relationships, accepted_values), and
`dbt docs generate` (every model described with its columns). Then it
reads the models through the `trino` client and checks every value
against DuckDB on the same Parquet files (the models use dbt's
cross-database macros, which dbt-trino writes with Trino's functions:
date_add, date_diff via to_milliseconds, md5/to_hex/to_utf8, substr from
the end, try_cast, array_join/slice, bool_or, min as any_value).

Exit 0 when every check passes, 1 on a failed check, 3 when dbt-trino,
the `trino` client or DuckDB is missing (install them with `python3 -m pip
install "dbt-core>=1.9,<1.10" "dbt-trino>=1.9,<1.10" trino duckdb`).
"""

import datetime
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from decimal import Decimal

try:
    import duckdb
    import trino
except ImportError:
    print("the `trino` client or DuckDB is missing: run `python3 -m pip install trino duckdb`", file=sys.stderr)
    sys.exit(3)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from trino_client import check, squall_binary, start_server  # noqa: E402

PROJECT = os.path.join(HERE, "dbt")


def dbt_command():
    found = shutil.which("dbt")
    if found is None:
        print(
            "dbt is missing: run `python3 -m pip install \"dbt-core>=1.9,<1.10\" \"dbt-trino>=1.9,<1.10\"`",
            file=sys.stderr,
        )
        sys.exit(3)
    return found


def dbt(binary_dbt, work, *args):
    """Runs one dbt command on the project, its files under `work`."""
    out = subprocess.run(
        [
            binary_dbt,
            *args,
            "--project-dir",
            PROJECT,
            "--profiles-dir",
            work,
            "--target-path",
            os.path.join(work, "target"),
            "--log-path",
            os.path.join(work, "logs"),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"},
        cwd=work,
    )
    text = out.stdout + out.stderr
    check(out.returncode == 0, f"dbt {' '.join(args)} failed ({out.returncode}):\n{text[-6000:]}")
    print(f"dbt {' '.join(args)}: ok")
    return text


def rows(cursor, sql):
    cursor.execute(sql)
    return cursor.fetchall()


def same(actual, expected, what):
    def norm(v):
        if isinstance(v, (float, Decimal)):
            return round(float(v), 6)
        if isinstance(v, datetime.datetime) and v.time() == datetime.time(0):
            return v.date()
        return v

    a = [tuple(norm(v) for v in r) for r in actual]
    e = [tuple(norm(v) for v in r) for r in expected]
    check(a == e, f"{what}:\n squall {a[:5]}\n duckdb {e[:5]} ({len(a)} vs {len(e)} rows)")


def check_models(host, port, catalog):
    cursor = trino.dbapi.connect(host=host, port=port, user="dbt", catalog="squall", schema="analytics").cursor()
    duck = duckdb.connect()
    for table in ("nation", "orders", "customer"):
        duck.execute(f"create view {table} as select * from read_parquet('{catalog}/{table}/*.parquet')")
    duck.execute(
        "create table region_labels as select * from (values (0, 'Africa', 1.5), (1, 'Americas', 2.0), "
        "(2, 'Asia', null), (3, 'Europe', 3.25), (4, 'Middle East, the', 0.5)) t(regionkey, label, weight)"
    )

    got = rows(cursor, "select nationkey, name, regionkey, label, weight, name_hash, name_end, label_word, twelve "
                       "from analytics.nation_labels order by nationkey")
    want = [
        (k, n, r, l, w, hashlib.md5(n.encode()).hexdigest(), n[-3:], l.split(" ")[0], 12)
        for (k, n, r, l, w) in duck.execute(
            "select n_nationkey, n_name, n_regionkey, label, weight from nation "
            "join region_labels on n_regionkey = regionkey order by n_nationkey"
        ).fetchall()
    ]
    same(got, want, "nation_labels")

    got = rows(cursor, "select month, orders, total, days_spanned, month_after_first from analytics.orders_by_month order by 1")
    want = duck.execute(
        "select date_trunc('month', o_orderdate), count(*), sum(o_totalprice), "
        "max(o_orderdate) - min(o_orderdate), min(o_orderdate) + interval 1 month "
        "from orders group by 1 order by 1"
    ).fetchall()
    same(got, want, "orders_by_month (after the incremental run)")

    got = rows(cursor, "select segment, customers, in_debt, has_rich, some_nation, first_nations from analytics.segments order by 1")
    want = duck.execute(
        "select c_mktsegment, count(*), count(*) filter (where c_acctbal < 0), bool_or(c_acctbal > 9990), "
        "min(c_nationkey), array_to_string(list(cast(c_nationkey as varchar) order by cast(c_nationkey as varchar))[1:3], ',') "
        "from customer where c_custkey <= 200 group by 1 order by 1"
    ).fetchall()
    same(got, want, "segments")

    tables = rows(cursor, "select table_name, table_type from information_schema.tables "
                          "where table_schema = 'analytics' order by 1")
    check(
        tables == [["nation_labels", "BASE TABLE"], ["orders_by_month", "BASE TABLE"],
                   ["region_labels", "BASE TABLE"], ["segments", "BASE TABLE"], ["stg_nation", "VIEW"]],
        f"the analytics schema holds the models and nothing left over (no __dbt_tmp, no backup): {tables}",
    )


def check_docs_catalog(work):
    """`dbt docs generate` describes every model with its columns, read
    from information_schema and system.metadata.table_comments."""
    import json

    with open(os.path.join(work, "target", "catalog.json")) as f:
        nodes = json.load(f)["nodes"]
    models = {k.split(".")[-1]: v for k, v in nodes.items() if k.startswith("model.")}
    check(len(models) >= 4, f"catalog.json describes models {sorted(models)}")
    for name, node in models.items():
        check(node["metadata"]["schema"] == "analytics", f"{name}: {node['metadata']}")
        check(len(node["columns"]) >= 2, f"{name} has columns {node['columns']}")
    print(f"dbt docs generate: {len(models)} models described")


def main():
    binary = squall_binary()
    dbt_bin = dbt_command()
    with tempfile.TemporaryDirectory(prefix="squall-dbt-") as tmp:
        catalog = os.path.join(tmp, "tpch")
        subprocess.run([binary, "tpch", "gen", "--sf", "0.01", "--out", catalog], check=True, capture_output=True)
        with open(os.path.join(tmp, "serve.log"), "w") as log:
            proc, host, port = start_server(binary, catalog, log)
            try:
                with open(os.path.join(tmp, "profiles.yml"), "w") as f:
                    f.write(
                        "squall:\n  target: dev\n  outputs:\n    dev:\n      type: trino\n      method: none\n"
                        f"      user: dbt\n      host: {host}\n      port: {port}\n      http_scheme: http\n"
                        "      database: squall\n      schema: analytics\n      threads: 2\n"
                    )
                dbt(dbt_bin, tmp, "seed")
                dbt(dbt_bin, tmp, "run")
                second = dbt(dbt_bin, tmp, "run")
                check("INSERT" in second, f"the second run appends to the incremental model:\n{second[-3000:]}")
                dbt(dbt_bin, tmp, "test")
                dbt(dbt_bin, tmp, "docs", "generate")
                check_docs_catalog(tmp)
                check_models(host, port, catalog)
            finally:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=30)
    print("dbt project: all checks passed")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"FAILED: {e}", file=sys.stderr)
        sys.exit(1)
