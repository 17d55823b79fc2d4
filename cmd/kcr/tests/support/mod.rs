//! What the `kcr` tests share: a temp dir, running kcr, a project to run it in, and the
//! check that a refused command wrote nothing.

#![allow(dead_code)] // Each test file uses its own part.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A fresh directory under the system's temp dir, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// A fresh directory named after `name`.
    pub fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "kcr-{name}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .expect("test setup")
                .as_nanos()
        ));
        std::fs::create_dir_all(&dir).expect("test setup");
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs kcr with `args` in `dir`: whether it succeeded, and its stderr.
pub fn kcr(dir: &Path, args: &[&str]) -> (bool, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_kcr"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("test setup");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Every file under `dir` with its content.
pub fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("test setup") {
            let path = entry.expect("test setup").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.insert(path.clone(), std::fs::read(&path).expect("test setup"));
            }
        }
    }
    files
}

/// A project with one kind.
pub fn project() -> TempDir {
    let dir = TempDir::new("project");
    let (ok, err) = kcr(
        &dir.0,
        &[
            "init",
            "--domain",
            "my.domain",
            "--repo",
            "my.domain/guestbook",
            "--project-name",
            "guestbook",
            "--runtime-path",
            "../..",
        ],
    );
    assert!(ok, "{err}");
    let (ok, err) = kcr(
        &dir.0,
        &[
            "create",
            "api",
            "--group",
            "webapp",
            "--version",
            "v1",
            "--kind",
            "Guestbook",
        ],
    );
    assert!(ok, "{err}");
    dir
}

/// Runs `args` in `dir`, expects a refusal whose message contains every `expected`
/// fragment, and checks nothing under `dir` changed.
pub fn refused(dir: &Path, args: &[&str], expected: &[&str]) {
    let before = snapshot(dir);
    let (ok, err) = kcr(dir, args);
    assert!(!ok, "{args:?} succeeded");
    for fragment in expected {
        assert!(
            err.contains(fragment),
            "{args:?}: {err:?} lacks {fragment:?}"
        );
    }
    assert!(
        snapshot(dir) == before,
        "{args:?} changed files although it failed"
    );
}
