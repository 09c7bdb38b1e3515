"""Writes the Iceberg tables the engine tests read (`iceberg_tables.rs`),
with pyiceberg (`pip install "pyiceberg[sql-sqlite,pyarrow,pyiceberg-core]"`):

  sales    4 appends to a table partitioned by region, a DELETE of id < 15
           (a copy-on-write rewrite: the old files stay in the folder), an
           overwrite of region 'eu': 7 live rows, in 2 of the 10 data files on disk.
  renamed  one append, a column renamed (v to w), a column added by the
           old name (v, another field id), a second append, a struct column
           s added, a third append, its field renamed (s.x to s.z), a fourth
           append: (1, a, NULL, NULL), (2, b, x, NULL), (3, c, y, {z: 5}),
           (4, d, w, {z: 6}) as Iceberg reads them by id.
  merged   merge-on-read deletes, as Athena, Trino and Spark write them:
           two appends to a table partitioned by region, then two commits
           of position delete files (Parquet of file_path, pos) deleting
           rows of the second append's files, then a third append: 30 rows
           written, 25 live. pyiceberg does not write position deletes; its
           own manifest writers and snapshot producer commit them here, and
           its reader applies them (the answer printed last).

They are written under /tmp/squall-iceberg-fixture (the location their
metadata records, absolute paths) and copied here; the tests read them
from another folder, as a table moved with its folder.

  python3 planner/tests/data/iceberg/make.py [TABLE...]   (all by default)
"""
import datetime
import decimal
import os
import shutil
import sys
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat, ManifestContent, ManifestWriterV2
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.typedef import Record
from pyiceberg.types import DecimalType, LongType, NestedField, StringType, StructType, TimestamptzType

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
# The name v again, for another column (field id 3): the first file's v is not it.
with catalog.load_table("db.renamed").update_schema() as update:
    update.add_column("v", StringType())
catalog.load_table("db.renamed").append(pa.table({
    "k": pa.array([2], pa.int64()), "w": pa.array(["b"], pa.large_string()), "v": pa.array(["x"], pa.large_string()),
}))
# A struct column, then its field renamed (s.x to s.z) between two appends.
with catalog.load_table("db.renamed").update_schema() as update:
    update.add_column("s", StructType(NestedField(5, "x", LongType(), required=False)))
struct = pa.struct([pa.field("x", pa.int64())])
catalog.load_table("db.renamed").append(pa.table({
    "k": pa.array([3], pa.int64()), "w": pa.array(["c"], pa.large_string()), "v": pa.array(["y"], pa.large_string()),
    "s": pa.array([{"x": 5}], struct),
}))
with catalog.load_table("db.renamed").update_schema() as update:
    update.rename_column(("s", "x"), "z")
catalog.load_table("db.renamed").append(pa.table({
    "k": pa.array([4], pa.int64()), "w": pa.array(["d"], pa.large_string()), "v": pa.array(["w"], pa.large_string()),
    "s": pa.array([{"z": 6}], pa.struct([pa.field("z", pa.int64())])),
}))


class DeleteManifestWriter(ManifestWriterV2):
    """A manifest of delete files (pyiceberg writes data manifests only)."""

    def content(self):
        return ManifestContent.DELETES


def position_deletes(table, rows):
    """Commits a position delete file per partition of `rows` ((data file, position, region))."""
    tx = table.transaction()
    producer = tx.update_snapshot().fast_append()

    def writer(spec):
        name = f"{table.location()}/metadata/{producer.commit_uuid}-d{next(producer._manifest_num_counter)}.avro"
        return DeleteManifestWriter(spec, tx.table_metadata.schema(), producer._io.new_output(name), producer._snapshot_id, "deflate")

    producer.new_manifest_writer = writer
    by_region = {}
    for path, pos, region in rows:
        by_region.setdefault(region, []).append((path, pos))
    for region, entries in sorted(by_region.items()):
        entries.sort()
        path = f"{table.location()}/data/region={region}/deletes-{uuid.uuid4()}.parquet"
        local = path.removeprefix("file://")
        os.makedirs(os.path.dirname(local), exist_ok=True)
        fields = [
            pa.field("file_path", pa.string(), nullable=False, metadata={"PARQUET:field_id": "2147483546"}),
            pa.field("pos", pa.int64(), nullable=False, metadata={"PARQUET:field_id": "2147483545"}),
        ]
        columns = [pa.array([e[0] for e in entries]), pa.array([e[1] for e in entries], pa.int64())]
        pq.write_table(pa.table(columns, schema=pa.schema(fields)), local)
        producer.append_data_file(DataFile.from_args(
            content=DataFileContent.POSITION_DELETES, file_path=path, file_format=FileFormat.PARQUET,
            partition=Record(region), record_count=len(entries), file_size_in_bytes=os.path.getsize(local),
            _table_format_version=2,
        ))
    producer.commit()
    tx.commit_transaction()


merged = catalog.create_table(
    "db.merged",
    schema=Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "region", StringType(), required=False)),
    partition_spec=PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="region")),
)


def append_ids(table, first):
    table.append(pa.table({
        "id": pa.array([first + k for k in range(10)], pa.int64()),
        "region": ["eu" if k < 5 else "us" for k in range(10)],
    }))


append_ids(merged, 0)
before = {task.file.file_path for task in catalog.load_table("db.merged").scan().plan_files()}
append_ids(merged, 100)
merged = catalog.load_table("db.merged")
second = sorted(task.file.file_path for task in merged.scan().plan_files() if task.file.file_path not in before)
eu, us = [p for p in second if "region=eu" in p][0], [p for p in second if "region=us" in p][0]
# ids 101, 103 (eu) and 105, 109 (us); then 102 (eu) in a second commit.
position_deletes(merged, [(eu, 1, "eu"), (eu, 3, "eu"), (us, 0, "us"), (us, 4, "us")])
position_deletes(catalog.load_table("db.merged"), [(eu, 2, "eu")])
append_ids(catalog.load_table("db.merged"), 200)

for name in sys.argv[1:] or ["sales", "renamed", "merged"]:
    target = os.path.join(HERE, name)
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(os.path.join(WORK, "warehouse", "db", name), target)
print(catalog.load_table("db.sales").scan().to_arrow().sort_by("id").to_pydict())
print(catalog.load_table("db.merged").scan().to_arrow().sort_by("id").to_pydict())
print(catalog.load_table("db.renamed").scan().to_arrow().sort_by("k").to_pydict())
