//! A new user's first hour with a generated project (issue 57's D1-D8): what they run
//! first and edit first keeps working. The compile checks of the same edits (a spec
//! field added, a webhook on a changed spec, `cargo run`) are hack/e2e-scaffold.sh's
//! "first edits" step; these tests check what kcr writes for them.

mod support;

use std::path::Path;
use std::process::Command;

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
    // The README's `make run` is that command on the cluster the kubeconfig names.
    assert!(read(&dir.0, "README.md").contains("`make run`"));
    assert!(
        read(&dir.0, "Makefile").contains(&format!(
            "\tcargo run --bin {} --\n",
            default_run.trim_matches('"')
        )),
        "the Makefile's run target"
    );
}

/// D5: a project on a runtime checkout starts from the checkout's Cargo.lock, the
/// versions its CI tested, not from whatever is newest on crates.io.
#[test]
fn the_project_starts_from_the_runtime_lock_file() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = support::TempDir::new("lock");
    let runtime = repo.canonicalize().expect("test setup");
    ok(
        &dir.0,
        &[
            "init",
            "--domain",
            "my.domain",
            "--repo",
            "my.domain/locked",
            "--project-name",
            "locked",
            "--runtime-path",
            runtime.to_str().expect("test setup"),
        ],
    );
    assert!(
        read(&dir.0, "Cargo.lock") == read(&repo, "Cargo.lock"),
        "the project's Cargo.lock is not the runtime's"
    );
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

/// D8 and the lifecycle: `make run-webhooks` (hack/run-webhooks.sh) on the project's own
/// webhook configurations, with kubectl and the manager replaced by scripts that record
/// what they were given: each configuration applied points at the local server by URL
/// with the certificate's CA, nothing is left of the in-cluster Service or cert-manager,
/// the manager serves on that address with that certificate, and the same
/// configurations are deleted when it stops.
#[test]
fn run_webhooks_points_the_webhooks_at_a_local_server_and_removes_them_after() {
    let dir = project();
    create_webhook(&dir.0);
    let log = dir.0.join("calls.log");
    let fake = |name: &str, body: &str| {
        let path = dir.0.join(name);
        std::fs::write(&path, format!("#!/usr/bin/env bash\n{body}\n")).expect("test setup");
        path.display().to_string()
    };
    // kubectl: for apply, the files given with -f; for delete, the call itself.
    let kubectl = fake(
        "fake-kubectl",
        &format!(
            "echo \"kubectl $*\" >>{log}\n[ \"$1\" = apply ] || exit 0\nshift\n\
             while [ $# -gt 0 ]; do [ \"$1\" = -f ] && cat \"$2\" >>{log}; shift; done",
            log = log.display()
        ),
    );
    let manager = fake(
        "fake-manager",
        &format!("echo \"manager $*\" >>{}", log.display()),
    );
    let output = Command::new("bash")
        .arg("hack/run-webhooks.sh")
        .arg("--leader-elect")
        .env("KUBECTL", format!("bash {kubectl}"))
        .env("MANAGER", format!("bash {manager}"))
        .current_dir(&dir.0)
        .output()
        .expect("test setup");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let calls = std::fs::read_to_string(&log).expect("the fakes were called");
    let ca = Command::new("base64")
        .args(["-w0", "target/webhook-certs/tls.crt"])
        .current_dir(&dir.0)
        .output()
        .expect("base64");
    let ca = String::from_utf8(ca.stdout).expect("base64 writes ASCII");
    assert!(ca.len() > 100, "a certificate: {ca}");
    for (kind, path) in [
        (
            "MutatingWebhookConfiguration",
            "/mutate-webapp-my-domain-v1-guestbook",
        ),
        (
            "ValidatingWebhookConfiguration",
            "/validate-webapp-my-domain-v1-guestbook",
        ),
    ] {
        assert!(calls.contains(&format!("kind: {kind}")), "{calls}");
        assert!(
            calls.contains(&format!(
                "    clientConfig:\n      url: https://127.0.0.1:9443{path}\n      caBundle: {ca}\n    rules:"
            )),
            "{calls}"
        );
    }
    assert!(
        !calls.contains("service:") && !calls.contains("inject-ca-from"),
        "{calls}"
    );
    let files = "-f target/webhook-certs/mutating.yaml -f target/webhook-certs/validating.yaml";
    let lines: Vec<&str> = calls
        .lines()
        .filter(|l| l.starts_with("kubectl ") || l.starts_with("manager "))
        .collect();
    assert_eq!(
        lines,
        [
            format!("kubectl apply {files}"),
            "manager --webhook-bind-address 127.0.0.1:9443 --webhook-cert-dir \
             target/webhook-certs --leader-elect"
                .to_owned(),
            format!("kubectl delete --ignore-not-found {files}"),
        ]
    );
    let makefile = read(&dir.0, "Makefile");
    assert!(makefile.contains("\tKUBECTL=\"$(KUBECTL)\" bash hack/run-webhooks.sh\n"));
}

/// Smaller: one mutating and one validating configuration for the project, a webhook
/// per kind in each (kubebuilder's layout): kustomize's name prefix makes them
/// `guestbook-mutating-webhook-configuration`, not `guestbook-guestbook-...`.
#[test]
fn one_webhook_configuration_of_each_type_for_every_kind() {
    let dir = project();
    ok(
        &dir.0,
        &[
            "create",
            "api",
            "--group",
            "webapp",
            "--version",
            "v1",
            "--kind",
            "Blog",
        ],
    );
    create_webhook(&dir.0);
    ok(
        &dir.0,
        &[
            "create",
            "webhook",
            "--group",
            "webapp",
            "--version",
            "v1",
            "--kind",
            "Blog",
            "--defaulting",
        ],
    );
    let mutating = read(&dir.0, "deploy/webhook/mutating.yaml");
    assert!(
        mutating.contains("\n  name: mutating-webhook-configuration\n"),
        "{mutating}"
    );
    for webhook in [
        "mguestbook-v1.webapp.my.domain",
        "mblog-v1.webapp.my.domain",
    ] {
        assert!(
            mutating.contains(&format!("\n  - name: {webhook}\n")),
            "{mutating}"
        );
    }
    let validating = read(&dir.0, "deploy/webhook/validating.yaml");
    assert!(validating.contains("\n  - name: vguestbook-v1.webapp.my.domain\n"));
    assert!(!validating.contains("vblog"), "{validating}");
    let kustomization = read(&dir.0, "deploy/webhook/kustomization.yaml");
    assert_eq!(
        kustomization.matches("- mutating.yaml").count(),
        1,
        "{kustomization}"
    );
}
