//! The RAII guard: a privately started control plane serves requests, and
//! `stop` (= drop) ends every process and removes its state directory.

use std::net::TcpStream;

use testenv::{ControlPlane, get_raw};

#[tokio::test]
async fn stop_ends_every_process_and_removes_the_state_dir() -> anyhow::Result<()> {
    // A control plane of its own even when TESTENV_KUBECONFIG names a shared one
    // (hack/test.sh runs every test binary with one): starting and stopping is the test.
    let plane = tokio::task::spawn_blocking(ControlPlane::start).await??;
    let state_dir = plane
        .kubeconfig_path()
        .parent()
        .expect("kubeconfig in state dir")
        .to_path_buf();
    let client = plane.client().await?;
    assert_eq!(get_raw(&client, "/readyz").await?, "ok");
    let readyz = plane.readyz_after().expect("startup timing recorded");
    assert!(
        readyz.as_secs() <= 20,
        "kube-apiserver took {readyz:?} to become ready"
    );
    let server = plane.config().await?.cluster_url;
    let addr = format!(
        "{}:{}",
        server.host().unwrap_or("127.0.0.1"),
        server.port_u16().unwrap_or(443)
    );
    assert!(TcpStream::connect(&addr).is_ok());

    tokio::task::spawn_blocking(move || plane.stop()).await?;
    assert!(!state_dir.exists(), "{} still exists", state_dir.display());
    assert!(
        TcpStream::connect(&addr).is_err(),
        "kube-apiserver still listening on {addr}"
    );
    Ok(())
}
