//! Tutorial chapter 6, leader election and Events
//! (docs/tutorial/06-leader-election-and-events.md).
//!
//! Two candidates, `a` and `b`, run a [`LeaderElector`] each on one Lease in a
//! namespace of the example's own, in one process (as two replicas of a controller
//! would in two): `a` leads and renews, `b` waits; `a` steps down (its `run` is
//! cancelled, and it releases the Lease), and `b` takes over at its next attempt.
//! Each new leader records an Event on the Lease, as client-go's LeaseLock does.
//! Then the Event pipelines: repeats of one Event fold into one Event with a count
//! (dedup), ten and more messages of one kind fold into a combined Event
//! (aggregation), and on the events.k8s.io/v1 API repeats form a series.
//!
//! Mirrors client-go's tools/leaderelection (`LeaderElector`, `LeaderElectionConfig`,
//! `LeaderCallbacks`, `resourcelock.LeaseLock`), tools/record (`EventBroadcaster`,
//! `EventRecorder`, `EventCorrelator`) and tools/events (`EventSeries`).
//!
//! ```sh
//! eval "$(bash hack/control-plane.sh up | grep '^export')"
//! cargo run -p kcr-leaderelection --example tutorial_06_leader_election
//! ```

use std::future::Future;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Event;
use kube::Client;
use kube::api::{Api, ListParams, ObjectMeta};
use leaderelection::{
    AlreadyRunning, LeaderCallbacks, LeaderElectionConfig, LeaderElectionRecord, LeaderElector,
    LeaseLock, lease_spec_to_leader_election_record,
};
use record::{EventRecorder, EventType};
use testenv::tutorial::{Example, Log};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The Lease both candidates compete for.
const LEASE: &str = "tutorial-06";

/// How long any one wait may take before the example gives up.
const TIMEOUT: Duration = Duration::from_secs(60);

/// The component name the Events carry.
const COMPONENT: &str = "tutorial-06";

