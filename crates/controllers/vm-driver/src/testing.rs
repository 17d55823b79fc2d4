//! Process checks for tests of the QEMU driver and of controllers that use it: which
//! processes belong to a state directory or a disk, what their command lines say, and
//! a cleanup that kills them. Built on the same `/proc` reading the driver uses.
//!
//! **Requires the `testing` feature.** A test helper is not part of the production API:
//! this module is compiled for the crate's own unit tests and, elsewhere, only with the
//! `testing` cargo feature, which the tests that use it enable under
//! `[dev-dependencies]`: `vm-driver = { workspace = true, features = ["testing"] }`.

use std::fs;
use std::path::Path;

use crate::procfs;

/// The arguments of a live process; empty when it is gone (or a zombie).
pub fn cmdline(pid: u32) -> Vec<String> {
    i32::try_from(pid)
        .ok()
        .and_then(procfs::cmdline)
        .unwrap_or_default()
}

/// Pids of the live processes (init excluded) with an argument that contains `path`,
/// such as QEMUs started on a state directory or on one disk.
pub fn pids_mentioning(path: &Path) -> Vec<u32> {
    let needle = path.to_string_lossy();
    fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid > 1 && cmdline(*pid).iter().any(|arg| arg.contains(&*needle)))
        .collect()
}

/// SIGKILLs every process [`pids_mentioning`] `path`: a test's cleanup, so a failed
/// test leaves no QEMU behind.
pub fn kill_processes_mentioning(path: &Path) {
    for pid in pids_mentioning(path) {
        if let Ok(pid) = i32::try_from(pid) {
            let _ = procfs::kill(pid);
        }
    }
}
