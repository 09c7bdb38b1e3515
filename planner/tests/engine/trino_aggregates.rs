//! Trino's statistics, top-n and most-frequent aggregates, `reduce`, a
//! row's field by position, casts to `VARCHAR(n)`, and the hash and text
//! functions, staged (partial states merged across
//! tasks) and checked against single-node DataFusion's own arithmetic.

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trino_statistics_top_n_reduce_and_hashes() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[]).await;
    let reference = single_node(&data.path).await;
    // skewness and kurtosis as Trino defines them, from central moments.
    assert_eq!(
        squall_csv(
            &engine,
            "select l_returnflag as f, round(skewness(l_quantity), 6) as s, \
             round(kurtosis(l_quantity), 6) as k from lineitem group by 1 order by 1"
        )
        .await,
        single_node_csv(
            &reference,
            "with x as (select l_returnflag as f, cast(l_quantity as double) as x from lineitem), \
             m as (select f, avg(x) as mu, cast(count(*) as double) as n from x group by f) \
             select f, round(sqrt(n) * sum(power(x - mu, 3)) / power(sum(power(x - mu, 2)), 1.5), 6) as s, \
             round((n - 1) * n * (n + 1) / ((n - 2) * (n - 3)) * sum(power(x - mu, 4)) \
             / power(sum(power(x - mu, 2)), 2) - 3 * (n - 1) * (n - 1) / ((n - 2) * (n - 3)), 6) as k \
             from x join m using (f) group by f, n, mu order by f"
        )
        .await
    );
    // reduce: a fold per row (arrays of many lengths in one batch), with a
    // captured column, equal to the sums it folds.
    assert_eq!(
        squall_csv(
            &engine,
            "select count(*) filter (where r <> t * k) as bad, count(*) > 100 as many from ( \
             select o_custkey as k, array_agg(o_orderkey) as a, sum(o_orderkey) as t \
             from orders group by 1) \
             cross join lateral (select reduce(a, 0, (s, x) -> s + x * k, s -> s) as r)"
        )
        .await,
        "bad,many\n0,true\n"
    );
    // The n best rows of each group, staged, against the whole groups
    // ordered and cut.
    assert_eq!(
        squall_csv(
            &engine,
            "select l_shipmode as m, max_by(l_partkey, l_orderkey * 10 + l_linenumber, 3) as a, \
             min_by(l_partkey, l_orderkey * 10 + l_linenumber, 2) as b, \
             max(l_orderkey * 10 + l_linenumber, 2) as c from lineitem group by 1 order by 1"
        )
        .await,
        single_node_csv(
            &reference,
            "select l_shipmode as m, \
             array_slice(array_agg(l_partkey order by l_orderkey * 10 + l_linenumber desc), 1, 3) as a, \
             array_slice(array_agg(l_partkey order by l_orderkey * 10 + l_linenumber), 1, 2) as b, \
             array_slice(array_agg(l_orderkey * 10 + l_linenumber order by l_orderkey * 10 + l_linenumber desc), 1, 2) as c \
             from lineitem group by 1 order by 1"
        )
        .await
    );
    // The most frequent values, and the n largest, against GROUP BY and ORDER BY.
    assert_eq!(
        squall_csv(
            &engine,
            "select k, v from (select approx_most_frequent(3, l_shipmode, 100) as m from lineitem) \
             cross join unnest(m) as u(k, v) order by v desc, k"
        )
        .await,
        single_node_csv(
            &reference,
            "select l_shipmode as k, count(*) as v from lineitem group by 1 order by 2 desc, 1 limit 3"
        )
        .await
    );
    for (sql, csv) in [
        (
            "select n_regionkey as r, max_by(n_name, n_nationkey, 2) as a, min(n_nationkey, 2) as b, \
             max(n_name, 1) as c from nation group by 1 order by 1 limit 2",
            "r,a,b,c\n0,\"[MOZAMBIQUE, MOROCCO]\",\"[0, 5]\",[MOZAMBIQUE]\n\
             1,\"[UNITED STATES, PERU]\",\"[1, 2]\",[UNITED STATES]\n",
        ),
        (
            "select reduce(array[1, 2, 3], row(0, 0), (s, x) -> row(s[1] + x, s[2] + 1), \
             s -> s[1] * 1e0 / s[2]) as mean, r[2] as name from (select row(n_nationkey, n_name) \
             as r from nation) where r[1] = 3",
            "mean,name\n2.0,CANADA\n",
        ),
        (
            "select abs(approx_percentile(l_quantity, 1, 0.5) - approx_percentile(l_quantity, 0.5)) < 1 \
             as w, cardinality(approx_percentile(l_quantity, l_linenumber, array[0.1, 0.9])) as p, \
             cardinality(set_agg(l_returnflag)) as s, \
             cardinality(set_union(array[l_returnflag, l_linestatus])) as u, \
             abs(approx_distinct(l_orderkey, 0.01) - 15000) < 500 as d from lineitem",
            "w,p,s,u,d\ntrue,2,3,5,true\n",
        ),
        (
            "select cast(c_name as varchar(9)) as p, count(*) as n, \
             min(try_cast(c_custkey * 1000 as varchar(3))) as t, \
             min(cast('héllo' as varchar(4))) as h from customer group by 1",
            "p,n,t,h\nCustomer#,1500,,héll\n",
        ),
        (
            "select to_hex(cast(n_name as varbinary)) as h, from_utf8(cast(n_name as varbinary)) as s \
             from nation where n_nationkey = 1",
            "h,s\n415247454E54494E41,ARGENTINA\n",
        ),
        (
            "select 'A%' like 'A!%' escape '!' as a, 'AB' like 'A!%' escape '!' as b, \
             count(*) filter (where n_name like 'A#_%' escape '#') as c, \
             count(*) filter (where n_name like 'C_%' escape '#') as d from nation",
            "a,b,c,d\ntrue,false,0,2\n",
        ),
        (
            "select cardinality(min(n_nationkey, 100000000000)) as n from nation",
            "n\n25\n",
        ),
        (
            "select bitwise_and_agg(n_nationkey) as a, bitwise_or_agg(n_nationkey) as o, \
             bitwise_xor_agg(n_nationkey) as x from nation",
            "a,o,x\n0,31,24\n",
        ),
        (
            "select reduce(array[1, 2, 3], 0, (s, x) -> s + x * 1.5, s -> s * 2) as a, \
             reduce(array['a', null, 'c'], '', (s, x) -> concat(s, coalesce(x, '-')), s -> upper(s)) as b, \
             reduce(cast(null as array(integer)), 0, (s, x) -> s + x, s -> s) is null as c",
            "a,b,c\n18.0,A-C,true\n",
        ),
        (
            "select to_hex(xxhash64(to_utf8('a'))) as h, crc32(to_utf8('a')) as c, \
             split_to_map('a=1,b=2,', ',', '=')['b'] as m, \
             human_readable_seconds(56363463) as s, year_of_week(date '2021-01-01') as y, \
             array_average(array[1.5, null, 2.5]) as v, to_hex(sha1(to_utf8('abc'))) as s1",
            "h,c,m,s,y,v,s1\nD24EC4F1A98C6E5B,3904355907,2,\
             \"93 weeks, 1 day, 8 hours, 31 minutes, 3 seconds\",2020,2.0,\
             A9993E364706816ABA3E25717850C26C9CD0D89D\n",
        ),
        // A negative length is '' (DataFusion failed the query).
        (
            "select length(substr('abc', 1, -1)) as a, length(substr('abc', 2, 0)) as b, \
             substr(n_name, 2, n_nationkey - 2) as c, length(substr(n_name, 1, n_nationkey - 2)) as d \
             from nation where n_nationkey in (1, 5) order by n_nationkey",
            "a,b,c,d\n0,0,,0\n0,0,THI,3\n",
        ),
        // md5 answers bytes, as Trino's (DataFusion's: hex text).
        (
            "select typeof(md5(to_utf8('a'))) as t, to_hex(md5(to_utf8('a'))) as h, \
             length(md5(to_utf8('a'))) as n",
            "t,h,n\nvarbinary,0CC175B9C0F1B6A831C399E269772661,16\n",
        ),
        (
            "select array_join(split_to_multimap('a=1,b=2,a=3,', ',', '=')['a'], '+') as a, \
             cardinality(split_to_multimap('a=1,b=2,a=3', ',', '=')) as n, \
             cardinality(split_to_multimap('', ',', '=')) as e",
            "a,n,e\n1+3,2,0\n",
        ),
    ] {
        assert_eq!(squall_csv(&engine, sql).await, csv, "{sql}");
    }
    for (sql, says) in [
        (
            "select split_to_map('a=1,a=2', ',', '=')",
            "duplicate keys (a)",
        ),
        ("select split_to_map('a', ',', '=')", "exactly once"),
        (
            "select split_to_multimap('a=1,b', ',', '=')",
            "split_to_multimap: the key-value delimiter must appear exactly once",
        ),
        (
            "select approx_most_frequent(n_nationkey, n_regionkey, 10) from nation",
            "positive integer constant",
        ),
        (
            "select max_by(n_name, n_nationkey, 0) from nation",
            "positive integer constant",
        ),
        ("select row(1, 2)[3]", "a row of 2 fields has no field 3"),
        (
            "select cast(n_nationkey + 12340 as varchar(2)) from nation",
            "Cannot cast '12340' to varchar(2)",
        ),
    ] {
        let err = engine.sql(sql).await.unwrap_err().to_string();
        assert!(err.contains(says), "{sql}: {err}");
    }
}

