//! Tables of CSV and JSON-lines files, plain or compressed.

use crate::common::*;

/// Folders of CSV (with a header row) and JSON-lines files are tables as
/// folders of Parquet are, flat or partitioned, staged; their types are
/// inferred from their rows; quoted fields and empty values read as CSV says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn folders_of_csv_and_json_lines_files_are_tables() {
    let dir = tempfile::tempdir().unwrap();
    let put = |path: &str, text: &str| {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    put(
        "people/p.csv",
        "id,name,joined,score\n1,\"Smith, John\",2024-01-05,3.5\n2,Ann,,\n3,\"Q \"\"q\"\"\",2024-02-01,7\n",
    );
    put("sales/region=eu/a.csv", "item,qty\nA,1\nB,2\n");
    put("sales/region=us/b.csv", "item,qty\nC,5\n");
    put("tabs/t.tsv", "k\tv\n1\tx\n");
    put(
        "events/e.jsonl",
        "{\"id\":1,\"tags\":[\"a\",\"b\"]}\n{\"id\":2,\"tags\":[]}\n",
    );
    put("notes/readme.txt", "hello");
    // Quoted values holding line breaks, in a file DataFusion would read
    // as byte ranges, each from the first line break past its start.
    let mut lines = String::from("id,body\n");
    for i in 0..200 {
        lines.push_str(&format!("{i},\"row {i}\nsecond line, with a comma\n\"\n"));
    }
    put("posts/p.csv", &lines);
    // A table whose files grew a column, and whose later files write the
    // columns in another order: each file's columns by its header's names.
    put("grown/2024.csv", "id,name\n1,a\n2,b\n");
    put("grown/2025.csv", "name,region,id\nc,EU,3\n\"d, e\",US,4\n");
    put("grown/2026.csv", "region,name,id\nAP,f,5\n");
    // Excel's exports in much of Europe: `;` between fields.
    put(
        "eu/e.csv",
        "id;name;amount\n1;\"M\u{fc}ller; Hans\";3,5\n2;Ann;7\n",
    );
    let engine = engine(dir.path(), &[("squall.scan.target_task_bytes", "16")]).await;
    for (sql, want) in [
        (
            "select id, name, joined, score, typeof(joined) as t from people order by id",
            "id,name,joined,score,t\n1,\"Smith, John\",2024-01-05,3.5,date\n2,Ann,,,date\n\
             3,\"Q \"\"q\"\"\",2024-02-01,7.0,date\n",
        ),
        (
            "select region, count(*) as n, sum(qty) as q from sales group by 1 order by 1",
            "region,n,q\neu,2,3\nus,1,5\n",
        ),
        ("select v from tabs where k = 1", "v\nx\n"),
        (
            "select id, cardinality(tags) as n from events order by id",
            "id,n\n1,2\n2,0\n",
        ),
        (
            "select id, name, region from grown order by id",
            "id,name,region\n1,a,\n2,b,\n3,c,EU\n4,\"d, e\",US\n5,f,AP\n",
        ),
        (
            "select count(*) as n, count(region) as r, sum(id) as s from grown where name <> 'b'",
            "n,r,s\n4,3,13\n",
        ),
        (
            "select id, name, amount from eu order by id",
            "id,name,amount\n1,M\u{fc}ller; Hans,\"3,5\"\n2,Ann,7\n",
        ),
        (
            "select count(*) as n, sum(id) as s, min(length(body)) as lo, \
             count(*) filter (where body like 'row %' || cast(id as varchar) || '%line, with a comma%') as m \
             from posts",
            "n,s,lo,m\n200,19900,32,200\n",
        ),
    ] {
        assert_eq!(squall_csv(&engine, sql).await, want, "{sql}");
    }
    let r = engine
        .sql("select region, count(*) from sales group by 1")
        .await
        .unwrap();
    assert!(r.profile.is_some_and(|p| p.stages > 1), "runs staged");
    let err = engine
        .sql("select * from notes")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("readme.txt") && err.contains("nor CSV"),
        "{err}"
    );
}

