#!/usr/bin/env python3
"""Differential SQL fuzzing: random queries, run staged and as one task.

usage:
  sql_fuzz.py [--squall BIN] [--seed N] [--queries N] [--duckdb] [--parallel N]
             [--staged-config KEY=VALUE] [--log FILE] [--data DIR] [--text]

Writes small tables with the layouts that break distributed plans (NULL
keys, duplicate join keys, skewed groups, empty strings, negative and NULL
numbers, several files and many small row groups, a file with its columns
in another order, Hive partition folders with one for NULL), starts two
`squall serve` processes over them, and runs each random query on both: one runs every query as a single task (the
whole DataFusion plan, as single-node DataFusion runs it), the other
stages every query over many small tasks (scan tasks of a few row groups,
5 hash partitions, the two-level exchange on every hash read, key filters
on). The answers must be the same multiset of rows (DOUBLEs to 1e-9
relative: sums add in another order); a query only one of them answers,
or answers otherwise, is a finding, printed with its SQL and both answers.
Exits 1 on a finding.

The generator writes SQL both engines should answer alike whatever the
plan: joins of every kind on nullable keys, IN / NOT IN / EXISTS
subqueries, scalar subqueries, aggregates with DISTINCT and FILTER,
GROUPING SETS, HAVING, windows over a total order, set operations,
DISTINCT, and ORDER BY every output column with LIMIT (a total order, so
the rows kept are decided). Needs pyarrow and trino.
"""
import argparse
import concurrent.futures
import csv
import datetime
import decimal
import json
import math
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pyarrow as pa
import pyarrow.parquet as pq
import trino


def write_tables(root, rnd, text=False):
    """Four tables: a fact `f`, a small dimension `g` with duplicate
    keys, a many-to-many `h`, a Hive-partitioned `e`; NULLs in every key.
    With `text`, `g` is a CSV file and `h` two files of JSON lines (its
    timestamps text), read over tasks by files and byte ranges."""
    def maybe(value, p=0.07):
        return None if rnd.random() < p else value

    words = ["", "a", "ab", "abc", "b%", "x_y", "Zed", "zed", "q q", "éa", "long" * 5, "7", "-3", " 12"] + \
        [f"w{i}" for i in range(40)]
    n = 4000
    f = {
        "id": list(range(n)),
        "k1": [maybe(rnd.choice([rnd.randrange(50), 7, 7, 7])) for _ in range(n)],
        "k2": [maybe(rnd.choice(words)) for _ in range(n)],
        "v1": [maybe(rnd.choice([rnd.uniform(-100, 100), 0.0, 1e6, -0.5])) for _ in range(n)],
        "v2": [maybe(decimal.Decimal(rnd.randrange(-100000, 100000)) / 100) for _ in range(n)],
        "d": [maybe(datetime.date(2020, 1, 1) + datetime.timedelta(days=rnd.randrange(800))) for _ in range(n)],
        "flag": [maybe(rnd.random() < 0.3) for _ in range(n)],
        "n": [maybe(rnd.randrange(-5, 20)) for _ in range(n)],
    }
    schema = pa.schema([
        ("id", pa.int64()), ("k1", pa.int32()), ("k2", pa.string()),
        ("v1", pa.float64()), ("v2", pa.decimal128(12, 2)), ("d", pa.date32()),
        ("flag", pa.bool_()), ("n", pa.int64()),
    ])
    table = pa.table(f, schema=schema)
    os.makedirs(f"{root}/f")
    # Four files of 300-row row groups; the last with its columns reversed.
    parts = 4
    size = n // parts
    for i in range(parts):
        part = table.slice(i * size, size)
        if i == parts - 1:
            part = part.select(list(reversed(part.column_names)))
        pq.write_table(part, f"{root}/f/part-{i}.parquet", row_group_size=300)

    g = {
        "k1": [maybe(rnd.randrange(60)) for _ in range(80)],
        "name": [maybe(rnd.choice(words)) for _ in range(80)],
        "w": [maybe(rnd.randrange(-3, 1000)) for _ in range(80)],
    }
    os.makedirs(f"{root}/g")
    if text:
        with open(f"{root}/g/g.csv", "w", newline="") as out:
            w = csv.writer(out)
            w.writerow(g.keys())
            w.writerows(zip(*g.values()))
    else:
        pq.write_table(pa.table(g, schema=pa.schema([("k1", pa.int32()), ("name", pa.string()), ("w", pa.int64())])),
                       f"{root}/g/g.parquet", row_group_size=20)

    m = 1500
    h = {
        "k2": [maybe(rnd.choice(words)) for _ in range(m)],
        "k1": [maybe(rnd.randrange(55)) for _ in range(m)],
        "x": [maybe(rnd.randrange(-1000, 1000)) for _ in range(m)],
        "y": [maybe(rnd.uniform(0, 10)) for _ in range(m)],
        "ts": [maybe(datetime.datetime(2020, 1, 1) + datetime.timedelta(seconds=rnd.randrange(0, 90 * 86400)))
               for _ in range(m)],
    }
    os.makedirs(f"{root}/h")
    ht = pa.table(h, schema=pa.schema([("k2", pa.string()), ("k1", pa.int64()), ("x", pa.int64()), ("y", pa.float64()),
                                 ("ts", pa.timestamp("us"))]))
    if text:
        rows = [dict(zip(h.keys(), values)) for values in zip(*h.values())]
        for name, part in (("a", rows[:700]), ("b", rows[700:])):
            with open(f"{root}/h/{name}.jsonl", "w") as out:
                for row in part:
                    if row["ts"] is not None:
                        row["ts"] = row["ts"].strftime("%Y-%m-%d %H:%M:%S")
                    out.write(json.dumps(row) + "\n")
    else:
        pq.write_table(ht.slice(0, 700), f"{root}/h/a.parquet", row_group_size=200)
        pq.write_table(ht.slice(700), f"{root}/h/b.parquet", row_group_size=500)

    # A Hive-partitioned table: a DATE and a VARCHAR partition column, a
    # folder for NULL, partitions of one row and of many.
    days = [datetime.date(2020, 1, 1), datetime.date(2020, 1, 2), datetime.date(2020, 6, 1)]
    cats = ["a", "b", "zed", None]
    e_schema = pa.schema([("k1", pa.int32()), ("v", pa.float64())])
    for day in days:
        for cat in cats:
            rows = rnd.choice([0, 1, 40, 300])
            if rows == 0:
                continue
            folder = f"{root}/e/day={day}/cat={'__HIVE_DEFAULT_PARTITION__' if cat is None else cat}"
            os.makedirs(folder)
            part = pa.table({"k1": [maybe(rnd.randrange(60)) for _ in range(rows)],
                             "v": [maybe(rnd.uniform(-10, 10)) for _ in range(rows)]}, schema=e_schema)
            pq.write_table(part, f"{folder}/part-0.parquet", row_group_size=100)
    if not os.path.exists(f"{root}/e"):
        folder = f"{root}/e/day={days[0]}/cat=a"
        os.makedirs(folder)
        pq.write_table(pa.table({"k1": [1], "v": [1.0]}, schema=e_schema), f"{folder}/part-0.parquet")


