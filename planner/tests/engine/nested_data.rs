//! Users' data as Trino and Athena users query it: array columns read as
//! rows (`CROSS JOIN UNNEST`, `LEFT JOIN UNNEST ... ON true`, `WITH
//! ORDINALITY`), JSON kept as text (`json_extract_scalar`, ...) and URLs
//! (`url_extract_*`), in tasks (staged) and as one task; and the session's
//! `current_user`, `current_catalog` and `current_schema`.

use crate::common::*;
use squall_planner::trino_functions::SessionIdentity;
use squall_planner::{Engine, EngineOptions, RunOptions};

/// Rows `1..=ROWS` of `events`: `tags` is NULL for ids divisible by 5, empty
/// for other ids divisible by 7, else `['t{id % 3}', 'u{id % 2}']`.
const ROWS: i64 = 300;

fn tags_of(id: i64) -> Option<Vec<String>> {
    if id % 5 == 0 {
        None
    } else if id % 7 == 0 {
        Some(vec![])
    } else {
        Some(vec![format!("t{}", id % 3), format!("u{}", id % 2)])
    }
}

/// A catalog folder holding `events` as Parquet, written by DataFusion in
/// several files.
async fn events_catalog() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("events");
    std::fs::create_dir_all(&out).unwrap();
    let ctx = datafusion::prelude::SessionContext::new();
    let sql = format!(
        "COPY (SELECT value AS id,
            CASE WHEN value % 5 = 0 THEN NULL
                 WHEN value % 7 = 0 THEN array_slice(make_array('x'), 2, 1)
                 ELSE make_array(concat('t', value % 3), concat('u', value % 2)) END AS tags,
            concat('{{\"user\": {{\"id\": ', value, ', \"name\": \"n', value, '\"}}, \"items\": [', value, ', 2]}}') AS doc,
            concat('https://host', value % 4, '.example.com/p/', value, '?k=', value, '&z') AS url
          FROM generate_series(1, {ROWS}) ORDER BY value)
         TO '{}' STORED AS PARQUET OPTIONS ('format.max_row_group_size' '64')",
        out.join("part-0.parquet").display()
    );
    ctx.sql(&sql).await.unwrap().collect().await.unwrap();
    // `baskets`: a map and an array of rows per id.
    let out = dir.path().join("baskets");
    std::fs::create_dir_all(&out).unwrap();
    let sql = format!(
        "COPY (SELECT value AS id,
            map(make_array('a', 'b'), make_array(value, 2 * value)) AS m,
            make_array(named_struct('sku', concat('s', value % 3), 'qty', value % 4),
                       named_struct('sku', 's9', 'qty', 1)) AS items
          FROM generate_series(1, {ROWS}) ORDER BY value)
         TO '{}' STORED AS PARQUET OPTIONS ('format.max_row_group_size' '64')",
        out.join("part-0.parquet").display()
    );
    ctx.sql(&sql).await.unwrap().collect().await.unwrap();
    // `people`: a struct and a list of structs whose fields are named in
    // mixed case, as Spark writes them.
    let out = dir.path().join("people");
    std::fs::create_dir_all(&out).unwrap();
    let sql = format!(
        "COPY (SELECT value AS \"Id\",
            CASE WHEN value % 10 = 0 THEN NULL
                 ELSE named_struct('Name', concat('p', value), 'Age', value % 50) END AS \"UserInfo\",
            make_array(named_struct('Sku', concat('s', value % 3))) AS \"Items\"
          FROM generate_series(1, {ROWS}) ORDER BY value)
         TO '{}' STORED AS PARQUET OPTIONS ('format.max_row_group_size' '64')",
        out.join("part-0.parquet").display()
    );
    ctx.sql(&sql).await.unwrap().collect().await.unwrap();
    dir
}

