//! The golden output: what `kcr init` + two `create api` (one `--image`) + `create
//! webhook` write for fixed inputs (testdata/generate.sh) is committed as
//! testdata/project. Any difference fails, so every change to the scaffold shows up in
//! review as a change to the project it writes. `UPDATE_GOLDEN=1 cargo test -p kcr
//! --test golden` rewrites testdata/project after a deliberate change.
//!
//! The files the project's own `manifests` binary writes (the CRDs, the ClusterRole) are
//! not kcr's output: hack/e2e-scaffold.sh builds the project, runs it, and compares them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("test setup")
}

/// Written by the project's `cargo run --bin manifests`, not by kcr.
fn written_by_manifests(relative: &str) -> bool {
    relative == "deploy/rbac/role.yaml"
        || (relative.starts_with("deploy/crd/") && relative != "deploy/crd/kustomization.yaml")
}

/// Every file under `dir` (but target/ and Cargo.lock), by relative path.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("test setup") {
            let path = entry.expect("test setup").path();
            let relative = path
                .strip_prefix(dir)
                .expect("test setup")
                .to_string_lossy()
                .into_owned();
            if relative == "target" || relative == "Cargo.lock" {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else if !written_by_manifests(&relative) {
                out.insert(relative, std::fs::read(&path).expect("test setup"));
            }
        }
    }
    out
}

#[test]
fn the_scaffold_writes_testdata_project() {
    let repo = repo();
    let out = std::env::temp_dir().join(format!("kcr-golden-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let status = Command::new("bash")
        .arg(repo.join("testdata/generate.sh"))
        .arg(env!("CARGO_BIN_EXE_kcr"))
        .arg(out.join("guestbook"))
        .arg("../..")
        .status()
        .expect("test setup");
    assert!(status.success(), "testdata/generate.sh failed");
    let generated = files(&out.join("guestbook"));
    let golden_dir = repo.join("testdata/project");

    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        for relative in files(&golden_dir).keys() {
            std::fs::remove_file(golden_dir.join(relative)).expect("test setup");
        }
        for (relative, content) in &generated {
            let path = golden_dir.join(relative);
            std::fs::create_dir_all(path.parent().expect("test setup")).expect("test setup");
            std::fs::write(&path, content).expect("test setup");
            #[cfg(unix)]
            if relative.ends_with(".sh") {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
                    .expect("test setup");
            }
        }
    }
    let golden = files(&golden_dir);
    std::fs::remove_dir_all(&out).expect("test setup");

    let mut differences = Vec::new();
    for (relative, content) in &generated {
        match golden.get(relative) {
            None => differences.push(format!(
                "{relative}: written by kcr, missing from testdata/project"
            )),
            Some(g) if g != content => differences.push(format!("{relative}: differs")),
            Some(_) => {}
        }
    }
    for relative in golden.keys() {
        if !generated.contains_key(relative) {
            differences.push(format!(
                "{relative}: in testdata/project, no longer written by kcr"
            ));
        }
    }
    assert!(
        differences.is_empty(),
        "testdata/project is not what kcr writes (UPDATE_GOLDEN=1 cargo test -p kcr --test golden, then review the diff):\n  {}",
        differences.join("\n  ")
    );
}
