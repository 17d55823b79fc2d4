//! Nothing in the repository installs a multi-version CRD whose versions differ in shape
//! without its conversion webhook (issue 58).
//!
//! With the conversion switched off (`strategy: None`, or no `conversion`, which the API
//! server defaults to it) the API server converts by relabelling `apiVersion` only: an
//! object written through a version that lacks the stored version's fields is pruned and
//! stored so. A VirtualMachine touched through v1beta1 (a label, the `deletionTimestamp`
//! of `kubectl delete`) was stored as `spec: {}` by the VM e2e suite, hack/chaos.sh and
//! hack/sieve.sh, which installed the CRD that way. They now serve the webhook (the
//! suite in-process, the scripts through hack/lib/conversion.sh). This test keeps it so:
//!
//! 1. every CRD manifest in the repository (each YAML document of kind
//!    CustomResourceDefinition), and every CRD `apis::crds()` generates, is judged by
//!    [`testenv::crd::lossy_conversion`]: versions that differ in shape must convert by
//!    webhook;
//! 2. no code switches a CRD's conversion off: a line of a script, a Rust source or a
//!    YAML/JSON file that sets a conversion `strategy` to `None`, or a `conversion` to
//!    `null`, fails the test. Such a line cannot say which CRD it will meet, so it is
//!    refused whatever the CRD; a CRD whose versions really have one shape declares
//!    `strategy: None` in its manifest, which (1) checks. A line that must stay (a test
//!    of the refusal itself) carries the marker [`ALLOW`] and its reason, on that line or
//!    the one before.
//!
//! `testenv::crd::install_crds` refuses a lossy CRD at run time as well, for what code
//! builds instead of reading from a file.

use std::path::{Path, PathBuf};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde::Deserialize;

/// The marker that lets one line switch a conversion off, followed by its reason.
const ALLOW: &str = "allow-strategy-none:";

/// The key and the value that switch a conversion off, kept out of this file's lines.
const STRATEGY: &str = "strategy";
const NONE: &str = "None";

/// The directories never read: version control, build outputs, fuzzing corpora.
const SKIPPED_DIRS: &[&str] = &[".git", "target", "corpus", "artifacts", "node_modules"];

/// What the test reads: scripts (by extension, or a `#!` line), Rust, Go and Python
/// sources, YAML, JSON and templates. Documentation (`*.md`) may quote old commands.
fn is_checked(path: &Path, text: &str) -> bool {
    match path.extension().and_then(|e| e.to_str()) {
        Some("sh" | "bash" | "rs" | "go" | "py" | "yaml" | "yml" | "json" | "tpl") => true,
        None => text.starts_with("#!"),
        Some(_) => false,
    }
}

/// Every checked file under `root`, with its text (files that are not UTF-8 are not
/// text and are skipped).
fn files(root: &Path) -> Vec<(PathBuf, String)> {
    let mut found = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
            .map(|e| e.expect("a directory entry").path())
            .collect();
        entries.sort();
        for path in entries {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if path.is_dir() {
                if !SKIPPED_DIRS.contains(&name) {
                    dirs.push(path);
                }
            } else if let Ok(text) = std::fs::read_to_string(&path)
                && is_checked(&path, &text)
            {
                found.push((path, text));
            }
        }
    }
    found
}

/// The CRDs in a YAML file that are lossy: `path: why`. A document that says it is a CRD
/// but does not parse as one is reported too (unless the file is a template).
fn lossy_manifests(path: &Path, text: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let template = path.extension().is_some_and(|e| e == "tpl") || text.contains("{{");
    for document in serde_yaml::Deserializer::from_str(text) {
        // After an error the iterator may yield that error forever: stop at the first.
        let value = match serde_yaml::Value::deserialize(document) {
            Ok(value) => value,
            Err(e) if !template => {
                problems.push(format!("{}: not YAML: {e}", path.display()));
                break;
            }
            Err(_) => break,
        };
        if value.get("kind").and_then(serde_yaml::Value::as_str) != Some("CustomResourceDefinition")
        {
            continue;
        }
        match serde_yaml::from_value::<CustomResourceDefinition>(value) {
            Ok(crd) => problems.extend(
                testenv::crd::lossy_conversion(&crd)
                    .map(|why| format!("{}: {why}", path.display())),
            ),
            Err(e) if !template => problems.push(format!(
                "{}: a CustomResourceDefinition that does not parse: {e}",
                path.display()
            )),
            Err(_) => {}
        }
    }
    problems
}

/// Whether `line` has `key`, then at most a few punctuation characters (quotes, colons,
/// `=`, braces, spaces), then `value` as a whole word; `quoted`: only as `"value"` (in
/// Rust, where a bare `None` is an `Option`, e.g. a Deployment's `strategy: None`).
fn sets(line: &str, key: &str, value: &str, quoted: bool) -> bool {
    line.match_indices(key).any(|(at, _)| {
        let rest = &line[at + key.len()..];
        let gap = rest
            .find(|c: char| c.is_alphanumeric() || c == '_')
            .unwrap_or(rest.len());
        if gap > 6 || !rest[gap..].starts_with(value) {
            return false;
        }
        let after = rest[gap + value.len()..].chars().next();
        let word_ends = !after.is_some_and(|c| c.is_alphanumeric() || c == '_');
        let quoted_ok = !quoted || (rest[..gap].ends_with('"') && after == Some('"'));
        word_ends && quoted_ok
    })
}

