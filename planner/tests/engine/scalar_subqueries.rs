//! Scalar subqueries: at most one row, NULL for none, and correlated ones
//! that are not aggregates, staged and as one task, against single-node
//! DataFusion.

use crate::common::*;

/// A scalar subquery returns at most one row, as SQL requires: a second row
/// fails the query with DataFusion's own message (squall plans the subquery
/// as a join, which would otherwise repeat the outer rows), staged and as
/// one task; no row is NULL (of a column never NULL too); one row is the
/// value; subqueries already one row by their plan (aggregates) or at most
/// one of a nullable value (`LIMIT 1`) are planned as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scalar_subqueries_return_at_most_one_row() {
    let data = sf001_small_groups();
    let staged = engine(&data.path, &[("squall.scan.target_task_bytes", "100000")]).await;
    let one_task = engine(
        &data.path,
        &[("squall.query.single_task_bytes", "1000000000000")],
    )
    .await;
    let reference = single_node(&data.path).await;
    for (name, e) in [("staged", &staged), ("one task", &one_task)] {
        for sql in [
            "select count(*) from customer where c_acctbal > \
             (select c_acctbal from customer where c_custkey < 5)",
            "select c_custkey, (select n_name from nation where n_regionkey = 1) from customer \
             where c_custkey < 3",
            // Nested: the inner subquery has 5 rows.
            "select count(*) from orders where o_custkey = \
             (select max(c_custkey) from customer where c_nationkey = \
               (select n_nationkey from nation where n_regionkey = 2))",
        ] {
            let err = match e.sql(sql).await {
                Ok(r) => panic!(
                    "{name}: {sql}: {} rows instead of an error",
                    r.batches.len()
                ),
                Err(err) => err.to_string(),
            };
            assert!(
                err.contains("Scalar subquery returned more than one row"),
                "{name}: {sql}: {err}"
            );
            // Never retried: the same rows fail again.
            assert!(!err.contains("4 attempt"), "{name}: {sql}: {err}");
        }
        for sql in [
            "select count(*), sum(c_acctbal) from customer where c_acctbal > \
             (select c_acctbal from customer where c_custkey = 5)",
            "select count(*) from customer where c_acctbal > \
             (select c_acctbal from customer where c_custkey < 0)",
            "select (select n_name from nation where n_nationkey = 7)",
            "select count(*) from orders where o_custkey = \
             (select max(c_custkey) from customer where c_nationkey = \
               (select n_nationkey from nation where n_name = 'GERMANY'))",
            "select count(*) from customer where c_acctbal > \
             (select c_acctbal from customer order by c_acctbal desc limit 1 offset 9)",
        ] {
            let expected = single_node_csv(&reference, sql).await;
            let actual = squall_csv(e, sql).await;
            assert_same(&format!("{name}: {sql}"), &expected, &actual, sql);
        }
        // No row is NULL (single-node DataFusion 55 answers `false` here:
        // its own scalar-subquery node loses the NULL).
        let sql = "select (select c_acctbal from customer where c_custkey < 0) is null as none";
        assert_eq!(squall_csv(e, sql).await.trim(), "none\ntrue", "{name}");
        // Nor where at most one row of a column never NULL comes back: an
        // empty LIMIT 1 is NULL too (DataFusion simplified it out as
        // never NULL); a subquery always of one row stays as it is.
        let sql = "select (select c_custkey from customer order by 1 limit 1 offset 99999) \
                   is null as none, coalesce((select 5 where false), 7) as seven, \
                   coalesce((select c_name from customer order by 1 limit 1), 'x') as first, \
                   coalesce((select count(*) from nation), 3) as n";
        assert_eq!(
            squall_csv(e, sql).await.trim(),
            "none,seven,first,n\ntrue,7,Customer#000000001,25",
            "{name}"
        );
        // An unnamed item holding a subquery is named by its text (it was
        // named by the rewritten subquery's, `__squall_value` and all).
        let sql = "select (select 5 where false) is null, coalesce((select 1), 0) + 1";
        assert_eq!(
            squall_csv(e, sql).await.lines().next(),
            Some("(SELECT 5 WHERE false) IS NULL,\"coalesce((SELECT 1), 0) + 1\""),
            "{name}"
        );
    }
    // One row by the plan's own shape: no check added (TPC-H's scalar
    // subqueries are aggregates), nor to at most one row of a nullable
    // value; at most one row of a value never NULL gets the check, whose
    // value is NULL for no row.
    for (sql, checked) in [
        (squall_tpch::query(22).unwrap(), false),
        (
            "select count(*) from customer where c_acctbal > (select avg(c_acctbal) from customer)",
            false,
        ),
        (
            "select count(*) from customer where c_acctbal > \
             (select nullif(c_acctbal, 0) from customer limit 1)",
            false,
        ),
        (
            "select count(*) from customer where c_acctbal > (select c_acctbal from customer limit 1)",
            true,
        ),
        (
            "select count(*) from customer where c_acctbal > (select c_acctbal from customer where c_custkey = 5)",
            true,
        ),
    ] {
        let r = staged.sql(&format!("explain {sql}")).await.unwrap();
        let text = squall_tpch::run::to_csv(&r.schema, &r.batches).unwrap();
        assert_eq!(
            text.contains("squall_scalar_subquery"),
            checked,
            "{sql}\n{text}"
        );
    }
    assert_eq!(
        count_files(staged.exchange_root()),
        0,
        "objects left behind"
    );
}

