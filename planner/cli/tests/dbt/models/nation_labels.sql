{{ config(materialized='table') }}
select
    n.nationkey,
    n.name,
    n.regionkey,
    r.label,
    r.weight,
    {{ dbt.hash('n.name') }} as name_hash,
    {{ dbt.right('n.name', 3) }} as name_end,
    {{ dbt.split_part('r.label', "' '", 1) }} as label_word,
    {{ dbt.safe_cast("'12'", api.Column.translate_type('integer')) }} as twelve
from {{ ref('stg_nation') }} n
join {{ ref('region_labels') }} r on n.regionkey = r.regionkey
