//! A [`Driver`] whose servers are files in a directory: the [`FakeDriver`](crate::FakeDriver)'s
//! behaviour (instant, always `Running`, no hypervisor), but **shared by every process**
//! pointed at the same directory, with **failure injection** switched on and off from
//! outside the process.
//!
//! The chaos soak (`crates/tools/chaos`) runs several replicas of `vm-controller` with
//! leader election. With the in-memory fake each replica would have its own servers, so
//! a new leader would recreate every server and nobody could count leaks or duplicates.
//! Here the servers outlive the process that made them, like a cloud's:
//!
//! ```text
//! DIR/servers/<name>.json   one file per server: {"id", "spec", "pid", "created_ms"}
//! DIR/journal               one JSON line per create or delete that really happened
//! DIR/faults.json           optional: {"fail_rate": 0.2, "lose_rate": 0.05}
//! ```
//!
//! * `create_server` makes the file with `O_CREAT | O_EXCL` (written to a temporary
//!   file first, then hard-linked into place), so two processes creating the same
//!   name at once end up with **one** server and both get its id.
//! * Every real create and delete appends a line to the journal (`O_APPEND`, one
//!   `write` per line), which a checker reads to count how often each name was
//!   created: more creates than the VirtualMachine was created is a duplicate.
//! * `faults.json` is read on every call (a missing file means no faults):
//!   `fail_rate` is the probability that a call fails with
//!   [`DriverError::Injected`] before doing anything, `lose_rate` the probability that
//!   it does its work and then fails (a lost response).
//!
//! Usage is always zero; the state is `Running` while the file exists.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use futures::FutureExt;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

use crate::driver::{Driver, Operation, ServerId, ServerSpec, ServerState, ServerStatus};
use crate::error::DriverError;
use crate::name::validate_name;

/// One server of a [`FileDriver`]: the content of `DIR/servers/<name>.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileServer {
    /// Its id (a random UUID).
    pub id: ServerId,
    /// The spec it was created with.
    pub spec: ServerSpec,
    /// The process that created it.
    pub pid: u32,
    /// When it was created, milliseconds since the Unix epoch.
    pub created_ms: u64,
}

/// One line of `DIR/journal`: a create or delete that really happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournalEntry {
    /// `create` or `delete`.
    pub op: String,
    /// The server's name.
    pub name: String,
    /// The server's id.
    pub id: ServerId,
    /// The process that did it.
    pub pid: u32,
    /// When, milliseconds since the Unix epoch.
    pub at_ms: u64,
}

/// The content of `DIR/faults.json`: probabilities between 0 and 1.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct FileFaults {
    /// A call fails without doing anything.
    #[serde(default)]
    pub fail_rate: f64,
    /// A call does its work, then fails (the response was lost).
    #[serde(default)]
    pub lose_rate: f64,
}

/// A [`Driver`] on a directory shared between processes. See the [module docs](self).
#[derive(Debug, Clone)]
pub struct FileDriver {
    dir: PathBuf,
}

impl FileDriver {
    /// A driver on `dir`, creating `dir/servers` if needed.
    pub fn new(dir: impl Into<PathBuf>) -> Result<Self, DriverError> {
        let dir = dir.into();
        let servers = dir.join("servers");
        fs::create_dir_all(&servers).map_err(|e| DriverError::io("creating", &servers, e))?;
        Ok(Self { dir })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes `DIR/faults.json` (atomically: a temporary file renamed into place), which
    /// every process on the directory reads on its next call.
    pub fn set_faults(&self, faults: FileFaults) -> Result<(), DriverError> {
        let path = self.dir.join("faults.json");
        let tmp = self.dir.join(format!(".faults.{}.tmp", std::process::id()));
        let json = serde_json::to_vec(&faults).expect("two floats serialize");
        fs::write(&tmp, json).map_err(|e| DriverError::io("writing", &tmp, e))?;
        fs::rename(&tmp, &path).map_err(|e| DriverError::io("renaming", &path, e))
    }

    /// The faults in effect (none when `faults.json` is missing or unreadable).
    pub fn faults(&self) -> FileFaults {
        fs::read(self.dir.join("faults.json"))
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    /// Every server, ordered by name.
    pub fn servers(&self) -> Result<Vec<FileServer>, DriverError> {
        let dir = self.dir.join("servers");
        let entries = fs::read_dir(&dir).map_err(|e| DriverError::io("listing", &dir, e))?;
        let mut servers = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| DriverError::io("listing", &dir, e))?;
            let file_name = entry.file_name();
            let Some(name) = file_name.to_str().and_then(|n| n.strip_suffix(".json")) else {
                continue;
            };
            if let Some(server) = self.read_server(name)? {
                servers.push(server);
            }
        }
        servers.sort_by(|a, b| a.spec.name.cmp(&b.spec.name));
        Ok(servers)
    }