COLUMNS = {
    "f": {"id": "int", "k1": "int", "k2": "str", "v1": "float", "v2": "dec", "d": "date", "flag": "bool", "n": "int"},
    "g": {"k1": "int", "name": "str", "w": "int"},
    "h": {"k2": "str", "k1": "int", "x": "int", "y": "float", "ts": "ts"},
    "e": {"k1": "int", "v": "float", "day": "date", "cat": "str"},
}
# Columns that join: (table, column) pairs of one kind.
JOIN_KEYS = [("k1", "k1"), ("k2", "k2"), ("k2", "name"), ("k1", "w"), ("n", "k1")]


class Gen:
    def __init__(self, rnd):
        self.r = rnd
        self.alias_n = 0
        # Scalar subqueries only in select lists and keys (not in a GROUP
        # BY's own expressions, which DataFusion refuses).
        self.scalar_subqueries = False
        # Arrays only in a query's own output, never a column of another.
        self.lists = False
        self.cte, self.cte_used = None, False

    def alias(self):
        self.alias_n += 1
        return f"t{self.alias_n}"

    def literal(self, kind):
        r = self.r
        if kind == "int":
            return str(r.choice([0, 1, 7, 20, -3, 45, 100]))
        if kind == "float":
            return r.choice(["0.0", "1.5e1", "-2.5e0", "1e2"])
        if kind == "dec":
            return r.choice(["0", "12.50", "-100.25", "500"])
        if kind == "str":
            return r.choice(["''", "'a'", "'ab'", "'zed'", "'Zed'", "'x_y'"])
        if kind == "date":
            return r.choice(["DATE '2020-06-01'", "DATE '2021-01-15'", "DATE '2019-12-31'"])
        if kind == "ts":
            return r.choice(["TIMESTAMP '2020-02-01 00:00:00'", "TIMESTAMP '2020-03-15 12:30:00'"])

        return r.choice(["true", "false"])

    def predicate(self, cols, depth=0):
        """A boolean over `cols` ([(sql, kind)])."""
        r = self.r
        if depth < 2 and r.random() < 0.3:
            op = r.choice(["AND", "OR"])
            inner = f"({self.predicate(cols, depth + 1)} {op} {self.predicate(cols, depth + 1)})"
            return f"NOT {inner}" if r.random() < 0.2 else inner
        c, kind = r.choice(cols)
        roll = r.random()
        if roll < 0.04:
            # Never true, or true where not NULL: folded by the planner.
            a, b = self.literal(kind), self.literal(kind)
            return r.choice([f"({c} = {a} AND {c} = {b})", f"({c} IS NULL AND {c} IS NOT NULL)",
                             f"({c} = {c})", "1 = 0", f"({c} < {a} AND {c} > {a})"])
        if roll < 0.15:
            return f"{c} IS {'NOT ' if r.random() < 0.5 else ''}NULL"
        if kind == "bool":
            return r.choice([c, f"NOT {c}", f"{c} = {self.literal(kind)}"])
        if roll < 0.3 and kind in ("int", "dec", "date", "float", "ts"):
            a, b = sorted([self.literal(kind), self.literal(kind)])
            return f"{c} BETWEEN {a} AND {b}"
        if roll < 0.45:
            items = ", ".join(self.literal(kind) for _ in range(r.randrange(1, 4)))
            if r.random() < 0.15:
                # A NULL in the list: NOT IN is then never true.
                items += ", NULL"
            return f"{c} {'NOT ' if r.random() < 0.3 else ''}IN ({items})"
        if roll < 0.55 and kind == "str":
            pattern = r.choice(["'%a%'", "'z%'", "'_'", "'%b_'", "''"])
            return f"{c} LIKE {pattern}"
        op = r.choice(["=", "<>", "<", "<=", ">", ">="])
        return f"{c} {op} {self.literal(kind)}"

    def scalar(self, cols):
        """A value expression and its kind."""
        r = self.r
        c, kind = r.choice(cols)
        roll = r.random()
        if kind == "int" and roll < 0.3:
            return r.choice([(f"({c} {r.choice(['+', '-', '*', '%'])} {r.choice(['2', '3', '7'])})", "int"),
                             (f"mod({c}, {r.choice(['3', '-4'])})", "int"), (f"sign({c})", "int")])
        if kind == "str" and roll < 0.3:
            return r.choice([(f"upper({c})", "str"), (f"length({c})", "int"),
                             (f"coalesce({c}, 'none')", "str"), (f"substr({c}, 1, 2)", "str"),
                             (f"lower({c})", "str"), (f"trim({c})", "str"), (f"lpad({c}, 4, '*')", "str"),
                             (f"strpos({c}, 'a')", "int"), (f"starts_with({c}, 'w')", "bool"),
                             (f"try_cast({c} AS INTEGER)", "int")])
        if kind == "date" and roll < 0.3:
            return r.choice([(f"extract(month FROM {c})", "int"), (f"date_add('day', 3, {c})", "date"),
                             (f"CAST({c} AS VARCHAR)", "str"), (f"date_diff('day', DATE '2020-01-01', {c})", "int"),
                             (f"year({c})", "int"), (f"quarter({c})", "int")])
        if kind == "ts" and roll < 0.4:
            return r.choice([(f"CAST({c} AS DATE)", "date"), (f"extract(hour FROM {c})", "int"),
                             (f"date_add('hour', 5, {c})", "ts"), (f"{c} + INTERVAL '1' DAY", "ts"),
                             (f"date_diff('second', TIMESTAMP '2020-01-01 00:00:00', {c})", "int")])
        if kind == "float" and roll < 0.3:
            # Not round(): a DOUBLE rounded to 0 keeps its sign (-0.0), which
            # engines group and compare apart or together.
            return r.choice([(f"floor({c})", "float"), (f"sqrt(abs({c}))", "float"),
                             (f"({c} / 4.0)", "float")])
        if kind in ("int", "dec") and roll < 0.35:
            return r.choice([(f"nullif({c}, {self.literal(kind)})", kind),
                             (f"round({c}, 1)", kind), (f"round({c}, -1)", kind),
                             (f"ceiling({c})", kind), (f"floor({c})", kind),
                             (f"coalesce({c}, {self.literal(kind)})", kind),
                             (f"abs({c})", kind),
                             (f"CAST({c} AS DOUBLE)", "float")])
        if kind == "str" and roll < 0.4:
            other = [x for x, k in cols if k == "str"]
            # `||`, not concat(): DuckDB's concat() skips NULLs, Trino's is NULL.
            return r.choice([(f"{c} || '-'", "str"), (f"{c} || {r.choice(other)}", "str"),
                             (f"reverse({c})", "str"), (f"replace({c}, 'a', 'b')", "str")])
        if roll < 0.45:
            p = self.predicate(cols)
            return r.choice([f"CASE WHEN {p} THEN {c} ELSE NULL END",
                             f"CASE WHEN {p} THEN NULL WHEN {self.predicate(cols)} THEN {c} "
                             f"ELSE {self.literal(kind)} END",
                             f"if({p}, {c}, NULL)"]), kind
        if roll < 0.5 and self.scalar_subqueries:
            # A correlated scalar subquery in the select list.
            t = r.choice(list(COLUMNS))
            same = [x for x, k in COLUMNS[t].items() if k == kind and kind in ("int", "str")]
            if same:
                a = self.alias()
                inner = r.choice(same)
                agg = r.choice(["max", "min", "count"])
                return (f"(SELECT {agg}({a}.{inner}) FROM {t} {a} WHERE {a}.{inner} = {c})",
                        "int" if agg == "count" else kind)
        if roll < 0.55:
            other = [x for x, k in cols if k == kind]
            return f"CASE WHEN {c} IS DISTINCT FROM {r.choice(other)} THEN 1 ELSE 0 END", "int"
        return c, kind

    def table_ref(self, depth):
        """A FROM item: (sql, [(column sql, kind)])."""
        r = self.r
        if depth < 2 and r.random() < 0.2:
            sub, cols = self.query(depth + 1, want_cols=True)
            a = self.alias()
            return f"({sub}) {a}", [(f"{a}.{name}", kind) for name, kind in cols if kind != "list"] \
                or [("1", "int")]
        if r.random() < 0.05:
            # A literal table: NULL and duplicate keys too.
            a = self.alias()
            rows = r.sample(["(7, 'a')", "(7, 'ab')", "(NULL, 'zed')", "(3, NULL)", "(45, 'x_y')", "(0, '')"],
                            r.randrange(1, 6))
            return (f"(VALUES {', '.join(rows)}) {a}(k1, k2)", [(f"{a}.k1", "int"), (f"{a}.k2", "str")])
        if self.cte and r.random() < 0.4:
            self.cte_used = True
            a = self.alias()
            return f"w {a}", [(f"{a}.{name}", kind) for name, kind in self.cte[1]]
        roll = r.random()
        if roll < 0.08:
            # A row number per group (a filter on it above is a top-N per
            # group): over `f`'s id, a total order; elsewhere rank(), alike
            # for peers.
            t = r.choice(list(COLUMNS))
            i, a = self.alias(), self.alias()
            cols = list(COLUMNS[t].items())
            pcol = r.choice(cols)[0]
            if t == "f":
                fn = f"row_number() OVER (PARTITION BY {i}.{pcol} ORDER BY {i}.id{r.choice(['', ' DESC'])})"
            else:
                fn = f"rank() OVER (PARTITION BY {i}.{pcol} ORDER BY {r.choice(cols)[0]} DESC)"
            names = ", ".join(f"{i}.{c}" for c, _ in cols)
            return (f"(SELECT {names}, {fn} AS rn FROM {t} {i}) {a}",
                    [(f"{a}.{c}", k) for c, k in cols] + [(f"{a}.rn", "int")])
        if roll < 0.12:
            # The first rows of `f` by its id: a limit below a join.
            i, a = self.alias(), self.alias()
            limit = r.choice([1, 50, 700])
            return (f"(SELECT * FROM f {i} ORDER BY {i}.id{r.choice(['', ' DESC'])} LIMIT {limit}) {a}",
                    [(f"{a}.{c}", k) for c, k in COLUMNS["f"].items()])
        t = r.choice(list(COLUMNS))
        a = self.alias()
        return f"{t} {a}", [(f"{a}.{c}", k) for c, k in COLUMNS[t].items()]

    def from_clause(self, depth):
        r = self.r
        sql, cols = self.table_ref(depth)
        for joins in range(r.choice([0, 0, 1, 1, 2])):
            rsql, rcols = self.table_ref(depth)
            if joins == 1 and not rsql.startswith("g "):
                # A third table only if small: many-to-many chains explode.
                continue
            kind = r.choice(["JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN", "JOIN", "LEFT JOIN"])
            pairs = [(a, b) for a in cols for b in rcols if a[1] == b[1] and a[1] in ("int", "str")]
            if not pairs:
                sql = f"{sql} CROSS JOIN {rsql}" if len(cols) * len(rcols) < 400 and r.random() < 0.5 \
                    else sql
                if "CROSS" in sql:
                    cols = cols + rcols
                continue
            (lc, _), (rc, _) = r.choice(pairs)
            on = f"{lc} = {rc}"
            roll = r.random()
            small = rsql.startswith(("g ", "(VALUES")) and len(cols) < 12
            if roll < 0.25:
                on += f" AND {self.predicate(cols + rcols)}"
            elif roll < 0.32:
                (lc2, _), (rc2, _) = r.choice(pairs)
                on = f"({on} OR {lc2} = {rc2})"
            elif roll < 0.4 and small:
                # No equality at all: a nested-loop join.
                ints = [(a, b) for a, b in pairs if a[1] == "int"]
                if ints:
                    (lc, _), (rc, _) = r.choice(ints)
                    on = f"{lc} {r.choice(['<', '>=', '<>'])} {rc} + {r.choice(['0', '40'])}"
            sql = f"{sql} {kind} {rsql} ON {on}"
            cols = cols + rcols
        return sql, cols

    def subquery_predicate(self, cols, depth):
        r = self.r
        c, kind = r.choice([x for x in cols if x[1] in ("int", "str")] or cols)
        t = r.choice(list(COLUMNS))
        same = [col for col, k in COLUMNS[t].items() if k == kind]
        if not same:
            return self.predicate(cols)
        inner = r.choice(same)
        a = self.alias()
        where = ""
        if r.random() < 0.4:
            icols = [(f"{a}.{x}", k) for x, k in COLUMNS[t].items()]
            where = f" WHERE {self.predicate(icols)}"
        roll = r.random()
        if roll < 0.3:
            return f"{c} {'NOT ' if r.random() < 0.4 else ''}IN (SELECT {a}.{inner} FROM {t} {a}{where})"
        if roll < 0.4:
            op = r.choice(["= ANY", "<> ALL", "> ALL", "< ANY", ">= ALL"])
            return f"{c} {op} (SELECT {a}.{inner} FROM {t} {a}{where})"
        if roll < 0.7:
            corr = f"{a}.{inner} = {c}"
            where = f"{where} AND {corr}" if where else f" WHERE {corr}"
            return f"{'NOT ' if r.random() < 0.4 else ''}EXISTS (SELECT 1 FROM {t} {a}{where})"
        agg = r.choice(["max", "min", "count"])
        if r.random() < 0.3:
            # Not correlated: one value for every row.
            return f"{c} {r.choice(['=', '<', '>='])} (SELECT {agg}({a}.{inner}) FROM {t} {a}{where})" \
                if agg != "count" else f"{r.choice(['1', '40'])} < (SELECT count({a}.{inner}) FROM {t} {a}{where})"
        corr = f"{a}.{inner} = {c}"
        where = f"{where} AND {corr}" if where else f" WHERE {corr}"
        cmp_kind = "int" if agg == "count" else kind
        other = [x for x in cols if x[1] == cmp_kind]
        lhs = r.choice(other)[0] if other else self.literal(cmp_kind)
        return f"{lhs} {r.choice(['=', '<', '>='])} (SELECT {agg}({a}.{inner}) FROM {t} {a}{where})"

    def aggregate(self, cols):
        r = self.r
        c, kind = r.choice(cols)
        numeric = kind in ("int", "float", "dec")
        choices = ["count(*)", f"count({c})", f"min({c})", f"max({c})"]
        if numeric:
            choices += [f"sum({c})", f"avg({c})"]
        if kind in ("int", "str", "date"):
            choices += [f"count(DISTINCT {c})"]
        if numeric and kind != "float":
            choices += [f"sum(DISTINCT {c})"]
        if numeric:
            choices += [f"stddev_samp({c})", f"var_pop({c})"]
        if kind == "bool":
            choices += [f"bool_and({c})", f"bool_or({c})"]
        choices += [f"count_if({self.predicate(cols)})"]
        if self.lists and kind in ("int", "str", "date"):
            # Every value in a total order (ties are equal values).
            choices += [f"array_agg({c} ORDER BY {c}{r.choice(['', ' DESC'])})"]
        agg = r.choice(choices)
        if r.random() < 0.15:
            agg += f" FILTER (WHERE {self.predicate(cols)})"
        if agg.startswith("count"):
            out = "int"
        elif agg.startswith(("avg", "stddev", "var_")):
            out = "float"
        elif agg.startswith("array_agg"):
            out = "list"
        else:
            out = kind
        return agg, out

    def query(self, depth=0, want_cols=False):
        """SELECT text and its output columns [(name, kind)]."""
        r = self.r
        if depth == 0:
            # A common table expression, referred to from anywhere (twice:
            # a self-join of a CTE) or not at all.
            self.cte, self.cte_used = None, False
            if r.random() < 0.12:
                sub, ccols = self.query(1, want_cols=True)
                ccols = [(name, kind) for name, kind in ccols if kind != "list"]
                if ccols:
                    self.cte = (sub, ccols)
        from_sql, cols = self.from_clause(depth)
        # One base table `f`: its id is a total order.
        unique_rows = from_sql.startswith("f ") and " JOIN " not in from_sql
        where = []
        for _ in range(r.choice([0, 1, 1, 2])):
            if depth < 2 and r.random() < 0.25:
                where.append(self.subquery_predicate(cols, depth))
            else:
                where.append(self.predicate(cols))
        where_sql = f" WHERE {' AND '.join(where)}" if where else ""
        items, out = [], []
        shape = r.random()
        group_sql = having = ""
        if shape < 0.45:
            keys = [self.scalar(cols) for _ in range(r.choice([0, 1, 1, 2, 3]))]
            # Now and then grouped by `f.id` itself: `f` is written in id
            # order, so the staged server runs such an aggregation in the
            # scan's tasks, with no exchange (a clustered aggregation).
            ids = [c for c, kind in cols if c.endswith(".id")]
            if keys and ids and r.random() < 0.3:
                keys[0] = (r.choice(ids), "int")
            for i, (k, kind) in enumerate(keys):
                items.append(f"{k} AS c{len(items)}")
                out.append((f"c{len(out)}", kind))
            self.lists = depth == 0
            for _ in range(r.choice([1, 1, 2, 3])):
                a, kind = self.aggregate(cols)
                items.append(f"{a} AS c{len(items)}")
                out.append((f"c{len(out)}", kind))
            self.lists = False
            # Exact aggregates (DOUBLE sums differ in their last bits).
            exact = [items[j].rsplit(" AS ", 1)[0] for j in range(len(keys), len(items))
                     if out[j][1] in ("int", "dec")]
            if depth == 0 and exact and r.random() < 0.15:
                # A rank of each group by an aggregate: alike for peers.
                items.append(f"dense_rank() OVER (ORDER BY {r.choice(exact)} DESC) AS c{len(items)}")
                out.append((f"c{len(out)}", "int"))
            if keys:
                exprs = [k for k, _ in keys]
                roll = r.random()
                if roll < 0.15 and len(exprs) >= 2:
                    group_sql = f" GROUP BY ROLLUP ({', '.join(exprs)})"
                elif roll < 0.25 and len(exprs) >= 2:
                    group_sql = f" GROUP BY GROUPING SETS (({exprs[0]}), ({', '.join(exprs[1:])}), ())"
                elif roll < 0.3:
                    group_sql = f" GROUP BY CUBE ({', '.join(exprs)})"
                else:
                    group_sql = f" GROUP BY {', '.join(exprs)}"
            if r.random() < 0.3:
                agg, kind = self.aggregate(cols)
                if kind in ("int", "float", "dec"):
                    having = f" HAVING {agg} > {r.choice(['0', '1', '3'])}"
                    if r.random() < 0.2:
                        # Never true: no row, whether or not grouped.
                        having += f" AND {agg} < {r.choice(['0', '1'])}"
        elif shape < 0.65 and depth == 0:
            # Windows over a total order (every row's own id breaks ties).
            ids = [c for c, k in cols if c.endswith(".id")]
            base = [self.scalar(cols) for _ in range(r.choice([1, 2]))]
            for k, kind in base:
                items.append(f"{k} AS c{len(items)}")
                out.append((f"c{len(out)}", kind))
            pcol, _ = r.choice(cols)
            v, vkind = r.choice(cols)
            summed = vkind in ("int", "dec")
            # Functions that give peers alike: any order will do.
            fns = [("rank()", "int"), ("dense_rank()", "int"), ("percent_rank()", "float"),
                   ("cume_dist()", "float"), (f"min({v})", vkind), (f"max({v})", vkind),
                   (f"sum({v})" if summed else f"count({v})", vkind if summed else "int")]
            order_col, order_kind = r.choice(cols)
            order = order_col
            frame = ""
            if order_kind == "int" and r.random() < 0.3:
                # A RANGE frame: its rows are decided by value, peers alike.
                fns = fns[4:]
                frame = f" RANGE BETWEEN {r.choice(['UNBOUNDED', '2', '0'])} PRECEDING " \
                        f"AND {r.choice(['CURRENT ROW', '3 FOLLOWING', 'UNBOUNDED FOLLOWING'])}"
            if unique_rows and ids:
                # One table's own id: a total order, so any function.
                order = ids[0]
                frame = ""
                fns += [("row_number()", "int"), (f"lag({v})", vkind), (f"first_value({v})", vkind),
                        (f"lead({v}, 2)", vkind), ("ntile(4)", "int"), (f"last_value({v})", vkind),
                        (f"nth_value({v}, 3)", vkind)]
                frame = r.choice(["", " ROWS BETWEEN 2 PRECEDING AND CURRENT ROW",
                                  " ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING",
                                  " ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING"])
            fn = r.choice(fns)
            if fn[0].endswith("()") or fn[0].startswith(("lag", "lead", "ntile")):
                frame = ""
            part = f"PARTITION BY {pcol} " if r.random() < 0.7 else ""
            if r.random() < 0.1 and fn[0].startswith(("min", "max", "sum", "count")):
                # No order: the whole partition.
                over = part.strip()
            else:
                over = f"{part}ORDER BY {order}{r.choice(['', ' DESC'])}{frame}"
            items.append(f"{fn[0]} OVER ({over}) AS c{len(items)}")
            out.append((f"c{len(out)}", fn[1]))
        else:
            self.scalar_subqueries = depth == 0
            for _ in range(r.choice([1, 2, 3])):
                k, kind = self.scalar(cols)
                items.append(f"{k} AS c{len(items)}")
                out.append((f"c{len(out)}", kind))
        self.scalar_subqueries = False
        distinct = "DISTINCT " if r.random() < 0.15 and not group_sql else ""
        sql = f"SELECT {distinct}{', '.join(items)} FROM {from_sql}{where_sql}{group_sql}{having}"
        if depth == 0 and r.random() < 0.15 and not any(" OVER " in i for i in items) \
                and all(kind != "list" for _, kind in out):
            # A set operation with a query of the same column kinds.
            other = f"SELECT {', '.join(self.cast_null_or_col(kind, cols) for _, kind in out)} " \
                    f"FROM {from_sql}{where_sql}"
            if not group_sql:
                sql = f"{sql} {r.choice(['UNION ALL', 'UNION', 'INTERSECT', 'EXCEPT', 'INTERSECT ALL', 'EXCEPT ALL'])} {other}"
        if r.random() < 0.2 and depth == 0:
            # A total order over every output column: the rows kept are decided.
            order = ", ".join(f"{i + 1}{r.choice(['', ' DESC'])} NULLS {r.choice(['FIRST', 'LAST'])}"
                              for i in range(len(out)))
            offset = r.choice(["", "", " OFFSET 2"])
            sql = f"SELECT * FROM ({sql}) o ORDER BY {order}{offset} LIMIT {r.choice([1, 5, 30])}"
        if depth == 0 and self.cte_used:
            sql = f"WITH w AS ({self.cte[0]}) {sql}"
        return (sql, out) if want_cols else sql

    def cast_null_or_col(self, kind, cols):
        same = [c for c, k in cols if k == kind]
        if same:
            return self.r.choice(same)
        return {"int": "CAST(NULL AS BIGINT)", "float": "CAST(NULL AS DOUBLE)", "str": "CAST(NULL AS VARCHAR)",
                "dec": "CAST(NULL AS DECIMAL(12,2))", "date": "CAST(NULL AS DATE)",
                "bool": "CAST(NULL AS BOOLEAN)", "ts": "CAST(NULL AS TIMESTAMP)"}[kind]


