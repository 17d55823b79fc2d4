//! e2e: the tutorial's chapter 6 example (docs/tutorial/06-leader-election-and-events.md)
//! against a real kube-apiserver (crates/dev/testenv). The example file is included as it
//! is, so the test runs exactly what a learner runs with `cargo run --example`, in the
//! test's own namespace.

#[allow(dead_code)] // `main` and its namespace helpers serve `cargo run` only
#[path = "../examples/tutorial_06_leader_election.rs"]
mod tutorial_06;

use testenv::TestEnv;

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
async fn tutorial_06_one_leader_a_handover_on_release_and_events_folded() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("tutorial-06").await?;
    let output = tutorial_06::run(env.client().clone(), env.namespace()).await?;
    assert_lines_in_order(
        &output,
        &[
            // a leads; b observes it and waits while a renews.
            "  a: started leading",
            "  b: sees the leader: a",
            "  Lease tutorial-06: holderIdentity \"a\", leaseDurationSeconds 10, leaseTransitions 0",
            "  a renewed the Lease (its renewTime moved on); b.is_leader() = false, b.get_leader() = a",
            // a steps down: its token fires, its run returns, b takes over.
            "  a: stopped leading (its token fired)",
            "  a: run returned (on_stopped_leading)",
            "  b: started leading",
            "  Lease tutorial-06: holderIdentity \"b\", leaseDurationSeconds 10, leaseTransitions 1",
            // Each leader's Event on the Lease.
            "  read back: Normal LeaderElection \"a became leader\" count 1",
            "  read back: Normal LeaderElection \"b became leader\" count 1",
            // Dedup: one Event, count 5.
            "  read back: Warning RenewSlow \"renewing the Lease took longer than 2s\" count 5",
            // Aggregation: 9 single Events, then one combined, counting the rest.
            "  read back: 9 Events as recorded",
            "  read back: Warning ProbeFailed \"(combined from similar events): probe 12 failed\" count 3",
            // events.k8s.io/v1: a series.
            "  read back: Normal Renewed action Renew \"renewed the Lease\", series.count 3",
        ],
    );
    Ok(())
}
