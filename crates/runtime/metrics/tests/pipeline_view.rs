//! The pipeline view's endpoints (`--debug-pipeline`): off unless asked for, the page
//! served from the binary, and the JSON behind it answering from the process-wide
//! trace.

use std::sync::Arc;

use anyhow::Context;
use metrics::testing::{http_get, http_get_with};
use metrics::{BindAddress, Metrics, bind_metrics, bind_metrics_with_pipeline};
use pipeline::{Stage, Step};
use tokio_util::sync::CancellationToken;

fn loopback() -> BindAddress {
    "127.0.0.1:0".parse().expect("an address")
}

#[tokio::test]
async fn the_view_is_off_by_default_and_serves_the_page_state_and_trips_when_on()
-> anyhow::Result<()> {
    let metrics = Metrics::new();
    let cancel = CancellationToken::new();

    // Off: 404, /metrics as ever.
    let off = bind_metrics(&loopback(), metrics.registry.clone())
        .await?
        .context("enabled")?;
    let off_addr = off.local_addr();
    tokio::spawn(off.serve(cancel.clone()));
    assert_eq!(http_get(off_addr, "/debug/pipeline").await?.status, 404);
    assert_eq!(
        http_get(off_addr, "/debug/pipeline/state").await?.status,
        404
    );
    assert_eq!(http_get(off_addr, "/metrics").await?.status, 200);

    // On.
    let on = bind_metrics_with_pipeline(&loopback(), metrics.registry.clone(), true)
        .await?
        .context("enabled")?;
    let addr = on.local_addr();
    tokio::spawn(on.serve(cancel.clone()));

    let page = http_get(addr, "/debug/pipeline").await?;
    assert_eq!(page.status, 200);
    assert!(
        page.headers
            .to_ascii_lowercase()
            .contains("content-type: text/html")
    );
    assert!(page.body.contains("id=\"follow-key\"") && page.body.contains("/debug/pipeline/trip"));
    assert!(
        !page.body.contains("http://") && !page.body.contains("https://"),
        "nothing from elsewhere"
    );
    // In English unless the browser prefers Traditional Chinese; both sets of words are
    // in the page, the language picks one (the browser test shows each).
    assert!(page.body.contains("<html lang=\"en\">") && page.body.contains("const LANG = \"en\""));
    assert!(page.body.contains("Controller pipeline") && page.body.contains("控制器管線"));
    let zh = http_get_with(
        addr,
        "/debug/pipeline",
        &[("Accept-Language", "zh-TW,zh;q=0.9,en;q=0.8")],
    )
    .await?;
    assert!(
        zh.body.contains("<html lang=\"zh-TW\">") && zh.body.contains("const LANG = \"zh-TW\"")
    );
    assert!(
        zh.headers
            .to_ascii_lowercase()
            .contains("content-language: zh-tw"),
        "{}",
        zh.headers
    );

    // A trip recorded by the stages, read back in order.
    let (kind, key): (Arc<str>, Arc<str>) = (Arc::from("Foo"), Arc::from("view-test/web"));
    pipeline::record(|| {
        Step::new(Stage::Fifo, kind.clone(), key.clone(), "Added")
            .n(1)
            .text("812")
    });
    pipeline::record(|| Step::new(Stage::Indexer, kind.clone(), key.clone(), "add"));
    pipeline::record(|| Step::new(Stage::Sync, Arc::from("foo"), key.clone(), "success").n(3));
    let trip = http_get(addr, "/debug/pipeline/trip?key=view-test%2Fweb").await?;
    assert_eq!(trip.status, 200);
    let trip: serde_json::Value = serde_json::from_str(&trip.body)?;
    assert_eq!(trip["key"], "view-test/web");
    let steps = trip["steps"].as_array().context("steps")?;
    let seen: Vec<(&str, &str)> = steps
        .iter()
        .map(|s| {
            (
                s["stage"].as_str().unwrap_or("?"),
                s["what"].as_str().unwrap_or("?"),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [("fifo", "Added"), ("indexer", "add"), ("sync", "success")]
    );
    assert_eq!(steps[0]["text"], "812");
    assert_eq!(steps[0]["component"], "Foo");
    assert!(steps[0]["at_us"].as_u64().context("a time")? > 0);
    assert_eq!(
        http_get(addr, "/debug/pipeline/trip").await?.status,
        400,
        "no key"
    );

    // The state: every stage counted, sizes, and the key among the recent ones.
    pipeline::gauges().register("view-test", Stage::Queue, "depth", || Some(4));
    let trouble = pipeline::troubles().reporter("view-test", Stage::Fifo);
    trouble.failing(
        "list",
        &"conversion webhook for cloudnative.tw/v1alpha1 failed",
        std::time::Duration::from_secs(3),
    );
    let state: serde_json::Value =
        serde_json::from_str(&http_get(addr, "/debug/pipeline/state").await?.body)?;
    let stages: Vec<&str> = state["stages"]
        .as_array()
        .context("stages")?
        .iter()
        .filter_map(|s| s["stage"].as_str())
        .collect();
    assert_eq!(
        stages,
        [
            "fifo", "indexer", "handler", "queue", "worker", "sync", "write", "requeue"
        ]
    );
    assert!(state["stages"][0]["count"].as_u64().context("a count")? >= 1);
    assert!(
        state["gauges"]
            .as_array()
            .context("gauges")?
            .iter()
            .any(|g| g["component"] == "view-test" && g["name"] == "depth" && g["value"] == 4)
    );
    let troubles = state["troubles"].as_array().context("troubles")?;
    let shown = troubles
        .iter()
        .find(|t| t["component"] == "view-test")
        .context("the failing list is in the state")?;
    assert_eq!(
        (&shown["what"], &shown["failures"]),
        (&"list".into(), &1.into())
    );
    assert!(
        shown["last_error"]
            .as_str()
            .is_some_and(|e| e.contains("conversion webhook")),
        "{shown}"
    );
    trouble.recovered();
    let state: serde_json::Value =
        serde_json::from_str(&http_get(addr, "/debug/pipeline/state").await?.body)?;
    assert!(
        !state["troubles"]
            .as_array()
            .context("troubles")?
            .iter()
            .any(|t| t["component"] == "view-test"),
        "a recovered component has no banner"
    );
    assert!(
        state["recent_keys"]
            .as_array()
            .context("keys")?
            .iter()
            .any(|k| k == "view-test/web")
    );

    assert_eq!(http_get(addr, "/debug/pipeline/nope").await?.status, 404);
    cancel.cancel();
    Ok(())
}