/// Text files compressed with gzip or zstd (`.csv.gz`, `.jsonl.zst`) are
/// tables too, staged over several tasks, each file read whole; a file
/// that does not decompress fails its query naming it, and a folder that
/// mixes compressed and plain files is refused naming both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn folders_of_compressed_text_files_are_tables() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let put = |path: &str, bytes: &[u8]| {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    };
    let gzip = |text: &str| {
        let mut w = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        w.write_all(text.as_bytes()).unwrap();
        w.finish().unwrap()
    };
    let rows = |from: u32| -> String {
        let body: String = (from..from + 500)
            .map(|i| format!("{i},k{},{}.5\n", i % 3, i))
            .collect();
        format!("id,k,v\n{body}")
    };
    for (i, from) in [0, 500, 1000].into_iter().enumerate() {
        put(&format!("sales/day={i}/part.csv.gz"), &gzip(&rows(from)));
        put(&format!("plain/part{i}.csv"), rows(from).as_bytes());
    }
    let lines: String = (0..300)
        .map(|i| format!("{{\"id\":{i},\"tag\":\"t{}\"}}\n", i % 4))
        .collect();
    put(
        "events/e.jsonl.zst",
        &zstd::encode_all(lines.as_bytes(), 3).unwrap(),
    );
    let mut broken = gzip(&rows(0));
    broken.truncate(broken.len() / 2);
    put("broken/a.csv.gz", &broken);
    put("mixed/a.csv.gz", &gzip(&rows(0)));
    put("mixed/b.csv", rows(0).as_bytes());
    let engine = engine(dir.path(), &[("squall.scan.target_task_bytes", "16")]).await;
    for (sql, want) in [
        (
            "select k, count(*) as n, sum(v) as s, min(day) as d from sales group by k order by k",
            "k,n,s,d\nk0,500,374500.0,0\nk1,500,375000.0,0\nk2,500,375500.0,0\n",
        ),
        (
            "select count(*) as n from sales s join plain p on s.id = p.id and s.v = p.v",
            "n\n1500\n",
        ),
        (
            "select tag, count(*) as n, max(id) as m from events group by tag order by tag",
            "tag,n,m\nt0,75,296\nt1,75,297\nt2,75,298\nt3,75,299\n",
        ),
    ] {
        assert_eq!(squall_csv(&engine, sql).await, want, "{sql}");
    }
    let r = engine
        .sql("select k, count(*) from sales group by k")
        .await
        .unwrap();
    assert!(
        r.profile.is_some_and(|p| p.tasks >= 3),
        "one task per file at least"
    );
    let err = engine
        .sql("select count(*) from broken")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("broken/a.csv.gz"), "{err}");
    let err = engine
        .sql("select count(*) from mixed")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("mixes") && err.contains("a.csv.gz") && err.contains("b.csv"),
        "{err}"
    );
}

/// Column types come from many rows, not DataFusion's first 1,000: a
/// column empty there is text (it read as NULL throughout), numbers there
/// and text later read as text; past the rows inferred from, a value not
/// of its column's type fails naming the file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_column_types_come_from_many_rows() {
    let dir = tempfile::tempdir().unwrap();
    let put = |path: &str, rows: usize, last: &str| {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut text = String::from("id,v,e\n");
        for i in 0..rows {
            text.push_str(&format!("{i},{i},\n"));
        }
        text.push_str(&format!("{rows},{last},{last}\n"));
        std::fs::write(path, text).unwrap();
    };
    put("late/l.csv", 3000, "abc");
    put("past/l.csv", 100_000, "abc");
    let engine = engine(dir.path(), &[]).await;
    assert_eq!(
        squall_csv(
            &engine,
            "select count(*) as n, count(e) as e, max(e) as m, typeof(v) as t, \
             count(*) filter (where v = 'abc') as a from late group by typeof(v)"
        )
        .await,
        "n,e,m,t,a\n3001,1,abc,varchar,1\n"
    );
    let err = engine
        .sql("select max(v) from past")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("reading file")
            && err.contains("past/l.csv")
            && err.contains("first 100,000 rows"),
        "{err}"
    );
}