def normal(value):
    if isinstance(value, float):
        if math.isnan(value):
            return ("nan",)
        # -0.0 is 0.0 (equal in SQL; a grouping keeps either).
        return ("f", value + 0.0)
    if isinstance(value, decimal.Decimal):
        return ("d", value.normalize())
    if isinstance(value, (list, dict)):
        return ("j", repr(value))
    return ("v", value)


def sort_key(row):
    """Rows in an order both answers share: DOUBLEs by a rounded value
    first (sums differ in their last bits), then exactly."""
    rounded = [(x[0], float(f"{x[1]:.6g}")) if x[0] == "f" else x for x in row]
    return repr(rounded), repr(row)


def same_rows(a, b, form=None, rel=1e-9, absolute=1e-9):
    """`a` and `b` the same multiset of rows, each value in `form` (default
    `normal`), DOUBLEs within `rel` / `absolute` of each other."""
    form = form or normal
    if len(a) != len(b):
        return False
    sa = sorted((tuple(form(v) for v in row) for row in a), key=sort_key)
    sb = sorted((tuple(form(v) for v in row) for row in b), key=sort_key)
    for ra, rb in zip(sa, sb):
        for x, y in zip(ra, rb):
            if x[0] == "f" and y[0] == "f":
                if not math.isclose(x[1], y[1], rel_tol=rel, abs_tol=absolute):
                    return False
            elif x != y:
                return False
    return True


