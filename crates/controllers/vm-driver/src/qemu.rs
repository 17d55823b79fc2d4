//! A real local hypervisor: every server is a QEMU process, driven through QMP.
//!
//! # Life of a server
//!
//! * **create**: write `server.json` (a new UUID and the spec) into
//!   `<state_dir>/<name>/`, `qemu-img create` the qcow2 root disk, start
//!   `qemu-system-x86_64 -daemonize` (KVM when `/dev/kvm` is usable, else TCG; no
//!   display, no network, no default devices; `-m`/`-smp` from the spec; a QMP socket
//!   and a pidfile in the server's directory), then confirm with QMP `query-status`.
//!   Each step is skipped when already done, so a create that failed half way is
//!   finished by the next one, with the same id.
//! * **status**: QMP `query-status` for the run state; usage from `/proc` (below).
//! * **delete**: QMP `quit`, wait for the process to exit, `SIGKILL` it if it has not
//!   within the stop timeout, then remove the directory, disk included.
//!
//! # Re-adoption after a controller restart
//!
//! The driver keeps nothing in memory: everything is in the state directory, and VMs
//! are daemonized (not children of the controller). A new `QemuDriver` on the same
//! directory therefore sees every server the old one made: `server.json` says it
//! exists and what its id is; `qemu.pid` says which process runs it, **verified**
//! against `/proc/<pid>/cmdline` (it must carry this server's `-drive` and `-uuid`),
//! so a pid reused by another process after a crash is never mistaken for, or killed
//! as, our VM. No orphans (delete finds the process), no duplicates (create finds the
//! record). A server whose QEMU died (host reboot, OOM kill) still *exists*, reports
//! [`ServerState::Shutdown`], is started again by create (same id, same disk) and
//! cleaned up by delete.
//!
//! # Usage numbers
//!
//! * `cpu_percent`: utime + stime of the QEMU process (`/proc/<pid>/stat`) over a
//!   short interval (default 250 ms, [`QemuDriver::with_usage_interval`]), divided by
//!   the wall time **and by the requested vCPUs**: 100 means every vCPU busy. It is
//!   the whole process, so emulation overhead (TCG, I/O threads) can exceed 100.
//! * `memory_percent`: the process's resident memory (`VmRSS` in
//!   `/proc/<pid>/status`) over the memory given to the guest. Guest RAM is only
//!   resident once touched, and QEMU itself needs some tens of MiB, so an idle tiny
//!   VM may show more than 100 and a big idle one very little.
//!
//! # Concurrency
//!
//! Calls for the same name are serialised by a per-name async lock inside one
//! driver; different names run in parallel. Two *processes* driving the same state
//! directory at once is not supported (one controller owns it, leader election
//! ensures that).

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::future::BoxFuture;
use parking_lot::Mutex;

use crate::driver::{Driver, ServerId, ServerSpec, ServerState, ServerStatus};
use crate::error::DriverError;
use crate::name::validate_name;
use crate::procfs;
use crate::qmp::QmpClient;

mod launch;
mod server_dir;

use server_dir::{ServerDir, ServerRecord, new_uuid};

/// Default for [`QemuDriver::with_usage_interval`].
pub const DEFAULT_USAGE_INTERVAL: Duration = Duration::from_millis(250);
/// Default for [`QemuDriver::with_stop_timeout`].
pub const DEFAULT_STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// Default for [`QemuDriver::with_qmp_timeout`].
pub const DEFAULT_QMP_TIMEOUT: Duration = Duration::from_secs(10);
/// How long `qemu-img` and QEMU's start-up (until daemonized) may take.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a SIGKILLed process may take to disappear.
const KILL_TIMEOUT: Duration = Duration::from_secs(10);
/// How often to look whether a process has exited.
const EXIT_POLL: Duration = Duration::from_millis(50);

