"""Writes the Iceberg tables the engine tests read (`iceberg_tables.rs`),
with pyiceberg (`pip install "pyiceberg[sql-sqlite,pyarrow,pyiceberg-core]"`):

  sales    4 appends to a table partitioned by region, a DELETE of id < 15
           (a copy-on-write rewrite: the old files stay in the folder), an
           overwrite of region 'eu': 7 live rows, in 2 of the 10 data files on disk.
  renamed  one append, then a column renamed (v to w).

They are written under /tmp/squall-iceberg-fixture (the location their
metadata records, absolute paths) and copied here; the tests read them
from another folder, as a table moved with its folder.

  python3 planner/tests/data/iceberg/make.py
"""
import datetime
import decimal
import os
import shutil

import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import DecimalType, LongType, NestedField, StringType, TimestamptzType

WORK = "/tmp/squall-iceberg-fixture"
HERE = os.path.dirname(os.path.abspath(__file__))
shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
catalog = SqlCatalog("fixture", uri=f"sqlite:///{WORK}/catalog.db", warehouse=f"file://{WORK}/warehouse")
catalog.create_namespace("db")

schema = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "region", StringType(), required=False),
    NestedField(3, "amount", DecimalType(12, 2), required=False),
    NestedField(4, "ts", TimestamptzType(), required=False),
)
spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="region"))
sales = catalog.create_table("db.sales", schema=schema, partition_spec=spec)
utc = datetime.timezone.utc
for i in range(4):
    sales.append(pa.table({
        "id": pa.array([i * 10 + k for k in range(6)], pa.int64()),
        "region": pa.array(["eu" if k % 2 else "us east" for k in range(6)]),
        "amount": pa.array([decimal.Decimal(f"{i}.{k}5") for k in range(6)], pa.decimal128(12, 2)),
        "ts": pa.array([datetime.datetime(2024, 1, 1 + i, k, tzinfo=utc) for k in range(6)], pa.timestamp("us", tz="UTC")),
    }))
sales = catalog.load_table("db.sales")
sales.delete("id < 15")
sales = catalog.load_table("db.sales")
sales.overwrite(
    pa.table({
        "id": pa.array([1000], pa.int64()),
        "region": ["eu"],
        "amount": pa.array([decimal.Decimal("1.00")], pa.decimal128(12, 2)),
        "ts": pa.array([datetime.datetime(2025, 1, 1, tzinfo=utc)], pa.timestamp("us", tz="UTC")),
    }),
    overwrite_filter="region = 'eu'",
)

renamed = catalog.create_table("db.renamed", schema=Schema(NestedField(1, "k", LongType()), NestedField(2, "v", StringType())))
renamed.append(pa.table({"k": pa.array([1], pa.int64()), "v": ["a"]}))
with catalog.load_table("db.renamed").update_schema() as update:
    update.rename_column("v", "w")

for name in ["sales", "renamed"]:
    target = os.path.join(HERE, name)
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(os.path.join(WORK, "warehouse", "db", name), target)
print(catalog.load_table("db.sales").scan().to_arrow().sort_by("id").to_pydict())