def rows_equal(a, b):
    return same_rows(a, b)


def loose(value):
    """A value as engines of different types agree on it: every number a
    float (DuckDB's sums are HUGEINTs, its averages of DECIMALs DOUBLEs)."""
    if isinstance(value, bool) or value is None:
        return ("v", value)
    if isinstance(value, (int, float, decimal.Decimal)):
        return ("f", float(value) + 0.0)
    if isinstance(value, list):
        # An array's items alike: [1.0, 2.0] as [1, 2].
        return ("j", repr([loose(v) for v in value]))
    return normal(value)


def rows_alike(a, b):
    """`a` and `b` the same rows, numbers to Trino's rounding of a DECIMAL
    average (DuckDB's is a DOUBLE)."""
    return same_rows(a, b, form=loose, rel=1e-6, absolute=0.006)


def for_duckdb(sql):
    """`sql` in DuckDB's words where they differ from Trino's: its
    `count_if` over no rows is NULL, Trino's 0."""
    out, i = [], 0
    while (j := sql.find("count_if(", i)) >= 0:
        depth, quoted, k = 0, False, j + len("count_if")
        while True:
            quoted ^= sql[k] == "'"
            depth += 0 if quoted else {"(": 1, ")": -1}.get(sql[k], 0)
            if depth == 0:
                break
            k += 1
        out.append(f"{sql[i:j]}count(nullif({for_duckdb(sql[j + len('count_if('):k])}, false))")
        i = k + 1
    return "".join(out) + sql[i:]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(binary, data, settings):
    port = free_port()
    args = [binary, "serve", "--port", str(port), "--catalog", data]
    for s in settings:
        args += ["-c", s]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    return proc, port


