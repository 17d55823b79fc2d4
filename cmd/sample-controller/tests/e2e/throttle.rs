//! With --kube-api-qps 5 --kube-api-burst 10, a burst of 200 Foos never drives the
//! controller above 5 requests per second (plus the burst), measured from its /metrics
//! over a 20-second window while it is busy.

use futures::{StreamExt, TryStreamExt};
use testenv::TestEnv;

use super::*;

const QPS: f64 = 5.0;
const BURST: f64 = 10.0;

#[tokio::test]
async fn a_burst_of_200_objects_never_exceeds_the_configured_rate() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    install_crds(&env).await?;
    let kubeconfig = env.kubeconfig().to_path_buf();
    let replica = Replica::start(
        "throttled",
        &env,
        &kubeconfig,
        &["--kube-api-qps=5", "--kube-api-burst=10"],
    )?;
    let requests = || replica.sample("kube_client_requests_total", &[]);
    testenv::wait_for("the throttled replica serves /metrics", TIMEOUT, || async {
        let r = requests().await;
        Ok::<_, std::convert::Infallible>(testenv::Check::ready_if(
            r.is_some(),
            (),
            format!("{r:?}"),
        ))
    })
    .await?;

    // 200 Foos as fast as the (unthrottled) admin client can create them: every one
    // needs at least a Deployment create and a status update from the controller.
    futures::stream::iter(0..200)
        .map(|i| {
            let env = &env;
            async move { create_foo(env, &format!("burst-{i}"), 1).await }
        })
        .buffer_unordered(16)
        .try_collect::<Vec<_>>()
        .await?;

    let mut samples = Vec::new();
    let start = std::time::Instant::now();
    while start.elapsed() < Duration::from_secs(20) {
        if let Some(count) = requests().await {
            samples.push((start.elapsed().as_secs_f64(), count));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    anyhow::ensure!(samples.len() >= 10, "too few samples: {samples:?}");
    // Token bucket: over any interval dt at most BURST + QPS * dt requests (plus one
    // for the sample boundaries).
    for (i, &(t1, c1)) in samples.iter().enumerate() {
        for &(t2, c2) in &samples[i + 1..] {
            let allowed = BURST + QPS * (t2 - t1) + 1.0;
            assert!(
                c2 - c1 <= allowed,
                "{} requests in {:.1}s > {allowed:.1} allowed",
                c2 - c1,
                t2 - t1
            );
        }
    }
    // And it was busy the whole time (so the bound above was the throttle, not idleness).
    let (t_first, c_first) = samples[0];
    let (t_last, c_last) = *samples.last().unwrap();
    let rate = (c_last - c_first) / (t_last - t_first);
    assert!(
        rate >= QPS * 0.7,
        "expected the controller to be busy at ~{QPS} req/s, saw {rate:.2}"
    );
    let throttled = replica
        .sample("kube_client_throttled_requests_total", &[])
        .await
        .unwrap_or(0.0);
    assert!(throttled > 0.0, "no request waited for a token");
    Ok(())
}
