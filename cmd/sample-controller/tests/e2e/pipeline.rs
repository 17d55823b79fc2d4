//! The live pipeline view, as a person uses it: a real sample-controller process with
//! `--debug-pipeline`, a Foo created on the real API server, then
//!
//! - the JSON behind the page shows that Foo's trip through every stage, and
//! - headless Chromium (Debian's `chromium`, driven through `chromedriver`) opens the
//!   page, types the key into the follow box, presses Follow, and sees the timeline
//!   list every stage; a screenshot is kept under the target directory
//!   (`target/tmp/pipeline-view.png`);
//! - a second browser that prefers Traditional Chinese (`Accept-Language: zh-TW`) gets
//!   the page in zh-TW (title, stages, button; `target/tmp/pipeline-view-zh-TW.png`).
//!
//! hack/test.sh installs chromium and chromium-driver when they are missing.

use std::process::Stdio;

use fantoccini::{ClientBuilder, Locator};
use testenv::{Check, TestEnv, wait_for};

use super::*;

/// The stages a newly created Foo must pass through (requeues happen only on errors).
const TRIP: [&str; 7] = [
    "fifo", "indexer", "handler", "queue", "worker", "sync", "write",
];

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// The stages in a trip JSON answer.
fn stages_of(trip: &serde_json::Value) -> Vec<String> {
    trip["steps"]
        .as_array()
        .map(|steps| {
            steps
                .iter()
                .filter_map(|s| s["stage"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pipeline_page_follows_a_new_foo_through_every_stage() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("pipeline-view").await?;
    install_crds(&env).await?;
    let replica = Replica::start(
        "view",
        &env,
        env.kubeconfig(),
        &["--debug-pipeline", "--leader-elect=false"],
    )?;
    wait_for("the controller ready", TIMEOUT, || async {
        let ready = replica.readyz().await;
        Ok::<_, std::convert::Infallible>(Check::ready_if(
            ready == Some(200),
            (),
            format!("{ready:?}"),
        ))
    })
    .await?;

    create_foo(&env, "web", 1).await?;
    let key = format!("{}/web", env.namespace());

    // 1. The JSON: every stage of the trip, recorded by the running binary.
    let path = format!("/debug/pipeline/trip?key={}", key.replace('/', "%2F"));
    let trip = wait_for("the Foo's trip through every stage", TIMEOUT, || async {
        let body = http_get(replica.metrics, &path)
            .await
            .map(|r| r.body)
            .unwrap_or_default();
        let trip: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        let stages = stages_of(&trip);
        Ok::<_, std::convert::Infallible>(Check::ready_if(
            TRIP.iter().all(|s| stages.iter().any(|t| t == s)),
            trip,
            format!("stages so far: {stages:?}"),
        ))
    })
    .await
    .map_err(|e| anyhow::anyhow!("{e}\nlog:\n{}", replica.log_text()))?;
    // In pipeline order: the watch event first, the sync's write after the sync began.
    let stages = stages_of(&trip);
    let first = |s: &str| stages.iter().position(|t| t == s);
    assert_eq!(first("fifo"), Some(0), "{stages:?}");
    for pair in TRIP.windows(2) {
        assert!(
            first(pair[0]) < first(pair[1]),
            "{} before {}: {stages:?}",
            pair[0],
            pair[1]
        );
    }
    let write = trip["steps"]
        .as_array()
        .and_then(|steps| steps.iter().find(|s| s["stage"] == "write"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        write["what"], "Deployment",
        "the Deployment's create: {write}"
    );
    let written = format!("{}/web resourceVersion ", env.namespace());
    assert!(
        write["text"]
            .as_str()
            .is_some_and(|t| t.starts_with(&written)),
        "{write}"
    );

    // 2. The page, in a real browser.
    for binary in [CHROMIUM, CHROMEDRIVER] {
        anyhow::ensure!(
            std::path::Path::new(binary).exists(),
            "{binary} is missing: install Debian's chromium and chromium-driver (hack/test.sh does)"
        );
    }
    let port = free_addr().port();
    let _driver = tokio::process::Command::new(CHROMEDRIVER)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let profile = std::env::temp_dir().join(format!("{}-chromium", env.namespace()));
    let driver_url = format!("http://127.0.0.1:{port}");
    let browser = browser_session(&driver_url, &profile, "en-US,en").await?;

    let result = async {
        browser
            .goto(&format!("http://{}/debug/pipeline", replica.metrics))
            .await?;
        let input = browser
            .wait()
            .for_element(Locator::Id("follow-key"))
            .await?;
        input.send_keys(&key).await?;
        browser
            .find(Locator::Id("follow-button"))
            .await?
            .click()
            .await?;
        let seen = browser.find(Locator::Id("seen")).await?;
        let shown = wait_for("the timeline to show every stage", TIMEOUT, || async {
            let shown = seen
                .attr("data-stages")
                .await
                .ok()
                .flatten()
                .unwrap_or_default();
            Ok::<_, std::convert::Infallible>(Check::ready_if(
                TRIP.iter().all(|s| shown.split(' ').any(|t| t == *s)),
                shown.clone(),
                format!("stages shown: {shown:?}"),
            ))
        })
        .await?;
        let rows = browser.find_all(Locator::Css("#timeline tbody tr")).await?;
        anyhow::ensure!(rows.len() >= TRIP.len(), "{} timeline rows", rows.len());
        let status = browser.find(Locator::Id("status")).await?.text().await?;
        anyhow::ensure!(status.contains(&key), "status line: {status:?}");
        // The diagram's counters are live: the FIFO box counts steps.
        let fifo_total = browser
            .find(Locator::Css("#stage-fifo .total"))
            .await?
            .text()
            .await?;
        anyhow::ensure!(!fifo_total.starts_with("0 "), "FIFO box: {fifo_total:?}");

        let title = browser.find(Locator::Css("h1")).await?.text().await?;
        anyhow::ensure!(title == "Controller pipeline", "title {title:?}");
        let artifact = screenshot(&browser, "pipeline-view.png").await?;
        eprintln!("stages shown: {shown}; screenshot: {}", artifact.display());
        Ok::<_, anyhow::Error>(())
    }
    .await;
    let _ = browser.close().await;
    let _ = std::fs::remove_dir_all(&profile);
    result?;

    // 3. The same page for a browser that prefers Traditional Chinese (Accept-Language).
    let profile = std::env::temp_dir().join(format!("{}-chromium-zh", env.namespace()));
    let browser = browser_session(&driver_url, &profile, "zh-TW,zh").await?;
    let result = async {
        browser
            .goto(&format!(
                "http://{}/debug/pipeline?key={key}",
                replica.metrics
            ))
            .await?;
        let queue = browser
            .wait()
            .for_element(Locator::Css("#stage-queue h2"))
            .await?;
        anyhow::ensure!(
            queue.text().await? == "工作佇列",
            "the workqueue stage in zh-TW"
        );
        let title = browser.find(Locator::Css("h1")).await?.text().await?;
        anyhow::ensure!(title == "控制器管線", "title {title:?}");
        let button = browser
            .find(Locator::Id("follow-button"))
            .await?
            .text()
            .await?;
        anyhow::ensure!(button == "追蹤", "button {button:?}");
        let artifact = screenshot(&browser, "pipeline-view-zh-TW.png").await?;
        eprintln!("zh-TW screenshot: {}", artifact.display());
        Ok::<_, anyhow::Error>(())
    }
    .await;
    let _ = browser.close().await;
    let _ = std::fs::remove_dir_all(&profile);
    result
}

/// A headless Chromium session through chromedriver at `driver_url`, its profile in
/// `profile`, asking for pages in `languages` (its Accept-Language).
async fn browser_session(
    driver_url: &str,
    profile: &std::path::Path,
    languages: &str,
) -> anyhow::Result<fantoccini::Client> {
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        serde_json::json!({
            "binary": CHROMIUM,
            "args": [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-quic", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--window-size=1400,900",
                format!("--user-data-dir={}", profile.display()),
                format!("--lang={}", languages.split(',').next().unwrap_or("en")),
            ],
            "prefs": {"intl": {"accept_languages": languages}},
        }),
    );
    Ok(
        wait_for("chromedriver and a browser session", TIMEOUT, || async {
            Ok::<_, std::convert::Infallible>(
                match ClientBuilder::new(hyper_connector())
                    .capabilities(caps.clone())
                    .connect(driver_url)
                    .await
                {
                    Ok(client) => Check::Ready(client),
                    Err(e) => Check::Pending(e.to_string()),
                },
            )
        })
        .await?,
    )
}

/// Saves the page as `name` under the target directory; its path.
async fn screenshot(
    browser: &fantoccini::Client,
    name: &str,
) -> anyhow::Result<std::path::PathBuf> {
    let png = browser.screenshot().await?;
    anyhow::ensure!(png.starts_with(b"\x89PNG"), "a PNG screenshot");
    let artifact = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::write(&artifact, &png)?;
    Ok(artifact)
}

/// A plain-HTTP connector for chromedriver on localhost (no TLS needed).
fn hyper_connector() -> hyper_util::client::legacy::connect::HttpConnector {
    hyper_util::client::legacy::connect::HttpConnector::new()
}
