//! The control plane the soak runs against (started by `hack/control-plane.sh up`) and
//! the faults injected into it: kube-apiserver and etcd restarts, and etcd compaction.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::process::Command;

use crate::error::ChaosError;

/// A running control plane, from its state dir.
#[derive(Debug, Clone)]
pub struct ControlPlane {
    /// The state dir (`hack/control-plane.sh up --dir`).
    pub dir: PathBuf,
    /// `hack/control-plane.sh`.
    pub script: PathBuf,
    /// The admin kubeconfig.
    pub kubeconfig: PathBuf,
    /// etcd's client URL.
    pub etcd: String,
    /// Held while `control-plane.sh` replaces a component: between the old process's
    /// exit and the new pid in `DIR/pids`, the component looks dead and is not.
    restarting: Arc<tokio::sync::Mutex<()>>,
}

impl ControlPlane {
    /// Reads `DIR/env` as `up` wrote it.
    pub fn open(dir: &Path, script: &Path) -> Result<Self, ChaosError> {
        let env = std::fs::read_to_string(dir.join("env"))
            .map_err(|e| ChaosError::io(format!("reading {}/env", dir.display()), e))?;
        let get = |key: &str| {
            env.lines()
                .find_map(|l| l.strip_prefix(&format!("{key}=")))
                .map(str::to_owned)
                .ok_or_else(|| ChaosError::Setup(format!("{}/env has no {key}", dir.display())))
        };
        Ok(Self {
            dir: dir.to_path_buf(),
            script: script.to_path_buf(),
            kubeconfig: PathBuf::from(get("KUBECONFIG")?),
            etcd: get("ETCD")?,
            restarting: Arc::default(),
        })
    }

    /// The admin client configuration.
    pub async fn config(&self) -> Result<kube::Config, ChaosError> {
        let kubeconfig = kube::config::Kubeconfig::read_from(&self.kubeconfig)
            .map_err(|e| ChaosError::Setup(format!("admin kubeconfig: {e}")))?;
        kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .map_err(|e| ChaosError::Setup(format!("admin kubeconfig: {e}")))
    }

    /// Writes a copy of the admin kubeconfig whose server is `https://addr` (the proxy).
    pub fn write_kubeconfig_for(
        &self,
        addr: std::net::SocketAddr,
        path: &Path,
    ) -> Result<(), ChaosError> {
        let text = std::fs::read_to_string(&self.kubeconfig)
            .map_err(|e| ChaosError::io("reading the admin kubeconfig", e))?;
        std::fs::write(path, apiproxy::kubeconfig_for(&text, addr))
            .map_err(|e| ChaosError::io("writing the proxy kubeconfig", e))
    }

    /// The webhook serving certificate and key `up` made (signed by the cluster CA, for
    /// 127.0.0.1): the proxy serves it.
    pub fn serving_cert(&self) -> Result<(Vec<u8>, Vec<u8>), ChaosError> {
        let read = |name: &str| {
            std::fs::read(self.dir.join("webhook-certs").join(name))
                .map_err(|e| ChaosError::io(format!("reading webhook-certs/{name}"), e))
        };
        Ok((read("tls.crt")?, read("tls.key")?))
    }

    /// `hack/control-plane.sh restart-apiserver`; returns how long it took.
    pub async fn restart_apiserver(&self) -> Result<Duration, ChaosError> {
        self.script_command("restart-apiserver").await
    }

    /// `hack/control-plane.sh restart-etcd`; returns how long it took.
    pub async fn restart_etcd(&self) -> Result<Duration, ChaosError> {
        self.script_command("restart-etcd").await
    }

    /// `hack/control-plane.sh restart-controller-manager`; returns how long it took.
    pub async fn restart_controller_manager(&self) -> Result<Duration, ChaosError> {
        self.script_command("restart-controller-manager").await
    }

