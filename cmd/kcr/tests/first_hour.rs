//! A new user's first hour with a generated project (issue 57's D1-D8): what they run
//! first and edit first keeps working. The compile checks of the same edits (a spec
//! field added, a webhook on a changed spec, `cargo run`) are hack/e2e-scaffold.sh's
//! "first edits" step; these tests check what kcr writes for them.

mod support;

use std::path::Path;

use support::{kcr, project};

fn read(dir: &Path, relative: &str) -> String {
    std::fs::read_to_string(dir.join(relative)).unwrap_or_else(|e| panic!("{relative}: {e}"))
}

fn ok(dir: &Path, args: &[&str]) {
    let (ok, err) = kcr(dir, args);
    assert!(ok, "kcr {args:?}: {err}");
}

fn create_webhook(dir: &Path) {
    ok(
        dir,
        &[
            "create",
            "webhook",
            "--group",
            "webapp",
            "--version",
            "v1",
            "--kind",
            "Guestbook",
            "--defaulting",
            "--programmatic-validation",
        ],
    );
}

/// `text` without its comment lines.
fn code(text: &str) -> String {
    text.lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every generated Rust file outside src/api/, by relative path, its comments left out.
fn rust_files(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("test setup") {
            let path = entry.expect("test setup").path();
            let relative = path
                .strip_prefix(dir)
                .expect("test setup")
                .to_string_lossy()
                .into_owned();
            if path.is_dir() {
                stack.push(path);
            } else if relative.ends_with(".rs") && !relative.starts_with("src/api/") {
                let text = std::fs::read_to_string(&path).expect("test setup");
                out.push((relative, code(&text)));
            }
        }
    }
    out
}

/// D1: `cargo run -- --kubeconfig ...`, as the README and main.rs say, needs one binary
/// to run: the manager's, named as `default-run`.
#[test]
fn cargo_run_runs_the_manager() {
    let dir = project();
    let manifest = read(&dir.0, "Cargo.toml");
    let package = manifest
        .split("\n[")
        .find(|table| table.starts_with("package]"))
        .expect("a [package] table");
    let default_run = package
        .lines()
        .find_map(|line| line.strip_prefix("default-run = "))
        .unwrap_or_else(|| panic!("no default-run in [package]:\n{package}"));
    let manager = manifest
        .split("[[bin]]")
        .skip(1)
        .find(|bin| bin.contains("path = \"src/main.rs\""))
        .expect("the manager's [[bin]]");
    assert!(
        manager.contains(&format!("name = {default_run}")),
        "default-run = {default_run}, the manager's binary: {manager}"
    );
    assert!(read(&dir.0, "README.md").contains("cargo run -- --kubeconfig"));
}

/// D2: the files besides the kind's own API file name no spec field in a struct
/// literal (`GuestbookSpec { title: ..., max_entries: ... }` stops compiling when the
/// user adds a field); they start from `Default` or from JSON.
#[test]
fn no_generated_file_lists_every_spec_field() {
    let dir = project();
    ok(
        &dir.0,
        &[
            "create",
            "api",
            "--group",
            "cache",
            "--version",
            "v1alpha1",
            "--kind",
            "Memcached",
            "--image",
            "memcached:1.6-alpine",
        ],
    );
    create_webhook(&dir.0);
    for (relative, text) in rust_files(&dir.0) {
        for literal in ["GuestbookSpec {", "MemcachedSpec {"] {
            assert!(
                !text.contains(literal),
                "{relative} builds a spec from a struct literal ({literal}...): a field added to the spec breaks it"
            );
        }
    }
    for api in ["src/api/guestbook_v1.rs", "src/api/memcached_v1alpha1.rs"] {
        let types = read(&dir.0, api);
        assert!(!types.contains("Spec {\n//!"), "{api}'s doc test: {types}");
        assert!(!types.contains("Spec { "), "{api}'s doc test: {types}");
    }
}

/// D4: `create webhook` on a kind whose spec no longer has the example fields writes
/// webhooks that do not read them (empty rules, TODO(user)); on the spec as `create
/// api` wrote it, the example rules.
#[test]
fn a_webhook_on_a_changed_spec_reads_no_example_field() {
    let example = project();
    create_webhook(&example.0);
    let webhook = read(&example.0, "src/webhook/guestbook.rs");
    assert!(webhook.contains("spec.max_entries"), "{webhook}");

    let changed = project();
    let api = "src/api/guestbook_v1.rs";
    let types = read(&changed.0, api);
    let start = types.find("pub struct GuestbookSpec {").expect("the spec");
    let end = start + types[start..].find("\n}\n").expect("the spec's end");
    let edited = format!(
        "{}pub struct GuestbookSpec {{\n    /// The guestbook's entries.\n    pub entries: Vec<String>,{}",
        &types[..start],
        &types[end..]
    );
    std::fs::write(changed.0.join(api), edited).expect("test setup");
    create_webhook(&changed.0);
    for file in ["src/webhook/guestbook.rs", "tests/e2e/guestbook_webhook.rs"] {
        let text = read(&changed.0, file);
        assert!(text.contains("TODO(user)"), "{file}:\n{text}");
        let text = code(&text);
        for field in ["title", "max_entries", "maxEntries", "MAX_ENTRIES"] {
            assert!(!text.contains(field), "{file} reads {field}:\n{text}");
        }
    }
}

/// D7: the `--image` controller reads its image from `<KIND>_IMAGE` (IMAGE_ENV), and
/// the manager's Deployment sets it, as kubebuilder's deploy-image plugin does.
#[test]
fn the_manager_deployment_sets_the_image_variable() {
    let dir = project();
    ok(
        &dir.0,
        &[
            "create",
            "api",
            "--group",
            "cache",
            "--version",
            "v1alpha1",
            "--kind",
            "Memcached",
            "--image",
            "memcached:1.6-alpine",
        ],
    );
    let controller = read(&dir.0, "src/controller/memcached.rs");
    let variable = controller
        .lines()
        .find_map(|line| line.strip_prefix("pub const IMAGE_ENV: &str = \""))
        .and_then(|rest| rest.strip_suffix("\";"))
        .expect("IMAGE_ENV");
    let manager = read(&dir.0, "deploy/manager/manager.yaml");
    let env = manager
        .split("          env:\n")
        .nth(1)
        .and_then(|rest| rest.split("          ports:").next())
        .expect("the manager container's env");
    assert!(
        env.contains(&format!(
            "            - name: {variable}\n              value: memcached:1.6-alpine\n"
        )),
        "the manager's env sets no {variable}:\n{env}"
    );
}
