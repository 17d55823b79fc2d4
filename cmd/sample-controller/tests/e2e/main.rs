//! The sample-controller binary in production mode, on the real control plane: several
//! replicas as real processes with leader election, /metrics and /readyz scraped over
//! HTTP (`--metrics-secure=false`; secure_metrics.rs reads the secure default over HTTPS
//! with ServiceAccount tokens), client-side throttling measured from outside.

mod leader;
mod pipeline;
mod secure_metrics;
mod serving;
mod sharding;
mod throttle;

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use apis::samplecontroller::v1alpha1::{Foo, FooSpec};
use kube::api::{Api, PostParams};
use metrics::testing::{http_get, sample_value};
use rustix::process::{Pid, Signal, kill_process};
use testenv::TestEnv;

/// Generous: a loaded 2-core CI machine runs several test binaries at once.
pub const TIMEOUT: Duration = Duration::from_secs(90);

/// A free TCP port on 127.0.0.1 (bound, then released for the child to take).
pub fn free_addr() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
}

/// One sample-controller process. Killed when dropped.
pub struct Replica {
    /// Its name in logs and its leader election identity's prefix.
    pub name: String,
    /// The process.
    pub child: tokio::process::Child,
    /// Where it serves `/metrics`.
    pub metrics: SocketAddr,
    /// Where it serves `/healthz` and `/readyz`.
    pub health: SocketAddr,
    /// Its log file.
    pub log: PathBuf,
}

impl Replica {
    /// Starts `sample-controller` for `env`'s namespace with `kubeconfig` and `extra`
    /// flags; its log goes to a file in the target directory.
    pub fn start(
        name: &str,
        env: &TestEnv,
        kubeconfig: &Path,
        extra: &[&str],
    ) -> anyhow::Result<Self> {
        Self::start_logged(name, env, kubeconfig, extra, "info")
    }

    /// [`start`](Self::start) with `RUST_LOG` set to `rust_log`.
    pub fn start_logged(
        name: &str,
        env: &TestEnv,
        kubeconfig: &Path,
        extra: &[&str],
        rust_log: &str,
    ) -> anyhow::Result<Self> {
        let log = std::env::temp_dir().join(format!("{}-{name}.log", env.namespace()));
        let out = std::fs::File::create(&log)?;
        // Port 0: the process binds ports the system chooses and logs them. (A port
        // found free here and handed over could be taken by another test's process
        // before the child binds it.)
        // Plain HTTP metrics unless the test asks about --metrics-secure itself
        // (secure_metrics.rs): the other tests read /metrics without a token.
        let plain = (!extra.iter().any(|a| a.starts_with("--metrics-secure")))
            .then_some("--metrics-secure=false");
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_sample-controller"))
            .arg(format!("--kubeconfig={}", kubeconfig.display()))
            .arg(format!("--namespace={}", env.namespace()))
            .arg("--metrics-bind-address=127.0.0.1:0")
            .arg("--health-probe-bind-address=127.0.0.1:0")
            .args(plain)
            .args(extra)
            .env("RUST_LOG", rust_log)
            .stdout(Stdio::null())
            .stderr(out)
            .kill_on_drop(true)
            .spawn()?;
        let (metrics, health) = bound_addresses(&log, &mut child)?;
        Ok(Self {
            name: name.to_string(),
            child,
            metrics,
            health,
            log,
        })
    }

    /// The /metrics text, or None while the server is not up (or the process is gone).
    pub async fn metrics_text(&self) -> Option<String> {
        let response = http_get(self.metrics, "/metrics").await.ok()?;
        (response.status == 200).then_some(response.body)
    }

    /// A sample from /metrics.
    pub async fn sample(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        sample_value(&self.metrics_text().await?, name, labels)
    }

    /// Whether this replica says it leads (`leader_election_master_status` = 1).
    pub async fn is_leading(&self) -> bool {
        self.sample(
            "leader_election_master_status",
            &[("name", "sample-controller")],
        )
        .await
            == Some(1.0)
    }

    /// The HTTP status of /readyz (None while the server is not up).
    pub async fn readyz(&self) -> Option<u16> {
        http_get(self.health, "/readyz")
            .await
            .ok()
            .map(|r| r.status)
    }

    /// Sends `signal` to the process.
    pub fn signal(&self, signal: Signal) {
        if let Some(pid) = self
            .child
            .id()
            .and_then(|p| Pid::from_raw(i32::try_from(p).ok()?))
        {
            // Our own child; a failure means it has exited already.
            let _ = kill_process(pid, signal);
        }
    }

    /// The process's log so far (for failure messages).
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

/// The metrics and health addresses a replica logged ("serving", with `endpoints`
/// and `address`, in text or JSON), waiting up to 20 s for them.
fn bound_addresses(
    log: &Path,
    child: &mut tokio::process::Child,
) -> anyhow::Result<(SocketAddr, SocketAddr)> {
    let field = |line: &str, name: &str| -> Option<String> {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
            return v[name].as_str().map(str::to_string);
        }
        let start = line.find(&format!("{name}="))? + name.len() + 1;
        Some(
            line[start..]
                .split_whitespace()
                .next()?
                .trim_matches('"')
                .to_string(),
        )
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let mut found = (None, None);
        for line in text
            .lines()
            .filter(|l| l.contains("serving") && l.contains("endpoints"))
        {
            let address = field(line, "address").and_then(|a| a.parse::<SocketAddr>().ok());
            match field(line, "endpoints").as_deref() {
                Some("metrics") => found.0 = address,
                Some("health") => found.1 = address,
                _ => {}
            }
        }
        if let (Some(metrics), Some(health)) = found {
            return Ok((metrics, health));
        }
        if child.try_wait()?.is_some() || std::time::Instant::now() > deadline {
            anyhow::bail!("the replica never said where it serves; its log:\n{text}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Creates Foo `name` owning Deployment `name`.
pub async fn create_foo(env: &TestEnv, name: &str, replicas: i32) -> anyhow::Result<Foo> {
    let foos: Api<Foo> = Api::namespaced(env.client().clone(), env.namespace());
    Ok(foos
        .create(
            &PostParams::default(),
            &Foo::new(name, FooSpec::new(name, replicas)),
        )
        .await?)
}

/// Installs the CRDs (idempotent).
pub async fn install_crds(env: &TestEnv) -> anyhow::Result<()> {
    testenv::crd::install_crds(env.client(), &apis::crds()).await?;
    Ok(())
}

/// A kubeconfig like `env`'s, but authenticating with `token` instead of the admin
/// client certificate.
pub fn token_kubeconfig(env: &TestEnv, token: &str, name: &str) -> anyhow::Result<PathBuf> {
    let mut kubeconfig: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(env.kubeconfig())?)?;
    let users = kubeconfig
        .get_mut("users")
        .and_then(|u| u.as_sequence_mut())
        .ok_or_else(|| anyhow::anyhow!("kubeconfig without users"))?;
    for user in users {
        let mut auth = serde_yaml::Mapping::new();
        auth.insert("token".into(), token.into());
        user["user"] = serde_yaml::Value::Mapping(auth);
    }
    let path = std::env::temp_dir().join(format!("{}-{name}.kubeconfig", env.namespace()));
    std::fs::write(&path, serde_yaml::to_string(&kubeconfig)?)?;
    Ok(path)
}

/// `kubectl apply --server-side` of files from deploy/sample-controller, exactly as
/// shipped (idempotent across test runs).
pub fn apply_deploy_files(env: &TestEnv, files: &[&str]) -> anyhow::Result<()> {
    env.control_plane()
        .apply_shipped("sample-controller", files)?;
    Ok(())
}