/// `count(DISTINCT x)` of rows and arrays beside other aggregates, under a
/// memory limit: DataFusion's set of nested values reported, for each
/// value, the whole batch it was cut from (43 GB for 60,000 rows), and the
/// query failed on the limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn distinct_counts_of_rows_fit_in_memory() {
    let data = sf001_small_groups();
    let reference = single_node(&data.path).await;
    let engine = engine(
        &data.path,
        &[("squall.query.memory_limit_bytes", "268435456")],
    )
    .await;
    let pairs = [
        (
            "select count(*) as n, count(distinct (l_orderkey, l_linenumber)) as d, \
             count(distinct (l_returnflag, l_linestatus)) as f from lineitem",
            "select count(*) as n, count(*) as d, \
             (select count(*) from (select distinct l_returnflag, l_linestatus from lineitem)) as f \
             from lineitem",
        ),
        (
            "select l_shipmode, count(*) as n, count(distinct array[l_returnflag, l_linestatus]) as d \
             from lineitem group by 1 order by 1",
            "select l_shipmode, count(*) as n, count(distinct l_returnflag || l_linestatus) as d \
             from lineitem group by 1 order by 1",
        ),
    ];
    assert_pairs(&engine, &reference, &pairs, "memory limit 256 MiB").await;
}

