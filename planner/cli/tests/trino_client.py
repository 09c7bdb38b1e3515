#!/usr/bin/env python3
"""The real `trino` Python client (PyPI `trino`) against `squall serve`.

Usage: python3 trino_client.py [PATH_TO_SQUALL_BINARY]
(default: target/debug/squall of the workspace). Run by
`cargo test --workspace` through tests/api/trino_client.rs.

It generates TPC-H SF 0.01 with `squall tpch gen` into a temporary folder,
starts `squall serve --port 0` on loopback, and then, through
trino.dbapi.connect(...):

- runs TPC-H Q1, Q3 and Q6 and compares every value with
  `squall query --format csv` on the same catalog;
- checks cursor.description (names and Trino types) and the Python types
  the client builds (Decimal, float NaN, date, datetime, bool, None, list);
- checks that bad SQL raises TrinoUserError with the server's message;
- runs parameterized queries as EXECUTE IMMEDIATE and as Trino's prepared
  statements (PREPARE / EXECUTE / DEALLOCATE, DESCRIBE INPUT / OUTPUT,
  cursor.describe);
- creates a table and fills it with cursor.executemany (the update types
  Trino clients require), and checks cursor.rowcount of INSERT, DELETE and
  UPDATE (Trino's updateCount);
- reflects the catalog through the SQLAlchemy dialect the `trino` package
  ships (what pandas and Superset use): schemas, tables, column types,
  a table loaded with autoload and queried;
- checks SET SESSION lands in the client's session properties;
- checks a session timeout fails a long query with EXCEEDED_TIME_LIMIT;
- cancels a long query with cursor.cancel() from another thread and checks
  that it ends and the server reports it CANCELED;
- stops the server with SIGTERM and checks it exits cleanly.

Exit 0 when every check passes, 1 on a failed check, 3 when the `trino`
or `sqlalchemy` module is missing (install them with `python3 -m pip
install trino sqlalchemy`).
"""

import csv
import datetime
import io
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from decimal import Decimal

try:
    import sqlalchemy
    import trino
    import trino.exceptions
except ImportError:
    print(
        "the `trino` Python client or SQLAlchemy is missing: "
        "run `python3 -m pip install trino sqlalchemy`",
        file=sys.stderr,
    )
    sys.exit(3)

HERE = os.path.dirname(os.path.abspath(__file__))
QUERIES = os.path.join(HERE, "..", "..", "..", "bench", "tpch", "queries")
LONG = "select count(*) from lineitem a, lineitem b where a.l_orderkey + b.l_partkey < 0"


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def squall_csv(binary, catalog, sql):
    # "--": TPC-H texts start with a comment, which would read as an option.
    out = subprocess.run(
        [binary, "query", "--catalog", catalog, "--format", "csv", "--", sql],
        capture_output=True,
        text=True,
    )
    check(out.returncode == 0, f"squall query failed ({out.returncode}): {out.stderr}")
    rows = list(csv.reader(io.StringIO(out.stdout)))
    return rows[0], rows[1:]


def same_value(actual, expected_text):
    """A value from the trino client equals a CSV cell from `squall query`."""
    if actual is None:
        return expected_text == ""
    if isinstance(actual, bool):
        return str(actual).lower() == expected_text.lower()
    if isinstance(actual, int):
        return actual == int(expected_text)
    if isinstance(actual, Decimal):
        return actual == Decimal(expected_text)
    if isinstance(actual, float):
        return math.isclose(actual, float(expected_text), rel_tol=1e-9, abs_tol=1e-9)
    if isinstance(actual, datetime.date):
        return actual.isoformat() == expected_text
    return str(actual) == expected_text


