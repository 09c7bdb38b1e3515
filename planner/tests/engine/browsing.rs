//! What clients browse the catalog with: SHOW statements, Trino's
//! information_schema (its views alone), `system.metadata` and
//! `system.jdbc` (JDBC's catalogs, schemas, tables, table types and
//! columns), SHOW CREATE TABLE / VIEW, qualified names.

use crate::common::*;

/// What clients browse a catalog with: SHOW TABLES, SHOW COLUMNS and
/// information_schema answer (in the coordinator: no worker holds the
/// catalog's description), a query of real tables is still staged, and
/// tables may be named with any catalog and schema qualifier.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_tables_and_information_schema_answer() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[]).await;
    let tables = squall_csv(
        &engine,
        "select table_name from information_schema.tables \
         where table_schema = 'public' order by 1",
    )
    .await;
    assert_eq!(
        tables,
        "table_name\ncustomer\nlineitem\nnation\norders\npart\npartsupp\nregion\nsupplier\n"
    );
    // Trino's shapes, which its clients read.
    let all = "Table\ncustomer\nlineitem\nnation\norders\npart\npartsupp\nregion\nsupplier\n";
    for sql in [
        "show tables",
        "show tables from public",
        "show tables in tpch",
    ] {
        assert_eq!(squall_csv(&engine, sql).await, all, "{sql}");
    }
    assert_eq!(
        squall_csv(&engine, "show tables like 'p%'").await,
        "Table\npart\npartsupp\n"
    );
    for sql in [
        "show schemas",
        "show schemas from squall",
        "show schemas in hive",
    ] {
        assert_eq!(
            squall_csv(&engine, sql).await,
            "Schema\ninformation_schema\npublic\n",
            "{sql}"
        );
    }
    assert_eq!(
        squall_csv(&engine, "show schemas from system like '%t%'").await,
        "Schema\nmetadata\nruntime\n"
    );
    // Trino's node list, which clients and health checks read.
    assert_eq!(
        squall_csv(
            &engine,
            "select node_id, coordinator, state from system.runtime.nodes"
        )
        .await,
        "node_id,coordinator,state\nsquall,true,active\n"
    );
    assert_eq!(
        squall_csv(&engine, "show catalogs").await,
        "Catalog\nsquall\nsystem\n"
    );
    for sql in [
        "show columns from region",
        "describe region",
        "describe squall.tpch.region",
    ] {
        assert_eq!(
            squall_csv(&engine, sql).await,
            "Column,Type,Extra,Comment\nr_regionkey,bigint,,\nr_name,varchar,,\nr_comment,varchar,,\n",
            "{sql}"
        );
    }
    assert_eq!(
        squall_csv(&engine, "show columns from region like 'r_%e'").await,
        "Column,Type,Extra,Comment\nr_name,varchar,,\n"
    );
    assert_eq!(
        squall_csv(&engine, "show create table squall.tpch.region").await,
        "Create Table\n\"CREATE TABLE squall.public.region (\n   r_regionkey bigint,\n   \
         r_name varchar,\n   r_comment varchar\n)\"\n"
    );
    engine
        .sql("create view few as select r_name from region where r_regionkey < 2")
        .await
        .unwrap();
    assert_eq!(
        squall_csv(&engine, "show create view few").await,
        "Create View\n\"CREATE VIEW squall.public.few AS\n\
         SELECT r_name FROM region WHERE r_regionkey < 2\"\n"
    );
    let err = engine
        .sql("show create view region")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("region is a table, not a view"), "{err}");
    // The views alone (DataFusion's listed every table as one).
    assert_eq!(
        squall_csv(
            &engine,
            "select table_name, view_definition from information_schema.views"
        )
        .await,
        "table_name,view_definition\nfew,SELECT r_name FROM region WHERE r_regionkey < 2\n"
    );
    let functions = squall_csv(&engine, "show functions like 'array_a%'").await;
    assert!(
        functions.starts_with(
            "Function,Return Type,Argument Types,Function Type,Deterministic,Description\n"
        ) && functions.contains("\narray_agg,,,aggregate,true,\n")
            && !functions.contains("\nabs,"),
        "{functions}"
    );
    let err = engine
        .sql("show stats for no_such_table")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("no_such_table"), "{err}");
    // Functions taking lambdas are listed too.
    assert_eq!(
        squall_csv(&engine, "show functions like 'reduc_'").await,
        "Function,Return Type,Argument Types,Function Type,Deterministic,Description\n\
         reduce,,,scalar,true,\n"
    );
    let err = engine
        .sql("describe no_such_table")
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("no_such_table"), "{err}");
    let r = engine.sql("select count(*) from region").await.unwrap();
    assert!(r.profile.is_some_and(|p| p.stages > 0));
    // The qualifiers a Trino session and BI tools put before a table name
    // (`catalog.schema.table`) resolve to squall's one catalog.
    for sql in [
        "select count(*) as n from tpch.region",
        "select count(*) as n from squall.tpch.region",
        "select count(*) as n from public.region",
    ] {
        assert_eq!(squall_csv(&engine, sql).await, "n\n5\n", "{sql}");
    }
    let err = engine
        .sql("select * from tpch.no_such_table")
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("no_such_table"), "{err}");
}

