//! e2e: the tutorial's API-server examples (docs/tutorial/, chapters 2 and 3) run
//! against a real kube-apiserver (crates/dev/testenv) and show what their chapters say
//! they show.
//!
//! Each example keeps its logic in `run(client, namespace)`, which returns what it
//! printed; the files are included here as they are, so the test runs exactly the
//! code a learner runs with `cargo run --example`, in the test's own namespace.
//! Lines are checked in order, allowing lines in between: the API server may send a
//! BOOKMARK at any time, which the RealFIFO pipeline prints too.

#[allow(dead_code)] // `main` and its namespace helpers serve `cargo run` only
#[path = "../examples/tutorial_02_reflector.rs"]
mod tutorial_02;

#[allow(dead_code)] // `main` and its namespace helpers serve `cargo run` only
#[path = "../examples/tutorial_03_informer.rs"]
mod tutorial_03;

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
async fn tutorial_02_reflector_shows_grouped_and_ordered_deltas_and_tombstones_after_a_gap()
-> anyhow::Result<()> {
    let env = TestEnv::with_prefix("tutorial-02").await?;
    let output = tutorial_02::run(env.client().clone(), env.namespace()).await?;
    let tombstone =
        "  pop b: [Deleted DeletedFinalStateUnknown{key <namespace>/b, last known b v=1}]";
    assert_lines_in_order(
        &output,
        &[
            // 1. The initial list: Replaced deltas, flagged as the initial list.
            "1. the initial list",
            "DeltaFIFO",
            "  pop a: [Replaced a v=1]   (initial list)",
            "  pop b: [Replaced b v=1]   (initial list)",
            "  store: a v=1, b v=1",
            "RealFIFO",
            "  pop a: [Replaced a v=1]   (initial list)",
            "  pop b: [Replaced b v=1]   (initial list)",
            "  store: a v=1, b v=1",
            // 2. The DeltaFIFO groups a's deltas before c's add; the RealFIFO keeps
            // the server's order.
            "2. watch events",
            "DeltaFIFO",
            "  pop a: [Updated a v=2, Deleted a v=2]",
            "  pop c: [Added c v=1]",
            "  store: b v=1, c v=1",
            "RealFIFO",
            "  pop a: [Updated a v=2]",
            "  pop c: [Added c v=1]",
            "  pop a: [Deleted a v=2]",
            "  store: b v=1, c v=1",
            // 3. After the gap and the relist: b, deleted unseen, is a tombstone that
            // carries its last known state; d, created unseen, comes as Replaced. The
            // RealFIFO queues the tombstone first, as client-go's does.
            "3. a watch gap",
            "DeltaFIFO",
            "  pop c: [Replaced c v=1]",
            "  pop d: [Replaced d v=1]",
            tombstone,
            "  store: c v=1, d v=1",
            "RealFIFO",
            tombstone,
            "  pop c: [Replaced c v=1]",
            "  pop d: [Replaced d v=1]",
            "  store: c v=1, d v=1",
        ],
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tutorial_03_informer_handler_lister_and_index_follow_the_api() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("tutorial-03").await?;
    let output = tutorial_03::run(env.client().clone(), env.namespace()).await?;
    assert_lines_in_order(
        &output,
        &[
            // One informer for two requests; the handler hears the initial list.
            "  asked for ConfigMaps twice; the factory started 1 informer: ConfigMap in <namespace>: synced",
            "  handler: add cache-config (initial list)",
            "  handler: add db-config (initial list)",
            "  handler: add kube-root-ca.crt (initial list)",
            "  handler: add web-assets (initial list)",
            "  handler: add web-config (initial list)",
            // The lister: get, NotFound, label selectors (!= also matches no label).
            "  get web-config -> app=web tier=frontend (resourceVersion ",
            "  get missing -> error `configmaps \"missing\" not found`, is_not_found() = true",
            "  list \"tier=backend\" -> [cache-config, db-config]",
            "  list \"app in (web, cache)\" -> [cache-config, web-assets, web-config]",
            "  list \"tier!=frontend\" -> [cache-config, db-config, kube-root-ca.crt]",
            // The custom index and the namespace index.
            "  by_index(by-app, web) -> [web-assets, web-config]",
            "  by_index(by-app, db) -> [db-config]",
            "  list_index_func_values(by-app) -> [cache, db, web]",
            "  index_keys(by-app, db) -> <namespace>/db-config",
            "  by_index(namespace, <namespace>) -> 5 objects",
            // A relabel moves the object between index values at once.
            "  handler: update db-config (app=db tier=backend -> app=web tier=backend)",
            "  by_index(by-app, web) -> [db-config, web-assets, web-config]",
            "  by_index(by-app, db) -> []",
            "  list_index_func_values(by-app) -> [cache, web]",
            // A delete seen by the watch: the final state, not a tombstone.
            "  handler: delete cache-config (its final state)",
            "  get cache-config -> is_not_found() = true",
        ],
    );
    Ok(())
}
