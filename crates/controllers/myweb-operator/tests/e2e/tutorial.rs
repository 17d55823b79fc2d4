//! The tutorial's chapter 7 example (docs/tutorial/07-builder-and-myweb.md,
//! examples/tutorial_07_builder.rs), run against the real control plane: the file is
//! included as it is (see `main.rs`), so this runs exactly what a learner runs with
//! `cargo run --example`, in the test's own namespace.

use super::*;

/// Asserts that `output` has lines starting with each of `expected`, in this order.
fn assert_lines_in_order(output: &str, expected: &[&str]) {
    let mut lines = output.lines();
    for want in expected {
        assert!(
            lines.any(|line| line.starts_with(want)),
            "no line starting with {want:?} (in this order) in:\n{output}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tutorial_07_the_builder_wires_for_and_owns_and_the_web_gets_its_objects()
-> anyhow::Result<()> {
    // Node ports are cluster-wide: the example's must not collide with the other tests'.
    assert_eq!(crate::tutorial_07::NODE_PORT, ports::TUTORIAL);
    let env = TestEnv::with_prefix("tutorial-07").await?;
    install_crds(env.client()).await?;
    let output = crate::tutorial_07::run(env.client().clone(), env.namespace()).await?;
    assert_lines_in_order(
        &output,
        &[
            // For and three Owns: four shared informers, in the namespace.
            "  one shared informer per kind: ConfigMap metadata in <namespace>: synced, Deployment in <namespace>: synced, MyWeb in <namespace>: synced, Service in <namespace>: synced",
            // The three objects, each controlled by the MyWeb; then Ready.
            "  ConfigMap hello: index.html \"<h1>Hello</h1>\", controlled by MyWeb hello",
            "  Deployment hello: image nginx:1.27, replicas 1, controlled by MyWeb hello",
            "  Service hello: NodePort, nodePort 30021 -> port 80, controlled by MyWeb hello",
            "  MyWeb hello: Ready True (Available): the page is served on node port 30021, observedGeneration 1",
            "  Event Normal Ready: the page is served on node port 30021",
            // Owns: changes to owned objects are put back.
            "  Service hello: created again (a new UID), nodePort 30021",
            "  ConfigMap hello: index.html \"<h1>Hello</h1>\" again",
            // For: a spec change reaches the ConfigMap and the pod template.
            "  ConfigMap hello: index.html \"<h1>Hello again</h1>\"",
            "  Deployment hello: the pod template's operator.k8s-summit.org/page-sha256 changed",
            "  MyWeb hello: Ready True (Available): the page is served on node port 30021, observedGeneration 2",
        ],
    );
    Ok(())
}
