#!/usr/bin/env python3
"""TPC-H tables as other tools write them, to run the 22 queries on users'
layouts rather than squall's own.

usage:
  layouts.py SRC OUT

SRC is a data folder `squall tpch gen` wrote (data/tpch/sf0.1); OUT gets one
folder per layout, each holding the eight tables:

  hive     DuckDB: lineitem hive-partitioned by l_returnflag/l_linestatus
           (those columns only in the folder names, 5,000-row row groups),
           orders in 40 files sorted by date (1,000-row row groups), zstd,
           gzip and snappy files
  csv      DuckDB: one CSV file a table, with a header
  csv_gz   the same, gzipped
  jsonl    DuckDB: JSON lines (dates as text, money as JSON numbers)
  doubles  DuckDB: every DECIMAL as DOUBLE, every DATE as TIMESTAMP, every
           BIGINT as INTEGER (as many exports hold money and keys)
  plain    pyarrow: 777-row row groups without statistics (lz4), orders
           with brotli, data page v2, no dictionaries and an empty file
           beside it
  spark    pyarrow: Spark's names (part-00000-<uuid>.c000.zstd.parquet),
           `_SUCCESS` and `.crc` files, large strings, DECIMAL(12,2) money

then, for each: `squall tpch run --sf 0.1 --data OUT/<layout>` (the answers
are checked against the TPC-H answers of the scale factor; a folder squall
did not generate is read as it is). Needs duckdb and pyarrow.
"""
import glob
import gzip
import os
import shutil
import sys
import uuid

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

TABLES = ["customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier"]


def duck(src):
    con = duckdb.connect()
    for t in TABLES:
        con.execute(f"create view {t} as select * from read_parquet('{src}/{t}/*.parquet')")
    return con


def hive(con, out):
    con.execute(f"copy (select * from lineitem) to '{out}/lineitem' "
                "(format parquet, partition_by (l_returnflag, l_linestatus), row_group_size 5000)")
    os.makedirs(f"{out}/orders")
    for i in range(40):
        con.execute(f"copy (select * from orders where o_orderkey % 40 = {i} order by o_orderdate) "
                    f"to '{out}/orders/part-{i:03}.parquet' (format parquet, row_group_size 1000)")
    for t, codec in [("customer", "zstd"), ("partsupp", "snappy"), ("nation", "gzip"),
                     ("region", "gzip"), ("supplier", "gzip"), ("part", "gzip")]:
        os.makedirs(f"{out}/{t}")
        con.execute(f"copy (select * from {t}) to '{out}/{t}/data.parquet' "
                    f"(format parquet, compression {codec})")


def text(con, out, fmt, gz=False):
    for t in TABLES:
        os.makedirs(f"{out}/{t}")
        path = f"{out}/{t}/{t}.{'csv' if fmt == 'csv' else 'jsonl'}"
        options = "format csv, header true" if fmt == "csv" else "format json"
        con.execute(f"copy (select * from {t}) to '{path}' ({options})")
        if gz:
            with open(path, "rb") as f, gzip.open(path + ".gz", "wb") as g:
                shutil.copyfileobj(f, g)
            os.remove(path)


def doubles(con, out):
    for t in TABLES:
        os.makedirs(f"{out}/{t}")
        columns = []
        for name, typ, *_ in con.execute(f"describe {t}").fetchall():
            if typ.startswith("DECIMAL"):
                columns.append(f"cast({name} as double) as {name}")
            elif typ == "DATE":
                columns.append(f"cast({name} as timestamp) as {name}")
            elif typ == "BIGINT":
                columns.append(f"cast({name} as integer) as {name}")
            else:
                columns.append(name)
        con.execute(f"copy (select {', '.join(columns)} from {t}) to '{out}/{t}/{t}.parquet' "
                    "(format parquet)")


def read(src, t):
    return pq.read_table(sorted(glob.glob(f"{src}/{t}/*.parquet")))


def plain(src, out):
    for t in TABLES:
        os.makedirs(f"{out}/{t}")
        table = read(src, t)
        if t == "orders":
            pq.write_table(table, f"{out}/{t}/o.parquet", compression="brotli",
                           use_dictionary=False, data_page_version="2.0")
            pq.write_table(table.slice(0, 0), f"{out}/{t}/empty.parquet")
        else:
            pq.write_table(table, f"{out}/{t}/{t}.parquet", row_group_size=777,
                           write_statistics=False, compression="lz4")


def spark(src, out):
    os.makedirs(out)
    open(f"{out}/_SUCCESS", "w").close()
    for t in TABLES:
        table = read(src, t)
        fields = []
        for f in table.schema:
            ty = f.type
            if pa.types.is_string(ty) or pa.types.is_string_view(ty):
                ty = pa.large_string()
            elif pa.types.is_decimal(ty):
                ty = pa.decimal128(12, 2)
            fields.append(pa.field(f.name, ty, True))
        table = table.cast(pa.schema(fields))
        os.makedirs(f"{out}/{t}")
        open(f"{out}/{t}/_SUCCESS", "w").close()
        n = table.num_rows
        parts = 3 if n > 100_000 else 1
        for i in range(parts):
            name = f"part-{i:05}-{uuid.uuid4()}.c000.zstd.parquet"
            piece = table.slice(i * n // parts, (i + 1) * n // parts - i * n // parts)
            pq.write_table(piece, f"{out}/{t}/{name}", row_group_size=50_000,
                           compression="zstd", compression_level=9)
            with open(f"{out}/{t}/.{name}.crc", "w") as crc:
                crc.write("x")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, out = sys.argv[1], sys.argv[2]
    con = duck(src)
    makers = {
        "hive": lambda o: hive(con, o),
        "csv": lambda o: text(con, o, "csv"),
        "csv_gz": lambda o: text(con, o, "csv", gz=True),
        "jsonl": lambda o: text(con, o, "json"),
        "doubles": lambda o: doubles(con, o),
        "plain": lambda o: plain(src, o),
        "spark": lambda o: spark(src, o),
    }
    for name, make in makers.items():
        folder = os.path.join(out, name)
        if os.path.exists(folder):
            sys.exit(f"{folder} exists; name a new OUT folder")
        if name != "spark":
            os.makedirs(folder)
        make(folder)
        print(f"{folder}: squall tpch run --sf <SF> --data {folder}")


if __name__ == "__main__":
    main()
