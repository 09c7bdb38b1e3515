{{ config(materialized='table') }}
select
    c_mktsegment as segment,
    count(*) as customers,
    count_if(c_acctbal < 0) as in_debt,
    {{ dbt.bool_or('c_acctbal > 9990') }} as has_rich,
    {{ dbt.any_value('c_nationkey') }} as some_nation,
    {{ dbt.listagg('distinct_nation', "','", "order by distinct_nation", 3) }} as first_nations
from (
    select c_mktsegment, c_acctbal, c_nationkey, cast(c_nationkey as varchar) as distinct_nation
    from {{ source('tpch', 'customer') }}
    where c_custkey <= 200
) c
group by 1
