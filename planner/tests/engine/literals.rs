//! Literals with a decimal point are DECIMALs and literals with an exponent
//! DOUBLEs, as in Trino; a DOUBLE meets a DECIMAL as a DOUBLE; and TPC-H on
//! tables whose money is DOUBLE answers as on DECIMAL money (Q6's `0.06 +
//! 0.01` was 0.06999999999999999 as a DOUBLE and dropped the discounts of
//! 0.07; Q15 compares a view's sum computed twice, which a sum depending on
//! the order of its values made differ).

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn literals_are_typed_as_trino_types_them() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[]).await;
    for (sql, expected) in [
        (
            "select 0.1 + 0.2 = 0.3 as eq, typeof(1.5) as t, typeof(1e5) as e, 2.5E-1 as v, \
             -1.25 * 2 as m",
            "eq,t,e,v,m\ntrue,\"decimal(2,1)\",double,0.25,-2.50\n",
        ),
        // A DOUBLE past 10^15 beside a decimal literal: DataFusion made
        // their common type DECIMAL(30,15), which it does not fit.
        (
            "select coalesce(x, 0.0) as c, greatest(x, 1.5) as g, \
             case when x > 0 then x else 0.5 end as k, x in (1.5, 1e16) as i, \
             x between 0.5 and 2e20 as b, x * 0.5 as h \
             from (values (cast(1e16 as double))) t(x)",
            "c,g,k,i,b,h\n1e16,1e16,1e16,true,true,5000000000000000.0\n",
        ),
        (
            "select typeof(f) as t, f from (values (cast(null as double)), (1.5)) v(f) order by f",
            "t,f\ndouble,1.5\ndouble,\n",
        ),
        (
            "select x, typeof(x) as t from (select 1.5 as x union all select cast(1e16 as double) \
             union select 2.5) order by x",
            "x,t\n1.5,double\n2.5,double\n1e16,double\n",
        ),
        (
            "select count(*) as n from (values (cast(1e16 as double)), (1.5)) a(x) \
             join (values (1.5), (2.5)) b(y) on a.x = b.y or a.x > b.y * 2",
            "n\n3\n",
        ),
        // Text beside a decimal literal is read as a DOUBLE, as before (as
        // the literal's DECIMAL(3,1), '25' failed).
        (
            "select count(*) as n from customer where substring(c_phone, 1, 2) > 20.5",
            &single_node_csv(
                &single_node(&data.path).await,
                "select count(*) as n from customer \
                 where cast(substring(c_phone, 1, 2) as double) > 20.5",
            )
            .await,
        ),
        // Unnamed items holding such literals are named by their text.
        (
            "select n_nationkey * 1.5, 1e0 from nation where n_nationkey = 2",
            "n_nationkey * 1.5,1e0\n3.0,1.0\n",
        ),
        (
            "select n_name, 1.5 from nation where n_nationkey = 1 \
             union all select r_name, r_regionkey * 1e0 from region where r_regionkey = 0 \
             order by 1",
            "n_name,1.5\nAFRICA,0.0\nARGENTINA,1.5\n",
        ),
        // Over a table: the filter keeps exactly the decimals it names.
        (
            "select count(*) as n from lineitem where l_discount between 0.06 - 0.01 and 0.06 + 0.01 \
             and l_discount * 1.0 in (0.05, 0.07, 0.06)",
            &single_node_csv(
                &single_node(&data.path).await,
                "select count(*) as n from lineitem \
                 where l_discount in (cast(0.05 as decimal(15,2)), cast(0.06 as decimal(15,2)), \
                 cast(0.07 as decimal(15,2)))",
            )
            .await,
        ),
    ] {
        assert_eq!(squall_csv(&engine, sql).await, expected, "{sql}");
    }
}

/// The 22 queries on the TPC-H tables with every DECIMAL column written as
/// DOUBLE (as many exports hold money), staged over small scan tasks,
/// answer as single-node DataFusion answers on the DECIMAL original.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tpch_on_money_as_double_answers_as_on_decimals() {
    let data = sf001_small_groups();
    let doubles = tempfile::tempdir().unwrap();
    let reference = single_node(&data.path).await;
    write_tpch_as(&reference, doubles.path(), |f| match f.data_type() {
        arrow::datatypes::DataType::Decimal128(..) => {
            format!("cast({0} as double) as {0}", f.name())
        }
        _ => f.name().clone(),
    })
    .await;
    let engine = engine(
        doubles.path(),
        &[
            ("squall.scan.target_task_bytes", "100000"),
            ("squall.shuffle.partitions", "3"),
        ],
    )
    .await;
    assert_tpch_as_reference(&engine, &reference, "on DOUBLE money").await;
}

