//! The controllers under test: several replicas of each binary with leader election
//! (or, sharded, all active in one shard group per binary, plus a spare member the
//! nemesis adds and removes), restarted when they exit (as a kubelet would),
//! SIGKILLed or SIGSTOPped by the nemesis, sampled for memory, and stopped with
//! SIGTERM at the end.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process};
use serde::Serialize;
use tokio::process::{Child, Command};
use tokio::sync::Mutex;
use tokio::time::Instant;

use crate::error::ChaosError;
pub use crate::net::{free_port, http_get};

/// One of the three controller binaries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Binary {
    /// `sample-controller` (Foo).
    SampleController,
    /// `vm-controller` (VirtualMachine, file driver).
    VmController,
    /// `myweb-operator` (MyWeb).
    MywebOperator,
}

impl Binary {
    /// Every binary.
    pub const ALL: [Binary; 3] = [
        Self::SampleController,
        Self::VmController,
        Self::MywebOperator,
    ];

    /// The executable's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::SampleController => "sample-controller",
            Self::VmController => "vm-controller",
            Self::MywebOperator => "myweb-operator",
        }
    }
}

/// How the replicas are started.
#[derive(Debug, Clone)]
pub struct FleetOptions {
    /// Where the binaries are (`target/debug`).
    pub bin_dir: PathBuf,
    /// The kubeconfig pointing at the proxy.
    pub kubeconfig: PathBuf,
    /// The namespace the controllers watch.
    pub namespace: String,
    /// The file driver's directory.
    pub vm_state_dir: PathBuf,
    /// Where each incarnation's log goes.
    pub log_dir: PathBuf,
    /// Replicas per binary.
    pub replicas: usize,
    /// Sharded (`--shard-group`, one group per binary) instead of leader election.
    pub sharded: bool,
}

/// How one incarnation of a replica ended.
#[derive(Debug, Clone, Serialize)]
pub struct ExitRecord {
    /// The binary.
    pub binary: Binary,
    /// Replica index.
    pub replica: usize,
    /// Incarnation (0 first).
    pub incarnation: u32,
    /// Exit code, if it exited.
    pub code: Option<i32>,
    /// Signal, if killed by one.
    pub signal: Option<i32>,
    /// The nemesis SIGKILLed it.
    pub killed_by_nemesis: bool,
    /// Its log says it lost leadership.
    pub lost_leadership: bool,
    /// Seconds since the soak started.
    pub at_s: f64,
}

/// One replica slot: the current incarnation.
#[derive(Debug)]
struct Replica {
    binary: Binary,
    index: usize,
    metrics_port: u16,
    health_port: u16,
    incarnation: u32,
    child: Option<Child>,
    pid: u32,
    killed: bool,
    stopped: bool,
    /// Removed by the nemesis (SIGTERM): not restarted when it exits.
    retired: bool,
}

/// Every replica of every binary. See the [module docs](self).
#[derive(Debug)]
pub struct Fleet {
    options: FleetOptions,
    replicas: Vec<Mutex<Replica>>,
    exits: std::sync::Mutex<Vec<ExitRecord>>,
    frozen: std::sync::Mutex<Vec<Frozen>>,
    started: Instant,
}

/// A resident-set sample of one live replica.
#[derive(Debug, Clone, Serialize)]
pub struct RssSample {
    /// The binary.
    pub binary: Binary,
    /// Seconds since the soak started.
    pub at_s: f64,
    /// VmRSS in KiB.
    pub rss_kib: u64,
}

impl Fleet {
    /// Starts `options.replicas` replicas of each binary.
    pub async fn start(options: FleetOptions) -> Result<Arc<Self>, ChaosError> {
        std::fs::create_dir_all(&options.log_dir)
            .map_err(|e| ChaosError::io("creating the log dir", e))?;
        let mut replicas = Vec::new();
        // Sharded: one more slot per binary, left empty: the member the nemesis adds.
        let slots = options.replicas + usize::from(options.sharded);
        for binary in Binary::ALL {
            for index in 0..slots {
                let mut replica = Replica {
                    binary,
                    index,
                    // Drawn at every spawn (see `spawn`).
                    metrics_port: 0,
                    health_port: 0,
                    incarnation: 0,
                    child: None,
                    pid: 0,
                    killed: false,
                    stopped: false,
                    retired: index >= options.replicas,
                };
                if !replica.retired {
                    spawn(&options, &mut replica)?;
                }
                replicas.push(Mutex::new(replica));
            }
        }
        Ok(Arc::new(Self {
            options,
            replicas,
            exits: std::sync::Mutex::new(Vec::new()),
            frozen: std::sync::Mutex::new(Vec::new()),
            started: Instant::now(),
        }))
    }

