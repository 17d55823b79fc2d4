//! One server's state directory, `<state_dir>/<name>/`, and what is in it.
//!
//! ```text
//! <state_dir>/<name>/
//!   server.json   {"id": ..., "spec": {...}}: written first, atomically; its presence
//!                 is what "the server exists" means
//!   disk.qcow2    the root disk (created as disk.qcow2.tmp, then renamed)
//!   qemu.pid      written by QEMU (-pidfile)
//!   qmp.sock      QEMU's QMP socket
//!   qemu.log      QEMU's stdout and stderr
//! ```
//!
//! Everything the driver knows about a server is in this directory, nothing in
//! memory, which is what makes re-adoption after a controller restart trivial: a new
//! driver reads the same files.

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::driver::{ServerId, ServerSpec};
use crate::error::DriverError;
use crate::procfs;

/// The longest path a unix socket address can hold (`sun_path` is 108 bytes with
/// the terminating NUL).
const MAX_SOCKET_PATH: usize = 107;

/// What `server.json` holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ServerRecord {
    /// The stable id (a UUID, also given to QEMU as `-uuid`).
    pub id: ServerId,
    /// The spec the server was created with.
    pub spec: ServerSpec,
}

/// The paths of one server. The name has been validated by the caller.
#[derive(Debug, Clone)]
pub(crate) struct ServerDir {
    pub name: String,
    pub dir: PathBuf,
}

impl ServerDir {
    pub fn new(state_dir: &Path, name: &str) -> Self {
        Self {
            name: name.to_owned(),
            dir: state_dir.join(name),
        }
    }

    pub fn record_path(&self) -> PathBuf {
        self.dir.join("server.json")
    }

    pub fn disk_path(&self) -> PathBuf {
        self.dir.join("disk.qcow2")
    }

    pub fn pidfile_path(&self) -> PathBuf {
        self.dir.join("qemu.pid")
    }

    pub fn qmp_socket_path(&self) -> PathBuf {
        self.dir.join("qmp.sock")
    }

    pub fn log_path(&self) -> PathBuf {
        self.dir.join("qemu.log")
    }

    /// The `-drive` argument: it names the disk, so it also identifies our process
    /// in `/proc/<pid>/cmdline`. Commas in the path are doubled (QEMU's escaping).
    pub fn drive_arg(&self) -> String {
        let disk = self.disk_path().to_string_lossy().replace(',', ",,");
        format!("file={disk},if=virtio,format=qcow2")
    }

    /// Fails when the QMP socket path would not fit in a unix socket address.
    pub fn check_socket_path(&self) -> Result<(), DriverError> {
        let len = self.qmp_socket_path().as_os_str().len();
        if len > MAX_SOCKET_PATH {
            return Err(DriverError::InvalidSpec {
                name: self.name.clone(),
                reason: format!(
                    "QMP socket path is {len} bytes, more than the {MAX_SOCKET_PATH} a unix \
                     socket allows: use a shorter state directory or name"
                ),
            });
        }
        Ok(())
    }

