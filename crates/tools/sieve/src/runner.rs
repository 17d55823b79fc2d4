//! The runner: one run of a workload against a controller behind the recording proxy,
//! unperturbed (the learning run) or under one [`Plan`].
//!
//! A run, from the top:
//!
//! 1. a fresh namespace, and a proxy ([`SieveProxy`]) between the controller and
//!    kube-apiserver with a [`Recorder`] that applies the plan's perturbation;
//! 2. the controller started (its command from the [`Target`], its kubeconfig the
//!    proxy's; each replica of a shard group its own proxy listener, so the proxy knows
//!    who wrote), and the run waits until it is quiescent;
//! 3. each workload step: its user operation sent as the admin, straight to the API
//!    server, then a wait until the cluster is quiescent again: neither a recorded
//!    write or watch event nor any request of the controller's for [`Timing::quiet`].
//!    A step that is not quiescent within [`Timing::step_bound`] is a liveness failure
//!    (the run goes on). The step's begin and end go into the trace;
//! 4. the perturbation: at an intermediate-state plan's crash point the proxy's hook
//!    SIGKILLs the controller (in a shard group, the replica that sent the write) at
//!    once (right after the answer to the write went out),
//!    and the wait restarts it; a stale-state plan, once its step is quiescent, kills
//!    the controller, starts it again with its lists served at the resourceVersion it
//!    had reached at the end of the previous step (this run's own, from its trace), and
//!    serves them live again once those lists were served and the controller is quiet;
//!    an unobserved-state plan's event is withheld by the proxy on its own, across the
//!    step boundaries, until a later event of its object supersedes it; if none has by
//!    the time the last step is quiet, the proxy makes the controller relist
//!    ([`Recorder::release_withheld`]);
//! 5. the end state (every object of the captured kinds in the namespace, once the
//!    garbage collector has removed what deleted owners left, up to the bound), then the
//!    clean-up: the workload's objects deleted while the controller still runs (so it
//!    can remove its finalizers), the controller stopped, the owned objects deleted and
//!    waited for (a Service holds its node port until it is gone), the namespace
//!    deleted.

mod cluster;
mod process;
mod watcher;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use kube::core::ApiResource;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

pub use cluster::Cluster;
use process::Controller;
use watcher::{NOT_CRASHED, Watcher};

use crate::complaints::{Warning, WarningLog};
use crate::plan::{Perturbation, Plan};
use crate::proxy::{Recorder, SieveProxy};
use crate::target::{Captured, Placeholders, Target};
use crate::trace::{Event, Trace};
use crate::workload::Workload;

/// Why a run could not be carried out (not a finding about the controller).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The environment or the input is not usable.
    #[error("{0}")]
    Setup(String),
    /// A file or process operation failed.
    #[error("{action}: {source}")]
    Io {
        /// What was being done.
        action: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The API server refused what the runner sent as the user.
    #[error("{action}: {source}")]
    Kube {
        /// What was being done.
        action: String,
        /// The error.
        #[source]
        source: kube::Error,
    },
}

impl RunError {
    /// The API server's answer when it refused the user's object itself (invalid under
    /// the schema or a CEL rule, denied by an admission webhook: 400, 403, 422), rather
    /// than the run failing: a step of a workload derived from a schema may be refused by
    /// a rule the schema does not show, and a refusal is then the step's outcome.
    pub fn refusal(&self) -> Option<String> {
        match self {
            Self::Kube {
                action,
                source: kube::Error::Api(status),
            } if matches!(status.code, 400 | 403 | 422) => Some(format!(
                "{action}: refused ({}): {}",
                status.code, status.message
            )),
            _ => None,
        }
    }

    fn io(action: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io {
            action: action.into(),
            source,
        }
    }

    fn kube(action: impl Into<String>, source: kube::Error) -> Self {
        Self::Kube {
            action: action.into(),
            source,
        }
    }
}

