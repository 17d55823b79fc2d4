//! `manifests`: writes what deploy/ needs from the code, as controller-gen does for
//! kubebuilder's `make manifests`:
//! - `deploy/crd/<group>_<plural>.yaml`: every CRD, from [`{{crate_name}}::crds`];
//! - `deploy/rbac/role.yaml`: the manager's ClusterRole, from [`{{crate_name}}::rbac_rules`].
//!
//! ```text
//! cargo run --bin manifests            # (re)write them
//! cargo run --bin manifests -- --check # write nothing; fail if one is missing or stale
//! ```

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};
use kube::api::ObjectMeta;

const HEADER: &str = "# Generated from the code by `cargo run --bin manifests`: do not edit.\n";

/// Command-line flags.
#[derive(Debug, Parser)]
#[command(name = "manifests", about = "Write the CRDs and the manager's ClusterRole from the code")]
struct Args {
    /// The kustomize tree to write into.
    #[arg(long, default_value = "deploy")]
    deploy_dir: PathBuf,
    /// Write nothing; exit 1 if a file is missing or differs.
    #[arg(long)]
    check: bool,
}

fn main() -> anyhow::Result<ExitCode> {
    let args = Args::parse();
    let mut files = Vec::new();
    for crd in {{crate_name}}::crds() {
        let name = format!("crd/{}.yaml", crd.metadata.name.as_deref().map(file_name).unwrap_or_default());
        files.push((name, format!("{HEADER}{}", serde_yaml::to_string(&crd)?)));
    }
    let role = ClusterRole {
        metadata: ObjectMeta {
            name: Some("manager-role".to_owned()),
            ..ObjectMeta::default()
        },
        rules: Some(merge(&{{crate_name}}::rbac_rules())),
        ..ClusterRole::default()
    };
    files.push(("rbac/role.yaml".to_owned(), format!("{HEADER}{}", serde_yaml::to_string(&role)?)));

    let mut stale = Vec::new();
    for (name, contents) in &files {
        let path = args.deploy_dir.join(name);
        if args.check {
            match std::fs::read_to_string(&path) {
                Ok(existing) if existing == *contents => {}
                Ok(_) => stale.push(format!("{} differs from the code", path.display())),
                Err(e) => stale.push(format!("{}: {e}", path.display())),
            }
        } else {
            write(&path, contents)?;
        }
    }
    if stale.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    for line in &stale {
        eprintln!("stale: {line}");
    }
    eprintln!("run `cargo run --bin manifests` and commit the result");
    Ok(ExitCode::FAILURE)
}

/// `guestbooks.webapp.my.domain` -> `webapp.my.domain_guestbooks` (kubebuilder's names).
fn file_name(crd_name: &str) -> String {
    match crd_name.split_once('.') {
        Some((plural, group)) => format!("{group}_{plural}"),
        None => crd_name.to_owned(),
    }
}

/// One rule per (group, resource), verbs merged and sorted: the same role whatever
/// order the controllers list them in.
fn merge(rules: &[PolicyRule]) -> Vec<PolicyRule> {
    let mut merged: std::collections::BTreeMap<(String, String), std::collections::BTreeSet<String>> =
        std::collections::BTreeMap::new();
    for rule in rules {
        for group in rule.api_groups.iter().flatten() {
            for resource in rule.resources.iter().flatten() {
                merged
                    .entry((group.clone(), resource.clone()))
                    .or_default()
                    .extend(rule.verbs.iter().cloned());
            }
        }
    }
    merged
        .into_iter()
        .map(|((group, resource), verbs)| PolicyRule {
            api_groups: Some(vec![group]),
            resources: Some(vec![resource]),
            verbs: verbs.into_iter().collect(),
            ..PolicyRule::default()
        })
        .collect()
}

fn write(path: &Path, contents: &str) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(path, contents).with_context(|| format!("writing {}", path.display()))
}
