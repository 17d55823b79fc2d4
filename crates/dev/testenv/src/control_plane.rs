//! Starting (or reusing) the control plane and connecting to it.
//!
//! Startup is delegated to `hack/control-plane.sh`, so the script used by hand
//! and this crate share one binary cache, one build and one set of flags:
//! `control-plane.sh build` ensures the binaries, then
//! `control-plane.sh up --foreground --dir <dir>` runs everything as children
//! of one shell, which this crate runs as a [`ProcessGuard`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use rustix::process::Signal;

use crate::error::{Error, Result};
use crate::process::ProcessGuard;

/// Environment variable naming a kubeconfig of an already running cluster to
/// use instead of starting one (e.g. one from `hack/control-plane.sh up`).
pub const ENV_KUBECONFIG: &str = "TESTENV_KUBECONFIG";
/// Environment variable overriding the path of `hack/control-plane.sh`.
pub const ENV_SCRIPT: &str = "TESTENV_CONTROL_PLANE_SCRIPT";
/// Environment variable overriding the startup timeout in seconds (default 180).
pub const ENV_START_TIMEOUT: &str = "TESTENV_START_TIMEOUT_SECS";
/// Environment variable naming the kubectl binary when reusing a cluster.
pub const ENV_KUBECTL: &str = "TESTENV_KUBECTL";

/// A running Kubernetes control plane: etcd, kube-apiserver,
/// kube-controller-manager, kube-scheduler and kwok with fake Nodes, all on
/// 127.0.0.1 (or an existing cluster named by [`ENV_KUBECONFIG`]).
///
/// Dropping a control plane started by [`ControlPlane::start`] stops every
/// process and removes its state directory. The processes also die with the
/// test process (parent-death signal), even on panic or `SIGKILL`.
#[derive(Debug)]
pub struct ControlPlane {
    kubeconfig: PathBuf,
    kubectl: PathBuf,
    readyz_after: Option<Duration>,
    ready_after: Option<Duration>,
    log: Option<PathBuf>,
    // Declared last: dropped after the paths above are no longer needed.
    process: Option<ProcessGuard>,
}

static SHARED: OnceLock<std::result::Result<ControlPlane, String>> = OnceLock::new();