/// How long the runner waits.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// How long nothing must happen for the cluster to count as quiescent.
    pub quiet: Duration,
    /// How long a step may take to become quiescent (the liveness bound).
    pub step_bound: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Self {
            quiet: Duration::from_secs(2),
            step_bound: Duration::from_secs(60),
        }
    }
}

/// The control plane a run uses: the admin kubeconfig and the proxy's certificate.
#[derive(Debug, Clone)]
pub struct Environment {
    /// The admin client, for the user's operations and the end state.
    pub cluster: Cluster,
    /// The admin client's configuration (the proxy forwards with it).
    pub config: kube::Config,
    /// The admin kubeconfig's text (the controller's differs in its `server:` only).
    pub admin_kubeconfig: String,
    /// A serving certificate and key for 127.0.0.1 signed by the cluster CA (PEM).
    pub serving_cert: (Vec<u8>, Vec<u8>),
    /// `{bin}`.
    pub bin_dir: PathBuf,
}

impl Environment {
    /// Reads a control plane's directory as `hack/control-plane.sh up` wrote it.
    pub async fn open(control_plane: &Path, bin_dir: PathBuf) -> Result<Self, RunError> {
        let env_file = std::fs::read_to_string(control_plane.join("env"))
            .map_err(|e| RunError::io(format!("reading {}/env", control_plane.display()), e))?;
        let kubeconfig = env_file
            .lines()
            .find_map(|l| l.strip_prefix("KUBECONFIG="))
            .ok_or_else(|| {
                RunError::Setup(format!("{}/env has no KUBECONFIG", control_plane.display()))
            })?;
        let admin_kubeconfig = std::fs::read_to_string(kubeconfig)
            .map_err(|e| RunError::io(format!("reading {kubeconfig}"), e))?;
        let parsed = kube::config::Kubeconfig::from_yaml(&admin_kubeconfig)
            .map_err(|e| RunError::Setup(format!("{kubeconfig}: {e}")))?;
        let config = kube::Config::from_custom_kubeconfig(parsed, &Default::default())
            .await
            .map_err(|e| RunError::Setup(format!("{kubeconfig}: {e}")))?;
        let client = kube::Client::try_from(config.clone())
            .map_err(|e| RunError::kube("the admin client", e))?;
        let read = |name: &str| {
            std::fs::read(control_plane.join("webhook-certs").join(name))
                .map_err(|e| RunError::io(format!("reading webhook-certs/{name}"), e))
        };
        Ok(Self {
            cluster: Cluster::new(client),
            config,
            admin_kubeconfig,
            serving_cert: (read("tls.crt")?, read("tls.key")?),
            bin_dir,
        })
    }
}

/// What one run saw and left (`outcome.json` in the run's directory; the trace is in
/// `trace.jsonl`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunOutcome {
    /// The run's namespace.
    pub namespace: String,
    /// The recorded trace (JSON lines in `trace.jsonl` of the run's directory).
    #[serde(skip, default)]
    pub trace: Trace,
    /// The end state: every object of the captured kinds in the namespace.
    pub end_state: Vec<Json>,
    /// The kinds captured in full (the workload's own).
    pub full_kinds: Vec<String>,
    /// Whether the plan's perturbation happened (always true for a learning run).
    pub reached: bool,
    /// Steps that were not quiescent within the bound: `step N: ...`.
    pub liveness: Vec<String>,
    /// Exits of the controller the run did not cause.
    pub exits: Vec<String>,
    /// Log lines that report a panic.
    pub panics: Vec<String>,
    /// Incarnations of the controller started.
    pub incarnations: usize,
    /// Their log files, in order.
    pub logs: Vec<PathBuf>,
    /// Workload objects still there after the clean-up's bound (a finalizer nobody
    /// removed).
    pub not_cleaned_up: Vec<String>,
    /// Steps the API server refused (invalid, or denied by admission): `step N (...):
    /// refused (422): ...`. The run goes on without them.
    #[serde(default)]
    pub refused: Vec<String>,
    /// The state after the step `snapshot_after` named (settled as the end state is);
    /// none if an event was still withheld then. Plans are judged on it as on the end
    /// state, and the differential oracle compares it.
    #[serde(default)]
    pub snapshot: Option<Vec<Json>>,
    /// Warning Events about the workload's objects, by the step after which each was
    /// first seen (the [complaints](crate::complaints) oracle; unperturbed runs only).
    #[serde(default)]
    pub warnings: Vec<Warning>,
}