# Rows compared at most: a query answering more (a join of every row with
# every row) is too big to compare here, not wrong; fetching it whole held
# the fuzzer's memory past the machine's.
ROW_CAP = 200_000
TOO_MANY_ROWS = f"more than {ROW_CAP} rows"


def run(port, sql):
    conn = trino.dbapi.connect(host="127.0.0.1", port=port, user="fuzz", catalog="squall", schema="default")
    cur = conn.cursor()
    try:
        cur.execute(sql)
        rows = cur.fetchmany(ROW_CAP + 1)
        if len(rows) > ROW_CAP:
            cur.cancel()
            return "error", TOO_MANY_ROWS
        return "ok", rows
    except Exception as e:  # noqa: BLE001 — every failure is compared
        return "error", str(e).split("\n")[0][:300]


def duck_rows(duck, sql):
    """DuckDB's rows for `sql`, or None where it refuses or answers more
    than ROW_CAP rows."""
    try:
        d = duck.execute(for_duckdb(sql)).fetchmany(ROW_CAP + 1)
    except Exception:  # noqa: BLE001 — DuckDB's dialect is not Trino's
        return None
    return d if len(d) <= ROW_CAP else None


def judge(i, sql, a, b, duck, seed):
    """1 if query `i` answered one task (`a`) and staged (`b`) differs, or
    (with `duck`) differs from DuckDB's answer; printed."""
    timed_out = [x[0] == "error" and any(m in str(x[1]) for m in (
                     "exceeded the timeout", "INSUFFICIENT_RESOURCES",
                     "EXCEEDED_LOCAL_MEMORY_LIMIT", TOO_MANY_ROWS))
                 for x in (a, b)]
    if any(timed_out):
        # Slow or big is not wrong; say so, compare nothing.
        print(f"--- too slow or too big (query {i}): {timed_out}\n{sql}")
        return 0
    findings = 0
    same = (a[0] == b[0] == "error") or (a[0] == b[0] == "ok" and rows_equal(a[1], b[1]))
    if duck is not None and a[0] == "ok":
        d = duck_rows(duck, sql)
        if d is not None and not rows_alike(a[1], [list(r) for r in d]):
            findings += 1
            print(f"--- finding against DuckDB (query {i}, seed {seed})\n{sql}")
            print(f"  squall: {str(a[1])[:600]}")
            print(f"  duckdb: {str(d)[:600]}")
    elif duck is not None and a[0] == "error":
        if duck_rows(duck, sql) is not None:
            print(f"--- squall refuses, DuckDB answers (query {i})\n{sql}\n  squall: {a[1]}")
    if not same:
        findings += 1
        print(f"--- finding (query {i}, seed {seed})\n{sql}")
        print(f"  one task: {a[0]} {str(a[1])[:600]}")
        print(f"  staged:   {b[0]} {str(b[1])[:600]}")
    sys.stdout.flush()
    return findings