    /// Seconds since the fleet started.
    pub fn elapsed_s(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Restarts every replica that exited (after recording how); call periodically.
    pub async fn reap_and_restart(&self) -> Result<(), ChaosError> {
        for slot in &self.replicas {
            let mut replica = slot.lock().await;
            let status = match replica.child.as_mut().map(Child::try_wait) {
                Some(Ok(Some(status))) => status,
                _ => continue,
            };
            use std::os::unix::process::ExitStatusExt;
            let log = log_path(&self.options, &replica);
            let lost = std::fs::read_to_string(&log)
                .map(|text| text.contains("leader election lost"))
                .unwrap_or(false);
            let record = ExitRecord {
                binary: replica.binary,
                replica: replica.index,
                incarnation: replica.incarnation,
                code: status.code(),
                signal: status.signal(),
                killed_by_nemesis: replica.killed,
                lost_leadership: lost,
                at_s: self.elapsed_s(),
            };
            self.exits.lock().expect("not poisoned").push(record);
            replica.incarnation += 1;
            if replica.retired {
                tracing::info!(binary = replica.binary.name(), "the added member left");
                replica.child = None;
                replica.pid = 0;
                continue;
            }
            tracing::info!(
                binary = replica.binary.name(),
                replica = replica.index,
                "replica exited; restarting it"
            );
            spawn(&self.options, &mut replica)?;
        }
        Ok(())
    }

    /// Which replicas of `binary` work: the one that says it leads (its
    /// `leader_election_master_status` gauge is 1), or, sharded, every member that
    /// holds a range (`sharding_held_fraction` above 0). Replicas that do not answer
    /// within a second do not count.
    pub async fn leaders(&self, binary: Binary) -> Vec<usize> {
        let working = |line: &str| {
            if self.options.sharded {
                line.starts_with("sharding_held_fraction{")
                    && line
                        .rsplit(' ')
                        .next()
                        .and_then(|v| v.parse::<f64>().ok())
                        .is_some_and(|v| v > 0.0)
            } else {
                line.starts_with("leader_election_master_status{") && line.ends_with(" 1")
            }
        };
        let mut leaders = Vec::new();
        for slot in &self.replicas {
            let (port, index) = {
                let replica = slot.lock().await;
                if replica.binary != binary || replica.stopped || replica.child.is_none() {
                    continue;
                }
                (replica.metrics_port, replica.index)
            };
            if let Some(text) = http_get(port, "/metrics").await
                && text.lines().any(working)
            {
                leaders.push(index);
            }
        }
        leaders
    }

    /// Sharded: starts the spare member of `binary` (a join); returns its slot and
    /// pid, or None if it is running already.
    pub async fn add_member(&self, binary: Binary) -> Result<Option<(usize, u32)>, ChaosError> {
        for slot in &self.replicas {
            let mut replica = slot.lock().await;
            if replica.binary == binary && replica.retired && replica.child.is_none() {
                replica.retired = false;
                spawn(&self.options, &mut replica)?;
                return Ok(Some((replica.index, replica.pid)));
            }
        }
        Ok(None)
    }

    /// Removes a member added by [`add_member`](Self::add_member): SIGTERM (a graceful
    /// leave); it is not restarted.
    pub async fn retire(&self, pid: u32) {
        for slot in &self.replicas {
            let mut replica = slot.lock().await;
            if replica.pid == pid {
                replica.retired = true;
                send_signal(pid, libc::SIGTERM);
            }
        }
    }

    /// Sends `signal` to the current leader of `binary`; returns its replica index
    /// and pid, or None when no replica leads.
    pub async fn signal_leader(&self, binary: Binary, signal: i32) -> Option<(usize, u32)> {
        let leader = *self.leaders(binary).await.first()?;
        let mut found = None;
        for slot in &self.replicas {
            let replica = slot.lock().await;
            if replica.binary == binary && replica.index == leader {
                drop(replica);
                found = Some(slot);
                break;
            }
        }
        let mut replica = found?.lock().await;
        match signal {
            libc::SIGKILL => {
                replica.killed = true;
                // A stopped process dies of SIGKILL too; it is no longer stopped.
                replica.stopped = false;
            }
            libc::SIGSTOP => {
                replica.stopped = true;
                self.frozen.lock().expect("not poisoned").push(Frozen {
                    log: log_path(&self.options, &replica),
                    pid: replica.pid,
                    from_us: wall_clock_us(),
                    until_us: None,
                });
            }
            libc::SIGCONT => replica.stopped = false,
            _ => {}
        }
        send_signal(replica.pid, signal);
        Some((leader, replica.pid))
    }

    /// Sends SIGCONT to a replica by pid (the end of a SIGSTOP fault).
    pub async fn resume(&self, pid: u32) {
        for slot in &self.replicas {
            let mut replica = slot.lock().await;
            if replica.pid == pid {
                replica.stopped = false;
                send_signal(pid, libc::SIGCONT);
                let now = wall_clock_us();
                let mut frozen = self.frozen.lock().expect("not poisoned");
                for window in frozen
                    .iter_mut()
                    .filter(|w| w.pid == pid && w.until_us.is_none())
                {
                    window.until_us = Some(now);
                }
            }
        }
    }

    /// The resident set of every live replica.
    pub async fn rss(&self) -> Vec<RssSample> {
        let mut samples = Vec::new();
        for slot in &self.replicas {
            let replica = slot.lock().await;
            if let Some(rss_kib) = rss_kib(replica.pid) {
                samples.push(RssSample {
                    binary: replica.binary,
                    at_s: self.elapsed_s(),
                    rss_kib,
                });
            }
        }
        samples
    }

    /// Every SIGSTOP window so far (open ones end now).
    pub fn frozen(&self) -> Vec<Frozen> {
        let now = wall_clock_us();
        let mut windows = self.frozen.lock().expect("not poisoned").clone();
        for window in &mut windows {
            window.until_us.get_or_insert(now);
        }
        windows
    }

    /// The exits recorded so far.
    pub fn exits(&self) -> Vec<ExitRecord> {
        self.exits.lock().expect("not poisoned").clone()
    }

    /// Every incarnation's log file.
    pub fn log_files(&self) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&self.options.log_dir)
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        files.sort();
        files
    }

    /// SIGCONT then SIGTERM to every replica; waits up to `grace` for each and returns
    /// how each ended (a replica still running after `grace` is SIGKILLed and reported
    /// with signal 9).
    pub async fn terminate(&self, grace: Duration) -> Vec<ExitRecord> {
        let mut records = Vec::new();
        for slot in &self.replicas {
            let replica = slot.lock().await;
            send_signal(replica.pid, libc::SIGCONT);
            send_signal(replica.pid, libc::SIGTERM);
        }
        for slot in &self.replicas {
            let mut replica = slot.lock().await;
            let Some(mut child) = replica.child.take() else {
                continue;
            };
            let status = match tokio::time::timeout(grace, child.wait()).await {
                Ok(Ok(status)) => Some(status),
                _ => {
                    let _ = child.kill().await;
                    None
                }
            };
            use std::os::unix::process::ExitStatusExt;
            records.push(ExitRecord {
                binary: replica.binary,
                replica: replica.index,
                incarnation: replica.incarnation,
                code: status.and_then(|s| s.code()),
                signal: status.map_or(Some(libc::SIGKILL), |s| s.signal()),
                killed_by_nemesis: false,
                lost_leadership: false,
                at_s: self.elapsed_s(),
            });
            replica.pid = 0;
        }
        records
    }
}