/// One run of `workload` against `target` under `plan` (none: the learning run),
/// writing its logs and trace into `dir`. `learned_namespace` is the learning run's
/// namespace (the plan's keys name it; they are moved into this run's).
/// `snapshot_after`: also keep the state once that step is quiet
/// ([`RunOutcome::snapshot`]).
#[allow(clippy::too_many_arguments)] // each is one thing a caller decides
pub async fn run(
    env: &Environment,
    target: &Target,
    workload: (&Workload, &str),
    plan: Option<&Plan>,
    learned_namespace: Option<&str>,
    timing: Timing,
    dir: &Path,
    snapshot_after: Option<usize>,
) -> Result<RunOutcome, RunError> {
    let (workload, workload_name) = workload;
    std::fs::create_dir_all(dir)
        .map_err(|e| RunError::io(format!("creating {}", dir.display()), e))?;
    let namespace = fresh_namespace();
    let perturbation = plan.map(|p| localize(&p.perturbation, learned_namespace, &namespace));

    // The resources: the workload's kinds (captured in full) and the target's owned ones.
    let full: Vec<Captured> = workload
        .kinds()
        .into_iter()
        .map(|(api_version, kind)| Captured::new(&api_version, &kind))
        .collect();
    let mut resources: Vec<ApiResource> = Vec::new();
    for captured in full.iter().chain(&target.owned) {
        resources.push(env.cluster.resource(captured).await?);
    }
    let resource_of = |kind: &str| resources.iter().find(|r| r.kind == kind);

    let timing = Timing {
        quiet: target.quiet.map_or(timing.quiet, |q| q.max(timing.quiet)),
        ..timing
    };
    let mut controller = Controller::new(target.replicas);
    let crashed = Arc::new(AtomicUsize::new(NOT_CRASHED));
    let mut recorder = Recorder::new(perturbation.clone());
    if matches!(perturbation, Some(Perturbation::IntermediateState { .. })) {
        let (kill, crashed) = (controller.killer(), Arc::clone(&crashed));
        recorder = recorder.on_crash_point(move |replica| {
            crashed.store(replica, Ordering::SeqCst);
            kill(replica);
        });
    }
    recorder.push(Event::Run {
        workload: workload_name.to_owned(),
        controller: target.name.clone(),
    });
    let upstream = apiproxy::Upstream::from_kube_config(&env.config)
        .map_err(|e| RunError::Setup(format!("the proxy's upstream: {e}")))?;
    let (cert, key) = &env.serving_cert;
    // One listener per replica: the proxy tells them apart (the crash point's writer).
    let proxy = SieveProxy::start_listeners(cert, key, upstream, recorder, controller.replicas())
        .await
        .map_err(|e| RunError::Setup(format!("starting the proxy: {e}")))?;
    let state_dir = dir.join("state");
    std::fs::create_dir_all(&state_dir).map_err(|e| RunError::io("creating the state dir", e))?;
    let state_dir = state_dir.display().to_string();
    let bin = env.bin_dir.display().to_string();
    let mut commands = Vec::new();
    for (replica, addr) in proxy.addrs().iter().enumerate() {
        let kubeconfig = if replica == 0 {
            dir.join("proxy.kubeconfig")
        } else {
            dir.join(format!("proxy-{replica}.kubeconfig"))
        };
        std::fs::write(
            &kubeconfig,
            apiproxy::kubeconfig_for(&env.admin_kubeconfig, *addr),
        )
        .map_err(|e| RunError::io("writing the proxy kubeconfig", e))?;
        commands.push(target.command_line(&Placeholders {
            kubeconfig: &kubeconfig.display().to_string(),
            namespace: &namespace,
            state_dir: &state_dir,
            bin: &bin,
        }));
    }

    env.cluster.create_namespace(&namespace).await?;
    let mut watch = Watcher {
        proxy: &proxy,
        controller: &mut controller,
        crashed: &crashed,
        commands: &commands,
        env: &target.env,
        dir,
        timing,
        exits: Vec::new(),
        liveness: Vec::new(),
    };
    watch.start_all()?;
    watch.quiescent("start", false).await;
    let full_kinds: Vec<&str> = full.iter().map(|c| c.kind.as_str()).collect();
    let mut warnings = WarningLog::default();
    let mut refused_steps = Vec::new();
    let mut snapshot = None;
    for (index, step) in workload.steps.iter().enumerate() {
        let last_step = index + 1 == workload.steps.len();
        let recorder = proxy.interceptor();
        recorder.push(Event::StepBegin {
            step: step.number,
            op: step.op().to_string(),
            name: step.target.name.clone(),
        });
        let resource = resource_of(&step.target.kind)
            .ok_or_else(|| RunError::Setup(format!("no resource for {}", step.target.kind)))?;
        // The controller may hit its crash point, or miss the event it needs, while the
        // operation waits (a recreate waits for the old object's finalizers): restart
        // it, or release the withheld event, meanwhile.
        let apply = env
            .cluster
            .apply(step, resource, &namespace, timing.step_bound);
        tokio::pin!(apply);
        let applying_since = Instant::now();
        loop {
            tokio::select! {
                applied = &mut apply => match applied {
                    Ok(()) => break,
                    Err(e) => match e.refusal() {
                        Some(refused) => {
                            tracing::warn!(%refused, "sieve: a step was refused");
                            refused_steps.push(refused);
                            break;
                        }
                        None => return Err(e),
                    },
                },
                () = tokio::time::sleep(watcher::TICK) => {
                    let what = format!("step {}", step.number);
                    watch.restart_exited(&what).await;
                    watch.release_long_withheld(&what, applying_since);
                }
            }
        }
        // A withheld event is released (if nothing superseded it) only once the last
        // step is quiet: until then a later step may supersede it (watcher.rs says why).
        watch
            .quiescent(&format!("step {}", step.number), last_step)
            .await;
        recorder.push(Event::StepEnd { step: step.number });
        // Only the unperturbed runs' complaints are judged (crate::complaints).
        if plan.is_none() {
            let events = env.cluster.warning_events(&namespace).await;
            warnings.record(&events, step.number, &full_kinds);
        }
        if snapshot_after == Some(step.number) {
            let state = watch
                .settled_state(&env.cluster, &resources, &namespace, &full_kinds, false)
                .await?;
            // With an event still withheld the controller lacks a state on purpose:
            // only the end state may be judged then.
            if proxy.interceptor().withheld_for().is_none() {
                snapshot = Some(state);
            }
        }
        if let Some(Perturbation::StaleState { at_step, .. }) = &perturbation
            && *at_step == step.number
        {
            watch.restart_stale(*at_step).await?;
        }
    }

    // The end state, once the garbage collector has removed what the deleted owners
    // left (its work, not the controller's; it also needs a while to discover a new
    // CRD's resource) and every Deployment has rolled out (the deployment controller's
    // and kwok's work, which under load can pause for longer than a quiet period: a
    // MyWeb plan's status was taken mid-rollout in CI): an owned object still waiting
    // for the collector after the bound is what the invariants then report.
    let end_state = watch
        .settled_state(&env.cluster, &resources, &namespace, &full_kinds, true)
        .await?;
    if plan.is_none() {
        let last = workload.steps.last().map_or(0, |s| s.number);
        let events = env.cluster.warning_events(&namespace).await;
        warnings.record(&events, last, &full_kinds);
    }
    // The clean-up is not part of the plan: no crash point in it.
    proxy.interceptor().disarm();
    let trace = proxy.interceptor().trace();
    let reached = perturbation.is_none() || proxy.interceptor().reached();
    let (exits, liveness) = (
        std::mem::take(&mut watch.exits),
        std::mem::take(&mut watch.liveness),
    );

    // Clean up: the controller removes its finalizers while the objects go.
    let mut not_cleaned_up = Vec::new();
    for resource in resources.iter().take(full.len()) {
        for name in env
            .cluster
            .delete_all(resource, &namespace, timing.step_bound)
            .await?
        {
            not_cleaned_up.push(format!("{} {name}", resource.kind));
        }
    }
    controller.stop(Duration::from_secs(5)).await;
    // The owned objects too, and waited for, before the next run starts: the namespace
    // goes asynchronously, and a Service still holding the workload's node port made
    // the next run's create fail (422 "provided port is already allocated": a MyWeb
    // plan failed in CI for it).
    for resource in resources.iter().skip(full.len()) {
        env.cluster
            .delete_owned(resource, &namespace, timing.step_bound)
            .await?;
    }
    env.cluster.delete_namespace(&namespace).await;
    let mut file = std::fs::File::create(dir.join("trace.jsonl"))
        .map_err(|e| RunError::io("creating trace.jsonl", e))?;
    trace
        .write_jsonl(&mut file)
        .map_err(|e| RunError::io("writing trace.jsonl", e))?;
    Ok(RunOutcome {
        namespace,
        trace,
        end_state,
        full_kinds: full.iter().map(|c| c.kind.clone()).collect(),
        reached,
        liveness,
        exits,
        panics: controller.panics(),
        incarnations: controller.incarnations(),
        logs: controller.logs().to_vec(),
        not_cleaned_up,
        refused: refused_steps,
        snapshot,
        warnings: warnings.warnings,
    })
}