/// A correlated scalar subquery that is not an aggregate (a lookup, or the
/// first row of each with `ORDER BY ... LIMIT 1`), which DataFusion plans
/// only as an aggregate: answers as the join it means, staged and as one
/// task, and fails the query where it finds two rows; NULLs sort last.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn correlated_scalar_subqueries_answer_without_an_aggregate() {
    let data = sf001_small_groups();
    let reference = single_node(&data.path).await;
    let pairs = [
        (
            "select n_name, (select r_name from region where r_regionkey = n_regionkey) as r \
             from nation order by 1",
            "select n_name, r_name as r from nation join region on r_regionkey = n_regionkey order by 1",
        ),
        (
            "select c_custkey, (select o_orderkey from orders where o_custkey = c_custkey \
             order by o_totalprice desc, o_orderkey limit 1) as top from customer where c_custkey < 200 \
             order by 2 desc, 1",
            "select c_custkey, o_orderkey as top from customer left join (select o_custkey, o_orderkey, \
             row_number() over (partition by o_custkey order by o_totalprice desc, o_orderkey) as rn \
             from orders) on o_custkey = c_custkey and rn = 1 where c_custkey < 200 \
             order by 2 desc nulls last, 1",
        ),
        (
            "select count(*) as n from orders where o_totalprice > \
             (select c_acctbal * 20 from customer where c_custkey = o_custkey)",
            "select count(*) as n from orders join customer on c_custkey = o_custkey \
             where o_totalprice > c_acctbal * 20",
        ),
    ];
    for single in ["0", "1000000000000"] {
        let e = engine(&data.path, &[("squall.query.single_task_bytes", single)]).await;
        let setting = format!("single_task_bytes={single}");
        assert_pairs(&e, &reference, &pairs, &setting).await;
        let sql = "select n1.n_name, (select n2.n_name from nation n2 \
                   where n2.n_regionkey = n1.n_regionkey) from nation n1";
        let err = e
            .sql(sql)
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            err.contains("Scalar subquery returned more than one row"),
            "{setting}: {err}"
        );
    }
}

/// A correlated subquery squall cannot turn into a join (a LATERAL
/// compared with the outer row below a LIMIT, or naming an outer column in
/// its select list beside one) fails saying so and what to write instead, not with DataFusion's
/// "Physical plan does not support logical expression
/// OuterReferenceColumn(...)"; staged and as one task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subqueries_that_cannot_be_joins_say_so() {
    let data = sf001_small_groups();
    for settings in [
        &[][..],
        &[("squall.query.single_task_bytes", "1000000000000")][..],
    ] {
        let engine = engine(&data.path, settings).await;
        for sql in [
            "select n1.n_name, n2.n_name from nation n1 cross join lateral (select n_name from \
             nation n2 where n2.n_regionkey > n1.n_regionkey order by n_nationkey limit 1) n2",
            "select n1.n_name, n2.k from nation n1 cross join lateral (select n_nationkey + \
             n1.n_nationkey as k from nation n2 where n2.n_regionkey = n1.n_regionkey \
             order by n_nationkey limit 1) n2",
        ] {
            let e = engine.sql(sql).await.unwrap_err().to_string();
            assert!(
                e.contains("correlated subquery squall cannot plan as a join")
                    && e.contains("row_number()"),
                "{sql}: {e}"
            );
        }
    }
}

