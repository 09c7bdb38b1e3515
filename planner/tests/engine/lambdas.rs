//! Lambdas over arrays of rows name their parameter's fields
//! (`transform(items, i -> i.price * i.qty)`), as Trino's do: DataFusion
//! read `i.price` as a table's column and failed ("No field named i.price").

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lambdas_name_the_fields_of_rows() {
    let data = sf001_small_groups();
    let reference = single_node(&data.path).await;
    let items = "with c as (select o_custkey, array_agg(cast(row(o_orderkey, o_totalprice, \
                 row(o_orderstatus)) as row(k bigint, p double, s row(st varchar))) \
                 order by o_orderkey) as items from orders where o_custkey < 60 group by 1)";
    let pairs = [(
        format!(
            "{items} select o_custkey, transform(items, i -> i.k) as ks, \
                 cardinality(filter(items, i -> i.p > 150000 and i.s.st = 'F')) as big, \
                 reduce(items, 0e0, (acc, \"I\") -> acc + \"I\".p, acc -> round(acc, 2)) as total, \
                 any_match(items, i -> i.S.St = 'P') as p, \
                 all_match(items, i -> i.k > o_custkey) as a from c order by 1"
        ),
        "select o_custkey, array_agg(o_orderkey order by o_orderkey) as ks, \
             count(*) filter (where o_totalprice > 150000 and o_orderstatus = 'F') as big, \
             round(sum(cast(o_totalprice as double)), 2) as total, \
             bool_or(o_orderstatus = 'P') as p, bool_and(o_orderkey > o_custkey) as a \
             from orders where o_custkey < 60 group by 1 order by 1"
            .to_string(),
    )];
    let pairs: Vec<(&str, &str)> = pairs
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let engine = engine(&data.path, &[]).await;
    assert_pairs(&engine, &reference, &pairs, "staged").await;
}
