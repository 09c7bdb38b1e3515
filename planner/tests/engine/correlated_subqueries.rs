//! Correlated subqueries DataFusion refuses and squall plans as joins:
//! a LIMIT inside (each group's first rows), comparisons with outer
//! columns and outer columns in aggregates' arguments (per distinct outer
//! value), outer columns in select lists (computed outside), subqueries
//! naming a column two levels out; each against the same question written
//! by hand as joins, which single-node DataFusion answers, staged and as
//! one task.

use std::path::Path;

use datafusion::prelude::SessionContext;

use crate::common::*;

/// Each of `pairs` answered by squall, staged and as one task (with
/// `settings` beside), as single-node DataFusion answers its other side.
async fn staged_and_whole<A: AsRef<str>, B: AsRef<str>>(
    data: &Path,
    reference: &SessionContext,
    pairs: &[(A, B)],
    settings: &[(&str, &str)],
) {
    let pairs: Vec<(&str, &str)> = pairs
        .iter()
        .map(|(a, b)| (a.as_ref(), b.as_ref()))
        .collect();
    for single in ["0", "1000000000000"] {
        let mut all = vec![("squall.query.single_task_bytes", single)];
        all.extend_from_slice(settings);
        let e = engine(data, &all).await;
        assert_pairs(
            &e,
            reference,
            &pairs,
            &format!("single_task_bytes={single}"),
        )
        .await;
    }
}

/// A correlated subquery with LIMIT (the first rows of each group: LATERAL,
/// a scalar with an OFFSET, IN), which DataFusion refuses, answers as the
/// same rows ranked by hand with `row_number()`, which single-node
/// DataFusion answers; staged and as one task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn correlated_limits_keep_each_groups_first_rows() {
    let data = sf001_small_groups();
    let reference = single_node(&data.path).await;
    let ranked = |partition: &str, order: &str| {
        format!("row_number() over (partition by {partition} order by {order}) as rn")
    };
    let top_orders = ranked("o_custkey", "o_totalprice desc, o_orderkey");
    let by_date = ranked("o_custkey", "o_orderdate, o_orderkey");
    let priorities = ranked("o_custkey", "count(*) desc, o_orderpriority");
    let lines = ranked(
        "o_custkey",
        "l_extendedprice desc, l_orderkey, l_linenumber",
    );
    let pairs = [
        (
            "select c_custkey, o.o_orderkey, o.o_totalprice from customer c cross join lateral \
             (select o_orderkey, o_totalprice from orders o where o.o_custkey = c.c_custkey \
             order by o_totalprice desc, o_orderkey limit 2) o where c_custkey < 300 order by 1, 3 desc"
                .to_string(),
            format!(
                "select c_custkey, o_orderkey, o_totalprice from customer join (select o_custkey, \
                 o_orderkey, o_totalprice, {top_orders} from orders) on o_custkey = c_custkey \
                 and rn <= 2 where c_custkey < 300 order by 1, 3 desc"
            ),
        ),
        (
            // LEFT, ordered by a column the select list leaves out, OFFSET.
            "select c_custkey, o.k from customer c left join lateral (select o_orderkey as k \
             from orders where o_custkey = c.c_custkey order by o_orderdate, o_orderkey \
             limit 2 offset 1) o on true where c_custkey < 100 order by 1, 2"
                .to_string(),
            format!(
                "select c_custkey, o_orderkey as k from customer left join (select o_custkey, \
                 o_orderkey, {by_date} from orders) on o_custkey = c_custkey and rn in (2, 3) \
                 where c_custkey < 100 order by 1, 2"
            ),
        ),
        (
            // Grouped inside, with a filter of its own beside the correlation.
            "select c_custkey, x.p, x.n from customer c, lateral (select o_orderpriority as p, \
             count(*) as n from orders where o_custkey = c.c_custkey and o_orderstatus <> 'P' \
             group by o_orderpriority order by n desc, p limit 1) x order by 1"
                .to_string(),
            format!(
                "select o_custkey as c_custkey, o_orderpriority as p, n from (select o_custkey, \
                 o_orderpriority, count(*) as n, {priorities} from orders \
                 where o_orderstatus <> 'P' group by o_custkey, o_orderpriority) where rn = 1 \
                 order by 1"
            ),
        ),
        (
            // A join inside.
            "select c_custkey, x.l_orderkey, x.l_linenumber from customer c, lateral (select \
             l_orderkey, l_linenumber from orders, lineitem where l_orderkey = o_orderkey and \
             o_custkey = c.c_custkey order by l_extendedprice desc, l_orderkey, l_linenumber \
             limit 1) x where c_custkey < 200 order by 1"
                .to_string(),
            format!(
                "select o_custkey as c_custkey, l_orderkey, l_linenumber from (select o_custkey, \
                 l_orderkey, l_linenumber, {lines} from orders join lineitem on \
                 l_orderkey = o_orderkey) where rn = 1 and o_custkey < 200 order by 1"
            ),
        ),
        (
            // A scalar subquery's second row.
            "select c_custkey, (select o_totalprice from orders where o_custkey = c.c_custkey \
             order by o_orderdate, o_orderkey limit 1 offset 1) as second from customer c \
             where c_custkey < 100 order by 1"
                .to_string(),
            format!(
                "select c_custkey, o_totalprice as second from customer left join (select \
                 o_custkey, o_totalprice, {by_date} from orders) on o_custkey = c_custkey and \
                 rn = 2 where c_custkey < 100 order by 1"
            ),
        ),
        (
            // IN, and an aggregate of all the rows, whose LIMIT 1 keeps it.
            "select c_custkey, x.m from customer c, lateral (select max(o_totalprice) as m \
             from orders where o_custkey = c.c_custkey limit 1) x where c_custkey < 100 and \
             'F' in (select o_orderstatus from orders where o_custkey = c.c_custkey \
             order by o_orderdate, o_orderkey limit 1) order by 1"
                .to_string(),
            format!(
                "select c_custkey, (select max(o_totalprice) from orders where \
                 o_custkey = c_custkey) as m from customer join (select o_custkey, \
                 o_orderstatus, {by_date} from orders) on o_custkey = c_custkey and rn = 1 \
                 where c_custkey < 100 and o_orderstatus = 'F' order by 1"
            ),
        ),
    ];
    let settings = [("squall.scan.target_task_bytes", "100000")];
    staged_and_whole(&data.path, &reference, &pairs, &settings).await;
}