/// Where a DOUBLE meets a decimal literal inside an aggregate (its FILTER,
/// its argument), a grouping or a window, the expression keeps its name:
/// `count(*) FILTER (WHERE d > 0.5)` failed with "No field named", the cast
/// renaming the aggregate's column under the projection that read it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn floats_meet_decimals_inside_aggregates_and_windows() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[("squall.scan.target_task_bytes", "50000")]).await;
    let reference = single_node(&data.path).await;
    let double = "(select o_orderstatus as s, cast(o_totalprice as double) as d, o_orderkey as k from orders)";
    let squall = squall_csv(
        &engine,
        &format!(
            "select s, count(*) filter (where d > 100000.5) as a, count(*) filter (where d > 100000.5), \
             sum(d * 0.5) as h, max(d) filter (where d < 2e5) as m \
             from {double} group by s having max(d * 1.5) > 10.5 order by s"
        ),
    )
    .await;
    let expected = single_node_csv(
        &reference,
        &format!(
            "select s, count(*) filter (where d > 100000.5e0) as a, \
             count(*) filter (where d > 100000.5e0) as \"count(*) FILTER (WHERE d > 100000.5)\", \
             sum(d * 0.5e0) as h, max(d) filter (where d < 2e5) as m \
             from {double} group by s having max(d * 1.5e0) > 10.5e0 order by s"
        ),
    )
    .await;
    assert_same(
        "aggregates",
        &expected,
        &squall,
        "FILTER over a DOUBLE and a decimal",
    );
    let squall = squall_csv(
        &engine,
        &format!(
            "select k, sum(d * 0.5) over (partition by s order by k rows 2 preceding) as w, \
             d > 1000.5 as big from {double} where k < 200 order by k"
        ),
    )
    .await;
    let expected = single_node_csv(
        &reference,
        &format!(
            "select k, sum(d * 0.5e0) over (partition by s order by k rows 2 preceding) as w, \
             d > 1000.5e0 as big from {double} where k < 200 order by k"
        ),
    )
    .await;
    assert_same(
        "windows",
        &expected,
        &squall,
        "a window over a DOUBLE and a decimal",
    );
}

/// A DECIMAL divided by a DECIMAL rounds its last digit (DataFusion
/// truncated: `2.0 / 3` was `0.66666`), staged: every quotient is within
/// half a unit of its last place of the exact one, and strictly within it
/// where truncation would not be.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decimal_quotients_round_their_last_digit() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[("squall.scan.target_task_bytes", "100000")]).await;
    assert_eq!(
        squall_csv(
            &engine,
            "select 2.0 / 3 as a, -2.0 / 3 as b, 1.0 / 8 as c, 10.00 / 4 as d"
        )
        .await,
        "a,b,c,d\n0.66667,-0.66667,0.12500,2.500000\n"
    );
    // o_totalprice / 3 is a DECIMAL(19,6): |q * 3 - x| <= 1.5e-6, and
    // truncation would leave q * 3 below x by up to 3e-6.
    assert_eq!(
        squall_csv(
            &engine,
            "select count(*) filter (where abs(o_totalprice / 3 * 3 - o_totalprice) > 0.0000015) as far, \
             count(*) filter (where o_totalprice / 3 * 3 > o_totalprice) > 0 as up, \
             typeof(max(o_totalprice / 3)) = 'decimal(19,6)' as t from orders"
        )
        .await,
        "far,up,t\n0,true,true\n"
    );
}

/// `avg` of a DECIMAL rounds its last digit, half away from zero
/// (DataFusion truncated: the average of order 1's quantities was
/// 24.166666), staged, grouped, ungrouped, DISTINCT and over a window
/// frame: as the exact average rounded to the type's six decimals.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decimal_averages_round_their_last_digit() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[("squall.scan.target_task_bytes", "100000")]).await;
    let reference = single_node(&data.path).await;
    // Quantities are whole and an order has at most 7 lines: no average
    // falls on a tie at the seventh decimal, which a DOUBLE rounds alike.
    let exact = |sum: &str, n: &str| {
        format!("cast(round(cast({sum} as double) / {n}, 6) as decimal(19, 6))")
    };
    for (sql, expected) in [
        (
            "select l_orderkey, avg(l_quantity) as a, avg(-l_quantity) as n, \
             avg(distinct l_quantity) as d from lineitem where l_orderkey < 500 group by 1 order by 1"
                .to_string(),
            format!(
                "select l_orderkey, {} as a, {} as n, {} as d from lineitem where l_orderkey < 500 \
                 group by 1 order by 1",
                exact("sum(l_quantity)", "count(l_quantity)"),
                exact("-sum(l_quantity)", "count(l_quantity)"),
                exact("sum(distinct l_quantity)", "count(distinct l_quantity)"),
            ),
        ),
        (
            "select avg(l_quantity) as a from lineitem where l_orderkey = 1".to_string(),
            format!(
                "select {} as a from lineitem where l_orderkey = 1",
                exact("sum(l_quantity)", "count(*)")
            ),
        ),
        (
            "select l_orderkey, l_linenumber, avg(l_quantity) over (partition by l_orderkey \
             order by l_linenumber rows between 2 preceding and current row) as w \
             from lineitem where l_orderkey < 200 order by 1, 2"
                .to_string(),
            format!(
                "select l_orderkey, l_linenumber, {} as w from lineitem where l_orderkey < 200 order by 1, 2",
                exact(
                    "sum(l_quantity) over (partition by l_orderkey order by l_linenumber rows between 2 preceding and current row)",
                    "count(*) over (partition by l_orderkey order by l_linenumber rows between 2 preceding and current row)"
                )
            ),
        ),
    ] {
        let want = single_node_csv(&reference, &expected).await;
        // Exactly: a tolerance would pass truncation.
        assert_eq!(squall_csv(&engine, &sql).await, want, "{sql}");
    }
}

