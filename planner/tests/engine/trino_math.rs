//! Trino's statistical, code and array functions squall adds (the normal
//! and beta distributions, Wilson's interval, `soundex`, `luhn_check`,
//! `bit_count`, `ngrams`, `combinations`, `shuffle`) and Trino's
//! `cardinality`, staged over many tasks, against values computed by
//! single-node DataFusion from the functions' definitions.

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn distributions_codes_and_pieces_of_arrays_as_trino_computes_them() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[("squall.scan.target_task_bytes", "50000")]).await;
    let reference = single_node(&data.path).await;
    // The normal cdf per row against its definition through the logistic
    // bound (|Phi(x) - 1/(1 + e^(-1.702x))| < 0.0095), and its inverse back.
    let answer = squall_csv(
        &engine,
        "select count(*) filter (where abs(normal_cdf(150000, 80000, o_totalprice) \
             - 1 / (1 + exp(-1.702 * (o_totalprice - 150000) / 80000))) > 0.0095) as far, \
         count(*) filter (where abs(inverse_normal_cdf(150000, 80000, \
             normal_cdf(150000, 80000, o_totalprice)) - cast(o_totalprice as double)) > 1e-6) as back, \
         count(*) as n from orders",
    )
    .await;
    assert_eq!(answer, "far,back,n\n0,0,15000\n");
    // Beta(2, 3) has a closed form; Beta(1, 1) is the identity.
    let beta = "select o_orderkey % 100 / 100.0 as x from orders where o_orderkey % 100 <> 0";
    assert_eq!(
        squall_csv(
            &engine,
            &format!(
                "select count(*) filter (where abs(beta_cdf(2, 3, x) \
                 - (6 * x * x - 8 * x * x * x + 3 * x * x * x * x)) > 1e-12 \
                 or abs(beta_cdf(1, 1, x) - x) > 1e-12 \
                 or abs(inverse_beta_cdf(2, 3, beta_cdf(2, 3, x)) - x) > 1e-9) as bad, \
                 count(*) > 0 as some from ({beta})"
            )
        )
        .await,
        "bad,some\n0,true\n"
    );
    // Wilson's interval of each status's share of orders at 95%.
    let wilson = squall_csv(
        &engine,
        "select o_orderstatus, round(wilson_interval_lower(count(*), 15000, 1.96), 9) as lo, \
         round(wilson_interval_upper(count(*), 15000, 1.96), 9) as hi \
         from orders group by 1 order by 1",
    )
    .await;
    let expected = single_node_csv(
        &reference,
        "select o_orderstatus, \
         round((p + 1.96 * 1.96 / 30000 - 1.96 * sqrt(p * (1 - p) / 15000 + 1.96 * 1.96 / 900000000)) \
           / (1 + 1.96 * 1.96 / 15000), 9) as lo, \
         round((p + 1.96 * 1.96 / 30000 + 1.96 * sqrt(p * (1 - p) / 15000 + 1.96 * 1.96 / 900000000)) \
           / (1 + 1.96 * 1.96 / 15000), 9) as hi \
         from (select o_orderstatus, count(*) / 15000.0 as p from orders group by 1) order by 1",
    )
    .await;
    assert_same("wilson", &expected, &wilson, "wilson_interval_lower/upper");
    // Codes: soundex of the clerks, Luhn of the order keys, bits of keys.
    assert_eq!(
        squall_csv(
            &engine,
            "select count(distinct soundex(o_clerk)) as s, \
             count(*) filter (where luhn_check(cast(o_orderkey as varchar))) as l, \
             sum(bit_count(o_orderkey, 64)) = sum(bit_count(o_orderkey, 32)) as b, \
             soundex('Robert') as r, bit_count(-7, 8) as m from orders"
        )
        .await
        .lines()
        .nth(1)
        .map(|l| l.split(',').skip(2).collect::<Vec<_>>().join(",")),
        Some("true,R163,6".to_string())
    );
    // The keys whose Luhn sum is a multiple of 10 (digits doubled from the
    // second last, less 9 past 9), against the same sum in SQL.
    let luhn = |key: &str| {
        let digits: Vec<String> = (0..6)
            .map(|i| {
                let d = format!("({key} / {} % 10)", 10_i64.pow(i));
                if i % 2 == 1 {
                    format!("(case when {d} * 2 > 9 then {d} * 2 - 9 else {d} * 2 end)")
                } else {
                    d
                }
            })
            .collect();
        format!("({}) % 10 = 0", digits.join(" + "))
    };
    assert_eq!(
        squall_csv(
            &engine,
            "select count(*) as l from orders where luhn_check(cast(o_orderkey as varchar))"
        )
        .await,
        single_node_csv(
            &reference,
            &format!(
                "select count(*) as l from orders where {}",
                luhn("o_orderkey")
            )
        )
        .await
    );
    // Pieces of each customer's orders: counts by their formulas.
    let pieces = squall_csv(
        &engine,
        "select count(*) filter (where cardinality(ngrams(a, 2)) <> greatest(n - 1, 1)) as ng, \
         count(*) filter (where cardinality(combinations(a, 2)) <> n * (n - 1) / 2) as co, \
         count(*) filter (where array_sort(shuffle(a)) <> array_sort(a)) as sh, \
         count(*) filter (where cardinality(array[a, a]) <> 2) as ca \
         from (select o_custkey, array_agg(o_orderkey) as a, count(*) as n from orders group by 1)",
    )
    .await;
    assert_eq!(pieces, "ng,co,sh,ca\n0,0,0,0\n");
    // array_sum as Trino's: a BIGINT of integers, 0 with no element.
    assert_eq!(
        squall_csv(
            &engine,
            "select count(*) filter (where array_sum(a) <> t) as bad, \
             typeof(max(array_sum(a))) as y, array_sum(array[]) as e, \
             array_sum(array[null, 2]) as n from (select array_agg(o_orderkey) as a, \
             sum(o_orderkey) as t from orders group by o_custkey)"
        )
        .await,
        "bad,y,e,n\n0,bigint,0,2\n"
    );
    // parse_duration: a DURATION of milliseconds, rounded as Trino's.
    assert_eq!(
        squall_csv(
            &engine,
            "select max(cast(o_orderdate as timestamp) + parse_duration('36h')) \
             = timestamp '1998-08-03 12:00:00' as d, \
             parse_duration('42.8ms') = parse_duration('43ms') as r from orders"
        )
        .await,
        "d,r\ntrue,true\n"
    );
    // A zone's offset at the instant: summer and winter in New York.
    assert_eq!(
        squall_csv(
            &engine,
            "select timezone_hour(at_timezone(timestamp '2020-06-01 12:00:00', 'America/New_York')) as s, \
             timezone_hour(at_timezone(timestamp '2020-01-01 12:00:00', 'America/New_York')) as w, \
             timezone_minute(at_timezone(timestamp '2020-06-01 12:00:00', 'Asia/Kolkata')) as k, \
             timezone_hour(timestamp '2020-01-01 00:00:00') as u"
        )
        .await,
        "s,w,k,u\n-4,-5,30,0\n"
    );
    // NULL elements as Trino reads them: an unknown maximum, a maybe.
    assert_eq!(
        squall_csv(
            &engine,
            "select array_max(array[1, null, 3]) is null as m, array_min(array[2, 1]) as n, \
             contains(array[1, null], 2) is null as c, contains(array[1, null], 1) as d, \
             contains(array[1, 2], 3) as e"
        )
        .await,
        "m,n,c,d,e\ntrue,1,true,true,false\n"
    );
}

