//! Statements beyond TPC-H.

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn assorted_sql_matches_datafusion() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[("squall.scan.target_task_bytes", "100000")]).await;
    let reference = single_node(&data.path).await;
    for sql in ASSORTED_SQL {
        let expected = single_node_csv(&reference, sql).await;
        let actual = squall_csv(&engine, sql).await;
        assert_same(sql, &expected, &actual, sql);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_explain_and_errors() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[]).await;
    engine
        .sql("set squall.shuffle.partitions = 3")
        .await
        .unwrap();
    let r = engine
        .sql("explain select l_returnflag, count(*) from lineitem group by 1")
        .await
        .unwrap();
    let text = squall_tpch::run::to_csv(&r.schema, &r.batches).unwrap();
    assert!(text.contains("Stage s1"), "{text}");
    assert!(text.contains("ShuffleWriteExec: hash="), "{text}");
    assert!(
        text.contains("hash x3, up to 3 tasks"),
        "SET must reach the planner: {text}"
    );

    let r = engine
        .sql("explain analyze select count(*) from orders")
        .await
        .unwrap();
    let text = squall_tpch::run::to_csv(&r.schema, &r.batches).unwrap();
    assert!(text.contains("profile") && text.contains("stage"), "{text}");

    let err = engine
        .sql("select nope from lineitem")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("nope"), "{err}");
    let err = engine
        .sql("select * from missing_table")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("missing_table"), "{err}");
    let err = engine
        .sql("set squall.no_such_knob = 1")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("no_such_knob"), "{err}");
    assert!(engine.sql("").await.is_err());
}

/// A codec no task could write with fails the query before any task runs,
/// naming the setting; zstd at a level answers as lz4 does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exchange_codecs() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[]).await;
    engine
        .sql("set squall.shuffle.compression = 'gzip'")
        .await
        .unwrap();
    let err = engine
        .sql("select count(*) from orders")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("squall.shuffle.compression")
            && err.contains("gzip")
            && !err.contains("attempt"),
        "{err}"
    );
    let sql = "select o_orderstatus, count(*), sum(o_totalprice) from orders group by 1 order by 1";
    engine
        .sql("set squall.shuffle.compression = 'lz4'")
        .await
        .unwrap();
    let lz4 = squall_csv(&engine, sql).await;
    engine
        .sql("set squall.shuffle.compression = 'zstd:-3'")
        .await
        .unwrap();
    assert_eq!(squall_csv(&engine, sql).await, lz4);
    engine
        .sql("set squall.shuffle.compression = 'zstd:1'")
        .await
        .unwrap();
    assert_eq!(squall_csv(&engine, sql).await, lz4);
}

/// External tables over CSV and newline-delimited JSON run staged (a
/// stage's shipped plan keeps the files of scans other than Parquet's, which
/// workers bind from their assignments) and equal single-node DataFusion.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn csv_and_json_tables_run_staged() {
    let dir = tempfile::tempdir().unwrap();
    let (mut csv, mut json) = (String::from("k,v\n"), String::new());
    for i in 0..5_000 {
        csv.push_str(&format!("{},{}\n", i % 31, i));
        json.push_str(&format!("{{\"k\":{},\"v\":{}}}\n", i % 31, i));
    }
    std::fs::write(dir.path().join("t.csv"), &csv).unwrap();
    std::fs::write(dir.path().join("t.json"), &json).unwrap();
    let engine = engine(dir.path(), &[("squall.catalog.allowed_roots", "*")]).await;
    let reference = datafusion::prelude::SessionContext::new();
    for (table, ddl) in [
        (
            "c",
            format!(
                "create external table c stored as csv location '{}' options ('format.has_header' 'true')",
                dir.path().join("t.csv").display()
            ),
        ),
        (
            "j",
            format!(
                "create external table j stored as json location '{}'",
                dir.path().join("t.json").display()
            ),
        ),
    ] {
        engine.sql(&ddl).await.unwrap();
        reference.sql(&ddl).await.unwrap().collect().await.unwrap();
        let sql =
            format!("select k, count(*) as n, sum(v) as s from {table} group by k order by k");
        let r = engine.sql(&sql).await.unwrap();
        assert!(
            r.profile.as_ref().is_some_and(|p| p.stages > 1),
            "{table} runs staged"
        );
        let actual = squall_tpch::run::to_csv(&r.schema, &r.batches).unwrap();
        let expected = single_node_csv(&reference, &sql).await;
        assert_same(table, &expected, &actual, &sql);
    }
}