/// `x op ALL|ANY (subquery)` of a correlated subquery (the order that tops
/// its customer's): the subquery's rows are asked directly (DataFusion
/// decorrelated no outer column inside the derived table squall wrote, and
/// failed with "No field named __correlated_sq_1..."), staged, against the
/// same questions as joins and `NOT EXISTS`, which single-node DataFusion
/// answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn correlated_quantified_comparisons_answer() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[("squall.scan.target_task_bytes", "100000")]).await;
    let reference = single_node(&data.path).await;
    let tops = "(select o_custkey as k, max(o_totalprice) as m from orders group by 1) t";
    for (sql, same) in [
        (
            "select count(*) as n from orders o where o.o_totalprice > all (select o2.o_totalprice \
             from orders o2 where o2.o_custkey = o.o_custkey and o2.o_orderkey <> o.o_orderkey)"
                .to_string(),
            "select count(*) as n from orders o where not exists (select 1 from orders o2 \
             where o2.o_custkey = o.o_custkey and o2.o_orderkey <> o.o_orderkey \
             and o2.o_totalprice >= o.o_totalprice)"
                .to_string(),
        ),
        (
            // Unqualified: the outer column must not be read as the
            // subquery's own column of the same name.
            "select count(*) as n from orders o where o_totalprice < any \
             (select o2.o_totalprice from orders o2 where o2.o_custkey = o.o_custkey)"
                .to_string(),
            format!("select count(*) as n from orders o join {tops} on t.k = o.o_custkey where o.o_totalprice < t.m"),
        ),
        (
            "select o_orderkey, o.o_totalprice >= all (select o2.o_totalprice from orders o2 \
             where o2.o_custkey = o.o_custkey) as top from orders o where o_custkey < 50 order by 1"
                .to_string(),
            format!(
                "select o_orderkey, o.o_totalprice >= t.m as top from orders o join {tops} \
                 on t.k = o.o_custkey where o_custkey < 50 order by 1"
            ),
        ),
    ] {
        let expected = single_node_csv(&reference, &same).await;
        assert_same("quantified", &expected, &squall_csv(&engine, &sql).await, &sql);
    }
}

/// A subquery that is a VALUES query, as Trino writes one: `k IN (VALUES
/// 1, 2)` in a WHERE (DataFusion: "single expression required"), `x > ALL
/// (VALUES ...)` (the parser refused it: "Expected: ), found: ,"), `(VALUES
/// 5)` as a value ("Invalid function 'values'"), `EXISTS (VALUES ...)`:
/// staged, against the same questions over lists, which single-node
/// DataFusion answers; named as written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subqueries_of_values_answer() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[("squall.scan.target_task_bytes", "100000")]).await;
    let reference = single_node(&data.path).await;
    for (sql, same) in [
        (
            "select count(*) as n from orders where o_custkey in (values 1, 2, 4) \
             and o_orderkey not in (values 7, 32)",
            "select count(*) as n from orders where o_custkey in (1, 2, 4) \
             and o_orderkey not in (7, 32)",
        ),
        (
            "select o_orderkey from orders where o_totalprice > all (values 400000, 450000.5) \
             or o_orderkey = any (values (3), (5)) order by 1",
            "select o_orderkey from orders where o_totalprice > 450000.5 \
             or o_orderkey in (3, 5) order by 1",
        ),
        (
            "select n_name, n_nationkey >= some (values 20, 30) as hi, \
             n_nationkey < all (values 3, null) as lo, (values 5) + n_regionkey as v \
             from nation where exists (values 1) and n_nationkey in (0, 21) order by 1",
            "select n_name, n_nationkey >= 20 as hi, \
             case when n_nationkey < 3 then null else false end as lo, 5 + n_regionkey as v \
             from nation where n_nationkey in (0, 21) order by 1",
        ),
    ] {
        let expected = single_node_csv(&reference, same).await;
        assert_same(
            "values subquery",
            &expected,
            &squall_csv(&engine, sql).await,
            sql,
        );
    }
    let named = squall_csv(&engine, "select 2 > any (values 1, 3), (values 5)").await;
    assert!(
        named.starts_with("\"2 > ANY(VALUES (1), (3))\",(VALUES (5))\ntrue,5\n"),
        "{named}"
    );
}

/// Subqueries nested 40 deep, as generated SQL nests them: `IN`, correlated
/// `EXISTS` and scalar ones, staged. DataFusion 55.2's plan checks doubled
/// with every level (20 levels of `IN` took 23.5 s to plan, 40 would take
/// days); squall's walk each node once (`planner/vendor/README.md`, 8).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deeply_nested_subqueries_answer() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[]).await;
    let depth = 40;
    let mut nested_in = String::from("select count(*) as n from nation where n_nationkey in ");
    let mut nested_exists = String::from("select count(*) as n from nation a0 where exists ");
    for i in 1..=depth {
        nested_in.push_str("(select n_nationkey from nation where n_nationkey in ");
        nested_exists.push_str(&format!(
            "(select 1 from nation a{i} where a{i}.n_nationkey = a{}.n_nationkey and exists ",
            i - 1
        ));
    }
    let close = ")".repeat(depth);
    nested_in.push_str(&format!("(select 3){close}"));
    nested_exists.push_str(&format!("(select 1){close}"));
    let scalar = format!(
        "select {}n_regionkey from nation where n_nationkey = 7{} as n",
        "(select ".repeat(depth),
        ") + 0".repeat(depth).replacen(") + 0", ")", 1)
    );
    for (sql, want) in [
        (nested_in, "n\n1\n"),
        (nested_exists, "n\n25\n"),
        (scalar, "n\n3\n"),
    ] {
        assert_eq!(squall_csv(&engine, &sql).await, want, "{sql}");
    }
}
