//! `EXTRACT` reads Trino's fields as Trino's functions of them: BIGINT,
//! the day of the week from Monday 1 to Sunday 7, whole seconds, and the
//! fields DataFusion's `date_part` does not know (`DAY_OF_WEEK`,
//! `YEAR_OF_WEEK`, ...).

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extract_reads_trinos_fields() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[]).await;
    for (sql, expected) in [
        (
            // A Sunday, the last day of ISO week 53 of 2020, and a Monday.
            "select d, extract(dow from d) as a, extract(day_of_week from d) as b, \
             extract(week from d) as w, extract(yow from d) as y, extract(year_of_week from d) as y2, \
             extract(doy from d) as doy, extract(day_of_month from d) as dom, \
             typeof(extract(year from d)) as t \
             from (values (date '2021-01-03'), (date '2021-01-04')) v(d) order by d",
            "d,a,b,w,y,y2,doy,dom,t\n2021-01-03,7,7,53,2020,2020,3,3,bigint\n\
             2021-01-04,1,1,1,2021,2021,4,4,bigint\n",
        ),
        (
            "select extract(second from ts) as s, extract(minute from ts) as m, \
             extract(hour from ts) as h, extract(quarter from ts) as q \
             from (values (timestamp '2020-05-06 07:08:09.750')) v(ts)",
            "s,m,h,q\n9,8,7,2\n",
        ),
        // The orders of each day of the week, counted both ways.
        (
            "select count(*) filter (where extract(dow from o_orderdate) = day_of_week(o_orderdate)) as same, \
             count(*) as n, min(extract(dow from o_orderdate)) as lo, max(extract(dow from o_orderdate)) as hi \
             from orders",
            "same,n,lo,hi\n15000,15000,1,7\n",
        ),
    ] {
        assert_eq!(squall_csv(&engine, sql).await, expected, "{sql}");
    }
}

/// `date_parse` and `parse_datetime` of a column's text (every such call
/// failed: DataFusion's `to_timestamp` of a column lost the session's
/// zone), and of a partial date, completed as Trino completes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_of_columns_parses_as_dates() {
    let data = sf001_small_groups();
    let reference = single_node(&data.path).await;
    let pairs = [
        (
            "select o_orderkey, date_parse(cast(o_orderdate as varchar), '%Y-%m-%d') as a, \
             date_parse(substr(cast(o_orderdate as varchar), 1, 7), '%Y-%m') as b, \
             date_parse(date_format(o_orderdate, '%d/%m/%Y') || ' 07', '%d/%m/%Y %H') as c, \
             year(parse_datetime(cast(year(o_orderdate) as varchar), 'yyyy')) as d \
             from orders where o_orderkey < 200 order by 1",
            "select o_orderkey, cast(o_orderdate as timestamp) as a, \
             cast(date_trunc('month', o_orderdate) as timestamp) as b, \
             cast(o_orderdate as timestamp) + interval '7' hour as c, \
             cast(date_part('year', o_orderdate) as bigint) as d \
             from orders where o_orderkey < 200 order by 1",
        ),
        (
            "select count(*) as n from orders \
             where date_parse(cast(o_orderdate as varchar), '%Y-%m-%d') < timestamp '1995-01-01 00:00:00'",
            "select count(*) as n from orders where o_orderdate < date '1995-01-01'",
        ),
    ];
    for single in ["0", "1000000000000"] {
        let engine = engine(&data.path, &[("squall.query.single_task_bytes", single)]).await;
        assert_pairs(&engine, &reference, &pairs, single).await;
    }
}

/// Timestamp literals as Trino writes them: without seconds, with one-digit
/// parts, in casts and TRY_CASTs of text, with a zone after them (each
/// failed at planning, "error parsing time", or answered NULL).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timestamp_literals_without_seconds_are_timestamps() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[]).await;
    for (sql, expected) in [
        (
            "select timestamp '2024-02-28 10:00' as a, date_add('day', 1, timestamp '2024-2-8 9:05') as b, \
             cast('2024-02-28 10:00' as timestamp(3)) as c, try_cast('2024-02-28 23:59' as timestamp) as d, \
             timestamp '2024-02-28 10:00 UTC' as e, timestamp '2024-03-10 12:00' - interval '36' hour as f",
            "a,b,c,d,e,f\n2024-02-28T10:00:00,2024-02-09T09:05:00,2024-02-28T10:00:00,\
             2024-02-28T23:59:00,2024-02-28T10:00:00,2024-03-09T00:00:00\n",
        ),
        // The same instants as the literals written in full, over a table.
        (
            "select count(*) filter (where cast(o_orderdate as timestamp) < timestamp '1995-1-1 0:00') \
             = count(*) filter (where cast(o_orderdate as timestamp) < timestamp '1995-01-01 00:00:00') as same, \
             count(*) filter (where cast(o_orderdate as timestamp) between timestamp '1996-3-1 12:30' \
             and timestamp '1996-03-31 12:30:00') > 0 as some from orders",
            "same,some\ntrue,true\n",
        ),
    ] {
        assert_eq!(squall_csv(&engine, sql).await, expected, "{sql}");
    }
    // Text that is no timestamp is still refused, named.
    let err = engine
        .sql("select timestamp '2024-02-28 10'")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("'2024-02-28 10'"), "{err}");
}