/// A statement answered in the coordinator's own process (it reads no
/// table) reports the types its rows have: the API wrote a union of `1`
/// and `2.5` as BIGINT with the doubles' bits, and a DATE as a TIMESTAMP,
/// from the plan's types before analysis.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_answered_here_are_typed_as_their_rows() {
    let e = squall_planner::Engine::local(squall_planner::EngineOptions::default())
        .await
        .unwrap();
    for (sql, csv) in [
        (
            "select x from (select 1 as x union all select 2.5 union all select null) order by x",
            "x\n1.0\n2.5\n\"\"\n",
        ),
        (
            "select date_trunc('week', date '2024-01-10') as d",
            "d\n2024-01-08\n",
        ),
        ("select cast(1.7 as integer) as i", "i\n2\n"),
    ] {
        let r = e.sql(sql).await.unwrap();
        for batch in r.batches.iter() {
            assert_eq!(
                batch.schema().fields().len(),
                r.schema.fields().len(),
                "{sql}"
            );
            for (a, b) in batch.schema().fields().iter().zip(r.schema.fields()) {
                assert_eq!(a.data_type(), b.data_type(), "{sql}");
            }
        }
        assert_eq!(squall_csv(&e, sql).await, csv, "{sql}");
    }
}

/// A client paging deep into a sorted result (`LIMIT 5 OFFSET 150000`,
/// past the rows DataFusion's top-k heap is left with): the rows are
/// sorted whole and then limited (EXPLAIN shows the limit above a sort
/// without a fetch), and the page is the one single-node DataFusion's
/// top-k gives, staged and one-task; a shallow page keeps the heap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deep_pages_of_a_sorted_result_sort_whole() {
    let data = sf001_small_groups();
    let reference = single_node(&data.path).await;
    let deep = "select l_orderkey, l_linenumber, r_name from lineitem, region \
                order by l_comment, l_orderkey, l_linenumber, r_name limit 5 offset 150000";
    let shallow = "select l_orderkey, l_linenumber from lineitem \
                   order by l_comment, l_orderkey, l_linenumber limit 5 offset 100";
    for single in ["0", "1000000000000"] {
        let engine = engine(&data.path, &[("squall.query.single_task_bytes", single)]).await;
        for sql in [deep, shallow] {
            assert_eq!(
                squall_csv(&engine, sql).await,
                single_node_csv(&reference, sql).await,
                "{sql} (single_task_bytes={single})"
            );
        }
        let r = engine.sql(&format!("explain {deep}")).await.unwrap();
        let text = squall_tpch::run::to_csv(&r.schema, &r.batches).unwrap();
        assert!(
            text.contains("LocalLimitExec: fetch=150005")
                && !text.contains("TopK")
                && !text.contains("fetch=150005, expr"),
            "{text}"
        );
    }
}

/// `EXISTS` and `IN (subquery)` as values: in a select list, inside CASE,
/// negated, over a subquery with ORDER BY / LIMIT, inside an aggregation's
/// argument, uncorrelated, and `IN`'s NULLs (a NULL probe, a subquery
/// holding NULL); each against the same question written as an outer join,
/// which single-node DataFusion answers (it refuses EXISTS outside WHERE).
/// Staged and one task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exists_and_in_answer_as_values() {
    let data = sf001_small_groups();
    let reference = single_node(&data.path).await;
    let pairs = [
        (
            "select c_custkey, exists (select 1 from orders where o_custkey = c_custkey \
             and o_orderstatus = 'F') as e from customer where c_custkey < 60 order by 1",
            "select c_custkey, coalesce(f.has, false) as e from customer left join \
             (select distinct o_custkey, true as has from orders where o_orderstatus = 'F') f \
             on f.o_custkey = c_custkey where c_custkey < 60 order by 1",
        ),
        (
            "select c_custkey, case when not exists (select * from orders where o_custkey = c_custkey \
             and o_totalprice > 200000 order by o_totalprice limit 1) then 'none' else 'some' end as e \
             from customer where c_custkey < 60 order by 1",
            "select c_custkey, case when f.has is null then 'none' else 'some' end as e \
             from customer left join (select distinct o_custkey, true as has from orders \
             where o_totalprice > 200000) f on f.o_custkey = c_custkey where c_custkey < 60 order by 1",
        ),
        (
            "select count(*) as n, sum(case when exists (select 1 from lineitem where \
             l_orderkey = o_orderkey and l_returnflag = 'R') then 1 else 0 end) as r from orders",
            "select count(*) as n, count(r.k) as r from orders left join \
             (select distinct l_orderkey as k from lineitem where l_returnflag = 'R') r \
             on r.k = o_orderkey",
        ),
        (
            "select exists (select 1 from nation where n_name = 'FRANCE') as a, \
             not exists (select 1 from nation where n_name = 'ATLANTIS') as b",
            "select true as a, true as b",
        ),
        (
            "select c_custkey, c_custkey in (select o_custkey from orders \
             where o_orderstatus = 'F') as e from customer where c_custkey < 60 order by 1",
            "select c_custkey, coalesce(f.has, false) as e from customer left join \
             (select distinct o_custkey, true as has from orders where o_orderstatus = 'F') f \
             on f.o_custkey = c_custkey where c_custkey < 60 order by 1",
        ),
        (
            "select x, x in (select y from (values (1), (null)) t(y)) as a, \
             x not in (select y from (values (1), (null)) t(y)) as b, \
             x in (select y from (values (1)) t(y) where y > 5) as c \
             from (values (1), (2), (null)) s(x) order by x nulls last",
            "select x, a, b, c from (values (1, true, false, false), (2, null, null, false), \
             (null, null, null, false)) t(x, a, b, c) order by x nulls last",
        ),
    ];
    for single in ["0", "1000000000000"] {
        let engine = engine(&data.path, &[("squall.query.single_task_bytes", single)]).await;
        let setting = format!("single_task_bytes={single}");
        assert_pairs(&engine, &reference, &pairs, &setting).await;
    }
}

