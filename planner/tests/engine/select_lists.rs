//! Select lists Trino answers and DataFusion refused for names it gives two
//! items alike: a `*` beside an item naming one of its columns again, a
//! column named like another item's alias; and a cast named by its text
//! where DataFusion names it like a column of the same list (which kept
//! the column from its own name).

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn items_repeating_a_stars_columns_are_named_apart() {
    let data = sf001_small_groups();
    let reference = single_node(&data.path).await;
    let pairs = [
        (
            "select *, n_name from nation order by 1",
            "select n_nationkey, n_name, n_regionkey, n_comment, n_name as n_name_2 \
             from nation order by 1",
        ),
        (
            "select n_name, * from nation where n_regionkey = 1 order by 2",
            "select n_name, n_nationkey, n_name as n_name_2, n_regionkey, n_comment \
             from nation where n_regionkey = 1 order by 2",
        ),
        (
            "select n.*, cast(n.n_nationkey as double), r.* from nation n \
             join region r on n.n_regionkey = r.r_regionkey order by 1",
            "select n.n_nationkey, n.n_name, n.n_regionkey, n.n_comment, \
             cast(n.n_nationkey as double) as \"CAST(n.n_nationkey AS DOUBLE)\", r.* from nation n \
             join region r on n.n_regionkey = r.r_regionkey order by 1",
        ),
        (
            "with t as (select n_nationkey, n_name from nation) \
             select t.*, upper(n_name) n_name from t order by 1",
            "select n_nationkey, n_name as n_name_2, upper(n_name) as n_name from nation order by 1",
        ),
        (
            "select cast(n_nationkey as varchar), cast(n_nationkey as double), n_nationkey \
             from nation order by 3",
            "select cast(n_nationkey as varchar) as \"CAST(n_nationkey AS VARCHAR)\", \
             cast(n_nationkey as double) as \"CAST(n_nationkey AS DOUBLE)\", n_nationkey \
             from nation order by 3",
        ),
    ];
    let engine = engine(&data.path, &[]).await;
    assert_pairs(&engine, &reference, &pairs, "staged").await;
}

/// A row's field read by name is named by the field, as Trino names it
/// (DataFusion: `t.s[x]`); a table's column read through the table keeps
/// its name, staged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fields_of_rows_are_named_by_the_field() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[]).await;
    assert_eq!(
        squall_csv(
            &engine,
            "select t.n_name, s.x, t.s.inner.y from (select n_name, \
             named_struct('x', n_nationkey, 'inner', named_struct('y', n_regionkey)) as s \
             from nation) t where s.x = 7 order by s.x"
        )
        .await,
        "n_name,x,y\nGERMANY,7,3\n"
    );
}