impl ControlPlane {
    /// The process-wide control plane shared by every test of a test binary,
    /// started on first use (blocking; may build the binaries on a cold
    /// machine). Reuses [`ENV_KUBECONFIG`] when set. Isolate tests with
    /// namespaces ([`TestEnv`](crate::TestEnv)).
    pub fn shared() -> Result<&'static ControlPlane> {
        SHARED
            .get_or_init(|| match std::env::var_os(ENV_KUBECONFIG) {
                Some(path) if !path.is_empty() => Ok(Self::existing(PathBuf::from(path))),
                _ => Self::start().map_err(|e| e.to_string()),
            })
            .as_ref()
            .map_err(|e| Error::SharedStartFailed(e.clone()))
    }

    /// Use an already running cluster through `kubeconfig`; nothing is
    /// started or stopped.
    pub fn existing(kubeconfig: PathBuf) -> Self {
        let kubectl = std::env::var_os(ENV_KUBECTL)
            .map(PathBuf::from)
            .or_else(|| {
                let script = script_path();
                let out = Command::new("bash")
                    .arg(&script)
                    .arg("bin-dir")
                    .output()
                    .ok()?;
                let dir = String::from_utf8(out.stdout).ok()?;
                let path = Path::new(dir.trim()).join("kubectl");
                path.exists().then_some(path)
            })
            .unwrap_or_else(|| PathBuf::from("kubectl"));
        Self {
            kubeconfig,
            kubectl,
            readyz_after: None,
            ready_after: None,
            log: None,
            process: None,
        }
    }

    /// Start a new control plane owned by the caller (blocking). Prefer
    /// [`ControlPlane::shared`] in tests: startup takes seconds.
    pub fn start() -> Result<Self> {
        Self::start_with_args(&[], &[])
    }

    /// [`start`](Self::start), with extra kube-apiserver flags (e.g.
    /// `--feature-gates=ShardedListAndWatch=true`) and kube-controller-manager flags
    /// (e.g. `--controllers=-deployment-controller`), passed to
    /// `hack/control-plane.sh up` as `KUBE_APISERVER_EXTRA_ARGS` and
    /// `KUBE_CONTROLLER_MANAGER_EXTRA_ARGS`.
    pub fn start_with_args(apiserver: &[&str], controller_manager: &[&str]) -> Result<Self> {
        let script = script_path();
        ensure_binaries(&script)?;
        prune_stale_files();

        let unique = format!("{}-{:08x}", std::process::id(), rand::random::<u32>());
        let dir = std::env::temp_dir().join(format!("testenv-{unique}"));
        let log = std::env::temp_dir().join(format!("testenv-{unique}.log"));
        let log_file = std::fs::File::create(&log)
            .map_err(|e| Error::io(format!("creating {}", log.display()), e))?;
        let stderr = log_file
            .try_clone()
            .map_err(|e| Error::io("duplicating the log file handle", e))?;
        let mut cmd = Command::new("bash");
        cmd.arg(&script)
            .args(["up", "--foreground", "--dir"])
            .arg(&dir)
            .stdin(Stdio::null())
            .stdout(log_file)
            .stderr(stderr);
        if !apiserver.is_empty() {
            cmd.env("KUBE_APISERVER_EXTRA_ARGS", apiserver.join(" "));
        }
        if !controller_manager.is_empty() {
            cmd.env(
                "KUBE_CONTROLLER_MANAGER_EXTRA_ARGS",
                controller_manager.join(" "),
            );
        }
        // SIGTERM on parent death lets the script tear down and remove `dir`;
        // its own children get SIGKILL when it dies.
        let guard = ProcessGuard::spawn(cmd, Signal::TERM, Duration::from_secs(20))?;

        let timeout = std::env::var(ENV_START_TIMEOUT)
            .ok()
            .and_then(|s| s.parse().ok())
            .map_or(Duration::from_secs(180), Duration::from_secs);
        let started = Instant::now();
        tracing::info!(dir = %dir.display(), log = %log.display(), "starting control plane");
        while !dir.join("ready").exists() {
            if let Some(status) = guard.try_status() {
                return Err(Error::Exited {
                    status: status.to_string(),
                    log_tail: tail(&log),
                    log,
                });
            }
            if started.elapsed() > timeout {
                drop(guard);
                return Err(Error::StartTimeout {
                    timeout,
                    log_tail: tail(&log),
                    log,
                });
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let env = read_env(&dir.join("env"))?;
        let secs = |key: &str| {
            env.get(key)
                .and_then(|v| v.parse::<f64>().ok())
                .map(Duration::from_secs_f64)
        };
        let plane = Self {
            kubeconfig: dir.join("kubeconfig"),
            kubectl: env
                .get("KUBECTL")
                .map_or_else(|| "kubectl".into(), PathBuf::from),
            readyz_after: secs("READYZ_SECONDS"),
            ready_after: secs("READY_SECONDS"),
            log: Some(log),
            process: Some(guard),
        };
        tracing::info!(
            kubeconfig = %plane.kubeconfig.display(),
            readyz_after = ?plane.readyz_after,
            ready_after = ?plane.ready_after,
            "control plane ready"
        );
        Ok(plane)
    }

    /// Path of an admin kubeconfig (client certificate in `system:masters`).
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig
    }

    /// Time from start to kube-apiserver `/readyz`, as measured by the
    /// script (`None` for an existing cluster).
    pub fn readyz_after(&self) -> Option<Duration> {
        self.readyz_after
    }

    /// Time from start until Nodes are Ready and controllers are healthy.
    pub fn ready_after(&self) -> Option<Duration> {
        self.ready_after
    }

    /// Whether the processes of a started control plane are still running
    /// (always true for an existing cluster).
    pub fn is_running(&self) -> bool {
        self.process
            .as_ref()
            .is_none_or(|p| p.try_status().is_none())
    }

    /// `Ok` while running, else [`Error::Exited`] with the end of the log
    /// (the script stops everything when any component dies).
    pub fn check_running(&self) -> Result<()> {
        match self.process.as_ref().and_then(ProcessGuard::try_status) {
            None => Ok(()),
            Some(status) => {
                let log = self.log.clone().unwrap_or_default();
                Err(Error::Exited {
                    status: status.to_string(),
                    log_tail: tail(&log),
                    log,
                })
            }
        }
    }

    /// The admin client configuration.
    pub async fn config(&self) -> Result<Config> {
        let kubeconfig = Kubeconfig::read_from(&self.kubeconfig)?;
        Ok(Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?)
    }

    /// A new admin client. Create one per test (per tokio runtime): a client
    /// spawns its connection tasks on the runtime it was created on.
    pub async fn client(&self) -> Result<Client> {
        Ok(Client::try_from(self.config().await?)?)
    }

    /// A client authenticating with a bearer `token` (e.g. a ServiceAccount
    /// token from the TokenRequest API) instead of the admin certificate.
    pub async fn client_with_token(&self, token: &str) -> Result<Client> {
        let admin = Kubeconfig::read_from(&self.kubeconfig)?;
        let current = admin.current_context.clone().unwrap_or_default();
        let cluster_name = admin
            .contexts
            .iter()
            .find(|c| c.name == current)
            .and_then(|c| c.context.as_ref())
            .map(|c| c.cluster.clone())
            .unwrap_or_default();
        let cluster = admin
            .clusters
            .iter()
            .find(|c| c.name == cluster_name)
            .or(admin.clusters.first())
            .and_then(|c| c.cluster.clone())
            .unwrap_or_default();
        let mut cluster_json = serde_json::json!({ "server": cluster.server });
        if let Some(data) = cluster.certificate_authority_data {
            cluster_json["certificate-authority-data"] = data.into();
        } else if let Some(file) = cluster.certificate_authority {
            cluster_json["certificate-authority"] = file.into();
        }
        let doc = serde_json::json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{ "name": "c", "cluster": cluster_json }],
            "users": [{ "name": "token", "user": { "token": token } }],
            "contexts": [{ "name": "c", "context": { "cluster": "c", "user": "token" } }],
            "current-context": "c",
        });
        let yaml = serde_yaml::to_string(&doc).expect("a JSON value always serialises to YAML");
        let kubeconfig = Kubeconfig::from_yaml(&yaml)?;
        let config =
            Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
        Ok(Client::try_from(config)?)
    }

    /// A `kubectl` command (the binary built with the control plane) with
    /// `--kubeconfig` already set.
    pub fn kubectl(&self) -> Command {
        let mut cmd = Command::new(&self.kubectl);
        cmd.arg(format!("--kubeconfig={}", self.kubeconfig.display()));
        cmd
    }

    /// Restarts kube-apiserver only (same ports, certificates and etcd data) and
    /// returns once it serves `/readyz` again (blocking; from async code call it in
    /// `spawn_blocking`). Clients see their watches break and connections refused
    /// meanwhile, then a server with an empty watch cache: what an apiserver upgrade
    /// or crash looks like to a controller. Runs `hack/control-plane.sh
    /// restart-apiserver`.
    ///
    /// Restarting affects every test sharing this control plane, so tests that do it
    /// should use a private one ([`ControlPlane::start`]). Not available for an
    /// existing cluster ([`ControlPlane::existing`]).
    pub fn restart_apiserver(&self) -> Result<()> {
        if self.process.is_none() {
            return Err(Error::InvalidRequest(
                "restart_apiserver needs a control plane started by testenv".into(),
            ));
        }
        let dir = self
            .kubeconfig
            .parent()
            .ok_or_else(|| Error::InvalidRequest("kubeconfig has no state dir".into()))?;
        let script = script_path();
        let out = Command::new("bash")
            .arg(&script)
            .arg("restart-apiserver")
            .arg(dir)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| Error::io(format!("running {} restart-apiserver", script.display()), e))?;
        if out.status.success() {
            return Ok(());
        }
        // The foreground `up` did the restart: why it failed is in its log.
        let plane_log = self.log.as_deref().map(tail).unwrap_or_default();
        Err(Error::InvalidRequest(format!(
            "restart-apiserver failed ({}): {}\nthe control plane's log ends:\n{plane_log}",
            out.status,
            last_lines(&String::from_utf8_lossy(&out.stderr), 20)
        )))
    }

    /// Stop every process now and remove the state directory (same as drop).
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(process) = self.process.take() {
            process.stop();
            if let Some(log) = self.log.take() {
                let _ = std::fs::remove_file(log);
            }
        }
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Path of `hack/control-plane.sh` ([`ENV_SCRIPT`] overrides).
fn script_path() -> PathBuf {
    std::env::var_os(ENV_SCRIPT)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../hack/control-plane.sh")
        })
}

