//! The loop's `synced` debug lines, as the JSON logs carry them: the chaos soak's log
//! analysis (crates/tools/chaos/src/logs.rs) reads `message`, `controller`, `key`,
//! `elapsed`, `started_at`, `last_poll_at` and `object_hash` from them, so a change to
//! their names or messages breaks its overlap check, not a compile.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use controller::{Action, Admission, Controller, Pass, SyncGate, SyncHandler};
use parking_lot::Mutex;
use serde_json::Value;
use workqueue::RateLimitingQueue;
use workqueue::priority::LOW;

/// `ns/a` is done; `ns/b` asks to be synced again in 3 s at `LOW`.
struct Handler;

impl SyncHandler for Handler {
    type Error = String;

    async fn sync(&self, key: &str) -> Result<Action, String> {
        Ok(match key {
            "ns/b" => Action::requeue_after(Duration::from_secs(3)).with_priority(LOW),
            _ => Action::Done,
        })
    }
}

/// Admits every key with a pass for object 42 that is never revoked.
struct Gate;

impl SyncGate for Gate {
    fn admit(&self, _key: &str) -> Admission {
        Admission::Admit(Pass::new(std::future::pending(), ()).for_object(42))
    }
}

/// The log lines written so far.
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<u8>>>);

impl io::Write for Lines {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Lines {
    /// The line with `message`, parsed.
    fn find(&self, message: &str) -> Value {
        let text = String::from_utf8(self.0.lock().clone()).expect("the JSON logs are UTF-8");
        text.lines()
            .map(|line| serde_json::from_str::<Value>(line).expect("one JSON object a line"))
            .find(|line| line["message"] == message)
            .unwrap_or_else(|| panic!("no {message:?} line in:\n{text}"))
    }
}

/// The event's own fields (the JSON format adds `timestamp`, `level`, `target`,
/// `span` and `spans`).
fn fields(line: &Value) -> Vec<&str> {
    let mut names: Vec<&str> = line
        .as_object()
        .expect("a log line is a JSON object")
        .keys()
        .map(String::as_str)
        .filter(|k| !matches!(*k, "timestamp" | "level" | "target" | "span" | "spans"))
        .collect();
    names.sort_unstable();
    names
}

/// An RFC 3339 UTC timestamp with microseconds, as the soak parses it.
fn is_utc_micros(v: &Value) -> bool {
    let s = v.as_str().unwrap_or_default();
    s.ends_with('Z') && s.split_once('.').is_some_and(|(_, frac)| frac.len() == 7)
}

#[tokio::test]
async fn synced_lines_carry_the_fields_the_soak_reads() {
    let lines = Lines::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_writer({
            let lines = lines.clone();
            move || lines.clone()
        })
        .with_ansi(false)
        .json()
        .flatten_event(true)
        .finish();
    let _default = tracing::subscriber::set_default(subscriber);

    let queue = RateLimitingQueue::with_default_rate_limiter("test");
    let c = Controller::new("test", queue, Handler).with_gate(Some(Arc::new(Gate)));
    c.queue().add("ns/a".to_string());
    assert!(c.process_next_work_item().await);
    c.queue().add("ns/b".to_string());
    assert!(c.process_next_work_item().await);

    let done = lines.find("synced");
    assert_eq!(
        fields(&done),
        [
            "controller",
            "elapsed",
            "key",
            "last_poll_at",
            "message",
            "object_hash",
            "started_at"
        ]
    );
    assert_eq!(done["controller"], "test");
    assert_eq!(done["key"], "ns/a");
    assert_eq!(done["object_hash"], 42);
    assert!(done["elapsed"].is_string());
    assert!(is_utc_micros(&done["started_at"]), "{done}");
    assert!(is_utc_micros(&done["last_poll_at"]), "{done}");

    let requeued = lines.find("synced; requeued");
    assert_eq!(
        fields(&requeued),
        [
            "after",
            "controller",
            "elapsed",
            "key",
            "last_poll_at",
            "message",
            "object_hash",
            "priority",
            "started_at"
        ]
    );
    assert_eq!(requeued["key"], "ns/b");
    assert_eq!(requeued["object_hash"], 42);
    assert_eq!(requeued["after"], "3s");
    assert_eq!(requeued["priority"], LOW);
}
