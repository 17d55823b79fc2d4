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
            Some(g) if g != content => differences.push(format!(
                "{relative}: differs\n{}",
                excerpt(
                    &String::from_utf8_lossy(g),
                    &String::from_utf8_lossy(content)
                )
            )),
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

/// The lines that differ between `golden` and `generated`, as one unified-diff hunk
/// (`-` testdata/project, `+` what kcr writes) with up to 3 lines of context, at most
/// 20 changed lines of each side shown: enough to see the change without opening files.
fn excerpt(golden: &str, generated: &str) -> String {
    const CONTEXT: usize = 3;
    const SHOWN: usize = 20;
    let old: Vec<&str> = golden.lines().collect();
    let new: Vec<&str> = generated.lines().collect();
    let prefix = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let suffix = old[prefix..]
        .iter()
        .rev()
        .zip(new[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let (old_changed, new_changed) = (
        &old[prefix..old.len() - suffix],
        &new[prefix..new.len() - suffix],
    );
    let start = prefix.saturating_sub(CONTEXT);
    let after = &old[old.len() - suffix..];
    let after = &after[..after.len().min(CONTEXT)];
    let mut out = format!(
        "    @@ -{},{} +{},{} @@\n",
        start + 1,
        prefix - start + old_changed.len() + after.len(),
        start + 1,
        prefix - start + new_changed.len() + after.len(),
    );
    let mut push = |mark: char, lines: &[&str]| {
        for line in lines.iter().take(SHOWN) {
            out.push_str(&format!("    {mark}{line}\n"));
        }
        if lines.len() > SHOWN {
            out.push_str(&format!(
                "    {mark}... ({} more lines)\n",
                lines.len() - SHOWN
            ));
        }
    };
    push(' ', &old[start..prefix]);
    push('-', old_changed);
    push('+', new_changed);
    push(' ', after);
    if old_changed.is_empty() && new_changed.is_empty() {
        out.push_str("    (only the line endings differ)\n");
    }
    out
}

#[test]
fn a_difference_is_shown_as_its_lines() {
    let golden = "a\nb\nc\nd\ne\nf\ng\nh\n";
    let generated = "a\nb\nc\nd\nE\nE2\nf\ng\nh\n";
    assert_eq!(
        excerpt(golden, generated),
        "    @@ -2,7 +2,8 @@\n     b\n     c\n     d\n    -e\n    +E\n    +E2\n     f\n     g\n     h\n"
    );
    // A line added at the end.
    assert_eq!(
        excerpt("a\n", "a\nb\n"),
        "    @@ -1,1 +1,2 @@\n     a\n    +b\n"
    );
    // Only the final newline differs.
    assert!(excerpt("a\n", "a").contains("only the line endings differ"));
}
