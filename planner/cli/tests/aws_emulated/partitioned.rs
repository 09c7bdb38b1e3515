//! Partitioned data on the aws backend: TPC-H orders of the stack's SF 0.1
//! written by order year and priority (`o_year=1995/o_orderpriority=...`),
//! uploaded to `s3://squall-local/partitioned/orders_p/`, and registered as
//! a table of the emulated Glue Data Catalog (database `squall_test`, one
//! Glue partition per folder). The same statements through the `s3://`
//! catalog and through `glue://squall_test`, every task an emulated Lambda
//! invocation, equal the embedded backend's answers on the local folders;
//! EXPLAIN through Glue counts the partitions pruned. The same files in
//! one folder named as Athena's CTAS names them (no `.parquet`), a Glue
//! table of their own, read whole; and as a Delta table whose later commit
//! removed a partition's files (left in the folder), through S3 and
//! through Glue (`table_type` DELTA), its live files only; and an Iceberg
//! table (pyiceberg's), through S3 and Glue (`table_type` ICEBERG).

use std::path::Path;
use std::process::Command;

use squall_tpch::compare::compare_csv;

use crate::Stack;

const BUCKET_PREFIX: &str = "s3://squall-local/partitioned";

const STATEMENTS: &[&str] = &[
    "select o_year, o_orderpriority, count(*), sum(o_totalprice) from orders_p group by 1, 2 order by 1, 2",
    "select o_orderpriority, count(*), sum(o_totalprice) from orders_p where o_year = 1995 group by 1 order by 1",
    "select count(*), min(o_orderdate), max(o_orderkey) from orders_p where o_year >= 1997 and o_orderpriority = '1-URGENT'",
];

/// pyiceberg's tables the planner's tests read.
fn iceberg_fixture() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/iceberg")
}

/// The Delta table's statement (`{t}` the table; its WHERE and GROUP BY follow).
const DELTA_SQL: &str =
    "select o_year, o_orderpriority, count(*), sum(o_totalprice), max(o_comment) from {t}";