/// JSON as users' files hold it: a field whose values mix numbers, text and
/// booleans is text, each value as written (DataFusion's reader failed the
/// query on the first number); a file of one JSON array (what many tools
/// export), plain or compressed, is its elements, read whole; a big file
/// of JSON lines is read in byte ranges, and every row is read once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_fields_of_mixed_types_and_json_arrays_are_read() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let put = |path: &str, bytes: &[u8]| {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    };
    put(
        "mixed/a.jsonl",
        br#"{"id":1,"v":10}
{"id":2,"v":"abc"}
{"id":3,"v":2.5}
{"id":4,"v":true}
{"id":5,"v":null}
{"id":6}
"#,
    );
    // About 400 kB: read as several byte ranges, numbers and text mixed.
    let mut big = String::new();
    for i in 0..8000 {
        match i % 3 {
            0 => big.push_str(&format!("{{\"n\":{i},\"tag\":{i}}}\n")),
            1 => big.push_str(&format!(
                "{{\"n\":{i},\"tag\":\"t{i}\",\"pad\":\"{}\"}}\n",
                "x".repeat(80)
            )),
            _ => big.push_str(&format!("{{\"n\":{i},\"tag\":false}}\n")),
        }
    }
    put("big/b.jsonl", big.as_bytes());
    put(
        "exported/a.json",
        b"[\n  {\"id\": 1, \"name\": \"a, [b]\", \"v\": 1},\n  {\"id\": 2, \"name\": \"}{\", \"v\": \"two\"}\n]\n",
    );
    let many: Vec<String> = (3..=1000)
        .map(|i| format!("{{\"id\":{i},\"name\":\"n{i}\",\"v\":{i}}}"))
        .collect();
    put(
        "exported/b.json",
        format!("[{}]", many.join(",")).as_bytes(),
    );
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(b"\xEF\xBB\xBF [{\"k\":\"x\"},{\"k\":\"y\"}]")
        .unwrap();
    put("zipped/z.json.gz", &gz.finish().unwrap());
    put("broken/a.json", b"[{\"k\":1},{\"k\":");
    let engine = engine(
        dir.path(),
        &[
            ("squall.scan.target_task_bytes", "16"),
            ("datafusion.execution.target_partitions", "4"),
        ],
    )
    .await;
    for (sql, want) in [
        (
            "select id, v, typeof(v) as t from mixed order by id",
            "id,v,t\n1,10,varchar\n2,abc,varchar\n3,2.5,varchar\n4,true,varchar\n5,,varchar\n6,,varchar\n",
        ),
        (
            "select count(*) as n, sum(n) as s, count(distinct tag) as d, \
             count(*) filter (where tag = 'false') as f, max(length(pad)) as p from big",
            "n,s,d,f,p\n8000,31996000,5335,2666,80\n",
        ),
        (
            "select count(*) as n, sum(id) as s, min(name) as lo, \
             max(case when id = 2 then v end) as two from exported",
            "n,s,lo,two\n1000,500500,\"a, [b]\",two\n",
        ),
        ("select k from zipped order by k", "k\nx\ny\n"),
    ] {
        assert_eq!(squall_csv(&engine, sql).await, want, "{sql}");
    }
    let err = engine
        .sql("select * from broken")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("broken/a.json"), "{err}");
}