/// `multimap_agg`, `multimap_from_entries` and `map_union`, staged (each
/// group's rows over several tasks), against the same maps built from
/// `array_agg` by single-node DataFusion.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn maps_of_every_value_and_unions_of_maps() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[("squall.scan.target_task_bytes", "50000")]).await;
    let reference = single_node(&data.path).await;
    // Each status's priorities, each with its orders' count and key sum,
    // in order: the sort by `p` after the unnest was dropped, as if the
    // group's key still determined it (`sort_keys`).
    let squall = squall_csv(
        &engine,
        "select s, p, cardinality(vs) as n, cast(array_sum(vs) as bigint) as t from ( \
         select o_orderstatus as s, multimap_agg(o_orderpriority, o_orderkey) as m \
         from orders group by 1) cross join unnest(m) as u(p, vs) order by 1, 2",
    )
    .await;
    let expected = single_node_csv(
        &reference,
        "select o_orderstatus as s, o_orderpriority as p, count(*) as n, sum(o_orderkey) as t \
         from orders group by 1, 2 order by 1, 2",
    )
    .await;
    assert_eq!(
        squall.lines().skip(1).collect::<Vec<_>>(),
        expected.lines().skip(1).collect::<Vec<_>>()
    );
    // A map looked up by a key of each row (`get_field` takes constants).
    let looked_up = squall_csv(
        &engine,
        "select s, p, cardinality(m[p]) as n, cast(array_sum(element_at(m, p)) as bigint) as t \
         from (select o_orderstatus as s, multimap_agg(o_orderpriority, o_orderkey) as m \
         from orders group by 1) cross join unnest(map_keys(m)) as u(p) order by 1, 2",
    )
    .await;
    assert_eq!(
        looked_up.lines().skip(1).collect::<Vec<_>>(),
        expected.lines().skip(1).collect::<Vec<_>>()
    );
    let unnested = squall_csv(
        &engine,
        "select s, unnest(a) as p from (select o_orderstatus as s, \
         array_agg(distinct o_orderpriority) as a from orders group by 1) order by 1, 2",
    )
    .await;
    let expected = single_node_csv(
        &reference,
        "select distinct o_orderstatus as s, o_orderpriority as p from orders order by 1, 2",
    )
    .await;
    assert_eq!(unnested, expected);
    assert_eq!(
        squall_csv(
            &engine,
            "select multimap_from_entries(array[row('a', 1), row('b', 2), row('a', 3)]) as m, \
             cardinality(map_union(x)) as u, map_union(x)['y'] as y from (values \
             (map(array['x', 'y'], array[1, 2])), (map(array['y', 'z'], array[3, 4])), (null)) t(x)"
        )
        .await,
        "m,u,y\n\"{a: [1, 3], b: [2]}\",3,2\n"
    );
    let e = engine
        .sql("select multimap_from_entries(array[row(cast(null as varchar), 1)])")
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("map key cannot be null"), "{e}");
}