/// Trino's `entropy(c)`, staged over many tasks (states merged), against
/// its definition in single-node DataFusion's arithmetic: zero counts add
/// nothing, a sum of 0 or no count is 0.0, a negative count fails naming
/// it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entropy_of_counts_answers_as_trino_defines_it() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[("squall.scan.target_task_bytes", "100000")]).await;
    let reference = single_node(&data.path).await;
    let counts =
        "case when l_linenumber = 7 then 0 else l_linenumber * cast(l_quantity as bigint) end";
    assert_eq!(
        squall_csv(
            &engine,
            &format!(
                "select l_shipmode as m, round(entropy({counts}), 9) as e \
                 from lineitem group by 1 order by 1"
            )
        )
        .await,
        single_node_csv(
            &reference,
            &format!(
                "select l_shipmode as m, round((ln(sum(c)) - sum(case when c > 0 then c * ln(c) end) \
                 / sum(c)) / ln(2.0), 9) as e \
                 from (select l_shipmode, cast({counts} as double) as c from lineitem) group by 1 order by 1"
            )
        )
        .await
    );
    assert_eq!(
        squall_csv(
            &engine,
            "select entropy(c) as a, (select entropy(n_nationkey) from nation where n_nationkey < 0) as b, \
             entropy(cast(null as bigint)) as n from (values 0, 0) t(c)"
        )
        .await,
        "a,b,n\n0.0,0.0,0.0\n"
    );
    assert_eq!(
        squall_csv(&engine, "select entropy(c) as e from (values 1, 1, 2) t(c)").await,
        "e\n1.5\n"
    );
    let e = engine
        .sql("select entropy(l_linenumber - 3) from lineitem")
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("entropy: count -2 is negative"), "{e}");
}