/// A text table's scan is dealt to tasks as Parquet row groups are: files
/// of JSON lines in chunks of bytes (each task reading the lines that begin
/// in its range), CSV, compressed and JSON-array files whole, one task or
/// another each. Chunk edges land at a line's start, one byte into it, on
/// its line break and one byte before: no line is lost or read twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_scans_are_dealt_to_tasks_by_files_and_byte_ranges() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let put = |path: &str, bytes: &[u8]| {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    };
    // Lines of exactly `len` bytes, line break included.
    let line = |id: u64, len: usize| {
        let head = format!("{{\"id\":{id},\"g\":\"g{}\",\"p\":\"", id % 7);
        let pad = len - head.len() - 3;
        format!("{head}{}\"}}\n", "x".repeat(pad))
    };
    // 64 KiB chunks (a quarter of the task target); 64-byte lines after a
    // first line of 1,535 to 1,538 bytes: every chunk edge (a multiple of
    // 65,536) lands at the same place in a line, a different one per file.
    let mut id = 0u64;
    for (f, first) in [1535usize, 1536, 1537, 1538].into_iter().enumerate() {
        let mut text = line(id, first);
        id += 1;
        for _ in 0..20_000 {
            text.push_str(&line(id, 64));
            id += 1;
        }
        if f == 3 {
            text.pop(); // the last line without its line break
        }
        put(&format!("lines/part{f}.jsonl"), text.as_bytes());
    }
    let total = id;
    let gzip = |text: &str| {
        let mut w = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        w.write_all(text.as_bytes()).unwrap();
        w.finish().unwrap()
    };
    for day in 0..6u64 {
        let body: String = (0..400)
            .map(|i| format!("{},k{},\"a, \"\"b\"\"\nc{i}\"\n", day * 400 + i, i % 5))
            .collect();
        put(
            &format!("sales/day={day}/part.csv"),
            format!("id,k,note\n{body}").as_bytes(),
        );
        let lines: String = (0..300).map(|i| line(day * 300 + i, 40)).collect();
        put(&format!("zipped/part{day}.jsonl.gz"), &gzip(&lines));
        let array: Vec<String> = (0..50)
            .map(|i| format!("{{\"id\":{},\"v\":{i}}}", day * 50 + i))
            .collect();
        put(
            &format!("arrays/part{day}.json"),
            format!("[{}]", array.join(",\n")).as_bytes(),
        );
    }
    // Empty files beside others, and alone.
    put("blank/a.csv", b"");
    put("blank/b.csv", b"id,v\n1,x\n2,y\n");
    put("blank/c.csv", b"");
    put("void/a.jsonl", b"");
    // One CSV file of many reads, its quoted values holding line breaks:
    // its types are inferred from chunks that end between records.
    let long: String = (0..20_000)
        .map(|i| format!("{i},\"line {i}\nof \"\"{i}\"\"\"\n"))
        .collect();
    put("long/p.csv", format!("id,note\n{long}").as_bytes());
    let engine = engine(
        dir.path(),
        &[
            ("squall.scan.target_task_bytes", "262144"),
            ("squall.scan.min_tasks", "4"),
        ],
    )
    .await;
    let reference = single_node(dir.path()).await;
    let sum: u64 = (0..total).sum();
    for (sql, want) in [
        (
            "select count(*) as n, count(distinct id) as d, sum(id) as s, min(id) as lo, max(id) as hi from lines",
            Some(format!(
                "n,d,s,lo,hi\n{total},{total},{sum},0,{}\n",
                total - 1
            )),
        ),
        (
            "select g, count(*) as n, sum(id) as s from lines group by g order by g",
            None,
        ),
        (
            "select day, k, count(*) as n, sum(id) as s, min(note) as m from sales group by 1, 2 order by 1, 2",
            None,
        ),
        (
            "select count(*) as n, count(distinct id) as d, sum(id) as s from zipped",
            Some("n,d,s\n1800,1800,1619100\n".to_string()),
        ),
        (
            "select v, count(*) as n, sum(id) as s from arrays group by v order by v",
            None,
        ),
        (
            "select count(*) as n from lines l join zipped z on l.id = z.id and l.g = z.g",
            Some("n\n1800\n".to_string()),
        ),
        (
            "select count(*) as n, count(distinct note) as d, sum(id) as s, max(note) as m from long",
            Some("n,d,s,m\n20000,20000,199990000,\"line 9999\nof \"\"9999\"\"\"\n".to_string()),
        ),
    ] {
        let got = squall_csv(&engine, sql).await;
        assert_eq!(got, single_node_csv(&reference, sql).await, "{sql}");
        if let Some(want) = want {
            assert_eq!(got, want, "{sql}");
        }
    }
    // The scan stages run as many tasks: the lines' by their chunks, the
    // others' by their files.
    for (table, at_least) in [("lines", 16), ("sales", 4), ("zipped", 4), ("arrays", 4)] {
        let sql = format!("select count(*) from {table} where id % 3 = 0");
        let profile = engine.sql(&sql).await.unwrap().profile.unwrap();
        let scan = profile
            .stage_profiles
            .iter()
            .filter(|s| s.layout == "scan")
            .map(|s| s.tasks)
            .max();
        assert!(scan >= Some(at_least), "{table}: scan tasks {scan:?}");
    }
    assert_eq!(
        squall_csv(&engine, "select count(*) as n, max(v) as m from blank").await,
        "n,m\n2,y\n"
    );
    let err = engine
        .sql("select count(*) from void")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("void") && !err.contains("range"), "{err}");
    let plan = squall_csv(&engine, "explain select g, count(*) from lines group by g").await;
    assert!(
        plan.contains("4 text files, 4 of them in 80 chunks read as byte ranges"),
        "{plan}"
    );
    let plan = squall_csv(&engine, "explain select k, count(*) from sales group by k").await;
    assert!(plan.contains("6 text files, each read whole"), "{plan}");
}
