//! Tutorial chapter 1 (docs/tutorial/01-workqueue.md) runs, shows what the chapter
//! says it shows, and prints exactly the output the chapter quotes.
//!
//! The example runs on paused time, so its output is the same on every run; the
//! chapter's output block is compared with it line for line, which keeps the
//! chapter from drifting when the queue (or the example) changes.

#[allow(dead_code)] // its `main` is the example's entry point, not called here
#[path = "../examples/tutorial_01_workqueue.rs"]
mod tutorial;

use std::path::Path;

/// The marker the chapter puts right before the output block this test checks.
const MARKER: &str = "<!-- output of tutorial_01_workqueue, checked by crates/runtime/workqueue/tests/tutorial_01.rs -->";

/// The first ```text block after [`MARKER`] in the chapter.
fn chapter_output() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../docs/tutorial/01-workqueue.md");
    let chapter = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let after_marker = chapter
        .split_once(MARKER)
        .unwrap_or_else(|| panic!("{} has no line {MARKER}", path.display()))
        .1;
    let block = after_marker
        .split_once("```text\n")
        .expect("a ```text block after the marker")
        .1;
    let end = block.find("\n```").expect("the block is closed");
    format!("{}\n", &block[..end])
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn the_example_shows_each_rule_and_prints_what_the_chapter_quotes() {
    let output = tutorial::run().await;

    // The rules, checked on their own (so a changed rule fails here, not only as a
    // text difference).
    let has = |line: &str| {
        assert!(
            output.lines().any(|l| l.trim_end() == line),
            "missing line {line:?} in:\n{output}"
        )
    };
    // Dedup: four adds, two keys.
    has("  add default/a -> len 2");
    // Dirty while processing: not handed out twice, back in line on done.
    has("  worker 2: try_get -> nothing (not handed out twice)");
    has("  worker 1: done -> state Queued, len 1");
    // Backoff 5, 10, 20, 40 ms between attempts; forget resets the count.
    for (at, attempt) in [(0, 1), (5, 2), (15, 3), (35, 4)] {
        has(&format!(
            "  [{at:>5} ms] sync default/flaky attempt {attempt} failed -> add_rate_limited (requeues {attempt})"
        ));
    }
    has("  [   75 ms] sync default/flaky attempt 5 succeeded -> forget (requeues 0)");
    has("  [30075 ms] get -> default/refresh");
    // Issue 132805: client-go doubles on each re-trigger, coalescing does not.
    has("  client-go:  delays 5ms, 10ms, 20ms, 40ms, 80ms (5 failures counted)");
    has("  coalescing: delays 5ms, 4ms, 3ms, 2ms, 1ms (1 failure counted)");
    // Priorities: the change first, the raised key next, the list last.
    has(
        "    get order: changed (0), listed-3 (0), listed-0 (-100), listed-1 (-100), listed-2 (-100), listed-4 (-100)",
    );
    // Drain: the queued key is still handed out, drain returns after the last done.
    has("  [   50 ms] worker: get -> default/next, syncing for 50 ms");
    has("  [  100 ms] shut_down_with_drain() returned: nothing in flight");

    // And the chapter quotes exactly this output.
    let quoted = chapter_output();
    if quoted != output {
        panic!(
            "docs/tutorial/01-workqueue.md quotes an output that differs from the example's; \
             replace the block after the marker with:\n{output}"
        );
    }
}