/// A join of 80 tables is one stage plan nesting some 500 protobuf
/// messages: past prost's default limit of 100, which failed the plan
/// check from about 50 tables on ("recursion limit reached"). It runs
/// staged, and answers as single-node DataFusion.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_of_eighty_tables_runs_staged() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[]).await;
    let reference = single_node(&data.path).await;
    let joins: String = (1..80)
        .map(|i| {
            format!(
                " join nation n{i} on n{i}.n_nationkey = (n{}.n_nationkey + {}) % 25",
                i - 1,
                i % 3
            )
        })
        .collect();
    let sql = format!(
        "select n0.n_name, n79.n_name as last, n40.n_regionkey from nation n0{joins} \
         order by n0.n_name"
    );
    let expected = single_node_csv(&reference, &sql).await;
    let actual = squall_csv(&engine, &sql).await;
    assert_same("80 tables", &expected, &actual, &sql);
    let explained = squall_csv(&engine, &format!("explain {sql}")).await;
    assert!(explained.contains("Stage s"), "{explained}");
}

/// Integer `+`, `-` and `*` and integer sums fail on overflow, as Trino's
/// do: DataFusion's wrapped (`9223372036854775807 + 1` answered
/// -9223372036854775808, an INTEGER product past 2^31 and a sum past 2^63
/// a wrong number). The failure names the type and the operation and is
/// not retried; arithmetic and sums in range answer as single-node
/// DataFusion, under the same column names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn integer_arithmetic_fails_on_overflow() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[]).await;
    for (sql, says) in [
        ("select 9223372036854775807 + 1", "bigint addition overflow"),
        (
            "select n_name, n_nationkey * 1000000000 * 1000000000 as x from nation",
            "bigint multiplication overflow",
        ),
        (
            "select sum(cast(l_orderkey as integer) * cast(l_orderkey as integer)) from lineitem",
            "integer multiplication overflow",
        ),
        (
            "select -9223372036854775807 - n_regionkey - 2 from nation",
            "bigint subtraction overflow",
        ),
        (
            "select -(n_regionkey - 9223372036854775807 - 1) from nation",
            "bigint subtraction overflow",
        ),
        (
            "select sum(distinct l_orderkey * 100000000000000) from lineitem",
            "bigint sum overflow",
        ),
        (
            "select sum(l_orderkey * l_orderkey * 10000000) from lineitem",
            "bigint sum overflow",
        ),
        (
            "select l_returnflag, sum(l_orderkey * l_orderkey * 10000000) from lineitem group by 1",
            "bigint sum overflow",
        ),
        (
            "select sum(x) over (order by x rows between 1 preceding and current row) \
             from (values (9223372036854775807), (1)) t(x)",
            "bigint sum overflow",
        ),
    ] {
        let err = engine.sql(sql).await.unwrap_err().to_string();
        assert!(
            err.contains(says) && err.contains("out of the type's range"),
            "{sql}: {err}"
        );
        assert!(
            !err.contains("after 2 attempt"),
            "a data error is not retried: {err}"
        );
    }
    let reference = single_node(&data.path).await;
    for sql in [
        "select n_nationkey * 3 - n_regionkey + 1 as a, n_nationkey * n_regionkey as p \
         from nation order by 1",
        "select sum(l_orderkey * l_linenumber - 1) as a, sum(l_quantity * 2) as b from lineitem",
        "select 9223372036854775806 + 1 as m, cast(2147483646 as integer) + cast(1 as integer) as i",
        "select l_returnflag, sum(l_orderkey), sum(distinct l_linenumber), \
         sum(l_linenumber) filter (where l_orderkey > 100) as f, sum(cast(l_linenumber as smallint)) \
         from lineitem group by 1 order by 1",
        "select l_orderkey, sum(l_linenumber) over (order by l_orderkey, l_linenumber \
         rows between 2 preceding and current row) as s from lineitem order by l_orderkey, s limit 20",
    ] {
        let expected = single_node_csv(&reference, sql).await;
        assert_eq!(squall_csv(&engine, sql).await, expected, "{sql}");
    }
}

