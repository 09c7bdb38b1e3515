//! `DESCRIBE OUTPUT` / `DESCRIBE INPUT` of a prepared statement, as the
//! HTTP API hands them to the engine (`DESCRIBE OUTPUT '<statement>'`, its
//! parameters `$1`, `$2`, ...): Trino's columns and rows.

use super::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepared_statements_are_described_as_trino_describes_them() {
    let data = sf001_small_groups();
    let e = engine(&data.path, &[]).await;
    // Columns read through a join, an alias, a derived table and a group
    // name their table; computed ones do not.
    let output = squall_csv(
        &e,
        "DESCRIBE OUTPUT 'select n.n_name as nation, r_name, count(*) as n, \
         max(o.k) + 1 as top, ''x'' from nation n join region on n_regionkey = r_regionkey \
         join (select o_custkey as k from orders) o on o.k = n.n_nationkey \
         where n_nationkey = $1 group by 1, 2'",
    )
    .await;
    assert_eq!(
        output,
        "Column Name,Catalog,Schema,Table,Type,Type Size,Aliased\n\
         nation,squall,public,nation,varchar,0,true\n\
         r_name,squall,public,region,varchar,0,false\n\
         n,,,,bigint,8,true\n\
         top,,,,bigint,8,true\n\
         'x',,,,varchar,0,false\n"
    );
    // A statement that is not a query has no output; its parameters do.
    let none = squall_csv(
        &e,
        "DESCRIBE OUTPUT 'create table t as select n_name from nation where n_nationkey = $1'",
    )
    .await;
    assert_eq!(
        none,
        "Column Name,Catalog,Schema,Table,Type,Type Size,Aliased\n"
    );
    let input = squall_csv(
        &e,
        "DESCRIBE INPUT 'select $1 from orders where o_orderdate < $2 and o_comment like $3'",
    )
    .await;
    assert_eq!(input, "Position,Type\n0,unknown\n1,date\n2,varchar\n");
    let none = squall_csv(&e, "DESCRIBE INPUT 'select 1'").await;
    assert_eq!(none, "Position,Type\n");
}