/// A [`Driver`] running each server as a local QEMU process. See the
/// [module docs](self) for the life of a server, re-adoption and usage numbers.
#[derive(Debug)]
pub struct QemuDriver {
    state_dir: PathBuf,
    qemu_system: PathBuf,
    qemu_img: PathBuf,
    kvm: bool,
    usage_interval: Duration,
    stop_timeout: Duration,
    qmp_timeout: Duration,
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl QemuDriver {
    /// A driver keeping its servers under `state_dir` (created if missing; must be
    /// UTF-8). Finds the servers a previous driver left there. Uses
    /// `qemu-system-x86_64` and `qemu-img` from `PATH`, and KVM if `/dev/kvm` is
    /// usable.
    pub fn new(state_dir: impl Into<PathBuf>) -> Result<Self, DriverError> {
        let state_dir = state_dir.into();
        fs::create_dir_all(&state_dir)
            .map_err(|e| DriverError::io("creating state directory", &state_dir, e))?;
        let state_dir = fs::canonicalize(&state_dir)
            .map_err(|e| DriverError::io("resolving state directory", &state_dir, e))?;
        if state_dir.to_str().is_none() {
            return Err(DriverError::Io {
                action: "using state directory",
                path: state_dir,
                source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "not UTF-8"),
            });
        }
        Ok(Self {
            state_dir,
            qemu_system: "qemu-system-x86_64".into(),
            qemu_img: "qemu-img".into(),
            kvm: launch::kvm_usable(),
            usage_interval: DEFAULT_USAGE_INTERVAL,
            stop_timeout: DEFAULT_STOP_TIMEOUT,
            qmp_timeout: DEFAULT_QMP_TIMEOUT,
            locks: Mutex::default(),
        })
    }

    /// Uses these binaries instead of the ones on `PATH`.
    pub fn with_binaries(
        mut self,
        qemu_system: impl Into<PathBuf>,
        qemu_img: impl Into<PathBuf>,
    ) -> Self {
        self.qemu_system = qemu_system.into();
        self.qemu_img = qemu_img.into();
        self
    }

    /// `false` forces TCG (software emulation) even when KVM is usable.
    pub fn with_kvm(mut self, kvm: bool) -> Self {
        self.kvm = kvm && launch::kvm_usable();
        self
    }

    /// The interval CPU usage is measured over (each status call takes this long).
    pub fn with_usage_interval(mut self, interval: Duration) -> Self {
        self.usage_interval = interval;
        self
    }

    /// How long delete waits for QEMU to exit after QMP `quit` before `SIGKILL`.
    pub fn with_stop_timeout(mut self, timeout: Duration) -> Self {
        self.stop_timeout = timeout;
        self
    }

    /// The timeout of each QMP step (connect, greeting, each command). A QEMU that
    /// does not answer in time fails status calls; delete goes on to `SIGKILL`.
    pub fn with_qmp_timeout(mut self, timeout: Duration) -> Self {
        self.qmp_timeout = timeout;
        self
    }

    /// The (absolute) state directory.
    pub fn state_dir(&self) -> &Path {
        &self.state_dir
    }

    /// Whether new VMs get KVM (else TCG).
    pub fn uses_kvm(&self) -> bool {
        self.kvm
    }

    /// Checks that both QEMU binaries run; the error points at `hack/install-qemu.sh`.
    pub async fn check_binaries(&self) -> Result<(), DriverError> {
        launch::check_binary(&self.qemu_system, START_TIMEOUT).await?;
        launch::check_binary(&self.qemu_img, START_TIMEOUT).await
    }

    /// The names of every server in the state directory (running or not), sorted:
    /// what a controller compares with its objects to find orphans.
    pub fn server_names(&self) -> Result<Vec<String>, DriverError> {
        let entries = fs::read_dir(&self.state_dir)
            .map_err(|e| DriverError::io("listing", &self.state_dir, e))?;
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .filter_map(|entry| entry.file_name().into_string().ok())
            .filter(|name| validate_name(name).is_ok())
            .filter(|name| ServerDir::new(&self.state_dir, name).record_path().exists())
            .collect();
        names.sort();
        Ok(names)
    }

    /// The pid of a server's QEMU, if it is running (verified, see the module docs).
    pub fn server_pid(&self, name: &str) -> Result<Option<u32>, DriverError> {
        validate_name(name)?;
        let dir = ServerDir::new(&self.state_dir, name);
        let id = dir.read_record()?.map(|record| record.id);
        Ok(dir.running_pid(id.as_ref()).map(|pid| pid as u32))
    }

