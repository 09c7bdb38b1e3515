//! Operators bind as Trino's grammar binds them: `IS [NOT] DISTINCT FROM`
//! takes a value expression on its right (not the rest of a condition)
//! and `||` binds looser than `+` and `-`, in queries and in the
//! conditions and values of UPDATE and DELETE.

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operators_bind_as_trino_binds_them() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[]).await;
    for (sql, expected) in [
        // Both failed: `y AND z IS NOT NULL` was the right operand.
        (
            "select count(*) as n from (values ('a', 'a'), ('a', 'b'), ('a', null), (null, null)) \
             t(x, y) where x is distinct from y and y is not null",
            "n\n1\n",
        ),
        (
            "select count(*) as n from (values (1, 1, true), (1, 2, false), (null, null, false)) \
             t(x, y, z) where x is not distinct from y and z",
            "n\n1\n",
        ),
        // Answered wrongly before, the types agreeing: `b OR c` was the
        // right operand, so the row with c true was dropped.
        (
            "select count(*) as n from (values (true, true, false), (true, false, true)) \
             t(a, b, c) where a is not distinct from b or c",
            "n\n2\n",
        ),
        (
            "select 'id-' || n_nationkey + 1 as a, 2 * 3 || 'x' as b, \
             'n' || n_nationkey - 1 || 'm' as c, n_nationkey is distinct from 3 - 1 as d \
             from nation where n_nationkey = 2",
            "a,b,c,d\nid-3,6x,n1m,false\n",
        ),
    ] {
        assert_eq!(squall_csv(&engine, sql).await, expected, "{sql}");
    }
    engine
        .sql("create table t as select * from (values (1, 'a'), (2, null), (3, 'c')) v(k, s)")
        .await
        .unwrap();
    for (sql, count) in [
        (
            "update t set s = s || k + 10 where s is distinct from 'a' and s is not null",
            "rows\n1\n",
        ),
        (
            "delete from t where s is not distinct from null and k > 1",
            "rows\n1\n",
        ),
        // With a subquery, squall writes the change as a query of its own.
        (
            "update t set s = s || k - 1 where k in (select 1) and s is distinct from 'b' \
             and s is not null",
            "rows\n1\n",
        ),
    ] {
        assert_eq!(squall_csv(&engine, sql).await, count, "{sql}");
    }
    assert_eq!(
        squall_csv(&engine, "select k, s from t order by k").await,
        "k,s\n1,a0\n3,c13\n"
    );
}