/// Polls `check` every 100 ms until it returns `Some`, for at most [`TIMEOUT`].
async fn wait_until<T, F, Fut>(what: &str, mut check: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Option<T>>>,
{
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        if let Some(value) = check().await? {
            return Ok(value);
        }
        if tokio::time::Instant::now() >= deadline {
            bail!("timed out after {TIMEOUT:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// What a candidate's callbacks said, in the order they said it.
struct Voice {
    said: mpsc::UnboundedReceiver<String>,
    /// Heard, not asked for yet.
    pending: Vec<String>,
}

impl Voice {
    /// The first thing said that starts with `prefix` (callbacks run on different
    /// tasks, so two of them may arrive in either order).
    async fn hear(&mut self, prefix: &str) -> Result<String> {
        if let Some(i) = self.pending.iter().position(|s| s.starts_with(prefix)) {
            return Ok(self.pending.remove(i));
        }
        loop {
            match tokio::time::timeout(TIMEOUT, self.said.recv()).await {
                Ok(Some(line)) if line.starts_with(prefix) => return Ok(line),
                Ok(Some(line)) => self.pending.push(line),
                Ok(None) => bail!("the callbacks are gone before saying {prefix:?}"),
                Err(_) => bail!("no {prefix:?} within {TIMEOUT:?}"),
            }
        }
    }
}

/// One candidate: its elector, the token that stops its `run`, and its callbacks.
struct Candidate {
    elector: Arc<LeaderElector>,
    stop: CancellationToken,
    task: JoinHandle<Result<(), AlreadyRunning>>,
    voice: Voice,
}

/// Starts a candidate named `identity` on the Lease, recording "became leader" on it
/// through `recorder` when it starts leading.
fn start(client: &Client, namespace: &str, identity: &str, recorder: &EventRecorder) -> Candidate {
    let lock = LeaseLock::new(client.clone(), namespace, LEASE, identity);
    let mut config = LeaderElectionConfig::new(Arc::new(lock));
    // Short, so the example is quick; their order is what matters (see config.rs):
    // lease > renew deadline > 1.2 x retry period.
    config.lease_duration = Duration::from_secs(10);
    config.renew_deadline = Duration::from_secs(8);
    config.retry_period = Duration::from_millis(500);
    // Give the Lease up on the way out: the next candidate need not wait out a lease.
    config.release_on_cancel = true;

    let (tx, said) = mpsc::unbounded_channel();
    let leases: Api<Lease> = Api::namespaced(client.clone(), namespace);
    let (on_started, on_stopped, on_new) = (tx.clone(), tx.clone(), tx);
    let (who, recorder, namespace) = (
        identity.to_string(),
        recorder.clone(),
        namespace.to_string(),
    );
    let callbacks = LeaderCallbacks::new(
        move |leading: CancellationToken| {
            let (tx, who, recorder, leases, namespace) = (
                on_started.clone(),
                who.clone(),
                recorder.clone(),
                leases.clone(),
                namespace.clone(),
            );
            async move {
                let _ = tx.send("started leading".to_string());
                // client-go's LeaseLock.RecordEvent: an Event on the Lease, naming us.
                // (Should the read fail, the Event names the Lease without its UID.)
                let lease = leases.get(LEASE).await.unwrap_or_else(|_| Lease {
                    metadata: ObjectMeta {
                        name: Some(LEASE.to_string()),
                        namespace: Some(namespace),
                        ..ObjectMeta::default()
                    },
                    ..Lease::default()
                });
                recorder.event(
                    &lease,
                    EventType::Normal,
                    "LeaderElection",
                    format!("{who} became leader"),
                );
                // The controller would run here, until the token fires.
                leading.cancelled().await;
                let _ = tx.send("stopped leading (its token fired)".to_string());
            }
        },
        move || {
            let _ = on_stopped.send("run returned (on_stopped_leading)".to_string());
        },
    )
    .on_new_leader(move |leader| {
        let _ = on_new.send(format!("sees the leader: {leader}"));
    });
    let elector = Arc::new(LeaderElector::new(config, callbacks).expect("a valid config"));
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let (elector, stop) = (elector.clone(), stop.clone());
        async move { elector.run(stop).await }
    });
    Candidate {
        elector,
        stop,
        task,
        voice: Voice {
            said,
            pending: Vec::new(),
        },
    }
}

/// The election record in the Lease.
async fn record(leases: &Api<Lease>) -> Result<LeaderElectionRecord> {
    let lease = leases.get(LEASE).await.context("reading the Lease")?;
    let spec = lease.spec.context("a Lease without a spec")?;
    Ok(lease_spec_to_leader_election_record(&spec))
}

fn describe_record(record: &LeaderElectionRecord) -> String {
    format!(
        "holderIdentity {:?}, leaseDurationSeconds {}, leaseTransitions {}",
        record.holder_identity, record.lease_duration_seconds, record.leader_transitions
    )
}

/// The core/v1 Events with `reason`, as `<type> <reason> "<message>" count <n>`,
/// sorted; waits until `ready` accepts them.
async fn events_with(
    events: &Api<Event>,
    reason: &str,
    ready: impl Fn(&[Event]) -> bool,
) -> Result<Vec<String>> {
    let found = wait_until(&format!("the {reason} Events"), || async {
        let all = events
            .list(&ListParams::default())
            .await
            .context("listing Events")?;
        let found: Vec<Event> = all
            .items
            .into_iter()
            .filter(|e| e.reason.as_deref() == Some(reason))
            .collect();
        Ok(ready(&found).then_some(found))
    })
    .await?;
    let mut lines: Vec<String> = found
        .iter()
        .map(|e| {
            format!(
                "{} {} {:?} count {}",
                e.type_.as_deref().unwrap_or_default(),
                e.reason.as_deref().unwrap_or_default(),
                e.message.as_deref().unwrap_or_default(),
                e.count.unwrap_or(1)
            )
        })
        .collect();
    lines.sort();
    Ok(lines)
}

/// The example, in `namespace`; returns what it printed.
pub async fn run(client: Client, namespace: &str) -> Result<String> {
    let mut log = Log::default();
    let leases: Api<Lease> = Api::namespaced(client.clone(), namespace);
    let events: Api<Event> = Api::namespaced(client.clone(), namespace);

    // One Event pipeline per process (client-go's tools/record), shared by everyone.
    let broadcaster = record::EventBroadcaster::default();
    broadcaster
        .start_recording_to_sink(client.clone())
        .context("starting the Event broadcaster")?;
    let recorder = broadcaster.new_recorder(COMPONENT, "");

    log.say("1. two candidates on one Lease: one leads, the other waits");
    let mut a = start(&client, namespace, "a", &recorder);
    a.voice.hear("started leading").await?;
    log.say("  a: started leading (it created the Lease)");
    let mut b = start(&client, namespace, "b", &recorder);
    log.say(format!(
        "  b: {}",
        b.voice.hear("sees the leader: a").await?
    ));
    let first = record(&leases).await?;
    log.say(format!("  Lease {LEASE}: {}", describe_record(&first)));
    wait_until("a to renew the Lease", || async {
        let now = record(&leases).await?;
        Ok((now.renew_time > first.renew_time).then_some(()))
    })
    .await?;
    log.say(format!(
        "  a renewed the Lease (its renewTime moved on); b.is_leader() = {}, b.get_leader() = {}",
        b.elector.is_leader(),
        b.elector.get_leader()
    ));

    log.say("");
    log.say("2. the leader steps down; the other takes over");
    a.stop.cancel();
    log.say("  cancelled a's run (release_on_cancel: it empties the holder on the way out)");
    log.say(format!("  a: {}", a.voice.hear("stopped leading").await?));
    log.say(format!("  a: {}", a.voice.hear("run returned").await?));
    a.task
        .await
        .context("candidate a's task")?
        .context("candidate a")?;
    log.say(format!("  b: {}", b.voice.hear("started leading").await?));
    let second = wait_until("b in the Lease", || async {
        let now = record(&leases).await?;
        Ok((now.holder_identity == "b").then_some(now))
    })
    .await?;
    log.say(format!("  Lease {LEASE}: {}", describe_record(&second)));

    log.say("");
    log.say("3. Events: each new leader said so, on the Lease");
    for line in events_with(&events, "LeaderElection", |found| found.len() == 2).await? {
        log.say(format!("  read back: {line}"));
    }

    log.say("");
    log.say("4. dedup: the same Event 5 times is one Event whose count grows");
    // (Every write about one object costs a token of the spam filter: a burst of 25,
    // then one per 5 minutes. This example writes 19 about the Lease.)
    let lease = leases.get(LEASE).await.context("reading the Lease")?;
    for _ in 0..5 {
        recorder.event(
            &lease,
            EventType::Warning,
            "RenewSlow",
            "renewing the Lease took longer than 2s",
        );
    }
    log.say("  recorded Warning RenewSlow \"renewing the Lease took longer than 2s\" 5 times");
    let count_is = |n: i32| move |found: &[Event]| found.len() == 1 && found[0].count == Some(n);
    for line in events_with(&events, "RenewSlow", count_is(5)).await? {
        log.say(format!("  read back: {line}"));
    }

    log.say("");
    log.say("5. aggregation: 12 Events alike but for their message");
    for i in 1..=12 {
        recorder.event(
            &lease,
            EventType::Warning,
            "ProbeFailed",
            format!("probe {i} failed"),
        );
    }
    log.say("  recorded Warning ProbeFailed \"probe 1 failed\" ... \"probe 12 failed\"");
    let aggregated = |found: &[Event]| {
        found.len() == 10
            && found.iter().any(|e| {
                e.count == Some(3)
                    && e.message
                        .as_deref()
                        .is_some_and(|m| m.starts_with("(combined from similar events)"))
            })
    };
    let found = events_with(&events, "ProbeFailed", aggregated).await?;
    let (combined, single): (Vec<&String>, Vec<&String>) = found
        .iter()
        .partition(|line| line.contains("(combined from similar events)"));
    log.say(format!(
        "  read back: {} Events as recorded (count 1 each), \"probe 1 failed\" ... \"probe 9 failed\"",
        single.iter().filter(|l| l.ends_with("count 1")).count()
    ));
    for line in combined {
        log.say(format!("  read back: {line}"));
    }

    log.say("");
    log.say("6. events.k8s.io/v1 (tools/events): repeats form a series");
    let series = record::events::EventBroadcaster::default();
    series
        .start_recording_to_sink(client.clone())
        .context("starting the events.k8s.io Event broadcaster")?;
    let series_recorder = series.new_recorder(COMPONENT, "tutorial");
    for _ in 0..3 {
        series_recorder.eventf(
            &lease,
            None,
            EventType::Normal,
            "Renewed",
            "Renew",
            "renewed the Lease",
        );
    }
    log.say("  recorded Normal Renewed (action Renew) \"renewed the Lease\" 3 times");
    let api: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(client.clone(), namespace);
    let written = wait_until("the Renewed series", || async {
        let all = api.list(&ListParams::default()).await?;
        let found: Vec<_> = all
            .items
            .into_iter()
            .filter(|e| e.reason.as_deref() == Some("Renewed"))
            .collect();
        let counted = found.len() == 1 && found[0].series.as_ref().map(|s| s.count) == Some(3);
        Ok(counted.then(|| found.into_iter().next()).flatten())
    })
    .await?;
    log.say(format!(
        "  read back: {} {} action {} {:?}, series.count {}",
        written.type_.as_deref().unwrap_or_default(),
        written.reason.as_deref().unwrap_or_default(),
        written.action.as_deref().unwrap_or_default(),
        written.note.as_deref().unwrap_or_default(),
        written.series.as_ref().map_or(0, |s| s.count)
    ));

    b.stop.cancel();
    b.task
        .await
        .context("candidate b's task")?
        .context("candidate b")?;
    series.shutdown(Duration::from_secs(5)).await;
    broadcaster.shutdown(Duration::from_secs(5)).await;
    Ok(log.text())
}

/// Runs the example in a namespace of its own, deleted at the end whatever
/// happened (`testenv::tutorial::main`).
#[tokio::main]
async fn main() -> ExitCode {
    testenv::tutorial::main("tutorial-06", &[], |example: Example| async move {
        run(example.client, &example.namespace).await
    })
    .await
}