    /// Every journal line, oldest first (lines that do not parse are skipped).
    pub fn journal(&self) -> Result<Vec<JournalEntry>, DriverError> {
        let path = self.dir.join("journal");
        match fs::read_to_string(&path) {
            Ok(text) => Ok(text
                .lines()
                .filter_map(|line| serde_json::from_str(line).ok())
                .collect()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(DriverError::io("reading", &path, e)),
        }
    }

    fn server_path(&self, name: &str) -> PathBuf {
        self.dir.join("servers").join(format!("{name}.json"))
    }

    fn read_server(&self, name: &str) -> Result<Option<FileServer>, DriverError> {
        let path = self.server_path(name);
        match fs::read(&path) {
            Ok(bytes) => {
                serde_json::from_slice(&bytes)
                    .map(Some)
                    .map_err(|e| DriverError::CorruptState {
                        name: name.to_owned(),
                        detail: e.to_string(),
                    })
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(DriverError::io("reading", &path, e)),
        }
    }

    fn append_journal(&self, op: &str, name: &str, id: &ServerId) -> Result<(), DriverError> {
        let entry = JournalEntry {
            op: op.to_owned(),
            name: name.to_owned(),
            id: id.clone(),
            pid: std::process::id(),
            at_ms: now_ms(),
        };
        let mut line = serde_json::to_vec(&entry).expect("strings and numbers serialize");
        line.push(b'\n');
        let path = self.dir.join("journal");
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut file| file.write_all(&line))
            .map_err(|e| DriverError::io("appending to", &path, e))
    }

    /// Decides the injected fault of one call from `faults.json`.
    fn fault(&self) -> Fault {
        let faults = self.faults();
        if faults.fail_rate > 0.0 && rand::random::<f64>() < faults.fail_rate {
            Fault::Before
        } else if faults.lose_rate > 0.0 && rand::random::<f64>() < faults.lose_rate {
            Fault::After
        } else {
            Fault::None
        }
    }

    fn call<T>(
        &self,
        operation: Operation,
        name: &str,
        work: impl FnOnce() -> Result<T, DriverError>,
    ) -> Result<T, DriverError> {
        let fault = self.fault();
        if fault == Fault::Before {
            return Err(DriverError::Injected { operation });
        }
        validate_name(name)?;
        let result = work();
        match fault {
            Fault::After => Err(DriverError::Injected { operation }),
            _ => result,
        }
    }

    fn create(&self, spec: &ServerSpec) -> Result<ServerId, DriverError> {
        spec.validate()?;
        if let Some(server) = self.read_server(&spec.name)? {
            return Ok(server.id);
        }
        let server = FileServer {
            id: ServerId(uuid::Uuid::new_v4().to_string()),
            spec: spec.clone(),
            pid: std::process::id(),
            created_ms: now_ms(),
        };
        let path = self.server_path(&spec.name);
        let tmp =
            self.dir
                .join("servers")
                .join(format!(".{}.{}.tmp", spec.name, uuid::Uuid::new_v4()));
        let json = serde_json::to_vec(&server).expect("strings and numbers serialize");
        fs::write(&tmp, json).map_err(|e| DriverError::io("writing", &tmp, e))?;
        // link(2) fails if the target exists: exactly one process creates the server.
        let linked = fs::hard_link(&tmp, &path);
        let _ = fs::remove_file(&tmp);
        match linked {
            Ok(()) => {
                self.append_journal("create", &spec.name, &server.id)?;
                Ok(server.id)
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => self
                .read_server(&spec.name)?
                .map(|s| s.id)
                .ok_or_else(|| DriverError::CorruptState {
                    name: spec.name.clone(),
                    detail: "created by another process and deleted at once".into(),
                }),
            Err(e) => Err(DriverError::io("linking", &path, e)),
        }
    }

    fn delete(&self, name: &str) -> Result<(), DriverError> {
        let Some(server) = self.read_server(name)? else {
            return Ok(());
        };
        let path = self.server_path(name);
        match fs::remove_file(&path) {
            Ok(()) => self.append_journal("delete", name, &server.id),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(DriverError::io("removing", &path, e)),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    None,
    Before,
    After,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

impl Driver for FileDriver {
    fn create_server<'a>(
        &'a self,
        spec: &'a ServerSpec,
    ) -> BoxFuture<'a, Result<ServerId, DriverError>> {
        async move { self.call(Operation::Create, &spec.name, || self.create(spec)) }.boxed()
    }

    fn delete_server<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<(), DriverError>> {
        async move { self.call(Operation::Delete, name, || self.delete(name)) }.boxed()
    }

    fn server_exists<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<bool, DriverError>> {
        async move {
            self.call(Operation::Exists, name, || {
                Ok(self.read_server(name)?.is_some())
            })
        }
        .boxed()
    }

    fn server_status<'a>(
        &'a self,
        name: &'a str,
    ) -> BoxFuture<'a, Result<ServerStatus, DriverError>> {
        async move {
            self.call(Operation::Status, name, || {
                match self.read_server(name)? {
                    Some(_) => Ok(ServerStatus {
                        state: ServerState::Running,
                        cpu_percent: 0.0,
                        memory_percent: 0.0,
                    }),
                    None => Err(DriverError::NotFound {
                        name: name.to_owned(),
                    }),
                }
            })
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "vm-driver-file-{tag}-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4()
        ));
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[tokio::test]
    async fn two_drivers_on_one_directory_share_servers_and_journal() {
        let dir = temp_dir("share");
        let a = FileDriver::new(&dir).unwrap();
        let b = FileDriver::new(&dir).unwrap();
        let spec = ServerSpec::new("ns.vm-1", 1, 64 << 20, 1 << 30);
        let id = a.create_server(&spec).await.unwrap();
        // The other "process" sees it, and creating it again returns the same id.
        assert!(b.server_exists("ns.vm-1").await.unwrap());
        assert_eq!(b.create_server(&spec).await.unwrap(), id);
        assert_eq!(
            b.server_status("ns.vm-1").await.unwrap().state,
            ServerState::Running
        );
        assert_eq!(a.servers().unwrap().len(), 1);
        b.delete_server("ns.vm-1").await.unwrap();
        a.delete_server("ns.vm-1").await.unwrap(); // already gone: Ok
        assert!(!a.server_exists("ns.vm-1").await.unwrap());
        assert!(a.server_status("ns.vm-1").await.unwrap_err().is_not_found());
        let ops: Vec<_> = a.journal().unwrap().into_iter().map(|e| e.op).collect();
        assert_eq!(ops, ["create", "delete"]);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn concurrent_creates_of_one_name_make_one_server() {
        let dir = temp_dir("race");
        let spec = ServerSpec::new("ns.vm-race", 1, 64 << 20, 1 << 30);
        let mut threads = Vec::new();
        for _ in 0..8 {
            let (dir, spec) = (dir.clone(), spec.clone());
            threads.push(std::thread::spawn(move || {
                let driver = FileDriver::new(dir).unwrap();
                driver.create(&spec).unwrap()
            }));
        }
        let ids: Vec<ServerId> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");
        let driver = FileDriver::new(&dir).unwrap();
        assert_eq!(driver.journal().unwrap().len(), 1);
        assert_eq!(driver.servers().unwrap().len(), 1);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn faults_file_fails_or_loses_calls_until_cleared() {
        let dir = temp_dir("faults");
        let driver = FileDriver::new(&dir).unwrap();
        let spec = ServerSpec::new("ns.vm-f", 1, 64 << 20, 1 << 30);
        driver
            .set_faults(FileFaults {
                fail_rate: 1.0,
                lose_rate: 0.0,
            })
            .unwrap();
        let err = driver.create_server(&spec).await.unwrap_err();
        assert!(matches!(err, DriverError::Injected { .. }), "{err}");
        assert!(
            driver.servers().unwrap().is_empty(),
            "failed before the work"
        );
        driver
            .set_faults(FileFaults {
                fail_rate: 0.0,
                lose_rate: 1.0,
            })
            .unwrap();
        assert!(driver.create_server(&spec).await.is_err());
        assert_eq!(driver.servers().unwrap().len(), 1, "lost after the work");
        driver.set_faults(FileFaults::default()).unwrap();
        let id = driver.create_server(&spec).await.unwrap();
        assert_eq!(driver.servers().unwrap()[0].id, id);
        assert_eq!(driver.journal().unwrap().len(), 1);
        fs::remove_dir_all(&dir).unwrap();
    }
}