/// Trino's shifts of a BIGINT: the logical right shift fills with zeros,
/// and 64 places or more shift every bit out (Rust's shifts take the count
/// modulo 64).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bigint_shifts_as_trino_shifts() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[("squall.scan.target_task_bytes", "50000")]).await;
    assert_eq!(
        squall_csv(
            &engine,
            "select bitwise_right_shift(8, 3) as a, bitwise_right_shift(-1, 60) as b, \
             bitwise_right_shift(-8, 1) as c, bitwise_right_shift(-1, 0) as d, \
             bitwise_right_shift(5, 64) as e, bitwise_left_shift(1, 64) as f, \
             bitwise_left_shift(3, 62) as g, bitwise_right_shift_arithmetic(-8, 1) as h, \
             bitwise_right_shift_arithmetic(-8, 99) as i"
        )
        .await,
        "a,b,c,d,e,f,g,h,i\n1,15,9223372036854775804,-1,0,0,-4611686018427387904,-4,-1\n"
    );
    // Per row: a negative key shifted right by one is 2^63 - key / 2 (even
    // keys), and a shift right then left by s clears the s low bits.
    assert_eq!(
        squall_csv(
            &engine,
            "select count(*) filter (where bitwise_right_shift(-2 * o_orderkey, 1) \
                 <> 9223372036854775807 - o_orderkey + 1) as negative, \
             count(*) filter (where bitwise_left_shift(bitwise_right_shift(o_orderkey, 3), 3) \
                 <> o_orderkey - o_orderkey % 8) as cleared, count(*) as n from orders"
        )
        .await,
        "negative,cleared,n\n0,0,15000\n"
    );
}

/// Trino's `regexp_position`, staged, against `strpos` where the pattern
/// is a plain word (the first match is the first occurrence).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regexp_position_finds_what_strpos_finds() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[("squall.scan.target_task_bytes", "50000")]).await;
    assert_eq!(
        squall_csv(
            &engine,
            "select count(*) filter (where regexp_position(o_comment, 'the') \
                 <> case when strpos(o_comment, 'the') = 0 then -1 else strpos(o_comment, 'the') end) as first, \
             count(*) filter (where regexp_position(o_comment, 'e', strpos(o_comment, 'e') + 1) \
                 not in (-1) and regexp_position(o_comment, 'e', 1, 2) \
                 <> regexp_position(o_comment, 'e', strpos(o_comment, 'e') + 1)) as second, \
             count(*) as n from orders"
        )
        .await,
        "first,second,n\n0,0,15000\n"
    );
    let e = engine
        .sql("select regexp_position('abc', 'b', 0)")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("regexp_position") && e.contains("1 or more"),
        "{e}"
    );
}

/// Trino's Teradata `to_char`, `to_date` and `to_timestamp` read Teradata's
/// formats (DataFusion's functions of those names read chrono's, and
/// `to_char(d, 'yyyy-mm-dd')` was the text `yyyy-mm-dd`), staged, against
/// DataFusion's own functions given chrono's formats.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn teradata_date_formats_read_as_trino_reads_them() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[("squall.scan.target_task_bytes", "50000")]).await;
    let reference = single_node(&data.path).await;
    let sql = "select o_orderkey, to_char(o_orderdate, 'yyyy/mm/dd') as t, \
               to_date(to_char(o_orderdate, 'dd.mm.yyyy'), 'dd.mm.yyyy') as d \
               from orders where o_orderkey < 100 order by 1";
    let expected = single_node_csv(
        &reference,
        "select o_orderkey, to_char(o_orderdate, '%Y/%m/%d') as t, o_orderdate as d \
         from orders where o_orderkey < 100 order by 1",
    )
    .await;
    assert_same("teradata", &expected, &squall_csv(&engine, sql).await, sql);
    let e = engine
        .sql("select to_char(date '2020-01-02', 'Month dd')")
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("not a Teradata date format"), "{e}");
}

