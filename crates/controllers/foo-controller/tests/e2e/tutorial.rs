//! The tutorial's chapter 4 example (docs/tutorial/04-foo-controller.md,
//! examples/tutorial_04_controller.rs), run against the real control plane: the file
//! is included as it is (see `main.rs`), so this runs exactly what a learner runs
//! with `cargo run --example`, in the test's own namespace.

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
async fn tutorial_04_the_deployment_follows_the_foo_and_the_status_follows_the_deployment()
-> anyhow::Result<()> {
    let env = TestEnv::with_prefix("tutorial-04").await?;
    install_crds(env.client()).await?;
    let output = crate::tutorial_04::run(env.client().clone(), env.namespace()).await?;
    assert_lines_in_order(
        &output,
        &[
            // Both informers of the namespace, then the handlers' initial lists.
            "  the factory started Deployment in <namespace>: synced, Foo in <namespace>: synced",
            "  has_synced() = true",
            // A Foo gets its Deployment, owned by it; the status follows availability.
            "  created Foo example",
            "  Deployment example-foo: replicas 1, controlled by Foo example (ownerReference controller: true, blockOwnerDeletion: true)",
            "  Foo example: status.availableReplicas 1",
            "  Event Normal Synced: Foo synced successfully",
            // A spec change reaches the Deployment, then the status.
            "  Deployment example-foo: replicas 3",
            "  Foo example: status.availableReplicas 3",
            // Drift is put back.
            "  Deployment example-foo: replicas 3 again",
            // Someone else's Deployment: a Warning, and it is left as it was.
            "  Event Warning ErrResourceExists: Resource \"taken\" already exists and is not managed by Foo",
            "  Deployment taken: replicas 1, no controller",
        ],
    );
    Ok(())
}