/// DECIMAL arithmetic and sums fail past 38 digits, as Trino's do
/// (`Decimal overflow`): Arrow's kernels failed only past 128 bits, so a
/// DECIMAL(38) of nines plus one answered a 39-digit value clients read as
/// 38 digits, and a sum of two such values wrapped to a negative number.
/// Staged, grouped, ungrouped and over a window frame; sums and products in
/// range answer as single-node DataFusion, under the same column names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decimal_arithmetic_fails_past_38_digits() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[]).await;
    let nines = "cast('99999999999999999999999999999999999999' as decimal(38,0))";
    for (sql, says) in [
        (
            format!("select {nines} + n_regionkey from nation"),
            "decimal overflow",
        ),
        (
            format!("select {nines} - (-1) * n_nationkey from nation where n_nationkey > 0"),
            "decimal overflow",
        ),
        (
            format!("select sum({nines} - n_nationkey) from nation"),
            "decimal sum overflow",
        ),
        (
            format!("select n_regionkey, sum({nines} - n_nationkey) from nation group by 1"),
            "decimal sum overflow",
        ),
        (
            format!(
                "select sum({nines} - n_nationkey) over (order by n_nationkey rows between 1 preceding and current row) from nation"
            ),
            "decimal sum overflow",
        ),
    ] {
        let err = engine.sql(&sql).await.unwrap_err().to_string();
        assert!(err.contains(says) && err.contains("digits"), "{sql}: {err}");
        assert!(
            !err.contains("after 2 attempt"),
            "a data error is not retried: {err}"
        );
    }
    let reference = single_node(&data.path).await;
    for sql in [
        "select l_orderkey, l_extendedprice * (1 - l_discount) * (1 + l_tax) as c from lineitem order by 1, 2 limit 20",
        "select l_returnflag, sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as c, \
         sum(cast(l_quantity as decimal(38, 2))) as q from lineitem group by 1 order by 1",
        "select sum(cast(o_totalprice as decimal(38, 2)) - 1000000) as s from orders",
    ] {
        let expected = single_node_csv(&reference, sql).await;
        assert_eq!(squall_csv(&engine, sql).await, expected, "{sql}");
    }
}

/// Subqueries in ORDER BY, correlated with columns the select list leaves
/// out or keeps, staged: as the same order written with joins.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subqueries_order_rows() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[]).await;
    let reference = single_node(&data.path).await;
    for (sql, joined) in [
        (
            "select n_name from nation order by (select r_name from region \
             where r_regionkey = n_regionkey) desc, n_name limit 6",
            "select n_name from nation join region on r_regionkey = n_regionkey \
             order by r_name desc, n_name limit 6",
        ),
        (
            "select c_name from customer c order by (select count(*) from orders o \
             where o.o_custkey = c.c_custkey) desc, c_name limit 5",
            "select c_name from customer c left join (select o_custkey, count(*) as n \
             from orders group by 1) o on o.o_custkey = c.c_custkey \
             order by coalesce(n, 0) desc, c_name limit 5",
        ),
        (
            "select n_name, n_regionkey from nation order by exists (select 1 from supplier s \
             where s.s_nationkey = nation.n_nationkey and s_acctbal > 9000), n_name",
            "select n_name, n_regionkey from nation left join (select distinct s_nationkey \
             from supplier where s_acctbal > 9000) s on s.s_nationkey = n_nationkey \
             order by s.s_nationkey is not null, n_name",
        ),
    ] {
        assert_eq!(
            squall_csv(&engine, sql).await,
            single_node_csv(&reference, joined).await,
            "{sql}"
        );
    }
}