/// A replica incarnation stopped with SIGSTOP, from when until when (wall clock, µs
/// since the epoch: the replicas' log timestamps).
#[derive(Debug, Clone)]
pub struct Frozen {
    /// The incarnation's log file.
    pub log: PathBuf,
    /// Its pid.
    pub pid: u32,
    /// SIGSTOP.
    pub from_us: i64,
    /// SIGCONT (or SIGKILL; None while stopped).
    pub until_us: Option<i64>,
}

fn wall_clock_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

fn log_path(options: &FleetOptions, replica: &Replica) -> PathBuf {
    options.log_dir.join(format!(
        "{}-{}-{}.log",
        replica.binary.name(),
        replica.index,
        replica.incarnation
    ))
}

fn spawn(options: &FleetOptions, replica: &mut Replica) -> Result<(), ChaosError> {
    // New ports for every incarnation: a port is only known free when drawn, and a
    // replica that kept its ports across restarts could never recover from one that
    // another process took meanwhile (it would exit with "address already in use" at
    // every restart, two seconds apart, for the rest of the soak).
    replica.metrics_port = free_port()?;
    replica.health_port = free_port()?;
    let log = log_path(options, replica);
    let file = std::fs::File::create(&log).map_err(|e| ChaosError::io("creating a log", e))?;
    let err = file
        .try_clone()
        .map_err(|e| ChaosError::io("cloning a log", e))?;
    let mut command = Command::new(options.bin_dir.join(replica.binary.name()));
    command.arg("--kubeconfig").arg(&options.kubeconfig);
    if options.sharded {
        command
            .args([
                "--shard-group",
                replica.binary.name(),
                "--shard-lease-namespace",
            ])
            .arg(&options.namespace)
            .args(["--shard-lease-duration", "8s"])
            .args(["--shard-renew-deadline", "6s"])
            .args(["--shard-retry-period", "1s"]);
    } else {
        command
            .args(["--leader-elect", "--leader-elect-resource-namespace"])
            .arg(&options.namespace)
            .args(["--leader-elect-lease-duration", "8s"])
            .args(["--leader-elect-renew-deadline", "6s"])
            .args(["--leader-elect-retry-period", "1s"]);
    }
    command
        .arg("--namespace")
        .arg(&options.namespace)
        // Plain HTTP: the soak reads /metrics without a token (net.rs).
        .arg("--metrics-secure=false")
        .arg("--metrics-bind-address")
        .arg(format!("127.0.0.1:{}", replica.metrics_port))
        .arg("--health-probe-bind-address")
        .arg(format!("127.0.0.1:{}", replica.health_port))
        .args(["--log-format", "json"])
        .env("RUST_LOG", "info,controller::controller=debug")
        .env_remove("KUBECONFIG")
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(err)
        .kill_on_drop(true);
    if replica.binary == Binary::VmController {
        command
            .args([
                "--vm-driver",
                "file",
                "--usage-period",
                "10s",
                "--state-dir",
            ])
            .arg(&options.vm_state_dir);
    }
    let child = command
        .spawn()
        .map_err(|e| ChaosError::io(format!("starting {}", replica.binary.name()), e))?;
    replica.pid = child.id().unwrap_or(0);
    replica.child = Some(child);
    replica.killed = false;
    replica.stopped = false;
    Ok(())
}

fn send_signal(pid: u32, signal: i32) {
    if let Ok(pid) = i32::try_from(pid)
        && pid > 0
    {
        // A pid of a child we started; a failure (it is gone) changes nothing.
        if let (Some(pid), Some(signal)) = (Pid::from_raw(pid), Signal::from_named_raw(signal)) {
            let _ = kill_process(pid, signal);
        }
    }
}

/// The process exists and is not a zombie.
pub fn alive(pid: u32) -> bool {
    if pid == 0 {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z')),
        Err(_) => false,
    }
}

fn rss_kib(pid: u32) -> Option<u64> {
    if pid == 0 {
        return None;
    }
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Whether `path` exists (used for the binaries).
pub fn binaries_present(bin_dir: &Path) -> Result<(), ChaosError> {
    for binary in Binary::ALL {
        let path = bin_dir.join(binary.name());
        if !path.is_file() {
            return Err(ChaosError::Setup(format!(
                "{} missing (cargo build -p sample-controller-bin -p vm-controller-bin -p myweb-operator-bin)",
                path.display()
            )));
        }
    }
    Ok(())
}