/// The Kubernetes release `hack/control-plane.sh` starts, e.g. `v1.37.2`: the newest
/// one pinned, or the one the `K8S_VERSION` environment variable selects (`oldest`,
/// `newest` or a version; see the script). With [`ENV_KUBECONFIG`] the cluster is
/// whatever that kubeconfig points at, which this does not know.
pub fn selected_kubernetes_version() -> Result<String> {
    let script = script_path();
    let out = Command::new("bash")
        .arg(&script)
        .arg("version")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::io(format!("running {} version", script.display()), e))?;
    if !out.status.success() {
        return Err(Error::Binaries {
            script,
            status: out.status.to_string(),
            output: last_lines(&String::from_utf8_lossy(&out.stderr), 10),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Run `control-plane.sh build`: reuse or build (cold: many minutes) the binaries.
fn ensure_binaries(script: &Path) -> Result<()> {
    tracing::info!(script = %script.display(), "ensuring control-plane binaries");
    let out = Command::new("bash")
        .arg(script)
        .arg("build")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::io(format!("running {} build", script.display()), e))?;
    if out.status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&out.stderr);
    Err(Error::Binaries {
        script: script.to_path_buf(),
        status: out.status.to_string(),
        output: last_lines(&text, 40),
    })
}

/// Remove `testenv-<pid>-*` logs and state dirs left in the temp dir by test
/// processes that no longer exist (the shared control plane's log is never
/// dropped, and a `SIGKILL`ed test cannot clean up).
fn prune_stale_files() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("testenv-"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        let path = entry.path();
        let _ = if path.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
    }
}

/// Parse the script's `KEY=VALUE` env file.
fn read_env(path: &Path) -> Result<HashMap<String, String>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
    Ok(text
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect())
}

/// The last lines of a log file, for error messages.
fn tail(path: &Path) -> String {
    std::fs::read_to_string(path)
        .map_or_else(|e| format!("<unreadable: {e}>"), |t| last_lines(&t, 60))
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_lines_keeps_the_end() {
        assert_eq!(last_lines("a\nb\nc", 2), "b\nc");
        assert_eq!(last_lines("a", 5), "a");
        assert_eq!(last_lines("", 5), "");
    }

    #[test]
    fn script_path_points_at_the_repo_script() {
        assert!(script_path().ends_with("hack/control-plane.sh"));
        assert!(script_path().exists());
    }
}