def compare(name, cursor, rows, binary, catalog, sql):
    header, expected = squall_csv(binary, catalog, sql)
    names = [d[0] for d in cursor.description]
    check(names == header, f"{name}: columns {names} != {header}")
    check(len(rows) == len(expected), f"{name}: {len(rows)} rows, expected {len(expected)}")
    for i, (got, want) in enumerate(zip(rows, expected)):
        for j, (g, w) in enumerate(zip(got, want)):
            check(same_value(g, w), f"{name}: row {i} column {names[j]}: {g!r} != {w!r}")


def squall_binary():
    """The squall binary: the first argument, else this checkout's debug build."""
    binary = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "..", "target", "debug", "squall")
    binary = os.path.abspath(binary)
    check(os.path.exists(binary), f"no squall binary at {binary}")
    return binary


def start_server(binary, catalog, log, *extra):
    """`squall serve` on a free loopback port (`extra` arguments appended):
    its process, host and port once it says it listens."""
    env = dict(os.environ)
    env.pop("SQUALL_API_TOKEN", None)
    proc = subprocess.Popen(
        [binary, "serve", "--port", "0", "--catalog", catalog, *extra],
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        env=env,
    )
    line = proc.stdout.readline().strip()
    check(line.startswith("listening on http://"), f"unexpected first line from squall serve: {line!r}")
    host, port = line[len("listening on http://"):].rsplit(":", 1)
    return proc, host, int(port)


def main():
    binary = squall_binary()
    with tempfile.TemporaryDirectory(prefix="squall-trino-") as tmp:
        catalog = os.path.join(tmp, "tpch")
        subprocess.run(
            [binary, "tpch", "gen", "--sf", "0.01", "--out", catalog, "--row-group-rows", "2000"],
            check=True,
            capture_output=True,
        )
        with open(os.path.join(tmp, "serve.log"), "w") as log:
            proc, host, port = start_server(binary, catalog, log)
            try:
                run_checks(binary, catalog, host, port)
            finally:
                proc.send_signal(signal.SIGTERM)
                try:
                    code = proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    raise AssertionError("squall serve did not stop on SIGTERM")
        with open(os.path.join(tmp, "serve.log")) as log:
            server_log = log.read()
        check(code == 0, f"squall serve exited with {code}:\n{server_log}")
    print("trino client: all checks passed")


