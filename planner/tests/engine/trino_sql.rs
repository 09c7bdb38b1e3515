//! The SQL Trino clients send that DataFusion 55 refuses or answers wrong:
//! rows in a subquery, quantified comparisons (ANY / ALL), EXCEPT and
//! INTERSECT ALL, FETCH FIRST, chained USING joins, Trino's functions (the
//! statements dbt runs are `trino_statements`).

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_in_a_subquery_answer_as_sql_says() {
    let data = sf001_small_groups();
    let reference = single_node(&data.path).await;
    // Each beside what single-node DataFusion answers for the same rows
    // written another way (it refuses a row IN).
    let pairs = [
        (
            "select count(*) from orders where (o_custkey, o_orderstatus) in \
             (select c_custkey, 'F' from customer where c_nationkey = 3)",
            "select count(*) from orders join customer on o_custkey = c_custkey \
             where c_nationkey = 3 and o_orderstatus = 'F'",
        ),
        (
            "select count(*) from orders where (o_custkey, o_orderstatus) not in \
             (select c_custkey, 'F' from customer where c_nationkey = 3) and o_orderkey > 100",
            "select count(*) from orders left join customer on o_custkey = c_custkey \
             and c_nationkey = 3 and o_orderstatus = 'F' where c_custkey is null and o_orderkey > 100",
        ),
        (
            "select o_orderstatus, sum(case when (o_custkey, o_orderpriority) in \
             (select c_custkey, '1-URGENT' from customer where c_nationkey < 5) then 1 else 0 end) as n \
             from orders group by 1 order by 1",
            "select o_orderstatus, sum(case when c_custkey is not null then 1 else 0 end) as n \
             from orders left join customer on o_custkey = c_custkey and c_nationkey < 5 \
             and o_orderpriority = '1-URGENT' group by 1 order by 1",
        ),
        // SQL's three values: (1, 2) against (2, NULL) is FALSE, against
        // (1, NULL) NULL; a NULL field is NULL unless a field differs.
        (
            "select x, y from (values (1, 1), (1, 2), (2, 5), (3, 3), (4, 4), (null, 1), (null, 9)) t(x, y) \
             where (x, y) not in (select a, b from (values (1, 1), (2, null), (null, 3)) s(a, b)) \
             order by x",
            "select * from (values (1, 2), (4, 4)) t(x, y) order by x",
        ),
        (
            "select x, y from (values (1, 1), (1, 2), (2, 5), (3, 3), (4, 4), (null, 1)) t(x, y) \
             where x > 0 and ((x, y) in (select a, b from (values (1, 1), (2, null)) s(a, b)) or y = 4) \
             order by x",
            "select * from (values (1, 1), (4, 4)) t(x, y) order by x",
        ),
        // A scalar subquery whose value is named like the outer query's
        // (DataFusion's join of it failed: "would be ambiguous").
        (
            "select c_nationkey, sum(c_acctbal) as a from customer group by c_nationkey \
             having avg(c_acctbal) > (select avg(c_acctbal) from customer) order by 1",
            "select c_nationkey, sum(c_acctbal) as a from customer, (select avg(c_acctbal) as v from customer) \
             group by c_nationkey, v having avg(c_acctbal) > v order by 1",
        ),
        // sum / avg of a value NULL by its type (DataFusion: an internal error).
        (
            "select n_regionkey, sum(case when n_nationkey > 100 then null end) as s, avg(null) as a \
             from nation group by 1 order by 1",
            "select n_regionkey, cast(null as bigint) as s, cast(null as double) as a \
             from nation group by 1 order by 1",
        ),
        // ... and of a column NULL by its type, which only its input's
        // schema tells: grouped, DISTINCT, ungrouped, over windows.
        (
            "select n_regionkey, sum(x) as s, avg(x) as a, sum(distinct x) as d, avg(distinct x) as e \
             from (select n_regionkey, null as x from nation) t group by 1 order by 1",
            "select n_regionkey, cast(null as bigint) as s, cast(null as double) as a, \
             cast(null as bigint) as d, cast(null as double) as e from nation group by 1 order by 1",
        ),
        (
            "select sum(x) as s, avg(x) as a, count(x) as c from (select null as x union all select null) t",
            "select cast(null as bigint) as s, cast(null as double) as a, cast(0 as bigint) as c",
        ),
        (
            "select n_nationkey, sum(x) over (partition by n_regionkey) as s, \
             avg(x) over (order by n_nationkey rows between 1 preceding and current row) as a \
             from (select n_nationkey, n_regionkey, null as x from nation) t order by 1",
            "select n_nationkey, cast(null as bigint) as s, cast(null as double) as a from nation order by 1",
        ),
    ];
    for single in ["0", "1000000000000"] {
        let engine = engine(&data.path, &[("squall.query.single_task_bytes", single)]).await;
        let setting = format!("single_task_bytes={single}");
        assert_pairs(&engine, &reference, &pairs, &setting).await;
        let err = engine
            .sql("select * from orders where (o_custkey, o_orderstatus) in (select c_custkey from customer)")
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("a row of 2 fields IN a subquery of 1 column(s)"),
            "{err}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trino_functions_answer_as_trino() {
    let data = sf001_small_groups();
    let reference = single_node(&data.path).await;
    let pairs = [
        (
            "select if(o_orderstatus = 'F', 'final', 'other') as s, count_if(o_totalprice > 100000) as c, \
             count(*) as n, year(min(o_orderdate)) as y from orders group by 1 order by 1",
            "select case when o_orderstatus = 'F' then 'final' else 'other' end as s, \
             count(*) filter (where o_totalprice > 100000) as c, count(*) as n, \
             cast(date_part('year', min(o_orderdate)) as bigint) as y from orders group by 1 order by 1",
        ),
        (
            "select o_orderpriority, max_by(o_orderkey, o_totalprice) as hi, \
             min_by(o_orderkey, o_totalprice) as lo from orders group by 1 order by 1",
            "select o_orderpriority, max(case when r1 = 1 then o_orderkey end) as hi, \
             max(case when r2 = 1 then o_orderkey end) as lo from (select o_orderpriority, o_orderkey, \
             row_number() over (partition by o_orderpriority order by o_totalprice desc) as r1, \
             row_number() over (partition by o_orderpriority order by o_totalprice) as r2 from orders) \
             group by 1 order by 1",
        ),
        (
            "select date_add('day', 3, date '2020-01-30') as a, date_add('month', 1, date '2020-01-31') as b, \
             date_add('quarter', -1, date '2020-05-31') as c, date_add('year', 1, date '2020-02-29') as d, \
             date_diff('day', date '2020-01-01', date '2020-03-01') as e, \
             date_diff('day', timestamp '2020-01-01 23:00:00', timestamp '2020-01-02 01:00:00') as f, \
             date_diff('month', date '2020-01-31', date '2020-02-29') as g, \
             date_diff('month', date '2020-01-15', date '2020-02-14') as h, \
             date_diff('year', date '2019-03-01', date '2020-02-29') as i, \
             date_diff('hour', timestamp '2020-01-02 01:00:00', timestamp '2020-01-01 23:30:00') as j, \
             day_of_week(date '2020-01-05') as k, last_day_of_month(date '2020-02-10') as l, \
             date_format(timestamp '2020-03-04 05:06:07', '%Y-%m-%d %H:%i:%s %M %e') as m, \
             date_parse('2020-03-04 05:06', '%Y-%m-%d %H:%i') as n",
            "select date '2020-02-02' as a, date '2020-02-29' as b, date '2020-02-29' as c, \
             date '2021-02-28' as d, 60 as e, 0 as f, 1 as g, 0 as h, 0 as i, -1 as j, 7 as k, \
             date '2020-02-29' as l, '2020-03-04 05:06:07 March 4' as m, \
             timestamp '2020-03-04 05:06:00' as n",
        ),
        (
            "select n_name, lower(to_hex(md5(to_utf8(cast(n_nationkey as varchar))))) as h, \
             regexp_extract(n_comment, '[a-z]+') as w, split(n_name, 'A') as p, \
             arbitrary(n_regionkey) over (partition by n_regionkey) as r from nation order by 1",
            "select n_name, md5(cast(n_nationkey as varchar)) as h, regexp_match(n_comment, '[a-z]+')[1] as w, \
             string_to_array(n_name, 'A') as p, n_regionkey as r from nation order by 1",
        ), // SIMILAR TO as the SQL standard reads it: the whole text.
        (
            "select count(*) filter (where p_name similar to '%(green|blue)%') as a, \
             count(*) filter (where p_type similar to 'ECONOMY%') as b, \
             count(*) filter (where p_container similar to '(SM|LG) (BOX|CASE)') as c, \
             count(*) filter (where p_name not similar to '%!_%' escape '!') as d, \
             count(*) filter (where p_brand similar to 'Brand#_[1-3]') as e from part",
            "select count(*) filter (where p_name like '%green%' or p_name like '%blue%') as a, \
             count(*) filter (where p_type like 'ECONOMY%') as b, \
             count(*) filter (where p_container in ('SM BOX', 'SM CASE', 'LG BOX', 'LG CASE')) as c, \
             count(*) filter (where p_name not like '%\\_%') as d, \
             count(*) filter (where p_brand in ('Brand#11', 'Brand#12', 'Brand#13', 'Brand#21', 'Brand#22', \
             'Brand#23', 'Brand#31', 'Brand#32', 'Brand#33', 'Brand#41', 'Brand#42', 'Brand#43', \
             'Brand#51', 'Brand#52', 'Brand#53')) as e from part",
        ),
    ];
    for single in ["0", "1000000000000"] {
        let engine = engine(&data.path, &[("squall.query.single_task_bytes", single)]).await;
        let setting = format!("single_task_bytes={single}");
        assert_pairs(&engine, &reference, &pairs, &setting).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quantified_comparisons_fetch_and_set_operations_with_all() {
    let data = sf001_small_groups();
    let reference = single_node(&data.path).await;
    // Beside single-node DataFusion's answers written without ANY / ALL
    // (which it answers wrong: no row for each of the first two).
    let pairs = [
        (
            "select count(*) as n from customer where c_acctbal > all \
             (select c_acctbal from customer where c_nationkey = 1)",
            "select count(*) as n from customer where c_acctbal > \
             (select max(c_acctbal) from customer where c_nationkey = 1)",
        ),
        (
            "select count(*) as n from customer where c_acctbal > any \
             (select c_acctbal from customer where c_nationkey = 1) and c_custkey < 200",
            "select count(*) as n from customer where c_acctbal > \
             (select min(c_acctbal) from customer where c_nationkey = 1) and c_custkey < 200",
        ),
        (
            "select count(*) as n from customer where c_acctbal > all \
             (select c_acctbal from customer where c_nationkey = 99)",
            "select count(*) as n from customer",
        ),
        (
            "select o_orderkey from orders order by o_totalprice desc, o_orderkey \
             fetch first 5 rows only",
            "select o_orderkey from orders order by o_totalprice desc, o_orderkey limit 5",
        ),
    ];
    for single in ["0", "1000000000000"] {
        let engine = engine(&data.path, &[("squall.query.single_task_bytes", single)]).await;
        let setting = format!("single_task_bytes={single}");
        assert_pairs(&engine, &reference, &pairs, &setting).await;
        // DuckDB's answers (nation is the same at every scale factor).
        assert_eq!(
            squall_csv(
                &engine,
                "select n_regionkey from nation except all \
                 select n_regionkey from nation where n_nationkey < 20 order by 1"
            )
            .await,
            "n_regionkey\n1\n2\n3\n3\n4\n"
        );
        assert_eq!(
            squall_csv(
                &engine,
                "select n_regionkey, n_nationkey % 2 as p from nation intersect all \
                 select n_regionkey, 1 from nation where n_nationkey < 12 order by 1, 2"
            )
            .await,
            "n_regionkey,p\n0,1\n0,1\n1,1\n1,1\n1,1\n2,1\n2,1\n3,1\n3,1\n4,1\n4,1\n"
        );
        let stars = "with r as (select n_regionkey as k from nation) select * from r except all \
                     select r.* from r join region on r.k = r_regionkey where r_regionkey < 3 order by 1";
        assert_eq!(
            squall_csv(&engine, stars).await,
            "k\n3\n3\n3\n3\n3\n4\n4\n4\n4\n4\n"
        );
    }
    // ANY and ALL over NULLs.
    let engine = engine(&data.path, &[]).await;
    for sql in [
        "create table ys as select * from (values (1), (null)) t(y)",
        "create table xs as select * from (values (0), (2), (null)) t(x)",
    ] {
        engine.sql(sql).await.unwrap();
    }
    assert_eq!(
        squall_csv(
            &engine,
            "select x from xs where x > all (select y from ys where y is not null) \
             and x < all (select y from ys where y > 9) order by x"
        )
        .await,
        "x\n2\n"
    );
    assert_eq!(
        squall_csv(
            &engine,
            "select x from xs where x >= any (select y from ys) order by x"
        )
        .await,
        "x\n2\n"
    );
    // ALL over a NULL is never TRUE; NOT IN-like.
    assert_eq!(
        squall_csv(
            &engine,
            "select count(*) as n from xs where x > all (select y from ys)"
        )
        .await,
        "n\n0\n"
    );
    // Where it may be NULL: SQL's three values, as DuckDB answers.
    assert_eq!(
        squall_csv(
            &engine,
            "select x, x > all (select y from ys) as a, x > any (select y from ys) as b, \
             x < all (select y from ys where y > 9) as c, x = any (select y from ys) as d \
             from xs order by x nulls last"
        )
        .await,
        "x,a,b,c,d\n0,false,,true,\n2,,true,true,\n,,,true,\n"
    );
    assert_eq!(
        squall_csv(
            &engine,
            "select x, x <> all (select y from ys) as e, x <> any (select y from ys where y is not null) as f, \
             x = all (select y from ys where y is not null) as g, x <= any (select y from ys where y > 9) as h \
             from xs order by x nulls last"
        )
        .await,
        "x,e,f,g,h\n0,,true,false,false\n2,,true,false,false\n,,,,false\n"
    );
}

/// Chained `JOIN ... USING` sharing a column (dbt-trino's `dbt docs
/// generate` joins three relations so): DataFusion alone finds the
/// unqualified column ambiguous; squall answers as single-node DataFusion
/// answers the query written with the first relation's column.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chained_using_joins_answer() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[]).await;
    let reference = single_node(&data.path).await;
    let b = "(select n_nationkey, n_name as name2 from nation) b";
    let b2 = "(select n_nationkey, n_name as name2, n_regionkey from nation) b";
    let c = "(select n_nationkey, n_regionkey, n_comment as c2 from nation) c";
    assert_pairs(
        &engine,
        &reference,
        &[
            (
                &format!(
                    "select n_nationkey, name2, c2 from nation a join {b} using (n_nationkey) \
                     left join {c} using (n_nationkey, n_regionkey) \
                     where n_nationkey < 10 order by n_nationkey"
                ),
                &format!(
                    "select a.n_nationkey, name2, c2 from nation a join {b} using (n_nationkey) \
                     left join {c} using (n_nationkey, n_regionkey) \
                     where a.n_nationkey < 10 order by a.n_nationkey"
                ),
            ),
            (
                &format!(
                    "select n_regionkey, count(*) as n from nation a join {b2} \
                     using (n_nationkey, n_regionkey) join {c} using (n_regionkey) \
                     group by n_regionkey having count(n_regionkey) > 1 order by n_regionkey"
                ),
                &format!(
                    "select a.n_regionkey, count(*) as n from nation a join {b2} \
                     using (n_nationkey, n_regionkey) join {c} using (n_regionkey) \
                     group by a.n_regionkey having count(a.n_regionkey) > 1 order by a.n_regionkey"
                ),
            ),
        ],
        "chained USING",
    )
    .await;
}

/// Trino's functions of maps (`map_from_entries`, refusing a NULL or
/// repeated key as Trino does; `transform_values`, `transform_keys`,
/// `map_filter` with their lambdas; `map_concat`, the last map's value
/// winning; `histogram`), `zip_with` and `to_iso8601`, which squall named
/// unknown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trino_map_functions_and_to_iso8601() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[]).await;
    for (sql, csv) in [
        (
            "select map_from_entries(array[row(1, 'a'), row(2, 'b')])[2] as v, \
             cardinality(map_from_entries(array[row('x', 1.5)])) as n, \
             map_from_entries(cast(null as array(row(k bigint, v varchar)))) is null as z",
            "v,n,z\nb,1,true\n",
        ),
        (
            "select n_name, map_from_entries(array[row(n_name, n_nationkey), row('r', n_regionkey)])['r'] as r \
             from nation where n_nationkey < 2 order by 1",
            "n_name,r\nALGERIA,0\nARGENTINA,1\n",
        ),
        (
            "select to_iso8601(date '2024-01-02') as d, \
             to_iso8601(cast(timestamp '2024-01-02 10:20:30.5' as timestamp(3))) as t, \
             to_iso8601(min(o_orderdate)) as o from orders",
            "d,t,o\n2024-01-02,2024-01-02T10:20:30.500,1992-01-01\n",
        ),
        (
            "select transform_values(m, (k, v) -> v * 10)['b'] as a, \
             transform_keys(m, (k, v) -> upper(k))['A'] as b, \
             cardinality(map_filter(m, (key, value) -> value > 1 and key <> 'c')) as c, \
             map_concat(m, map(array['b', 'd'], array[20, 40]))['b'] as d, \
             cardinality(map_concat(m, map(array['b', 'd'], array[20, 40]))) as e, \
             transform_values(cast(null as map(varchar, bigint)), (k, v) -> v) is null as f \
             from (select map(array['a', 'b', 'c'], array[1, 2, 3]) as m)",
            "a,b,c,d,e,f\n20,1,1,20,4,true\n",
        ),
        (
            "select n_name, zip_with(array[n_nationkey, 1, 2], array[n_regionkey, 10], \
             (x, y) -> coalesce(x, 0) * 100 + coalesce(y, 0)) as z \
             from nation where n_nationkey in (1, 2) order by 1",
            "n_name,z\nARGENTINA,\"[101, 110, 200]\"\nBRAZIL,\"[201, 110, 200]\"\n",
        ),
    ] {
        assert_eq!(squall_csv(&engine, sql).await, csv, "{sql}");
    }
    // histogram: each value's count, staged (partial counts merged).
    let reference = single_node(&data.path).await;
    assert_eq!(
        squall_csv(
            &engine,
            "select l_returnflag, histogram(l_linestatus)['F'] as f, \
             cardinality(histogram(l_linestatus)) as n, histogram(cast(null as bigint)) is null as z \
             from lineitem group by 1 order by 1"
        )
        .await,
        single_node_csv(
            &reference,
            "select l_returnflag, nullif(count(*) filter (where l_linestatus = 'F'), 0) as f, \
             count(distinct l_linestatus) as n, true as z from lineitem group by 1 order by 1"
        )
        .await
    );
    for (sql, says) in [
        (
            "select map_from_entries(array[row(1, 'a'), row(1, 'b')])",
            "Duplicate map keys (1) are not allowed",
        ),
        (
            "select map_from_entries(array[row(cast(null as bigint), 'a')])",
            "map key cannot be null",
        ),
        (
            "select map_filter(map(array[1], array[2]), x -> x > 1)",
            "map_filter: its last argument must be a lambda of two parameters",
        ),
    ] {
        let err = engine.sql(sql).await.unwrap_err().to_string();
        assert!(err.contains(says), "{sql}: {err}");
    }
}