/// `TABLESAMPLE BERNOULLI (p)` and `SYSTEM (p)` keep about p% of the rows
/// (DataFusion read the whole table); what cannot be sampled is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tablesample_keeps_about_its_percentage() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[]).await;
    // 60,175 line items: 10% is 6,018 give or take 74 (one standard
    // deviation); the bounds are 13 of them away.
    assert_eq!(
        squall_csv(
            &engine,
            "select (select count(*) from lineitem tablesample bernoulli (10)) between 5000 and 7000 as b, \
             (select count(*) from lineitem l tablesample system (10)) between 5000 and 7000 as s, \
             (select count(*) from lineitem tablesample bernoulli (0)) as none, \
             (select count(*) from lineitem tablesample bernoulli (100)) as every, \
             (select count(*) from (select * from orders) tablesample bernoulli (100)) as derived"
        )
        .await,
        "b,s,none,every,derived\ntrue,true,0,60175,15000\n"
    );
    for (sql, says) in [
        (
            "select count(*) from lineitem tablesample bernoulli (150)",
            "between 0 and 100",
        ),
        (
            "select count(*) from lineitem tablesample (10 rows)",
            "a number of rows",
        ),
    ] {
        let err = engine.sql(sql).await.unwrap_err().to_string();
        assert!(err.contains(says), "{sql}: {err}");
    }
}

/// Trino's `VALUES 1, 2` (rows of one value written without parentheses),
/// which the parser refused, and its `DECIMAL 'text'` literal typed by its
/// digits, which was a DECIMAL(38,10) (a Trino client's decimal parameter
/// came back as `1.2500000000`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bare_values_and_decimal_literals_as_trino_reads_them() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[]).await;
    for (sql, csv) in [
        (
            "select x, typeof(x) as t from (values 2, 1) as t(x) order by x",
            "x,t\n1,bigint\n2,bigint\n",
        ),
        (
            "select count(*) as n from nation where n_name in \
             (select * from (values 'FRANCE', 'PERU', upper('chile')))",
            "n\n2\n",
        ),
        (
            "select typeof(decimal '1.25') as a, decimal '-001.250' as b, \
             typeof(o_totalprice * decimal '1.1') as c from orders limit 1",
            "a,b,c\n\"decimal(3,2)\",-1.250,\"decimal(18,3)\"\n",
        ),
    ] {
        assert_eq!(squall_csv(&engine, sql).await, csv, "{sql}");
    }
}

/// `ORDER BY n` of an unnamed expression of aggregates (DataFusion refused
/// `max(x) - min(x) ... ORDER BY 1`: "Column in ORDER BY must be in GROUP
/// BY"), staged, as the same query ordering by the item named; under
/// DISTINCT and in a UNION as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn order_by_ordinals_of_aggregate_expressions() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[]).await;
    let reference = single_node(&data.path).await;
    for (sql, named) in [
        (
            "select max(o_totalprice) - min(o_totalprice) from orders group by o_custkey order by 1 desc limit 5",
            "select max(o_totalprice) - min(o_totalprice) as d from orders group by o_custkey order by d desc limit 5",
        ),
        (
            "select o_custkey, sum(o_totalprice) - count(*) from orders group by 1 order by 2, 1 limit 5",
            "select o_custkey, sum(o_totalprice) - count(*) as a from orders group by 1 order by a, 1 limit 5",
        ),
        (
            "select distinct o_orderstatus || 'x' from orders order by 1",
            "select distinct o_orderstatus || 'x' as s from orders order by s",
        ),
    ] {
        let expected = single_node_csv(&reference, named).await;
        let actual = squall_csv(&engine, sql).await;
        let values = |csv: &str| csv.lines().skip(1).map(str::to_string).collect::<Vec<_>>();
        assert_eq!(values(&actual), values(&expected), "{sql}");
    }
}

/// Derived tables nested 100 deep plan and answer, staged (the SQL
/// parser's default depth of 50 refused about 25); past the parser's
/// depth, the error names the nesting and its limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deeply_nested_derived_tables_answer() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[]).await;
    let mut sql = "select n_nationkey as k, n_regionkey as r from nation".to_string();
    for i in 0..100 {
        sql = format!(
            "select t{i}.k, t{i}.r from ({sql}) t{i} where t{i}.k >= {}",
            i % 5
        );
    }
    let sql = format!("select count(*) as n, sum(k) as s from ({sql}) z");
    // Every level keeps k >= 4: nations 4 to 24.
    assert_eq!(squall_csv(&engine, &sql).await, "n,s\n21,294\n");
    let mut deep = "select 1 as x".to_string();
    for i in 0..1000 {
        deep = format!("select x from ({deep}) t{i}");
    }
    let err = engine.sql(&deep).await.unwrap_err().to_string();
    assert!(
        err.contains("nests parentheses, subqueries and CASE expressions more than 480 deep"),
        "{err}"
    );
}