/// Each statement answers its CSV, staged and as one task.
async fn assert_answers(catalog: &std::path::Path, expected: &[(String, String)]) {
    for single in ["0", "1000000000000"] {
        let engine = engine(catalog, &[("squall.query.single_task_bytes", single)]).await;
        for (sql, want) in expected {
            assert_eq!(
                squall_csv(&engine, sql).await,
                *want,
                "{sql} (single_task_bytes={single})"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn array_columns_unnest_as_rows_beside_their_row() {
    let catalog = events_catalog().await;
    let ids = 1..=ROWS;
    let all_tags: Vec<(i64, String)> = ids
        .clone()
        .flat_map(|id| {
            tags_of(id)
                .unwrap_or_default()
                .into_iter()
                .map(move |t| (id, t))
        })
        .collect();
    let unnested = all_tags.len();
    let kept_by_left_join: usize = ids
        .clone()
        .map(|id| tags_of(id).map_or(1, |t| t.len().max(1)))
        .sum();
    let mut per_tag = std::collections::BTreeMap::<String, (usize, i64)>::new();
    for (id, t) in &all_tags {
        let e = per_tag.entry(t.clone()).or_default();
        e.0 += 1;
        e.1 += id;
    }
    let per_tag_csv: String = per_tag
        .iter()
        .map(|(t, (n, s))| format!("{t},{n},{s}\n"))
        .collect();
    // Positions 1 and 2 of each two-tag row.
    let ordinals: i64 = ids
        .clone()
        .filter_map(tags_of)
        .map(|t| (1..=t.len() as i64).sum::<i64>())
        .sum();
    let null_or_empty = ids
        .clone()
        .filter(|id| tags_of(*id).is_none_or(|t| t.is_empty()))
        .count();
    let mut skus = std::collections::BTreeMap::<String, (i64, i64)>::new();
    for id in ids.clone() {
        let e = skus.entry(format!("s{}", id % 3)).or_default();
        e.0 += id % 4;
        e.1 = 1;
        let e = skus.entry("s9".to_string()).or_default();
        e.0 += 1;
        e.1 = 2;
    }
    let skus_csv: String = std::iter::once("sku,q,n\n".to_string())
        .chain(skus.iter().map(|(s, (q, n))| format!("{s},{q},{n}\n")))
        .collect();
    let expected = [
        (
            "select count(*) as n from events cross join unnest(tags) as u(tag)".to_string(),
            format!("n\n{unnested}\n"),
        ),
        (
            "select u.tag, count(*) as n, sum(e.id) as s from events e, unnest(e.tags) as u(tag) \
             group by u.tag order by 1"
                .to_string(),
            format!("tag,n,s\n{per_tag_csv}"),
        ),
        (
            "select count(*) as n, count(tag) as tagged from events left join unnest(tags) as u(tag) on true"
                .to_string(),
            format!("n,tagged\n{kept_by_left_join},{unnested}\n"),
        ),
        (
            "select sum(n) as s, max(n) as m from events cross join unnest(tags) with ordinality as u(tag, n)"
                .to_string(),
            format!("s,m\n{ordinals},2\n"),
        ),
        (
            "select count(*) as n from events left join unnest(tags) with ordinality as u(tag, n) on true \
             where n is null"
                .to_string(),
            format!("n\n{null_or_empty}\n"),
        ),
        (
            "select * from events cross join unnest(tags) as u(tag) where id = 1 order by tag".to_string(),
            "id,tags,doc,url,tag\n\
             1,\"[t1, u1]\",\"{\"\"user\"\": {\"\"id\"\": 1, \"\"name\"\": \"\"n1\"\"}, \"\"items\"\": [1, 2]}\",https://host1.example.com/p/1?k=1&z,t1\n\
             1,\"[t1, u1]\",\"{\"\"user\"\": {\"\"id\"\": 1, \"\"name\"\": \"\"n1\"\"}, \"\"items\"\": [1, 2]}\",https://host1.example.com/p/1?k=1&z,u1\n"
                .to_string(),
        ),
        // The left side has a column named as the unnest's: both answer.
        (
            "select t.tag as mine, u.tag from (select id, 'own' as tag, tags from events) t \
             cross join unnest(t.tags) as u(tag) where t.id = 2 order by 2"
                .to_string(),
            "mine,tag\nown,t2\nown,u0\n".to_string(),
        ),
        // A map's entries and an array's rows, as columns.
        (
            "select k, sum(v) as s from baskets cross join unnest(m) as u(k, v) group by k order by k"
                .to_string(),
            format!("k,s\na,{}\nb,{}\n", ids.clone().sum::<i64>(), 2 * ids.clone().sum::<i64>()),
        ),
        (
            "select sku, sum(qty) as q, max(n) as n from baskets \
             cross join unnest(items) with ordinality as u(sku, qty, n) group by sku order by sku"
                .to_string(),
            skus_csv,
        ),
        // Columns unpivoted into rows: an ARRAY[...] of the row's columns.
        (
            "select k, sum(v) as s from baskets \
             cross join unnest(array['id', 'double'], array[id, 2 * id]) as u(k, v) group by k order by k"
                .to_string(),
            format!("k,s\ndouble,{}\nid,{}\n", 2 * ids.clone().sum::<i64>(), ids.clone().sum::<i64>()),
        ),
        // Struct fields named in mixed case, read by lowercase names (also
        // in a filter and inside an unnested list of structs).
        (
            "select count(userinfo.name) as n, sum(userinfo['age']) as a, \
             min(userinfo.name) filter (where userinfo.age = 7) as p from people"
                .to_string(),
            format!(
                "n,a,p\n{},{},p107\n",
                ids.clone().filter(|i| i % 10 != 0).count(),
                ids.clone().filter(|i| i % 10 != 0).map(|i| i % 50).sum::<i64>()
            ),
        ),
        (
            "select count(*) as n from people where userinfo.name like 'p1%'".to_string(),
            format!(
                "n\n{}\n",
                ids.clone().filter(|i| i % 10 != 0 && i.to_string().starts_with('1')).count()
            ),
        ),
        (
            "select u.it.sku as sku, count(*) as n from people cross join unnest(items) as u(it) \
             group by 1 order by 1"
                .to_string(),
            format!(
                "sku,n\ns0,{}\ns1,{}\ns2,{}\n",
                ids.clone().filter(|i| i % 3 == 0).count(),
                ids.clone().filter(|i| i % 3 == 1).count(),
                ids.clone().filter(|i| i % 3 == 2).count()
            ),
        ),
        // The unnest of an expression over the row (a split string).
        (
            "select count(*) as n, count(distinct p) as d from events \
             cross join unnest(split(url_extract_path(url), '/')) as u(p)"
                .to_string(),
            format!("n,d\n{},{}\n", 3 * ROWS, ROWS + 2),
        ),
    ];
    assert_answers(catalog.path(), &expected).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_and_url_text_answers_as_trino() {
    let catalog = events_catalog().await;
    let ids: i64 = (1..=ROWS).sum();
    let mut hosts = std::collections::BTreeMap::<i64, i64>::new();
    for id in 1..=ROWS {
        *hosts.entry(id % 4).or_default() += 1;
    }
    let hosts_csv: String = hosts
        .iter()
        .map(|(h, n)| format!("host{h}.example.com,{n}\n"))
        .collect();
    let expected = [
        (
            "select sum(cast(json_extract_scalar(doc, '$.user.id') as bigint)) as s, \
             sum(json_array_length(json_extract(doc, '$.items'))) as l, \
             count(json_extract_scalar(doc, '$.items')) as not_scalar, \
             max(json_extract_scalar(doc, '$[\"user\"].name')) as m, \
             sum(cast(json_extract_scalar(doc, '$.items[0]') as bigint)) as first \
             from events"
                .to_string(),
            format!("s,l,not_scalar,m,first\n{ids},{},0,n99,{ids}\n", 2 * ROWS),
        ),
        // SQL/JSON's functions, paths in lax or strict mode.
        (
            "select sum(cast(json_value(doc, 'lax $.user.id') as bigint)) as s, \
             sum(json_array_length(json_query(doc, 'strict $.items'))) as l, \
             count_if(json_exists(doc, 'lax $.items[1]')) as e, \
             count_if(json_exists(doc, '$.nothing')) as n, \
             max(cardinality(trim_array(array[1, 2, 3], 1))) as t from events"
                .to_string(),
            format!("s,l,e,n,t\n{ids},{},{ROWS},0,2\n", 2 * ROWS),
        ),
        (
            "select url_extract_host(url) as h, count(*) as n from events group by 1 order by 1"
                .to_string(),
            format!("h,n\n{hosts_csv}"),
        ),
        (
            "select sum(cast(url_extract_parameter(url, 'k') as bigint)) as k, \
             count(url_extract_parameter(url, 'z')) as z, count(url_extract_parameter(url, 'q')) as q, \
             min(url_extract_protocol(url)) as p from events"
                .to_string(),
            format!("k,z,q,p\n{ids},{ROWS},0,https\n"),
        ),
        // Trino's casts of JSON: to an array unnested beside its row, to a
        // row, to a map; of an array to JSON; TRY_CAST of what does not fit.
        (
            "select sum(x) as s, count(*) as n from events \
             cross join unnest(cast(json_extract(doc, '$.items') as array(bigint))) as u(x)"
                .to_string(),
            format!("s,n\n{},{}\n", ids + 2 * ROWS, 2 * ROWS),
        ),
        (
            "select max(cast(json_extract(doc, '$.user') as row(id bigint, name varchar))['name']) as m, \
             sum(cast(cast(json_extract(doc, '$.user') as map(varchar, varchar))['id'] as bigint)) as s, \
             count(try_cast(json_extract(doc, '$.user.name') as array(bigint))) as t, \
             max(cast(tags as json)) as j from events where id <= 2"
                .to_string(),
            "m,s,t,j\nn2,3,0,\"[\"\"t2\"\",\"\"u0\"\"]\"\n".to_string(),
        ),
        // A JSON value cast to text is its scalar's text; JSON's null in a
        // map of JSON is `null`.
        (
            "select max(cast(json_extract(doc, '$.user.name') as varchar)) as n, \
             count(*) filter (where cast(json_parse('{\"z\": null}') as map(varchar, json))['z'] = 'null') as z \
             from events"
                .to_string(),
            format!("n,z\nn99,{ROWS}\n"),
        ),
        // An object of any keys, its values kept as JSON.
        (
            "select k, count(*) as n, sum(json_array_length(v)) as l, \
             sum(cast(json_extract_scalar(v, '$.id') as bigint)) as i from events \
             cross join unnest(cast(json_parse(doc) as map(varchar, json))) as u(k, v) group by k order by k"
                .to_string(),
            format!("k,n,l,i\nitems,{ROWS},{},\nuser,{ROWS},,{ids}\n", 2 * ROWS),
        ),
    ];
    assert_answers(catalog.path(), &expected).await;
    for single in ["0", "1000000000000"] {
        let engine = engine(
            catalog.path(),
            &[("squall.query.single_task_bytes", single)],
        )
        .await;
        let err = engine
            .sql("select json_extract(doc, 'user.id') from events")
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("json_extract: invalid JSON path 'user.id'"),
            "{err}"
        );
        // The same rows fail again: a task is not retried.
        let err = engine
            .sql("select json_parse(url) from events")
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("after 1 attempt(s)") && err.contains("json_parse: 'https://host"),
            "{err}"
        );
        let err = engine
            .sql("select cast(json_extract(doc, '$.user') as array(bigint)) from events")
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("CAST of JSON '{\"id\":1,\"name\":\"n1\"}' to List(Int64)"),
            "{err}"
        );
    }
}

/// Trino's functions written as DataFusion's, against single-node DataFusion
/// given DataFusion's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_trino_functions_answer_as_their_datafusion_forms() {
    let data = sf001_small_groups();
    let reference = single_node(&data.path).await;
    let pairs = [
        (
            // Rounded: sums of doubles in another order differ in the last digits.
            "select o_orderstatus, round(variance(o_totalprice), 2) as v, \
             round(geometric_mean(o_totalprice), 4) as g, \
             count_if(contains(sequence(1, 3), o_shippriority + 1)) as c \
             from orders group by 1 order by 1",
            "select o_orderstatus, round(var_samp(o_totalprice), 2) as v, \
             round(exp(avg(ln(o_totalprice))), 4) as g, \
             count(*) filter (where array_has(generate_series(1, 3), o_shippriority + 1)) as c \
             from orders group by 1 order by 1",
        ),
        (
            "select o_orderkey, bitwise_and(o_orderkey, 12) as a, bitwise_or(o_orderkey, 3) as o, \
             bitwise_xor(o_orderkey, 5) as x, bitwise_left_shift(o_orderkey, 2) as l, \
             width_bucket(o_totalprice, 0, 1000000, 10) as w, codepoint(o_orderstatus) as cp, \
             levenshtein_distance(o_orderpriority, '1-URGENT') as d, to_base64(to_utf8(o_orderstatus)) as b \
             from orders order by 1 limit 50",
            "select o_orderkey, o_orderkey & 12 as a, o_orderkey | 3 as o, o_orderkey ^ 5 as x, \
             o_orderkey << 2 as l, cast(floor(o_totalprice * 10 / 1000000) as bigint) + 1 as w, \
             ascii(o_orderstatus) as cp, cast(levenshtein(o_orderpriority, '1-URGENT') as bigint) as d, \
             case o_orderstatus when 'F' then 'Rg==' when 'O' then 'Tw==' else 'UA==' end as b \
             from orders order by 1 limit 50",
        ),
        (
            "select hour(at_timezone(timestamp '2020-01-01 12:00:00 UTC', 'America/New_York')) as h, \
             ceiling(n_nationkey / 2e0) as c from nation where n_nationkey = 3",
            "select 7 as h, 2.0 as c",
        ),
        (
            "select n_regionkey, map_agg(n_name, n_nationkey)['CHINA'] as china, \
             sequence(date '2020-01-30', date '2020-02-02') as days, is_finite(min(n_nationkey) / 0e0) as f, \
             is_infinite(1 / 0e0) as i, from_base64(to_base64(to_utf8('squall'))) = to_utf8('squall') as rt \
             from nation group by 1 order by 1",
            "select n_regionkey, max(case when n_name = 'CHINA' then n_nationkey end) as china, \
             [date '2020-01-30', date '2020-01-31', date '2020-02-01', date '2020-02-02'] as days, \
             false as f, true as i, true as rt from nation group by 1 order by 1",
        ),
        // The n-th occurrence, from the end when n is negative.
        (
            "select n_name, strpos(n_name, 'A', 2) as a, strpos(n_name, 'A', -1) as b \
             from nation order by n_nationkey",
            "select n_name, case when strpos(n_name, 'A') = 0 \
               or strpos(substr(n_name, strpos(n_name, 'A') + 1), 'A') = 0 then 0 \
               else strpos(n_name, 'A') + strpos(substr(n_name, strpos(n_name, 'A') + 1), 'A') end as a, \
             case when strpos(n_name, 'A') = 0 then 0 \
               else length(n_name) - strpos(reverse(n_name), 'A') + 1 end as b \
             from nation order by n_nationkey",
        ),
        // Whole random numbers in their bounds, each value drawn.
        (
            "select min(random(10)) >= 0 and max(random(10)) < 10 as a, \
             min(rand(5, 8)) >= 5 and max(rand(5, 8)) < 8 as b, count(distinct random(3)) as c, \
             typeof(random(10)) as t from lineitem",
            "select true as a, true as b, 3 as c, 'bigint' as t",
        ),
        // Two columns named alike (later ones numbered); Java's date patterns.
        (
            "select n_name, n_name, count(*), count(*), \
             format_datetime(timestamp '2020-03-04 05:06:07.089', 'dd/MM/yyyy HH:mm:ss.SSS ''at'' EEE') as f, \
             date('2020-01-02') as d, to_hex(to_utf8(n_name)) as h from nation group by 1 order by 1 limit 3",
            "select n_name, n_name as n_name_2, count(*), count(*) as \"count(*)_2\", \
             '04/03/2020 05:06:07.089 at Wed' as f, date '2020-01-02' as d, upper(encode(n_name, 'hex')) as h \
             from nation group by 1 order by 1 limit 3",
        ),
        // Trino's meanings where DataFusion's functions of the same name
        // answered otherwise.
        (
            "select n_nationkey, array_remove(array[n_regionkey, 1, n_regionkey], n_regionkey) as r, \
             array_sort(array[n_nationkey, null, n_regionkey]) as s, regexp_replace(n_name, 'A', '_') as x, \
             greatest(n_nationkey, case when n_regionkey > 2 then n_regionkey end) as g, \
             concat(n_name, case when n_regionkey > 2 then '!' end) as c, \
             concat(array[n_nationkey], array[n_regionkey]) as a, reverse(array[n_nationkey, n_regionkey]) as v, \
             array_position(array[n_regionkey], 9) as p from nation order by 1",
            "select n_nationkey, case when n_regionkey = 1 then [] else [1] end as r, \
             case when n_nationkey < n_regionkey then [n_nationkey, n_regionkey, null] \
             else [n_regionkey, n_nationkey, null] end as s, replace(n_name, 'A', '_') as x, \
             case when n_regionkey > 2 then greatest(n_nationkey, n_regionkey) end as g, \
             case when n_regionkey > 2 then n_name || '!' end as c, [n_nationkey, n_regionkey] as a, \
             [n_regionkey, n_nationkey] as v, 0 as p from nation order by 1",
        ),
        // A DOUBLE or DECIMAL cast to an integer rounds (halves away from 0);
        // a TIMESTAMP cast to text is written as Trino writes it.
        (
            "select o_orderkey, cast(o_totalprice / 1000 as integer) as i, \
             try_cast(-o_totalprice / 1000 as bigint) as j, cast(o_totalprice / 1000e0 as smallint) as k, \
             cast(cast(o_orderdate as timestamp) as varchar) as t from orders order by 1 limit 40",
            "select o_orderkey, cast(round(o_totalprice / 1000) as integer) as i, \
             cast(round(-o_totalprice / 1000) as bigint) as j, \
             cast(round(o_totalprice / 1000e0) as smallint) as k, \
             concat(cast(o_orderdate as varchar), ' 00:00:00.000000000') as t from orders order by 1 limit 40",
        ),
        // date_trunc of a DATE is a DATE; split_part past the last field NULL.
        (
            "select date_trunc('month', o_orderdate) as m, count(*) as n, \
             min(split_part(o_orderpriority, '-', 3)) as p from orders group by 1 order by 1",
            "select cast(date_trunc('month', o_orderdate) as date) as m, count(*) as n, \
             cast(null as varchar) as p from orders group by 1 order by 1",
        ),
        // try(): failed casts and divisions by zero are NULL.
        (
            "select o_orderkey, try(o_orderkey / (o_orderkey % 3)) as q, \
             try(cast(o_orderstatus as integer)) as s from orders order by 1 limit 20",
            "select o_orderkey, case when o_orderkey % 3 = 0 then null else o_orderkey / (o_orderkey % 3) end as q, \
             cast(null as integer) as s from orders order by 1 limit 20",
        ),
        // Types as Trino names them (the names clients see).
        (
            "select typeof(n_nationkey) as a, typeof(n_name) as b, typeof(1.5) as c, \
             typeof(array[n_regionkey]) as d, typeof(cast(n_nationkey as decimal(15, 2))) as e, \
             typeof(map(array['k'], array[n_name])) as f from nation limit 1",
            "select 'bigint' as a, 'varchar' as b, 'decimal(2,1)' as c, 'array(bigint)' as d, \
             'decimal(15,2)' as e, 'map(varchar, varchar)' as f",
        ),
        // Items DataFusion would name alike (a cast is named by what it
        // casts, POSITION is its strpos) are named by their text.
        (
            "select n_nationkey, position('A' in n_name), strpos(n_name, 'A'), n_nationkey / 7, \
             cast(n_nationkey as double) / 7 from nation order by 1",
            "select n_nationkey, strpos(n_name, 'A') as \"POSITION('A' IN n_name)\", \
             strpos(n_name, 'A') as \"strpos(n_name, 'A')\", n_nationkey / 7 as \"n_nationkey / 7\", \
             cast(n_nationkey as double) / 7 as \"CAST(n_nationkey AS DOUBLE) / 7\" from nation order by 1",
        ),
        // A row's field after an expression, named by its field as Trino names it.
        (
            "select n_nationkey, (cast(row(n_nationkey, n_name) as row(k bigint, \"Name\" varchar))).\"Name\", \
             cast(row(n_nationkey, n_name) as row(k bigint, n varchar)).K from nation order by 1",
            "select n_nationkey, n_name as \"Name\", n_nationkey as k from nation order by 1",
        ),
        (
            "select n_regionkey, array_agg(cast(row(n_nationkey, n_name) as row(k bigint, n varchar)) \
             order by n_nationkey)[2].n from nation group by 1 order by 1",
            "select n_regionkey, nth_value(n_name, 2 order by n_nationkey) as n from nation group by 1 order by 1",
        ),
        // map_agg of a key given twice keeps one of its values (Trino's
        // first; DataFusion's map refused the key and failed the query).
        (
            "select cardinality(map_agg(n_regionkey, n_nationkey)) as c, \
             map_agg(n_regionkey, n_nationkey)[2] in (8, 9, 12, 18, 21) as f from nation",
            "select 5 as c, true as f",
        ),
        // An interval times a number.
        (
            "select o_orderkey, o_orderdate + interval '1' day * (o_orderkey % 5) as d, \
             o_orderdate + 2 * interval '1' month as m from orders order by 1 limit 20",
            "select o_orderkey, o_orderdate + cast(cast(o_orderkey % 5 as varchar) || ' days' as interval) as d, \
             o_orderdate + interval '2 months' as m from orders order by 1 limit 20",
        ),
        // Java's String.format.
        (
            "select n_nationkey, format('%s-%03d|%,.1f', n_name, n_nationkey, n_nationkey * 1000.25e0) as f \
             from nation order by 1",
            "select n_nationkey, concat(n_name, '-', lpad(cast(n_nationkey as varchar), 3, '0'), '|', \
             case when n_nationkey >= 1 then concat(cast(floor(n_nationkey * 1000.25e0 / 1000) as bigint), ',', \
             lpad(cast(cast(floor(n_nationkey * 1000.25e0) as bigint) % 1000 as varchar), 3, '0')) else '0' end, \
             '.', case n_nationkey % 4 when 0 then '0' when 1 then '3' when 2 then '5' else '8' end) as f \
             from nation order by 1",
        ),
        // AT TIME ZONE reads a TIMESTAMP as UTC (Trino's session zone) and
        // shows the instant in the zone; with_timezone reads it as the
        // zone's local time.
        (
            "select o_orderkey, o_orderdate at time zone 'Asia/Tokyo' as t, \
             with_timezone(cast(o_orderdate as timestamp), 'America/New_York') as w \
             from orders order by 1 limit 5",
            "select o_orderkey, (cast(o_orderdate as timestamp) at time zone 'UTC') at time zone 'Asia/Tokyo' as t, \
             cast(o_orderdate as timestamp) at time zone 'America/New_York' as w \
             from orders order by 1 limit 5",
        ),
        // substr as Trino counts: from the end for a negative start, '' for 0.
        (
            "select n_nationkey, substr(n_name, 0, 2) as a, substr(n_name, -3) as b, \
             substring(n_name from 2 for 3) as c, substr(n_name, n_nationkey - 5, 2) as d \
             from nation order by 1",
            "select n_nationkey, '' as a, right(n_name, 3) as b, substr(n_name, 2, 3) as c, \
             case when n_nationkey = 5 then '' when n_nationkey < 5 then \
             case when char_length(n_name) >= 5 - n_nationkey then left(right(n_name, 5 - n_nationkey), 2) \
             else '' end else substr(n_name, n_nationkey - 5, 2) end as d from nation order by 1",
        ),
        // Lambdas (Trino's syntax; DataFusion's SQL parser has none).
        (
            "select n_regionkey, sum(cardinality(filter(split(n_comment, ' '), w -> length(w) > 5))) as n, \
             count_if(any_match(split(n_comment, ' '), w -> w like 'fur%')) as f \
             from nation group by 1 order by 1",
            "select n_regionkey, sum(case when length(w) > 5 then 1 else 0 end) as n, \
             count(distinct case when w like 'fur%' then n_nationkey end) as f \
             from (select n_regionkey, n_nationkey, unnest(string_to_array(n_comment, ' ')) as w from nation) \
             group by 1 order by 1",
        ),
        (
            "select n_nationkey, transform(array[n_nationkey, n_regionkey], x -> x * 2) as t, \
             all_match(array[n_nationkey, n_regionkey], x -> x >= n_regionkey) as a, \
             none_match(array[n_nationkey], x -> x > 100) as z from nation order by 1",
            "select n_nationkey, [n_nationkey * 2, n_regionkey * 2] as t, true as a, true as z \
             from nation order by 1",
        ),
    ];
    for single in ["0", "1000000000000"] {
        let engine = engine(&data.path, &[("squall.query.single_task_bytes", single)]).await;
        let setting = format!("single_task_bytes={single}");
        assert_pairs(&engine, &reference, &pairs, &setting).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn current_user_catalog_and_schema_are_the_session_s() {
    let engine = Engine::local(EngineOptions::default()).await.unwrap();
    let sql = "select current_user as u, current_catalog as c, current_schema as s";
    let run = |identity: SessionIdentity| {
        let engine = &engine;
        async move {
            let options = RunOptions {
                identity,
                ..RunOptions::default()
            };
            let r = engine
                .sql_stream(sql, &options)
                .await
                .unwrap()
                .collect()
                .await
                .unwrap();
            squall_tpch::run::to_csv(&r.schema, &r.batches).unwrap()
        }
    };
    assert_eq!(
        run(SessionIdentity::default()).await,
        "u,c,s\nsquall,squall,public\n"
    );
    let alice = SessionIdentity {
        user: Some("alice o'hara".into()),
        catalog: Some("hive".into()),
        schema: Some("web".into()),
    };
    assert_eq!(run(alice).await, "u,c,s\nalice o'hara,hive,web\n");
}