/// A subquery inside a subquery naming a column of the query two levels
/// out, which DataFusion failed ("No field named n.n_nationkey"): where
/// the subquery in between makes its own column equal to it, answers as
/// the same query naming that column, which single-node DataFusion
/// answers; otherwise it fails saying what it is. Staged and as one task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subqueries_two_levels_deep_answer_through_an_equal_column() {
    let data = sf001_small_groups();
    let reference = single_node(&data.path).await;
    let nested = |outer: &str| {
        format!(
            "select n_name, (select count(*) from customer c where c.c_nationkey = n.n_nationkey \
             and (c.c_acctbal > 9500 or c.c_acctbal > (select avg(c2.c_acctbal) + 2000 from \
             customer c2 where c2.c_nationkey = {outer} and c2.c_mktsegment = c.c_mktsegment))) \
             as n from nation n order by 1"
        )
    };
    let exists = |outer: &str| {
        format!(
            "select r_name from region r where exists (select 1 from nation n where \
             n.n_regionkey = r.r_regionkey and n.n_name like 'I%' and exists (select 1 from \
             customer c where c.c_nationkey = n.n_nationkey and c.c_custkey % 5 = {outer})) \
             order by 1"
        )
    };
    let pairs = [
        (nested("n.n_nationkey"), nested("c.c_nationkey")),
        (exists("r.r_regionkey + 1"), exists("n.n_regionkey + 1")),
    ];
    let pairs: Vec<(&str, &str)> = pairs
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    for single in ["0", "1000000000000"] {
        let e = engine(&data.path, &[("squall.query.single_task_bytes", single)]).await;
        assert_pairs(
            &e,
            &reference,
            &pairs,
            &format!("single_task_bytes={single}"),
        )
        .await;
        // Equal to nothing in between: refused, naming the column.
        let refused = |sql: String| {
            let e = &e;
            async move { e.sql(&sql).await.unwrap_err().to_string() }
        };
        let err = refused(exists("length(r.r_name)")).await;
        assert!(
            err.contains("refers to r.r_name, a column of the query two levels out"),
            "{err}"
        );
        // So with a comparison beside it (not the plan DataFusion rejects
        // after analysis, a subquery in a join's condition).
        let err = refused(
            "select (select count(*) from nation n2 where n2.n_nationkey < n1.n_nationkey and \
             n2.n_regionkey = (select r_regionkey from region where r_name = n1.n_name)) \
             from nation n1"
                .to_string(),
        )
        .await;
        assert!(
            err.contains("refers to n1.n_name, a column of the query two levels out"),
            "{err}"
        );
    }
}