/// The lines of `text` (a file at `path`) that switch a CRD's conversion off.
fn switches_off(path: &Path, text: &str) -> Vec<String> {
    let rust_like = path.extension().is_some_and(|e| e == "rs" || e == "go");
    let comment = if rust_like { "//" } else { "#" };
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        let code = line.trim_start();
        if code.starts_with(comment)
            || line.contains(ALLOW)
            || index > 0 && lines[index - 1].contains(ALLOW)
        {
            continue;
        }
        let off = sets(line, STRATEGY, NONE, rust_like)
            || !rust_like && sets(line, "conversion", "null", false);
        if off {
            found.push(format!(
                "{}:{}: switches a CRD's conversion off: {}",
                path.display(),
                index + 1,
                code
            ));
        }
    }
    found
}

/// The repository's root (this crate is crates/controllers/apis).
fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../..")
        .canonicalize()
        .expect("the repository root")
}

#[test]
fn no_harness_or_manifest_installs_a_crd_whose_versions_differ_without_conversion() {
    let root = repository();
    let files = files(&root);
    let mut problems: Vec<String> = Vec::new();
    let mut manifests = 0;
    for (path, text) in &files {
        let relative = path.strip_prefix(&root).unwrap_or(path);
        if matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml" | "tpl")
        ) && text.contains("CustomResourceDefinition")
        {
            manifests += 1;
            problems.extend(lossy_manifests(relative, text));
        }
        problems.extend(switches_off(relative, text));
    }
    for crd in apis::crds() {
        problems
            .extend(testenv::crd::lossy_conversion(&crd).map(|why| format!("apis::crds(): {why}")));
    }
    assert!(
        problems.is_empty(),
        "{} problem(s): a CRD whose versions differ in shape must be converted by its webhook \
         (serve it on loopback: testenv::crd::with_conversion_webhook_at, hack/lib/conversion.sh):\n{}",
        problems.len(),
        problems.join("\n")
    );
    // The check read what it is about: the shipped CRDs and the harnesses.
    assert!(
        manifests >= 3,
        "only {manifests} CRD manifests found under {}",
        root.display()
    );
    for harness in [
        "hack/chaos.sh",
        "hack/sieve.sh",
        "crates/controllers/vm-controller/tests/e2e/conversion.rs",
    ] {
        assert!(
            files.iter().any(|(p, _)| p.ends_with(harness)),
            "{harness} not read"
        );
    }
}

/// The check's own cases: what it must find and what it must leave alone. The lines are
/// assembled here so that this file does not itself contain them.
#[test]
fn the_check_finds_a_conversion_switched_off_and_only_that() {
    let (strategy, none) = (STRATEGY, NONE);
    let sh = Path::new("hack/x.sh");
    let rs = Path::new("src/x.rs");
    let found = |path: &Path, line: String| !switches_off(path, &line).is_empty();
    // hack/chaos.sh and hack/sieve.sh before issue 58; testenv's old helper.
    assert!(found(
        sh,
        format!(
            r#"kubectl patch crd x --type=merge -p '{{"spec":{{"conversion":{{"{strategy}":"{none}","webhook":null}}}}}}'"#
        )
    ));
    assert!(found(
        rs,
        format!(r#"    conversion.{strategy} = "{none}".to_string();"#)
    ));
    assert!(found(rs, format!(r#"json!({{"{strategy}": "{none}"}})"#)));
    assert!(found(Path::new("x.yaml"), format!("  {strategy}: {none}")));
    assert!(found(
        sh,
        r#"kubectl patch crd x -p '{"spec":{"conversion":null}}'"#.to_owned()
    ));
    // Not a CRD's conversion switched off.
    assert!(!found(
        rs,
        format!("    {strategy}: {none}, // a Deployment's")
    ));
    assert!(!found(sh, format!("# {strategy}: {none} (a comment)")));
    assert!(!found(
        rs,
        format!(r#"    {strategy}: "Webhook".to_string(),"#)
    ));
    assert!(!found(
        rs,
        format!(r#"    {strategy}: "NoneOfThese".to_string(),"#)
    ));
    assert!(!found(
        sh,
        format!(r#"x='"{strategy}":"{none}"'  # {ALLOW} a test of the refusal"#)
    ));

    let manifest = |versions: &str, conversion: &str| {
        format!(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n\
             metadata: {{name: things.example.com}}\n\
             spec:\n  group: example.com\n  scope: Namespaced\n  \
             names: {{kind: Thing, plural: things}}\n{conversion}  versions: {versions}\n"
        )
    };
    let version = |name: &str, field: &str| {
        format!(
            "{{name: {name}, served: true, storage: {}, schema: {{openAPIV3Schema: {{type: object, \
             properties: {{{field}: {{type: string}}}}}}}}}}",
            name == "v1"
        )
    };
    let differ = format!("[{}, {}]", version("v1", "size"), version("v2", "capacity"));
    let same = format!("[{}, {}]", version("v1", "size"), version("v2", "size"));
    let lossy = |text: String| !lossy_manifests(Path::new("x.yaml"), &text).is_empty();
    assert!(lossy(manifest(&differ, "")), "no conversion: None");
    assert!(lossy(manifest(
        &differ,
        &format!("  conversion: {{{strategy}: {none}}}\n")
    )));
    assert!(!lossy(manifest(
        &differ,
        &format!("  conversion: {{{strategy}: Webhook}}\n")
    )));
    assert!(
        !lossy(manifest(&same, "")),
        "one shape: relabelling is enough"
    );
    assert!(lossy(format!(
        "---\nkind: ConfigMap\n---\n{}",
        manifest(&differ, "")
    )));
}