/// `sqrt` of a negative number is NaN, as Trino's (DataFusion's failed
/// the query); of the others, as DataFusion's `power(x, 0.5)`, staged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn square_roots_of_negative_numbers_are_nan() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[("squall.scan.target_task_bytes", "50000")]).await;
    let negative = single_node_csv(
        &single_node(&data.path).await,
        "select count(*) as n from customer where c_acctbal < 0",
    )
    .await;
    let negative = negative.lines().nth(1).unwrap().to_string();
    assert_ne!(negative, "0");
    assert_eq!(
        squall_csv(
            &engine,
            "select count(*) filter (where is_nan(sqrt(c_acctbal))) as nan, \
             count(*) filter (where c_acctbal >= 0 and \
                 abs(sqrt(c_acctbal) - power(cast(c_acctbal as double), 0.5)) > 1e-9) as off, \
             is_nan(sqrt(-4)) as literal from customer",
        )
        .await,
        format!("nan,off,literal\n{negative},0,true\n")
    );
}

/// `round(x, d)`, `sign`, `ceiling` and `floor` answer in Trino's types:
/// a DECIMAL(p, s) rounded to `d` digits stays DECIMAL(p + 1, s) whatever
/// the optimizer folds (its type changed with the folding of `d`, and a
/// comparison typed before failed at execution: "Invalid comparison
/// operation: Decimal128(15, 1) >= Decimal128(16, 2)"); `sign` of an
/// integer is that integer, of a DECIMAL a DECIMAL(1, 0); `ceiling` and
/// `floor` of an integer that integer, of a DECIMAL(p, s) a DECIMAL(p - s +
/// 1, 0). Over a table, staged: the rounded money filters as single-node
/// DataFusion's rounding by a computed number of digits (whose type it
/// keeps) filters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rounded_numbers_keep_trino_types() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[("squall.scan.target_task_bytes", "50000")]).await;
    for (sql, expected) in [
        (
            "select round(x, 1) as r, typeof(round(x, 1)) as t from (values \
             (cast(755.04 as decimal(12,2))), (cast(-766.05 as decimal(12,2))), \
             (cast(1.25 as decimal(12,2)))) v(x) where round(x, 1) >= -800.25 order by r",
            "r,t\n-766.10,\"decimal(13,2)\"\n1.30,\"decimal(13,2)\"\n755.00,\"decimal(13,2)\"\n",
        ),
        (
            "select sign(cast(-5 as integer)) as a, typeof(sign(cast(-5 as integer))) as ta, \
             sign(cast(2.5 as decimal(3,1))) as b, typeof(sign(cast(2.5 as decimal(3,1)))) as tb, \
             sign(-2e0) as c, typeof(sign(-2e0)) as tc, sign(0) as d, typeof(sign(0)) as td",
            "a,ta,b,tb,c,tc,d,td\n-1,integer,1,\"decimal(1,0)\",-1.0,double,0,bigint\n",
        ),
        (
            "select ceiling(cast(768.25 as decimal(12,2))) as a, \
             typeof(ceiling(cast(768.25 as decimal(12,2)))) as ta, \
             floor(cast(-768.25 as decimal(12,2))) as b, floor(cast(-7 as smallint)) as c, \
             typeof(floor(cast(-7 as smallint))) as tc, ceiling(7) as d, typeof(ceiling(7)) as td, \
             floor(-2.5e0) as e",
            "a,ta,b,c,tc,d,td,e\n769,\"decimal(11,0)\",-769,-7,smallint,7,bigint,-3.0\n",
        ),
    ] {
        assert_eq!(squall_csv(&engine, sql).await, expected, "{sql}");
    }
    let reference = single_node(&data.path).await;
    let expected = single_node_csv(
        &reference,
        "select count(*) as n, sum(round(l_extendedprice, n_regionkey + 1)) as s from lineitem \
         join nation on n_nationkey = 0 \
         where round(l_extendedprice, n_regionkey + 1) >= 38000.25",
    )
    .await;
    assert_ne!(expected, "n,s\n0,\n");
    assert_eq!(
        squall_csv(
            &engine,
            "select count(*) as n, sum(round(l_extendedprice, 1)) as s from lineitem \
             where round(l_extendedprice, 1) >= 38000.25",
        )
        .await,
        expected
    );
}