/// `perturbation` with the learning run's namespace in its key replaced by this run's.
fn localize(perturbation: &Perturbation, learned: Option<&str>, namespace: &str) -> Perturbation {
    match (perturbation, learned) {
        (
            Perturbation::UnobservedState {
                resource,
                key,
                withheld_rv,
                occurrence,
            },
            Some(learned),
        ) => {
            let key = match key.split_once('/') {
                Some((ns, name)) if ns == learned => format!("{namespace}/{name}"),
                _ => key.clone(),
            };
            Perturbation::UnobservedState {
                resource: resource.clone(),
                key,
                withheld_rv: withheld_rv.clone(),
                occurrence: *occurrence,
            }
        }
        (other, _) => other.clone(),
    }
}

/// `sieve-<12 hex digits of the clock>`: unique per run on one machine.
fn fresh_namespace() -> String {
    // A counter besides the clock: runs of one process may start in the same
    // microsecond (`sieve test --jobs`).
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let run = RUNS.fetch_add(1, Ordering::Relaxed);
    format!(
        "sieve-{:010x}{:02x}",
        (nanos / 1000) & 0xff_ffff_ffff,
        run & 0xff
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_withheld_event_is_moved_into_the_runs_namespace() {
        let learned = Perturbation::UnobservedState {
            resource: "foos".into(),
            key: "sieve-learn/web".into(),
            withheld_rv: "812".into(),
            occurrence: 2,
        };
        let Perturbation::UnobservedState {
            key, occurrence, ..
        } = localize(&learned, Some("sieve-learn"), "sieve-run")
        else {
            panic!("the same perturbation");
        };
        assert_eq!((key.as_str(), occurrence), ("sieve-run/web", 2));
        let crash = Perturbation::IntermediateState { after_write: 3 };
        assert_eq!(localize(&crash, Some("sieve-learn"), "sieve-run"), crash);
        assert!(fresh_namespace().starts_with("sieve-"));
        assert!(fresh_namespace().len() <= 63);
    }
}