def main():
    # A timeout's SIGTERM ends the run as an exception would: servers stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(2))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--squall", default="target/debug/squall")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--duckdb", action="store_true",
                    help="also compare the one-task answer with DuckDB's (an engine of its own; "
                         "a query DuckDB refuses is skipped, one squall alone refuses is listed)")
    ap.add_argument("--text", action="store_true",
                    help="write `g` as CSV and `h` as JSON lines (not with --duckdb)")
    ap.add_argument("--log", help="append each query to this file before it runs")
    ap.add_argument("--data", help="write the tables here (kept) instead of a temporary folder")
    ap.add_argument("--staged-config", action="append", default=[], metavar="KEY=VALUE",
                    help="a setting more for the staged server (repeatable), e.g. "
                         "squall.query.memory_limit_bytes=4000000 to make its sorts and "
                         "aggregations spill")
    ap.add_argument("--parallel", type=int, default=1,
                    help="queries the staged server answers at once (their answers compared each "
                         "with its own one-task answer)")
    args = ap.parse_args()
    rnd = random.Random(args.seed)
    data = args.data or tempfile.mkdtemp(prefix="squall-fuzz-")
    if os.path.exists(data):
        shutil.rmtree(data)
    if args.text and args.duckdb:
        ap.error("--text tables are not read by the DuckDB reference")
    write_tables(data, rnd, args.text)
    if args.text:
        COLUMNS["h"]["ts"] = "str"
    limit = "squall.query.timeout_secs=60"
    # Small batches: DataFusion must answer alike whatever their size.
    one, one_port = serve(args.squall, data, [limit, "datafusion.execution.batch_size=37"])
    staged, staged_port = serve(args.squall, data, [limit,
        "squall.query.single_task_bytes=0",
        "squall.scan.target_task_bytes=8000",
        "squall.shuffle.partitions=5",
        "squall.shuffle.two_level_min_requests=1",
    ] + args.staged_config)
    duck = None
    if args.duckdb:
        import duckdb
        duck = duckdb.connect()
        # The reference must not take the machine: a query DuckDB cannot
        # answer in 4 GB is one it does not answer (nothing compared).
        duck.execute("SET memory_limit = '4GB'")
        duck.execute("SET threads = 2")
        for t in COLUMNS:
            # Tables, not views of the files: DuckDB 2.0.1 answered a CTE
            # joined with itself over a view of Hive folders wrongly.
            duck.execute(f"CREATE TABLE {t} AS SELECT {', '.join(COLUMNS[t])} FROM read_parquet("
                         f"'{data}/{t}/**/*.parquet', union_by_name=true, hive_partitioning=true)")
    findings = errors = 0
    try:
        gen = Gen(rnd)
        pool = concurrent.futures.ThreadPoolExecutor(args.parallel)
        for first in range(0, args.queries, args.parallel):
            batch = []
            for i in range(first, min(first + args.parallel, args.queries)):
                gen.alias_n = 0
                batch.append((i, gen.query()))
                if args.log:
                    with open(args.log, "a") as log:
                        print(f"{i}: {batch[-1][1]}", file=log)
            # The staged server answers the batch at once; one task, in turn.
            staged_answers = pool.map(lambda q: run(staged_port, q[1]), batch)
            one_answers = [run(one_port, sql) for _, sql in batch]
            for (i, sql), a, b in zip(batch, one_answers, list(staged_answers)):
                errors += a[0] == "error"
                findings += judge(i, sql, a, b, duck, args.seed)
    finally:
        for p in (one, staged):
            p.send_signal(signal.SIGTERM)
            p.wait(timeout=30)
        if not args.data:
            shutil.rmtree(data, ignore_errors=True)
    print(f"{args.queries} queries, {findings} findings, {errors} refused by both or one")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