    async fn script_command(&self, command: &str) -> Result<Duration, ChaosError> {
        let _replacing = self.restarting.lock().await;
        let started = Instant::now();
        let output = Command::new("bash")
            .arg(&self.script)
            .arg(command)
            .arg(&self.dir)
            .env_remove("KUBE_APISERVER_EXTRA_ARGS")
            .output()
            .await
            .map_err(|e| ChaosError::io(format!("running control-plane.sh {command}"), e))?;
        if !output.status.success() {
            return Err(ChaosError::Command {
                command: format!("control-plane.sh {command}"),
                detail: format!("{}: {}", output.status, tail(&output.stderr)),
            });
        }
        Ok(started.elapsed())
    }

    /// Compacts etcd at its current revision (physically), through etcd's HTTP gateway;
    /// returns the revision.
    pub async fn compact_etcd(&self) -> Result<i64, ChaosError> {
        let range = curl_json(&format!("{}/v3/kv/range", self.etcd), r#"{"key":"AA=="}"#).await?;
        let revision: i64 = range["header"]["revision"]
            .as_str()
            .and_then(|r| r.parse().ok())
            .ok_or_else(|| ChaosError::Command {
                command: "etcd range".into(),
                detail: format!("no header.revision in {range}"),
            })?;
        let body = format!(r#"{{"revision":"{revision}","physical":true}}"#);
        curl_json(&format!("{}/v3/kv/compaction", self.etcd), &body).await?;
        Ok(revision)
    }

    /// The control-plane components whose process is gone (read from `DIR/pids`); none
    /// while a restart is replacing one (its old pid is gone before the new one is
    /// written: a CI run reported kube-apiserver dead from that window). A component a
    /// restart fails to bring back is reported by the next call after it.
    pub fn dead_components(&self) -> Vec<String> {
        let Ok(_settled) = self.restarting.try_lock() else {
            return Vec::new();
        };
        let Ok(entries) = std::fs::read_dir(self.dir.join("pids")) else {
            return vec!["(no pids dir)".into()];
        };
        let mut dead = Vec::new();
        for entry in entries.flatten() {
            let name = entry
                .file_name()
                .to_string_lossy()
                .trim_end_matches(".pid")
                .to_string();
            let pid = std::fs::read_to_string(entry.path()).unwrap_or_default();
            if !crate::processes::alive(pid.trim().parse().unwrap_or(0)) {
                dead.push(name);
            }
        }
        dead
    }
}

async fn curl_json(url: &str, body: &str) -> Result<serde_json::Value, ChaosError> {
    let output = Command::new("curl")
        .args(["-sS", "--max-time", "10", "-X", "POST", url, "-d", body])
        .output()
        .await
        .map_err(|e| ChaosError::io("running curl", e))?;
    if !output.status.success() {
        return Err(ChaosError::Command {
            command: format!("curl {url}"),
            detail: tail(&output.stderr),
        });
    }
    serde_json::from_slice(&output.stdout).map_err(|e| ChaosError::Command {
        command: format!("curl {url}"),
        detail: format!("not JSON ({e}): {}", tail(&output.stdout)),
    })
}

/// The last 400 bytes of some output, as text.
pub fn tail(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let start = text.len().saturating_sub(400);
    let start = (start..text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    text[start..].trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pid that is not running: a child that has exited and been reaped.
    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    }

    #[tokio::test]
    async fn a_component_mid_restart_is_not_reported_dead_and_one_after_it_is() {
        let dir = std::env::temp_dir().join(format!("chaos-pids-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("pids")).unwrap();
        std::fs::write(dir.join("pids/kube-apiserver.pid"), dead_pid().to_string()).unwrap();
        std::fs::write(dir.join("pids/etcd.pid"), std::process::id().to_string()).unwrap();
        let plane = ControlPlane {
            dir: dir.clone(),
            script: PathBuf::from("hack/control-plane.sh"),
            kubeconfig: PathBuf::new(),
            etcd: String::new(),
            restarting: Arc::default(),
        };
        let replacing = plane.restarting.lock().await;
        assert_eq!(plane.dead_components(), Vec::<String>::new());
        drop(replacing);
        assert_eq!(plane.dead_components(), vec!["kube-apiserver".to_string()]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