    /// The per-name lock; forgets locks nobody holds.
    fn lock_for(&self, name: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.locks.lock();
        locks.retain(|_, lock| Arc::strong_count(lock) > 1);
        locks.entry(name.to_owned()).or_default().clone()
    }

    async fn create(&self, spec: &ServerSpec) -> Result<ServerId, DriverError> {
        spec.validate()?;
        let dir = ServerDir::new(&self.state_dir, &spec.name);
        dir.check_socket_path()?;
        let lock = self.lock_for(&spec.name);
        let _guard = lock.lock().await;

        let record = match dir.read_record()? {
            Some(record) => {
                if record.spec != *spec {
                    tracing::warn!(server = %spec.name, existing = ?record.spec, requested = ?spec,
                        "server exists with another spec; it is not resized");
                }
                record
            }
            None => {
                // A directory without a record is debris of a create that died before
                // its first step completed: nothing in it is worth keeping. (A QEMU
                // cannot run without a record unless someone removed the file by hand;
                // stop it anyway rather than orphan it.)
                if let Some(pid) = dir.running_pid(None) {
                    self.stop(&dir, None, pid).await?;
                }
                dir.remove()?;
                let record = ServerRecord {
                    id: ServerId(new_uuid()),
                    spec: spec.clone(),
                };
                dir.write_record(&record)?;
                record
            }
        };
        if dir.running_pid(Some(&record.id)).is_some() {
            return Ok(record.id);
        }
        // A QEMU that just died may still be exiting and hold the disk's lock.
        wait_until_exited(&dir).await;
        if !dir.disk_path().exists() {
            launch::create_disk(
                &self.qemu_img,
                &dir,
                record.spec.root_disk_bytes,
                START_TIMEOUT,
            )
            .await?;
        }
        let pid =
            launch::start_qemu(&self.qemu_system, &dir, &record, self.kvm, START_TIMEOUT).await?;
        let state = self.query_state(&dir).await?;
        tracing::info!(server = %spec.name, id = %record.id, pid, %state, "server started");
        Ok(record.id)
    }

    async fn delete(&self, name: &str) -> Result<(), DriverError> {
        validate_name(name)?;
        let dir = ServerDir::new(&self.state_dir, name);
        let lock = self.lock_for(name);
        let _guard = lock.lock().await;
        if !dir.dir.exists() {
            return Ok(());
        }
        // A corrupt record must not make the server undeletable: without the id the
        // process is recognised by its disk path alone.
        let id = dir.read_record().ok().flatten().map(|record| record.id);
        if let Some(pid) = dir.running_pid(id.as_ref()) {
            self.stop(&dir, id.as_ref(), pid).await?;
        }
        dir.remove()?;
        tracing::info!(server = %name, "server deleted");
        Ok(())
    }

    /// QMP `quit`, then wait; SIGKILL if it does not exit within the stop timeout.
    async fn stop(
        &self,
        dir: &ServerDir,
        id: Option<&ServerId>,
        pid: i32,
    ) -> Result<(), DriverError> {
        let quit = async {
            QmpClient::connect(&dir.qmp_socket_path(), self.qmp_timeout)
                .await?
                .quit()
                .await
        };
        if let Err(error) = quit.await {
            tracing::warn!(server = %dir.name, pid, %error, "QMP quit failed; waiting, then SIGKILL");
        }
        if self.wait_for_exit(dir, id, self.stop_timeout).await {
            return Ok(());
        }
        tracing::warn!(server = %dir.name, pid, timeout = ?self.stop_timeout, "QEMU did not quit; SIGKILL");
        if let Err(error) = procfs::kill(pid) {
            tracing::warn!(server = %dir.name, pid, %error, "SIGKILL failed");
        }
        if self.wait_for_exit(dir, id, KILL_TIMEOUT).await {
            return Ok(());
        }
        Err(DriverError::Process {
            program: self.qemu_system.display().to_string(),
            detail: format!(
                "server {:?}: pid {pid} still running after SIGKILL",
                dir.name
            ),
        })
    }