/// A correlated aggregate whose select list names an outer column beside
/// its aggregates, or whose WHERE has a condition on outer columns only,
/// which DataFusion refused: answers as the same aggregates joined by
/// hand, which single-node DataFusion answers; staged and as one task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn correlated_aggregates_name_outer_columns_beside_them() {
    let data = sf001_small_groups();
    let reference = single_node(&data.path).await;
    let per_customer = "(select o_custkey, sum(o_totalprice) as s, count(*) as n, \
                        min(o_totalprice) as lo from orders group by o_custkey) o";
    let pairs = [
        (
            "select c_custkey, (select sum(o_totalprice) * c.c_nationkey - min(o_totalprice) \
             from orders o where o.o_custkey = c.c_custkey) as r, \
             (select count(*) + c.c_nationkey from orders o where o.o_custkey = c.c_custkey) as k \
             from customer c where c_custkey < 300 order by 1"
                .to_string(),
            format!(
                "select c_custkey, s * c_nationkey - lo as r, coalesce(n, 0) + c_nationkey as k \
                 from customer left join {per_customer} on o_custkey = c_custkey \
                 where c_custkey < 300 order by 1"
            ),
        ),
        (
            // A condition on the outer row only: no rows where it fails.
            "select c_custkey, (select count(*) + c.c_nationkey from orders o where \
             o.o_custkey = c.c_custkey and c.c_mktsegment = 'BUILDING') as k \
             from customer c where c_custkey < 300 order by 1"
                .to_string(),
            format!(
                "select c_custkey, case when c_mktsegment = 'BUILDING' then coalesce(n, 0) \
                 else 0 end + c_nationkey as k from customer left join {per_customer} \
                 on o_custkey = c_custkey where c_custkey < 300 order by 1"
            ),
        ),
    ];
    staged_and_whole(&data.path, &reference, &pairs, &[]).await;
}

