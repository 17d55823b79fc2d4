//! The tutorial's chapters 5 and 8 (docs/tutorial/05-finalizers-and-status.md,
//! 08-admission-webhooks.md), run against the real control plane. The example files
//! are included as they are (see `main.rs`), so these run exactly what a learner runs
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
async fn tutorial_05_the_finalizer_comes_first_and_holds_the_deletion_until_the_server_is_gone()
-> anyhow::Result<()> {
    let env = TestEnv::with_prefix("tutorial-05").await?;
    install_crds(env.client()).await?;
    let output = crate::tutorial_05::run(env.client().clone(), env.namespace()).await?;
    let finalizers = "finalizers [cloudnative.tw/vm-cleanup]";
    assert_lines_in_order(
        &output,
        &[
            "  synced; the driver has 0 servers",
            // The finalizer is written before anything else, then Creating, then
            // Active with the server.
            &format!("  watch: {finalizers}, no status"),
            &format!("  watch: {finalizers}, phase Creating"),
            &format!("  watch: {finalizers}, phase Active, server fake-1 Running"),
            "  the driver: server fake-1 (1 CPU, 64 MiB)",
            "  Event Normal Created: Server <server> is active (id fake-1)",
            // Usage comes from the driver by requeue.
            "  status.server.usage: cpu 12.5, memory 40",
            // The delete only marks the object; the finalizer holds it while the
            // driver fails.
            &format!("  watch: deletionTimestamp set, {finalizers}"),
            &format!(
                "  watch: deletionTimestamp set, {finalizers}, phase Terminating, server fake-1 Running, reason \"DeleteFailed: "
            ),
            "  VirtualMachine web still exists: true; the driver still has the server: true",
            // Then the server goes, and only then the object.
            "  VirtualMachine web: gone",
            "  the driver: 0 servers (created 1, deleted 1)",
            "  Event Normal Deleted: Server <server> deleted",
        ],
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tutorial_08_the_api_server_defaults_and_refuses_through_the_webhooks() -> anyhow::Result<()>
{
    let env = TestEnv::with_prefix("tutorial-08").await?;
    install_crds(env.client()).await?;
    let output = crate::tutorial_08::run(env.config().clone(), env.namespace()).await?;
    assert_lines_in_order(
        &output,
        &[
            "  /mutate-cloudnative-tw-v1alpha1-virtualmachine: VirtualMachineDefaulter",
            "  /validate-cloudnative-tw-v1alpha1-virtualmachine: VirtualMachineValidator",
            // Defaulted by the mutating webhook, before the schema's `required`.
            "  sparse as stored: cpu 2, memory 512Mi, rootDisk 1Gi",
            // Refused by the validating webhook, with its message.
            "  create huge (cpu 100) -> 422 admission webhook \"<webhook>\" denied the request: spec.resource.cpu: Invalid value: \"100\": must be at most 64",
            "  get huge -> exists: false",
            "  create web (cpu 1) -> created",
            "  resize web to cpu 2 -> 422 admission webhook \"<webhook>\" denied the request: spec.resource: Forbidden: cannot be changed from cpu=1 memory=64Mi rootDisk=1Gi to cpu=2",
            "  web as stored: cpu 1, memory 64Mi, rootDisk 1Gi",
        ],
    );
    Ok(())
}