    /// Polls until the server's process is gone; false on timeout.
    async fn wait_for_exit(
        &self,
        dir: &ServerDir,
        id: Option<&ServerId>,
        timeout: Duration,
    ) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if dir.running_pid(id).is_none() {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(EXIT_POLL).await;
        }
    }

    async fn query_state(&self, dir: &ServerDir) -> Result<ServerState, DriverError> {
        let qmp_error = |source| DriverError::Qmp {
            name: dir.name.clone(),
            source,
        };
        let mut client = QmpClient::connect(&dir.qmp_socket_path(), self.qmp_timeout)
            .await
            .map_err(qmp_error)?;
        let status = client.query_status().await.map_err(qmp_error)?;
        Ok(ServerState::from_qemu_status(&status))
    }

    async fn exists(&self, name: &str) -> Result<bool, DriverError> {
        validate_name(name)?;
        Ok(ServerDir::new(&self.state_dir, name)
            .read_record()?
            .is_some())
    }

    async fn status(&self, name: &str) -> Result<ServerStatus, DriverError> {
        validate_name(name)?;
        let dir = ServerDir::new(&self.state_dir, name);
        let record = dir.read_record()?.ok_or_else(|| DriverError::NotFound {
            name: name.to_owned(),
        })?;
        let stopped = ServerStatus {
            state: ServerState::Shutdown,
            cpu_percent: 0.0,
            memory_percent: 0.0,
        };
        let Some(pid) = dir.running_pid(Some(&record.id)) else {
            return Ok(stopped);
        };
        let state = match self.query_state(&dir).await {
            Ok(state) => state,
            // It exited between the pid check and the QMP call.
            Err(_) if dir.running_pid(Some(&record.id)).is_none() => return Ok(stopped),
            Err(e) => return Err(e),
        };
        let Some((cpu_percent, memory_percent)) = self.usage(pid, &record.spec).await else {
            return Ok(stopped);
        };
        Ok(ServerStatus {
            state,
            cpu_percent,
            memory_percent,
        })
    }

    /// (cpu percent per requested vCPU, memory percent of requested memory), or
    /// `None` if the process vanished meanwhile.
    async fn usage(&self, pid: i32, spec: &ServerSpec) -> Option<(f64, f64)> {
        let ticks_before = procfs::cpu_ticks(pid)?;
        let started = Instant::now();
        tokio::time::sleep(self.usage_interval).await;
        let ticks_after = procfs::cpu_ticks(pid)?;
        let wall = started.elapsed().as_secs_f64();
        let rss = procfs::rss_bytes(pid)?;
        let cpu_seconds = ticks_after.saturating_sub(ticks_before) as f64
            / procfs::clock_ticks_per_second() as f64;
        let cpu_percent = if wall > 0.0 {
            cpu_seconds / wall / f64::from(spec.cpus) * 100.0
        } else {
            0.0
        };
        let memory_percent = rss as f64 / (spec.memory_mib() << 20) as f64 * 100.0;
        Some((cpu_percent, memory_percent))
    }
}

/// Waits (at most [`KILL_TIMEOUT`]) while the QEMU the pidfile names is still exiting
/// (see [`procfs::is_exiting_qemu`]), so the next one can take the disk's lock.
async fn wait_until_exited(dir: &ServerDir) {
    let Some(pid) = procfs::read_pidfile(&dir.pidfile_path()) else {
        return;
    };
    let deadline = tokio::time::Instant::now() + KILL_TIMEOUT;
    while procfs::is_exiting_qemu(pid) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

impl Driver for QemuDriver {
    fn create_server<'a>(
        &'a self,
        spec: &'a ServerSpec,
    ) -> BoxFuture<'a, Result<ServerId, DriverError>> {
        self.create(spec).boxed()
    }

    fn delete_server<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<(), DriverError>> {
        self.delete(name).boxed()
    }

    fn server_exists<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<bool, DriverError>> {
        self.exists(name).boxed()
    }

    fn server_status<'a>(
        &'a self,
        name: &'a str,
    ) -> BoxFuture<'a, Result<ServerStatus, DriverError>> {
        self.status(name).boxed()
    }
}