/// A correlated aggregate whose WHERE compares with outer columns by other
/// than equality, or whose argument names one, which DataFusion refused:
/// answers as the same aggregate
/// over a join written by hand (each outer row's rows counted, none
/// counting 0), which single-node DataFusion answers; outer rows repeated
/// and with NULLs in the compared column. Staged and as one task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn correlated_aggregates_compare_with_outer_columns() {
    let data = sf001_small_groups();
    let reference = single_node(&data.path).await;
    // Customers, some twice, their balance NULL where the key ends in 7.
    let outer = "(select c_custkey, case when c_custkey % 10 = 7 then null else c_acctbal end \
                 as bal from customer where c_custkey < 300 union all select c_custkey, \
                 c_acctbal from customer where c_custkey < 50)";
    // The same rows numbered, for the joins written by hand.
    let numbered = format!("(select row_number() over () as rid, * from {outer})");
    let pairs = [
        (
            format!(
                "select c_custkey, bal, (select count(*) from orders o where o.o_custkey = \
                 c.c_custkey and o.o_totalprice > c.bal * 20) as n from {outer} c \
                 order by 1, 2, 3"
            ),
            format!(
                "select c.c_custkey, c.bal, count(o.o_orderkey) as n from {numbered} c \
                 left join orders o on o.o_custkey = c.c_custkey and o.o_totalprice > c.bal * 20 \
                 group by c.rid, c.c_custkey, c.bal order by 1, 2, 3"
            ),
        ),
        (
            format!(
                "select c_custkey, bal, (select sum(o_totalprice) from orders o where \
                 o.o_custkey = c.c_custkey and o.o_totalprice < c.bal * 30) as s from {outer} c \
                 order by 1, 2, 3"
            ),
            format!(
                "select c.c_custkey, c.bal, sum(o.o_totalprice) as s from {numbered} c \
                 left join orders o on o.o_custkey = c.c_custkey and o.o_totalprice < c.bal * 30 \
                 group by c.rid, c.c_custkey, c.bal order by 1, 2, 3"
            ),
        ),
        (
            // An outer column in an aggregate's argument.
            format!(
                "select c_custkey, bal, (select max(o_totalprice - c.bal) from orders o where \
                 o.o_custkey = c.c_custkey) as m from {outer} c order by 1, 2, 3"
            ),
            format!(
                "select c.c_custkey, c.bal, max(o.o_totalprice - c.bal) as m from {numbered} c \
                 left join orders o on o.o_custkey = c.c_custkey \
                 group by c.rid, c.c_custkey, c.bal order by 1, 2, 3"
            ),
        ),
        (
            // The first row past the outer row's (`first_value` of all).
            "select n1.n_name, (select n_name from nation n2 where n2.n_nationkey > \
             n1.n_nationkey order by n_nationkey limit 1) as next from nation n1 order by 1"
                .to_string(),
            "select n1.n_name, n2.n_name as next from nation n1 left join nation n2 on \
             n2.n_nationkey = n1.n_nationkey + 1 order by 1"
                .to_string(),
        ),
        (
            // Compared only, no equality; in a filter.
            "select n_name from nation n where (select count(*) from customer c where \
             c.c_acctbal > n.n_nationkey * 400) > 1000 order by 1"
                .to_string(),
            "select n_name from nation n left join customer c on c.c_acctbal > \
             n.n_nationkey * 400 group by n_name having count(c.c_custkey) > 1000 order by 1"
                .to_string(),
        ),
    ];
    staged_and_whole(&data.path, &reference, &pairs, &[]).await;
}

/// A LATERAL whose select list names outer columns, which DataFusion
/// refused: answers as the join written by hand, which single-node
/// DataFusion answers; a LEFT JOIN LATERAL keeps NULLs where it found no
/// row (not a value made of the outer row's). Staged and as one task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn laterals_name_outer_columns_in_their_select_lists() {
    let data = sf001_small_groups();
    let reference = single_node(&data.path).await;
    let pairs = [
        (
            "select c_custkey, x.* from customer c cross join lateral (select c.c_name || '/' || \
             o_orderstatus as tag, o_orderkey, o_totalprice * c.c_nationkey as w from orders o \
             where o.o_custkey = c.c_custkey) x where c_custkey < 100 order by 1, 3",
            "select c_custkey, c_name || '/' || o_orderstatus as tag, o_orderkey, \
             o_totalprice * c_nationkey as w from customer join orders on o_custkey = c_custkey \
             where c_custkey < 100 order by 1, 3",
        ),
        (
            "select c_custkey, x.k, x.o_orderkey from customer c left join lateral (select \
             coalesce(c.c_nationkey, 0) as k, o_orderkey from orders o where \
             o.o_custkey = c.c_custkey and o.o_totalprice > 300000) x on true \
             where c_custkey < 100 order by 1, 3",
            "select c_custkey, case when o_orderkey is null then null else c_nationkey end as k, \
             o_orderkey from customer left join orders on o_custkey = c_custkey and \
             o_totalprice > 300000 where c_custkey < 100 order by 1, 3",
        ),
    ];
    staged_and_whole(&data.path, &reference, &pairs, &[]).await;
}