def run_checks(binary, catalog, host, port):
    conn = trino.dbapi.connect(
        host=host, port=port, user="test", catalog="squall", schema="tpch", http_scheme="http"
    )

    # TPC-H queries, value by value against `squall query --format csv`.
    for n in (1, 3, 6):
        with open(os.path.join(QUERIES, f"q{n:02}.sql")) as f:
            sql = f.read()
        cur = conn.cursor()
        cur.execute(sql)
        rows = cur.fetchall()
        check(len(rows) > 0, f"q{n}: no rows")
        compare(f"q{n}", cur, rows, binary, catalog, sql)
        types = {d[0]: d[1] for d in cur.description}
        if n == 1:
            check(types["l_returnflag"] == "varchar", f"q1 types {types}")
            check(types["sum_qty"].startswith("decimal("), f"q1 types {types}")
            check(types["count_order"] == "bigint", f"q1 types {types}")
            check(isinstance(rows[0][2], Decimal), f"q1 sum_qty is {type(rows[0][2])}")
        if n == 3:
            check(types["o_orderdate"] == "date", f"q3 types {types}")
            check(isinstance(rows[0][2], datetime.date), f"q3 o_orderdate is {type(rows[0][2])}")
        print(f"q{n}: {len(rows)} rows match")

    # Types as the client maps them.
    cur = conn.cursor()
    cur.execute(
        "select cast(4 as bigint) as b, cast(123.45 as decimal(15,2)) as d, cast(1.5 as double) as f, "
        "cast('NaN' as double) as nan, 'text' as v, true as bo, cast(null as bigint) as n, "
        "date '1995-03-15' as dt, cast('2020-01-02T03:04:05.678' as timestamp) as ts, "
        "make_array(1, 2, 3) as arr, map(make_array(1, 2), make_array('a', 'b')) as m, "
        "named_struct('x', 1, 'y', 'z') as r"
    )
    row = cur.fetchone()
    desc = {d[0]: d for d in cur.description}
    check(desc["d"][1] == "decimal(15,2)" and desc["d"][4] == 15 and desc["d"][5] == 2, f"decimal {desc['d']}")
    check(desc["v"][1] == "varchar", f"varchar {desc['v']}")
    check(row[0] == 4 and isinstance(row[0], int), f"bigint {row[0]!r}")
    check(row[1] == Decimal("123.45"), f"decimal {row[1]!r}")
    check(row[2] == 1.5, f"double {row[2]!r}")
    check(isinstance(row[3], float) and math.isnan(row[3]), f"NaN {row[3]!r}")
    check(row[4] == "text" and row[5] is True and row[6] is None, f"row {row!r}")
    check(row[7] == datetime.date(1995, 3, 15), f"date {row[7]!r}")
    check(row[8] == datetime.datetime(2020, 1, 2, 3, 4, 5, 678000), f"timestamp {row[8]!r}")
    check(row[9] == [1, 2, 3], f"array {row[9]!r}")
    check(desc["m"][1] == "map(bigint, varchar)" and row[10] == {1: "a", 2: "b"}, f"map {desc['m']} {row[10]!r}")
    check(desc["r"][1] == "row(x bigint, y varchar)" and tuple(row[11]) == (1, "z"), f"row {desc['r']} {row[11]!r}")
    print("types: ok")

    # USE changes the client's schema (X-Trino-Set-Catalog/-Schema); the
    # catalog's tables answer under any schema name.
    used = trino.dbapi.connect(host=host, port=port, user="use", catalog="squall", schema="public", http_scheme="http")
    cur = used.cursor()
    cur.execute("USE squall.tpch")
    cur.fetchall()
    check(cur.update_type == "USE", f"USE update type {cur.update_type!r}")
    check(used._client_session.schema == "tpch" and used._client_session.catalog == "squall",
          f"after USE: {used._client_session.catalog}.{used._client_session.schema}")
    cur = used.cursor()
    cur.execute("select count(*) from nation")
    check(cur.fetchall() == [[25]], "a query after USE")
    print("USE: ok")

    # The session's user; JSON text, URLs, an array's elements as rows and a
    # lambda, through the client.
    cur = conn.cursor()
    cur.execute(
        "select current_user, current_schema, json_extract_scalar('{\"a\": {\"b\": [7, 8]}}', '$.a.b[1]'), "
        "url_extract_host('https://example.com/x?y=1'), transform(array[1, 2], x -> x * 10), "
        "cast(json_parse('[\"p\", \"q\"]') as array(varchar))"
    )
    row = cur.fetchall()[0]
    check(row == ["test", "tpch", "8", "example.com", [10, 20], ["p", "q"]], f"Trino's functions {row!r}")
    cur = conn.cursor()
    cur.execute(
        "select n_name, w, i from nation cross join unnest(split(n_name, ' ')) with ordinality as u(w, i) "
        "where n_nationkey in (23, 24) order by n_name, i"
    )
    rows = cur.fetchall()
    check(rows == [["UNITED KINGDOM", "UNITED", 1], ["UNITED KINGDOM", "KINGDOM", 2],
                   ["UNITED STATES", "UNITED", 1], ["UNITED STATES", "STATES", 2]], f"cross join unnest {rows!r}")
    # Numbers of rows are BIGINT (DataFusion's are unsigned: decimal(20,0)).
    cur = conn.cursor()
    cur.execute("select row_number() over (order by n_name) as r, rank() over (order by n_regionkey) as k, "
                "cardinality(array[1, 2]) as c, (select approx_distinct(n_name) from nation) as d "
                "from nation order by r limit 1")
    row = cur.fetchall()[0]
    types = [d[1] for d in cur.description]
    check(row == [1, 1, 2, 25] and types == ["bigint"] * 4, f"counts {row!r} {types!r}")
    cur = conn.cursor()
    cur.execute("EXPLAIN (TYPE DISTRIBUTED) select count(*) from nation")
    plan = cur.fetchall()
    check(len(plan) > 0 and "stage" in str(plan).lower(), f"EXPLAIN (TYPE DISTRIBUTED) {plan!r}")
    print("Trino's functions and UNNEST: ok")

    # Bad SQL is a TrinoUserError carrying the server's error.
    for sql, name, needle in (
        ("selec 1", "SYNTAX_ERROR", "selec"),
        ("select * from no_such_table", "TABLE_NOT_FOUND", "no_such_table"),
    ):
        try:
            conn.cursor().execute(sql)
            raise AssertionError(f"{sql!r} did not raise")
        except trino.exceptions.TrinoUserError as e:
            check(e.error_name == name, f"{sql!r}: error name {e.error_name}")
            check(needle in e.message, f"{sql!r}: message {e.message!r}")
    print("errors: ok")

    # Parameterized queries (the client sends EXECUTE IMMEDIATE ... USING),
    # qualified table names, and the catalog's description.
    cur = conn.cursor()
    cur.execute(
        "select count(*) from tpch.orders where o_orderdate < ? and o_orderstatus = ?",
        (datetime.date(1993, 1, 1), "F"),
    )
    params = cur.fetchall()
    cur = conn.cursor()
    cur.execute(
        "select count(*) from orders where o_orderdate < date '1993-01-01' and o_orderstatus = 'F'"
    )
    check(params == cur.fetchall() and params[0][0] > 0, f"parameterized count {params}")
    cur = conn.cursor()
    cur.execute("select ?, ?, ?", (None, "it's ?", Decimal("0.05")))
    row = cur.fetchall()[0]
    check(row[0] is None and row[1] == "it's ?" and row[2] == Decimal("0.05"), f"parameters {row}")
    # The same through Trino's prepared statements (PREPARE, EXECUTE ...
    # USING, DEALLOCATE PREPARE, the statements held by the client in
    # headers), as JDBC and the Go client send them, and cursor.describe
    # (DESCRIBE OUTPUT of a prepared statement).
    legacy = trino.dbapi.connect(
        host=host, port=port, user="test", catalog="squall", schema="public",
        legacy_prepared_statements=True,
    )
    cur = legacy.cursor()
    cur.execute(
        "select count(*) from orders where o_orderdate < ? and o_orderstatus = ?",
        (datetime.date(1993, 1, 1), "F"),
    )
    check(cur.fetchall() == params, "a prepared statement's count")
    check(legacy._client_session.prepared_statements == {}, "deallocated statements")
    described = [
        (d.name, d.table, d.type, d.type_size, d.aliased)
        for d in legacy.cursor().describe(
            "select o_orderkey, o_totalprice as price, o_orderkey + 1 as next, o_orderdate from orders where o_custkey = ?"
        )
    ]
    check(
        described == [
            ("o_orderkey", "orders", "bigint", 8, False),
            ("price", "orders", "decimal(15,2)", 8, True),
            ("next", "", "bigint", 8, True),
            ("o_orderdate", "orders", "date", 4, False),
        ],
        f"describe {described}",
    )
    cur = legacy.cursor()
    cur.execute("prepare by_key from select n_name from nation where n_nationkey = ?")
    cur.fetchall()
    check(cur.update_type == "PREPARE", f"prepare update type {cur.update_type}")
    cur = legacy.cursor()
    cur.execute("describe input by_key")
    check(cur.fetchall() == [[0, "bigint"]], "describe input")
    cur = legacy.cursor()
    cur.execute("execute by_key using 3")
    check(cur.fetchall() == [["CANADA"]], "execute using")
    cur = legacy.cursor()
    cur.execute("deallocate prepare by_key")
    cur.fetchall()
    check("by_key" not in legacy._client_session.prepared_statements, "deallocated")
    try:
        legacy.cursor().execute("execute never_prepared using 3")
        raise AssertionError("an EXECUTE of an unknown statement did not raise")
    except trino.exceptions.TrinoUserError as e:
        check(e.error_name == "NOT_FOUND" and "never_prepared" in e.message, f"unknown: {e}")
    cur = conn.cursor()
    cur.execute("show tables")
    tables = {r[0] for r in cur.fetchall()}
    check([d[0] for d in cur.description] == ["Table"], f"show tables columns {cur.description}")
    check({"lineitem", "orders", "nation"} <= tables, f"show tables {tables}")
    print("parameters and metadata: ok")

    # Statements that change something carry Trino's update type, which
    # cursor.executemany (pandas' to_sql) requires.
    cur = conn.cursor()
    cur.execute("create table client_rows (a bigint, b varchar)")
    cur.fetchall()
    check(cur.update_type == "CREATE TABLE", f"create table update type {cur.update_type}")
    cur = conn.cursor()
    cur.executemany("insert into client_rows values (?, ?)", [(1, "x"), (2, None), (3, "it's")])
    cur.fetchall()
    check(cur.update_type == "INSERT", f"insert update type {cur.update_type}")
    cur = conn.cursor()
    cur.execute("select a, b from client_rows order by a")
    rows = cur.fetchall()
    check(rows == [[1, "x"], [2, None], [3, "it's"]], f"inserted rows {rows}")
    cur = conn.cursor()
    cur.execute("select count(*) from client_rows")
    check(cur.fetchall() == [[3]] and cur.update_type is None, f"a query's update type {cur.update_type}")
    check(cur.rowcount == -1, f"a query's rowcount {cur.rowcount}")
    # Trino's updateCount: cursor.rowcount of INSERT, DELETE (with a
    # subquery too) and UPDATE.
    for sql, count in [
        ("insert into client_rows values (4, 'y'), (5, 'z')", 2),
        ("delete from client_rows where a in (select 1 union all select 4)", 2),
        ("update client_rows set b = 'w' where a > 2", 2),
        ("delete from client_rows where a = 99", 0),
    ]:
        cur = conn.cursor()
        cur.execute(sql)
        cur.fetchall()
        check(cur.rowcount == count, f"{sql}: rowcount {cur.rowcount}, not {count}")
    print("update types and counts: ok")

    # The SQLAlchemy dialect: reflection reads information_schema (Trino's
    # columns and type names) and system.metadata.table_comments.
    engine = sqlalchemy.create_engine(f"trino://test@{host}:{port}/squall/public")
    try:
        inspector = sqlalchemy.inspect(engine)
        check("public" in inspector.get_schema_names(), "sqlalchemy schemas")
        tables = set(inspector.get_table_names())
        check({"lineitem", "nation", "orders"} <= tables, f"sqlalchemy tables {tables}")
        columns = {c["name"]: str(c["type"]) for c in inspector.get_columns("nation")}
        check(
            columns == {
                "n_nationkey": "BIGINT", "n_name": "VARCHAR",
                "n_regionkey": "BIGINT", "n_comment": "VARCHAR",
            },
            f"sqlalchemy columns {columns}",
        )
        decimal_type = {c["name"]: c["type"] for c in inspector.get_columns("lineitem")}["l_quantity"]
        check(str(decimal_type).startswith("DECIMAL("), f"sqlalchemy decimal {decimal_type}")
        nation = sqlalchemy.Table("nation", sqlalchemy.MetaData(), autoload_with=engine)
        with engine.connect() as c:
            counted = c.execute(
                sqlalchemy.select(nation.c.n_regionkey, sqlalchemy.func.count())
                .group_by(nation.c.n_regionkey)
                .order_by(nation.c.n_regionkey)
            ).fetchall()
        check([tuple(r) for r in counted] == [(r, 5) for r in range(5)], f"sqlalchemy rows {counted}")
    finally:
        engine.dispose()
    # Connected with a schema the catalog does not have (any name finds its
    # tables), the catalog's description lists them under that name too:
    # reflection found no table.
    engine = sqlalchemy.create_engine(f"trino://test@{host}:{port}/squall/default")
    try:
        inspector = sqlalchemy.inspect(engine)
        schemas = set(inspector.get_schema_names())
        check("default" not in schemas, f"a schema that does not exist is not listed: {schemas}")
        tables = set(inspector.get_table_names())
        check({"lineitem", "nation", "orders"} <= tables, f"sqlalchemy tables of schema default {tables}")
        columns = [c["name"] for c in inspector.get_columns("nation")]
        check(columns == ["n_nationkey", "n_name", "n_regionkey", "n_comment"], f"columns {columns}")
        with engine.connect() as c:
            shown = {r[0] for r in c.execute(sqlalchemy.text("show tables")).fetchall()}
        check(shown == tables, f"show tables of schema default {shown}")
    finally:
        engine.dispose()
    print("sqlalchemy: ok")

    # SET SESSION comes back as a session property of the client.
    cur = conn.cursor()
    cur.execute("SET SESSION squall.shuffle.partitions = 3")
    cur.fetchall()
    props = conn._client_session.properties
    check(props.get("squall.shuffle.partitions") == "3", f"session properties {props}")
    cur = conn.cursor()
    cur.execute("select count(*) from orders")
    check(cur.fetchall() == [[15000]], "query with a session property")
    print("session: ok")

    # A session timeout fails a long query with EXCEEDED_TIME_LIMIT, which
    # the client raises as a query error (INSUFFICIENT_RESOURCES).
    limited = trino.dbapi.connect(
        host=host, port=port, user="tester", catalog="squall", schema="tpch",
        session_properties={"squall.query.timeout_secs": "1"},
    )
    cur = limited.cursor()
    try:
        cur.execute(LONG)
        cur.fetchall()
        raise AssertionError("a query past its timeout succeeded")
    except trino.exceptions.TrinoQueryError as e:
        check(e.error_name == "EXCEEDED_TIME_LIMIT", f"timeout error {e.error_name}: {e.message}")
        check("timeout of 1 s" in e.message, e.message)
    print("timeout: ok")

    # cursor.cancel() from another thread ends a long query.
    cur = conn.cursor()
    outcome = {}

    def run_long():
        try:
            cur.execute(LONG)
            outcome["rows"] = cur.fetchall()
        except Exception as e:  # the cancelled query surfaces as an error
            outcome["error"] = e

    worker = threading.Thread(target=run_long, daemon=True)
    worker.start()
    deadline = time.time() + 60
    while time.time() < deadline:
        q = getattr(cur, "_query", None)
        if q is not None and q.query_id is not None and q.stats.get("state") == "RUNNING":
            break
        time.sleep(0.05)
    else:
        raise AssertionError("the long query never started running")
    query_id = cur._query.query_id
    time.sleep(0.5)
    cur.cancel()
    worker.join(timeout=30)
    check(not worker.is_alive(), "the cancelled query did not end")
    check(outcome.get("rows") != [[0]], "the long query completed instead of being cancelled")
    if "error" in outcome:
        err = outcome["error"]
        check(
            isinstance(err, trino.exceptions.TrinoUserError) and err.error_name == "USER_CANCELED",
            f"cancelled query raised {err!r}",
        )
    with urllib.request.urlopen(f"http://{host}:{port}/v1/query/{query_id}") as resp:
        summary = json.load(resp)
    check(summary["state"] == "CANCELED", f"summary after cancel: {summary}")
    # The server still answers.
    cur = conn.cursor()
    cur.execute("select 1")
    check(cur.fetchall() == [[1]], "query after cancel")
    print("cancel: ok")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"FAILED: {e}", file=sys.stderr)
        sys.exit(1)