/// Trino's information_schema.columns (its columns, `comment` too, its
/// type names, positions from 1) and the system tables Trino clients read
/// (the SQLAlchemy dialect: table comments, catalogs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trino_shaped_information_schema_and_system_tables() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[]).await;
    let described = squall_csv(&engine, "describe region").await;
    assert!(
        described.contains("r_regionkey,bigint,,") && described.contains("r_name,varchar,,"),
        "{described}"
    );
    assert_eq!(
        squall_csv(
            &engine,
            "select column_name, ordinal_position, data_type, is_nullable, comment \
             from information_schema.columns where table_name = 'lineitem' \
             and ordinal_position in (1, 5, 9, 11, 16) order by ordinal_position"
        )
        .await,
        "column_name,ordinal_position,data_type,is_nullable,comment\n\
         l_orderkey,1,bigint,NO,\nl_quantity,5,\"decimal(15,2)\",NO,\n\
         l_returnflag,9,varchar,NO,\nl_shipdate,11,date,NO,\nl_comment,16,varchar,NO,\n"
    );
    assert_eq!(
        squall_csv(
            &engine,
            "select catalog_name, schema_name, comment from system.metadata.table_comments \
             where table_name = 'nation'"
        )
        .await,
        "catalog_name,schema_name,comment\nsquall,public,\n"
    );
    assert_eq!(
        squall_csv(
            &engine,
            "select count(*) as n from system.jdbc.tables where table_cat = 'squall' \
             and table_schem = 'public' and table_type = 'TABLE'"
        )
        .await,
        "n\n8\n"
    );
    // What JDBC's getColumns reads (DBeaver, DataGrip).
    assert_eq!(
        squall_csv(
            &engine,
            "select column_name, data_type, type_name, column_size, decimal_digits, \
             ordinal_position, is_nullable from system.jdbc.columns where table_cat = 'squall' \
             and table_schem = 'public' and table_name = 'orders' and ordinal_position in (1, 3, 4, 5) \
             order by ordinal_position"
        )
        .await,
        "column_name,data_type,type_name,column_size,decimal_digits,ordinal_position,is_nullable\n\
         o_orderkey,-5,bigint,19,0,1,NO\no_orderstatus,12,varchar,,,3,NO\n\
         o_totalprice,3,\"decimal(15,2)\",15,2,4,NO\no_orderdate,91,date,10,,5,NO\n"
    );
    assert_eq!(
        squall_csv(&engine, "select table_type from system.jdbc.table_types").await,
        "table_type\nTABLE\nVIEW\n"
    );
}