    /// `server.json`, or `None` when the server does not exist.
    pub fn read_record(&self) -> Result<Option<ServerRecord>, DriverError> {
        let path = self.record_path();
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(DriverError::io("reading", path, e)),
        };
        let record: ServerRecord =
            serde_json::from_slice(&bytes).map_err(|e| DriverError::CorruptState {
                name: self.name.clone(),
                detail: format!("{}: {e}", path.display()),
            })?;
        if record.spec.name != self.name {
            return Err(DriverError::CorruptState {
                name: self.name.clone(),
                detail: format!("{} names server {:?}", path.display(), record.spec.name),
            });
        }
        Ok(Some(record))
    }

    /// Creates the directory and writes `server.json` atomically (temp file, fsync,
    /// rename), so a crash leaves either no record or a complete one.
    pub fn write_record(&self, record: &ServerRecord) -> Result<(), DriverError> {
        fs::create_dir_all(&self.dir)
            .map_err(|e| DriverError::io("creating directory", &self.dir, e))?;
        let path = self.record_path();
        let tmp = self.dir.join("server.json.tmp");
        let json = serde_json::to_vec_pretty(record).map_err(|e| DriverError::CorruptState {
            name: self.name.clone(),
            detail: format!("encoding server.json: {e}"),
        })?;
        let write = || -> std::io::Result<()> {
            use std::io::Write;
            let mut file = fs::File::create(&tmp)?;
            file.write_all(&json)?;
            file.sync_all()?;
            fs::rename(&tmp, &path)
        };
        write().map_err(|e| DriverError::io("writing", &path, e))
    }

    /// Removes the whole directory; a missing directory is fine.
    pub fn remove(&self) -> Result<(), DriverError> {
        match fs::remove_dir_all(&self.dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(DriverError::io("removing", &self.dir, e)),
        }
    }

    /// The pid of this server's QEMU if it is running: the pidfile's pid, checked
    /// against `/proc/<pid>/cmdline` (our `-drive` and, when known, our `-uuid`), so
    /// a reused pid or a zombie is never mistaken for the server.
    pub fn running_pid(&self, id: Option<&ServerId>) -> Option<i32> {
        let pid = procfs::read_pidfile(&self.pidfile_path())?;
        let args = procfs::cmdline(pid)?;
        procfs::is_our_qemu(&args, id.map(ServerId::as_str), &self.drive_arg()).then_some(pid)
    }

    /// The last `lines` lines of `qemu.log`, for error messages.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = fs::read_to_string(self.log_path()).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}

/// A random (version 4) UUID.
pub(crate) fn new_uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("vm-driver-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn uuids_are_version_4_and_distinct() {
        let a = new_uuid();
        assert_eq!(a.len(), 36);
        assert_eq!(a.as_bytes()[14], b'4');
        assert!(matches!(a.as_bytes()[19], b'8' | b'9' | b'a' | b'b'), "{a}");
        assert_ne!(a, new_uuid());
    }

    #[test]
    fn record_round_trips_and_corruption_is_reported() {
        let state = temp_dir("record");
        let dir = ServerDir::new(&state, "vm-1");
        assert_eq!(dir.read_record().unwrap(), None);
        let record = ServerRecord {
            id: ServerId("u-1".into()),
            spec: ServerSpec::new("vm-1", 1, 64 << 20, 1 << 20),
        };
        dir.write_record(&record).unwrap();
        assert_eq!(dir.read_record().unwrap(), Some(record));
        fs::write(dir.record_path(), b"{\"id\":").unwrap();
        assert!(matches!(
            dir.read_record(),
            Err(DriverError::CorruptState { .. })
        ));
        dir.remove().unwrap();
        dir.remove().unwrap();
        assert!(!dir.dir.exists());
        fs::remove_dir_all(&state).unwrap();
    }

    #[test]
    fn drive_arg_escapes_commas_and_long_socket_paths_are_rejected() {
        let dir = ServerDir::new(Path::new("/s,t"), "vm");
        assert_eq!(
            dir.drive_arg(),
            "file=/s,,t/vm/disk.qcow2,if=virtio,format=qcow2"
        );
        assert!(dir.check_socket_path().is_ok());
        let deep = ServerDir::new(&PathBuf::from(format!("/{}", "d".repeat(100))), "vm");
        let err = deep.check_socket_path().unwrap_err();
        assert!(err.to_string().contains("unix socket"), "{err}");
    }

    #[test]
    fn a_pidfile_naming_a_foreign_process_is_not_our_server() {
        let state = temp_dir("foreign");
        let dir = ServerDir::new(&state, "vm-1");
        fs::create_dir_all(&dir.dir).unwrap();
        // This test process is alive, but it is not the server's QEMU.
        fs::write(dir.pidfile_path(), std::process::id().to_string()).unwrap();
        assert_eq!(dir.running_pid(None), None);
        fs::remove_dir_all(&state).unwrap();
    }
}
