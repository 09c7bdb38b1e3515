//! Session properties: SET SESSION answers with a header; properties reach
//! the query; bad ones fail as user errors; the engine's shared session is
//! never changed by a client.

use squall_server::ApiAuth;

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_session_is_handed_back_to_the_client() {
    let server = start(ApiAuth::None).await;
    let out = run_query(
        &server,
        "SET SESSION datafusion.execution.batch_size = 1234",
        &[],
    )
    .await;
    assert!(out.error().is_none(), "{}", out.last());
    assert_eq!(out.last()["updateType"], "SET SESSION");
    assert_eq!(out.rows, vec![serde_json::json!([true])]);
    let set: Vec<String> = out
        .headers
        .iter()
        .flat_map(|h| {
            h.get_all("x-trino-set-session")
                .iter()
                .map(|v| v.to_str().unwrap().to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        set.iter()
            .any(|v| v == "datafusion.execution.batch_size=1234"),
        "{set:?}"
    );
    // The shared session is untouched.
    let shared = server.engine.context().copied_config();
    let batch_size = shared
        .options()
        .entries()
        .into_iter()
        .find(|e| e.key == "datafusion.execution.batch_size")
        .and_then(|e| e.value);
    assert_ne!(batch_size.as_deref(), Some("1234"));

    let out = run_query(
        &server,
        "RESET SESSION datafusion.execution.batch_size",
        &[],
    )
    .await;
    assert!(
        out.headers
            .iter()
            .any(|h| h.get("x-trino-clear-session").is_some())
    );

    let out = run_query(&server, "SET SESSION squall.no_such_setting = 1", &[]).await;
    assert_trino_error(out.last(), "INVALID_SESSION_PROPERTY", "USER_ERROR");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_properties_reach_the_query() {
    let server = start(ApiAuth::None).await;
    // Upper-case names resolve only while identifiers are normalised.
    let sql = "select L_ORDERKEY from lineitem where l_orderkey = 1 limit 1";
    let out = run_query(&server, sql, &[]).await;
    assert!(out.error().is_none(), "{}", out.last());
    for header in ["X-Trino-Session", "X-Presto-Session"] {
        let property = "datafusion.sql_parser.enable_ident_normalization=false";
        let out = run_query(&server, sql, &[(header, property)]).await;
        assert_trino_error(out.last(), "COLUMN_NOT_FOUND", "USER_ERROR");
    }
    // Only for that request: the next one without it works again.
    let out = run_query(&server, sql, &[]).await;
    assert!(out.error().is_none(), "{}", out.last());
    // SHOW SESSION shows the client's values beside the defaults (it
    // showed the server's own).
    let out = run_query(
        &server,
        "show session like 'squall.bloom.fpp'",
        &[("X-Trino-Session", "squall.bloom.fpp=0.02")],
    )
    .await;
    assert!(out.error().is_none(), "{}", out.last());
    assert_eq!(out.rows.len(), 1, "{:?}", out.rows);
    assert_eq!(out.rows[0][1], "0.02", "{:?}", out.rows);
    assert_eq!(out.rows[0][2], "0.01", "{:?}", out.rows);

    let out = run_query(
        &server,
        "select 1",
        &[("X-Trino-Session", "squall.bogus=1")],
    )
    .await;
    assert_trino_error(out.last(), "INVALID_SESSION_PROPERTY", "USER_ERROR");
}

/// Trino's own session properties, as Trino clients and BI tools send
/// them: its limits are read as squall's (a recursion past
/// `max_recursion_depth` fails), its optimizer's and connectors' knobs are
/// left out (they failed every statement), and a name no one knows is
/// still refused, in a header and in SET SESSION alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trino_session_properties_are_read_or_left_out() {
    let server = start(ApiAuth::None).await;
    let recursion = "with recursive t(n) as (select 1 union all select n + 1 from t where n < 8) \
                     select count(*) from t";
    let out = run_query(
        &server,
        recursion,
        &[(
            "X-Trino-Session",
            "query_max_run_time=1h,join_distribution_type=BROADCAST,hive.parquet_use_column_names=true",
        )],
    )
    .await;
    assert!(out.error().is_none(), "{}", out.last());
    assert_eq!(out.rows, vec![serde_json::json!([8])]);
    let out = run_query(
        &server,
        recursion,
        &[("X-Trino-Session", "max_recursion_depth=3")],
    )
    .await;
    assert_trino_error(out.last(), "NOT_SUPPORTED", "USER_ERROR");
    assert!(
        out.last()["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("after 3 iterations")),
        "{}",
        out.last()
    );
    for header in ["query_max_run_time=soon", "no_such_property=1"] {
        let out = run_query(&server, "select 1", &[("X-Trino-Session", header)]).await;
        assert_trino_error(out.last(), "INVALID_SESSION_PROPERTY", "USER_ERROR");
    }
    let out = run_query(&server, "SET SESSION query_max_memory = '1GB'", &[]).await;
    assert!(out.error().is_none(), "{}", out.last());
    let out = run_query(&server, "SET SESSION no_such_property = 1", &[]).await;
    assert_trino_error(out.last(), "INVALID_SESSION_PROPERTY", "USER_ERROR");
}
