//! Trino's statements besides queries: CREATE SCHEMA and tables in it,
//! renames, DELETE and UPDATE with subqueries, what an engine of one
//! request refuses, transactions, SHOW SESSION.

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn created_schemas_hold_their_tables_and_created_tables_rename() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[]).await;
    for sql in [
        "create schema if not exists squall.analytics",
        "create schema if not exists analytics",
        "create table squall.analytics.nr as select n_nationkey, n_name from nation where n_regionkey = 1",
        "alter table squall.analytics.nr rename to squall.analytics.nr_backup",
        "create table analytics.nr as select n_nationkey, n_name from nation where n_regionkey = 2",
    ] {
        engine
            .sql(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    let listed = squall_csv(
        &engine,
        "select table_schema, table_name from information_schema.tables \
         where table_schema = 'analytics' order by 2",
    )
    .await;
    assert_eq!(
        listed,
        "table_schema,table_name\nanalytics,nr\nanalytics,nr_backup\n"
    );
    let counts = squall_csv(
        &engine,
        "select (select count(*) from analytics.nr) as a, (select count(*) from analytics.nr_backup) as b, \
         (select min(n_name) from analytics.nr_backup) as c",
    )
    .await;
    assert_eq!(counts, "a,b,c\n5,5,ARGENTINA\n");
    // A schema made twice, a table of the catalog renamed, a name taken.
    let err = engine
        .sql("create schema analytics")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("schema 'analytics' already exists"), "{err}");
    let err = engine
        .sql("alter table nation rename to nation2")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("is a table of the catalog") && err.contains("rename the folder"),
        "{err}"
    );
    let err = engine
        .sql("alter table analytics.nr rename to analytics.nr_backup")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("already exists"), "{err}");
    engine
        .sql("alter table if exists analytics.gone rename to analytics.gone2")
        .await
        .unwrap();
    // The catalog's tables still answer under any schema name not created.
    let n = squall_csv(&engine, "select count(*) as n from tpch.nation").await;
    assert_eq!(n, "n\n25\n");
}

/// An engine built for one request (the aws backend's) refuses, as a
/// request's last statement, what would change only its memory, and runs
/// it where the request's later statements read it; a query, COPY and an
/// INSERT into a table of the catalog (a file written into its folder)
/// outlive it and run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_engine_of_one_request_refuses_what_it_would_forget() {
    let catalog = tempfile::tempdir().unwrap();
    let root = catalog.path().display().to_string();
    let engine_on = |one_request: bool| {
        let root = root.clone();
        async move {
            let engine = squall_planner::Engine::local(squall_planner::EngineOptions {
                catalog: Some(root.clone()),
                settings: settings(&[("squall.catalog.allowed_roots", &root)]),
            })
            .await
            .unwrap();
            if one_request {
                engine.for_one_request()
            } else {
                engine
            }
        }
    };
    // COPY and an INSERT into a table of the catalog write files: they run.
    let first = engine_on(true).await;
    first
        .sql(&format!(
            "copy (select * from (values (1), (2)) v(k)) to '{root}/nums/a.parquet' stored as parquet"
        ))
        .await
        .unwrap();
    let engine = engine_on(true).await;
    engine.sql("insert into nums values (3)").await.unwrap();
    let engine = engine_on(true).await;
    let answer = squall_csv(&engine, "select count(*) as n, sum(k) as s from nums").await;
    assert_eq!(answer, "n,s\n3,6\n");
    for sql in [
        "create table t as select 1 as x",
        "create view v as select 1 as x",
        "create schema analytics",
        "create table t as select 1 as x; insert into t values (2)",
        "create table t as select 1 as x; delete from t where x = 1",
        "create table t as select 1 as x; drop table t",
    ] {
        // One engine per request, as the aws backend builds them.
        let engine = engine_on(true).await;
        let err = engine.sql(sql).await.unwrap_err().to_string();
        assert!(
            err.contains("last statement on the aws backend")
                && err.contains("COPY (SELECT ...) TO")
                && err.contains("not implemented"),
            "{sql}: {err}"
        );
    }
    let engine = engine_on(true).await;
    let answer = squall_csv(
        &engine,
        "create table t as select 1 as x; insert into t values (2); select sum(x) as s from t",
    )
    .await;
    assert_eq!(answer, "s\n3\n");
    // The same statements on an engine that outlives its requests.
    let lasting = engine_on(false).await;
    lasting
        .sql("create table t as select 1 as x")
        .await
        .unwrap();
    assert_eq!(squall_csv(&lasting, "select x from t").await, "x\n1\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_and_update_with_subqueries_change_only_their_rows() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[]).await;
    for sql in [
        "create table t as select * from (values (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'), (null, 'e')) v(k, s)",
        "create table gone as select * from (values (2), (9)) v(k)",
    ] {
        engine.sql(sql).await.unwrap();
    }
    let steps = [
        // DataFusion alone deleted every row of each of these.
        ("delete from t where k in (select k from gone)", "rows\n1\n"),
        (
            "update t set s = upper(s) where k > (select min(k) from gone)",
            "rows\n2\n",
        ),
        (
            "delete from t x where exists (select 1 from gone g where g.k = 9) and x.k = 3",
            "rows\n1\n",
        ),
        (
            // NOT IN is NULL for the NULL key: that row stays.
            "update t set k = 0 where k not in (select k from gone where k > 5)",
            "rows\n2\n",
        ),
    ];
    for (sql, count) in steps {
        assert_eq!(squall_csv(&engine, sql).await, count, "{sql}");
    }
    assert_eq!(
        squall_csv(&engine, "select k, s from t order by s").await,
        "k,s\n0,D\n0,a\n,e\n"
    );
    let err = engine
        .sql("delete from nation where n_nationkey in (select k from gone)")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("squall changes only the tables created"),
        "{err}"
    );
}

/// Transactions are refused by name (every statement commits on its own,
/// so a ROLLBACK could not undo a write), not with DataFusion's
/// "Unsupported logical plan".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactions_are_refused_by_name() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[]).await;
    for sql in ["START TRANSACTION", "BEGIN", "COMMIT", "ROLLBACK"] {
        let err = engine.sql(sql).await.unwrap_err().to_string();
        assert!(
            err.contains("squall has no transactions") && err.contains("autocommit"),
            "{sql}: {err}"
        );
    }
}

/// Trino's `SHOW SESSION [LIKE p]`: each setting with the value the
/// session has (after `SET`), its default and description.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_session_lists_the_settings() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[]).await;
    engine
        .sql("set squall.shuffle.partitions = 7")
        .await
        .unwrap();
    let csv = squall_csv(&engine, "show session like 'squall.shuffle.partitions'").await;
    assert!(
        csv.starts_with("Name,Value,Default,Type,Description\nsquall.shuffle.partitions,7,0,varchar,Hash partitions"),
        "{csv}"
    );
    let all = squall_csv(&engine, "SHOW SESSION").await;
    assert!(
        all.lines().count() > 100 && all.contains("\ndatafusion.execution.batch_size,8192,8192,"),
        "{all}"
    );
}