/// `TIMESTAMP WITH TIME ZONE` keeps a zone (UTC, the session's, unless the
/// value says another): it was a timestamp without one, which clients read
/// as a local time; Trino's functions without a zone (`date_parse`, the
/// Teradata `to_timestamp`) stay without.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timestamps_with_time_zone_keep_a_zone() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[]).await;
    assert_eq!(
        squall_csv(
            &engine,
            "select typeof(cast('2020-01-01 10:00:00 America/New_York' as timestamp with time zone)) as a, \
             cast('2020-01-01 10:00:00 America/New_York' as timestamp with time zone) \
               = timestamp '2020-01-01 15:00:00 UTC' as b, \
             typeof(date_parse('2020-03-04', '%Y-%m-%d')) as c, \
             typeof(to_timestamp('2020-03-04', 'yyyy-mm-dd')) as d, \
             typeof(current_timestamp) as e, \
             cast(timestamp '2020-01-01 10:00:00' at time zone 'America/New_York' as varchar) as f"
        )
        .await,
        "a,b,c,d,e,f\ntimestamp(9) with time zone,true,timestamp(9),timestamp(9),\
         timestamp(9) with time zone,2020-01-01 05:00:00.000000000 America/New_York\n"
    );
}

/// Interval ranges (`'2-3' YEAR TO MONTH`, `'1 02:03:04.5' DAY TO
/// SECOND`), `U&'...'` strings and hexadecimal integers, as Trino reads
/// them (DataFusion refused the first two and read `0x1F` as bytes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interval_ranges_unicode_strings_and_hexadecimal_integers() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[]).await;
    for (sql, expected) in [
        (
            "select date '2020-01-31' + interval '1-1' year to month as a, \
             timestamp '2020-01-01 00:00:00' + interval '1 02:03:04.5' day to second as b, \
             timestamp '2020-01-01 00:00:00' - interval '-1 02' day to hour as c, \
             interval '10:30' hour to minute = interval '630' minute as d",
            "a,b,c,d\n2021-02-28,2020-01-02T02:03:04.500,2020-01-02T02:00:00,true\n",
        ),
        (
            "select U&'\\0041\\00E9' as u, 0x1F + 1 as h, typeof(0xff) as t, to_hex(X'1F') as x, \
             count(*) as n from nation where n_nationkey < 0x10",
            "u,h,t,x,n\nAé,32,bigint,1F,16\n",
        ),
    ] {
        assert_eq!(squall_csv(&engine, sql).await, expected, "{sql}");
    }
    let err = engine
        .sql("select interval '1-x' year to month")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("invalid INTERVAL '1-x' YEAR TO MONTH"),
        "{err}"
    );
}

/// A string holding a quote (`'it''s'`) in a statement squall rewrites
/// token by token (bare VALUES items, casts to arrays, EXPLAIN's options,
/// hexadecimal literals, quoted names in capitals): each failed with
/// "Unterminated string literal".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strings_holding_quotes_survive_rewrites_of_the_text() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[]).await;
    for (sql, expected) in [
        (
            "select * from (values 'it''s', 'b') t(x) order by x",
            "x\nb\nit's\n",
        ),
        (
            "select cardinality(cast(json_parse('[\"it''s\"]') as array(varchar))) as n, 'don''t' as s",
            "n,s\n1,don't\n",
        ),
        ("select 0x10 as h, 'o''k' as s", "h,s\n16,o'k\n"),
        (
            "select \"N_NAME\" as n, 'o''k' as s from nation where n_nationkey = 0",
            "n,s\nALGERIA,o'k\n",
        ),
    ] {
        assert_eq!(squall_csv(&engine, sql).await, expected, "{sql}");
    }
    let explained = squall_csv(&engine, "explain (type distributed) select 'it''s' as s").await;
    assert!(explained.contains("it's"), "{explained}");
}
