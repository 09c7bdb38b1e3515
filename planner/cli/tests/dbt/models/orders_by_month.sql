{{ config(materialized='incremental', unique_key='month', incremental_strategy='delete+insert') }}
select
    {{ dbt.date_trunc('month', 'o_orderdate') }} as month,
    count(*) as orders,
    sum(o_totalprice) as total,
    {{ dbt.datediff('min(o_orderdate)', 'max(o_orderdate)', 'day') }} as days_spanned,
    {{ dbt.dateadd('month', 1, 'min(o_orderdate)') }} as month_after_first
from {{ source('tpch', 'orders') }}
{% if is_incremental() %}
where {{ dbt.date_trunc('month', 'o_orderdate') }} >= (select max(month) from {{ this }})
{% endif %}
group by 1