fn ok_stdout(what: &str, out: std::process::Output) -> String {
    assert!(
        out.status.success(),
        "{what}: exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).to_string()
}

/// Writes the partitioned table under `dir/orders_p` with the embedded backend.
fn write_partitioned(stack: &Stack, dir: &Path) {
    let sql = format!(
        "copy (select *, cast(date_part('year', o_orderdate) as int) as o_year from orders) \
         to '{}/orders_p/' stored as parquet partitioned by (o_year, o_orderpriority)",
        dir.display()
    );
    let data = stack.data_dir().display().to_string();
    let out = stack.squall(&[
        "query",
        "--backend",
        "local",
        "--catalog",
        &data,
        "--config",
        "squall.catalog.allowed_roots=*",
        &sql,
    ]);
    ok_stdout("writing the partitioned table", out);
}

/// Uploads `dir/orders_p` and registers it in Glue, partition by partition.
fn upload_and_register(stack: &Stack, dir: &Path) -> (String, String) {
    let script = r#"
import boto3, os, sys
root = sys.argv[1]
s3 = boto3.client('s3'); glue = boto3.client('glue')
base = 's3://squall-local/partitioned/orders_p/'
parts = set()
for folder, _, files in os.walk(os.path.join(root, 'orders_p')):
    for f in files:
        path = os.path.join(folder, f)
        key = 'partitioned/' + os.path.relpath(path, root)
        s3.upload_file(path, 'squall-local', key)
        parts.add(os.path.dirname(os.path.relpath(path, os.path.join(root, 'orders_p'))))
try:
    glue.delete_database(Name='squall_test')
except glue.exceptions.EntityNotFoundException:
    pass
glue.create_database(DatabaseInput={'Name': 'squall_test'})
parquet = {
    'InputFormat': 'org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat',
    'OutputFormat': 'org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat',
    'SerdeInfo': {'SerializationLibrary': 'org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe'},
}
columns = [{'Name': n, 'Type': t} for n, t in [
    ('o_orderkey', 'bigint'), ('o_custkey', 'bigint'), ('o_orderstatus', 'string'),
    ('o_totalprice', 'decimal(15,2)'), ('o_orderdate', 'date'), ('o_clerk', 'string'),
    ('o_shippriority', 'int'), ('o_comment', 'string')]]
glue.create_table(DatabaseName='squall_test', TableInput={
    'Name': 'orders_p', 'TableType': 'EXTERNAL_TABLE',
    'PartitionKeys': [{'Name': 'o_year', 'Type': 'int'}, {'Name': 'o_orderpriority', 'Type': 'string'}],
    'StorageDescriptor': dict(parquet, Columns=columns, Location=base)})
inputs = []
for p in sorted(parts):
    values = [kv.split('=', 1)[1] for kv in p.split('/')]
    inputs.append({'Values': values, 'StorageDescriptor': dict(parquet, Columns=columns, Location=base + p + '/')})
for i in range(0, len(inputs), 100):
    glue.batch_create_partition(DatabaseName='squall_test', TableName='orders_p', PartitionInputList=inputs[i:i + 100])
# The same files as Athena's CTAS leaves them: one folder, names without
# an extension, beside a bookkeeping object.
ctas = 'partitioned/orders_ctas/'
n = 0
for folder, _, files in sorted(os.walk(os.path.join(root, 'orders_p'))):
    for f in sorted(files):
        n += 1
        s3.upload_file(os.path.join(folder, f), 'squall-local', f'{ctas}20261204_101010_00001_abcde_{n}')
s3.put_object(Bucket='squall-local', Key=ctas + '_SUCCESS', Body=b'')
glue.create_table(DatabaseName='squall_test', TableInput={
    'Name': 'orders_ctas', 'TableType': 'EXTERNAL_TABLE',
    'StorageDescriptor': dict(parquet, Columns=columns, Location='s3://squall-local/' + ctas)})
# The same files as a Delta table (its log written here, as a Delta writer
# would: percent-encoded paths, partition values), then the first
# partition's files removed by a later commit but left in the folder.
import json, urllib.parse
delta = 'partitioned/orders_delta/'
adds = []
for folder, _, files in sorted(os.walk(os.path.join(root, 'orders_p'))):
    for f in sorted(files):
        rel = os.path.relpath(os.path.join(folder, f), os.path.join(root, 'orders_p'))
        s3.upload_file(os.path.join(folder, f), 'squall-local', delta + rel)
        values = dict(kv.split('=', 1) for kv in os.path.dirname(rel).split('/'))
        adds.append({'add': {'path': urllib.parse.quote(rel), 'partitionValues': values,
            'size': os.path.getsize(os.path.join(folder, f)), 'modificationTime': 1700000000000,
            'dataChange': True}})
types = [('o_orderkey', 'long'), ('o_custkey', 'long'), ('o_orderstatus', 'string'),
    ('o_totalprice', 'decimal(15,2)'), ('o_orderdate', 'date'), ('o_clerk', 'string'),
    ('o_shippriority', 'integer'), ('o_comment', 'string'), ('o_year', 'integer'),
    ('o_orderpriority', 'string')]
schema = {'type': 'struct', 'fields': [{'name': n, 'type': t, 'nullable': True, 'metadata': {}} for n, t in types]}
v0 = [{'protocol': {'minReaderVersion': 1, 'minWriterVersion': 2}},
    {'metaData': {'id': 'orders', 'format': {'provider': 'parquet', 'options': {}},
        'schemaString': json.dumps(schema), 'partitionColumns': ['o_year', 'o_orderpriority'],
        'configuration': {}, 'createdTime': 1700000000000}}] + adds
first = adds[0]['add']['partitionValues']
v1 = [{'remove': {'path': a['add']['path'], 'deletionTimestamp': 1700000000001, 'dataChange': True}}
    for a in adds if a['add']['partitionValues'] == first]
for version, actions in enumerate([v0, v1]):
    s3.put_object(Bucket='squall-local', Key=f'{delta}_delta_log/{version:020}.json',
        Body='\n'.join(json.dumps(a) for a in actions).encode())
glue.create_table(DatabaseName='squall_test', TableInput={
    'Name': 'orders_delta', 'TableType': 'EXTERNAL_TABLE', 'Parameters': {'table_type': 'DELTA'},
    'StorageDescriptor': dict(parquet, Columns=columns, Location='s3://squall-local/' + delta)})
# An Iceberg table (pyiceberg's, planner/tests/data/iceberg/sales), its
# metadata naming the folder it was written in.
ice = 'partitioned/sales_ice/'
fixture = sys.argv[2]
for folder, _, files in os.walk(fixture):
    for f in files:
        path = os.path.join(folder, f)
        s3.upload_file(path, 'squall-local', ice + os.path.relpath(path, fixture))
glue.create_table(DatabaseName='squall_test', TableInput={
    'Name': 'sales_ice', 'TableType': 'EXTERNAL_TABLE', 'Parameters': {'table_type': 'ICEBERG'},
    'StorageDescriptor': {'Columns': [], 'Location': 's3://squall-local/' + ice}})
print(len(inputs))
print(first['o_year'], first['o_orderpriority'])
"#;
    let out = Command::new("python3")
        .args([
            "-c",
            script,
            &dir.display().to_string(),
            &iceberg_fixture().join("sales").display().to_string(),
        ])
        .envs(stack.env.iter().cloned())
        .output()
        .expect("python3 with boto3");
    let printed = ok_stdout("uploading and registering in Glue", out);
    let mut lines = printed.lines();
    assert_eq!(lines.next(), Some("35"), "7 years x 5 priorities");
    let (year, priority) = lines
        .next()
        .and_then(|l| l.split_once(' '))
        .expect("the Delta table's removed partition");
    (year.to_string(), priority.to_string())
}

/// `sql`'s answer as CSV through `squall query` on `backend` over `catalog`
/// (`what` names the run in a failure).
fn query_csv(stack: &Stack, what: &str, backend: &str, catalog: &str, sql: &str) -> String {
    query_csv_with(stack, what, backend, catalog, &[], sql)
}

/// [`query_csv`] with `settings` (`KEY=VALUE`, each a `--config`).
fn query_csv_with(
    stack: &Stack,
    what: &str,
    backend: &str,
    catalog: &str,
    settings: &[&str],
    sql: &str,
) -> String {
    let mut args = vec!["query", "--backend", backend, "--catalog", catalog];
    for setting in settings {
        args.extend(["--config", setting]);
    }
    args.extend(["--format", "csv", sql]);
    ok_stdout(what, stack.squall(&args))
}

pub fn partitioned_tables(stack: &Stack) {
    let dir = tempfile::tempdir().expect("tempdir");
    write_partitioned(stack, dir.path());
    let (year, priority) = upload_and_register(stack, dir.path());
    let local = dir.path().display().to_string();
    for sql in STATEMENTS {
        let expected = query_csv(stack, "embedded", "local", &local, sql);
        for catalog in [BUCKET_PREFIX, "glue://squall_test"] {
            let actual = query_csv(stack, catalog, "aws", catalog, sql);
            let c = compare_csv(&expected, &actual, Some(sql)).expect("comparable CSV");
            assert!(c.ok, "{catalog}: {}\n{sql}", c.message);
        }
    }
    // A Glue table of files named as Athena names them (no `.parquet`).
    let ctas = "select count(*) as n, sum(o_totalprice) as total, min(o_orderdate) as first, \
                max(o_comment) as last from ";
    let expected = query_csv(
        stack,
        "embedded",
        "local",
        &local,
        &format!("{ctas} orders_p"),
    );
    let actual = query_csv(
        stack,
        "Glue, Athena's file names",
        "aws",
        "glue://squall_test",
        &format!("{ctas} orders_ctas"),
    );
    assert_eq!(actual, expected, "a Glue table of files without .parquet");
    let explain = query_csv(
        stack,
        "EXPLAIN through Glue",
        "aws",
        "glue://squall_test",
        &format!("explain {}", STATEMENTS[1]),
    );
    assert!(
        explain.contains("5 of 35 partitions (30 pruned)"),
        "{explain}"
    );
    // The Delta table: its live files only, through S3 and Glue, every
    // task a Lambda invocation reading the files the log names.
    let expected = query_csv(
        stack,
        "embedded",
        "local",
        &local,
        &format!(
            "{} where not (o_year = {year} and o_orderpriority = '{priority}') group by 1, 2 order by 1, 2",
            DELTA_SQL.replace("{t}", "orders_p")
        ),
    );
    for catalog in [BUCKET_PREFIX, "glue://squall_test"] {
        let sql = format!(
            "{} group by 1, 2 order by 1, 2",
            DELTA_SQL.replace("{t}", "orders_delta")
        );
        let actual = query_csv(stack, catalog, "aws", catalog, &sql);
        let c = compare_csv(&expected, &actual, Some(&sql)).expect("comparable CSV");
        assert!(c.ok, "Delta through {catalog}: {}\n{sql}", c.message);
    }
    // The Iceberg table: its live files only, through S3 and Glue.
    let sql =
        "select region, count(*), sum(amount), max(ts), min(id) from {t} group by 1 order by 1";
    let fixture = iceberg_fixture().display().to_string();
    let expected = query_csv(
        stack,
        "embedded",
        "local",
        &fixture,
        &sql.replace("{t}", "sales"),
    );
    for catalog in [BUCKET_PREFIX, "glue://squall_test"] {
        let sql = sql.replace("{t}", "sales_ice");
        let actual = query_csv(stack, catalog, "aws", catalog, &sql);
        let c = compare_csv(&expected, &actual, Some(&sql)).expect("comparable CSV");
        assert!(c.ok, "Iceberg through {catalog}: {}\n{sql}", c.message);
    }
    let missing = stack.squall(&[
        "query",
        "--backend",
        "aws",
        "--catalog",
        "glue://no_such_database",
        "select 1",
    ]);
    assert_eq!(missing.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(stderr.contains("no_such_database"), "{stderr}");
}

/// Text tables on the aws backend: JSON-lines files read as byte ranges of
/// S3 objects (ranged GETs, each task the lines that begin in its range),
/// CSV files with quoted line breaks and gzipped JSON lines read whole,
/// dealt to many emulated Lambda tasks, answer as the embedded backend does
/// over the same files on disk.
pub fn text_tables(stack: &Stack) {
    let dir = tempfile::tempdir().expect("tempdir");
    let put = |path: &str, bytes: &[u8]| {
        let path = dir.path().join("text").join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    };
    for f in 0..3u64 {
        let lines: String = (0..6_000)
            .map(|i| {
                let id = f * 6_000 + i;
                format!(
                    "{{\"id\":{id},\"g\":\"g{}\",\"pad\":\"{}\"}}\n",
                    id % 5,
                    "x".repeat(20)
                )
            })
            .collect();
        put(&format!("events/part{f}.jsonl"), lines.as_bytes());
        let rows: String = (0..500)
            .map(|i| format!("{},\"a note,\nover lines {i}\"\n", f * 500 + i))
            .collect();
        put(
            &format!("notes/day={f}/n.csv"),
            format!("id,note\n{rows}").as_bytes(),
        );
    }
    // 64 KiB chunks (a quarter of the task target below).
    let chunks: u64 = (0..3)
        .map(|f| {
            let path = dir.path().join(format!("text/events/part{f}.jsonl"));
            std::fs::metadata(path).unwrap().len().div_ceil(65_536)
        })
        .sum();
    // The JSON lines gzipped as a table of their own, then all uploaded.
    let script = r#"
import boto3, gzip, os, sys
root = sys.argv[1]
os.makedirs(os.path.join(root, 'zipped'))
for f in sorted(os.listdir(os.path.join(root, 'events'))):
    with open(os.path.join(root, 'events', f), 'rb') as src:
        with gzip.open(os.path.join(root, 'zipped', f + '.gz'), 'wb') as dst:
            dst.write(src.read())
s3 = boto3.client('s3')
for folder, _, files in os.walk(root):
    for f in files:
        path = os.path.join(folder, f)
        s3.upload_file(path, 'squall-local', 'text/' + os.path.relpath(path, root))
"#;
    let root = dir.path().join("text");
    let out = Command::new("python3")
        .args(["-c", script, &root.display().to_string()])
        .envs(stack.env.iter().cloned())
        .output()
        .expect("python3 with boto3");
    ok_stdout("uploading text tables", out);
    // Staged (not one task for a small query), over tasks of 256 KiB.
    let settings = [
        "squall.query.single_task_bytes=0",
        "squall.scan.target_task_bytes=262144",
    ];
    let run = |backend: &str, catalog: &str, sql: &str| {
        query_csv_with(stack, backend, backend, catalog, &settings, sql)
    };
    let local = root.display().to_string();
    for sql in [
        "select g, count(*), count(distinct id), sum(id), min(id), max(id) from events group by g order by g",
        "select day, count(*), sum(id), max(note) from notes group by day order by day",
        "select count(*), sum(z.id) from zipped z join events e on z.id = e.id and z.g = e.g",
    ] {
        let expected = run("local", &local, sql);
        let actual = run("aws", "s3://squall-local/text", sql);
        let c = compare_csv(&expected, &actual, Some(sql)).expect("comparable CSV");
        assert!(c.ok, "text tables through S3: {}\n{sql}", c.message);
    }
    let explain = run(
        "aws",
        "s3://squall-local/text",
        "explain select g, count(*) from events group by g",
    );
    assert!(
        explain.contains(&format!(
            "3 text files, 3 of them in {chunks} chunks read as byte ranges"
        )),
        "{explain}"
    );
}
