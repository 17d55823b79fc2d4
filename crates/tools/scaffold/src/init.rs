//! `kcr init`: a new project (kubebuilder's `init`).

use std::path::{Path, PathBuf};

use crate::error::ScaffoldError;
use crate::names::{check_dns_subdomain, check_project_name};
use crate::plan::{Applied, Plan};
use crate::project::{LAYOUT_VERSION, PROJECT_FILE, Project, Runtime};
use crate::render::Vars;

/// Where the new project takes the runtime crates from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuntimeSource {
    /// A checkout of this repository, as written in Cargo.toml (relative to the
    /// project, or absolute).
    Path(String),
    /// A git repository at a revision.
    Git {
        /// The URL.
        url: String,
        /// The revision (commit, tag or branch).
        rev: String,
    },
    /// crates.io, at a version requirement.
    Version(String),
}

/// `kcr init`'s flags.
#[derive(Debug, Clone)]
pub struct InitOptions {
    /// The project's directory (created if missing).
    pub dir: PathBuf,
    /// `--domain`.
    pub domain: String,
    /// `--repo`.
    pub repo: String,
    /// `--project-name` (default: the directory's name).
    pub project_name: Option<String>,
    /// `--runtime-*`.
    pub runtime: RuntimeSource,
    /// `--force`: write into a directory that holds files (never over one of them).
    pub force: bool,
}

/// `kcr init`: writes a new project into `options.dir`.
pub fn init(options: &InitOptions) -> Result<Applied, ScaffoldError> {
    check_dns_subdomain("--domain", &options.domain)?;
    if options.repo.trim().is_empty() || options.repo.contains(char::is_whitespace) {
        return Err(ScaffoldError::invalid(
            "--repo",
            &options.repo,
            "a module path without spaces, such as my.domain/guestbook",
        ));
    }
    let project_name = match &options.project_name {
        Some(name) => name.clone(),
        None => dir_name(&options.dir)?,
    };
    check_project_name("--project-name", &project_name)?;
    if !options.force {
        check_empty(&options.dir)?;
    }
    if options.dir.join(PROJECT_FILE).exists() {
        return Err(ScaffoldError::Usage(format!(
            "{} already holds a project (PROJECT): use `kcr create` to add to it",
            options.dir.display()
        )));
    }
    let runtime = match &options.runtime {
        RuntimeSource::Path(path) => Runtime {
            path: Some(path.clone()),
            git: None,
            rev: None,
            version: None,
        },
        RuntimeSource::Git { url, rev } => Runtime {
            path: None,
            git: Some(url.clone()),
            rev: Some(rev.clone()),
            version: None,
        },
        RuntimeSource::Version(version) => Runtime {
            path: None,
            git: None,
            rev: None,
            version: Some(version.clone()),
        },
    };
    let project = Project {
        version: LAYOUT_VERSION.to_owned(),
        domain: options.domain.clone(),
        repo: options.repo.clone(),
        project_name,
        runtime,
        resources: Vec::new(),
    };
    let vars = project_vars(&project);
    let mut plan = Plan::default();
    for (path, template) in INIT_FILES {
        plan.create(*path, vars.render(template));
    }
    // The versions the runtime's own CI builds and tests: its Cargo.lock, when the
    // runtime is a checkout (a path relative to the project, as Cargo.toml reads it).
    // Without it the project resolves the newest versions, which nobody tested with
    // these crates. Cargo drops the entries the project does not use on its first build.
    if let RuntimeSource::Path(path) = &options.runtime {
        let lock = options.dir.join(path).join("Cargo.lock");
        if let Ok(text) = std::fs::read_to_string(&lock) {
            plan.create("Cargo.lock", text);
        }
    }
    plan.replace(PROJECT_FILE, project.render());
    plan.apply(&options.dir)
}

/// The values every template can use: the project's names and its runtime
/// dependencies (`{{dep_manager}}`, ...).
pub(crate) fn project_vars(project: &Project) -> Vars {
    let mut vars = Vars::default();
    vars.set("project_name", project.project_name.clone())
        .set("crate_name", project.project_name.replace('-', "_"))
        .set("domain", project.domain.clone())
        .set("repo", project.repo.clone());
    for (key, name) in [
        ("dep_manager", "manager"),
        ("dep_builder", "builder"),
        ("dep_controller", "controller"),
        ("dep_cache", "cache"),
        ("dep_record", "record"),
        ("dep_webhook", "webhook"),
        ("dep_gentype", "gentype"),
    ] {
        vars.set(
            key,
            project
                .runtime
                .dependency(&format!("crates/runtime/{name}"), &[]),
        );
    }
    vars.set(
        "dep_controller_testing",
        project
            .runtime
            .dependency("crates/runtime/controller", &["testing"]),
    );
    vars.set(
        "dep_record_testing",
        project
            .runtime
            .dependency("crates/runtime/record", &["testing"]),
    );
    vars.set(
        "dep_testenv",
        project.runtime.dependency("crates/dev/testenv", &[]),
    );
    vars
}

/// The templates of the Rust files `init` writes.
pub(crate) fn rust_templates() -> impl Iterator<Item = &'static str> {
    INIT_FILES
        .iter()
        .filter(|(path, _)| path.ends_with(".rs"))
        .map(|(_, template)| *template)
}

/// What `init` writes, besides PROJECT.
const INIT_FILES: &[(&str, &str)] = &[
    (
        "Cargo.toml",
        include_str!("../templates/init/Cargo.toml.tpl"),
    ),
    (
        "clippy.toml",
        include_str!("../templates/init/clippy.toml.tpl"),
    ),
    (
        ".gitignore",
        include_str!("../templates/init/gitignore.tpl"),
    ),
    (
        ".dockerignore",
        include_str!("../templates/init/dockerignore.tpl"),
    ),
    (
        "Dockerfile",
        include_str!("../templates/init/Dockerfile.tpl"),
    ),
    ("README.md", include_str!("../templates/init/README.md.tpl")),
    (
        "hack/test.sh",
        include_str!("../templates/init/test.sh.tpl"),
    ),
    ("Makefile", include_str!("../templates/init/Makefile.tpl")),
    (
        "hack/run-webhooks.sh",
        include_str!("../templates/init/run-webhooks.sh.tpl"),
    ),
    ("src/main.rs", include_str!("../templates/init/main.rs.tpl")),
    ("src/lib.rs", include_str!("../templates/init/lib.rs.tpl")),
    (
        "src/api/mod.rs",
        include_str!("../templates/init/api_mod.rs.tpl"),
    ),
    (
        "src/controller/mod.rs",
        include_str!("../templates/init/controller_mod.rs.tpl"),
    ),
    (
        "src/webhook/mod.rs",
        include_str!("../templates/init/webhook_mod.rs.tpl"),
    ),
    (
        "src/bin/manifests.rs",
        include_str!("../templates/init/manifests.rs.tpl"),
    ),
    (
        "tests/e2e/main.rs",
        include_str!("../templates/init/e2e_main.rs.tpl"),
    ),
    (
        "deploy/kustomization.yaml",
        include_str!("../templates/init/deploy/kustomization.yaml.tpl"),
    ),
    (
        "deploy/crd/kustomization.yaml",
        include_str!("../templates/init/deploy/crd_kustomization.yaml.tpl"),
    ),
    (
        "deploy/rbac/kustomization.yaml",
        include_str!("../templates/init/deploy/rbac_kustomization.yaml.tpl"),
    ),
    (
        "deploy/rbac/service_account.yaml",
        include_str!("../templates/init/deploy/service_account.yaml.tpl"),
    ),
    (
        "deploy/rbac/role_binding.yaml",
        include_str!("../templates/init/deploy/role_binding.yaml.tpl"),
    ),
    (
        "deploy/rbac/leader_election_role.yaml",
        include_str!("../templates/init/deploy/leader_election_role.yaml.tpl"),
    ),
    (
        "deploy/rbac/leader_election_role_binding.yaml",
        include_str!("../templates/init/deploy/leader_election_role_binding.yaml.tpl"),
    ),
    (
        "deploy/rbac/metrics_reader_role.yaml",
        include_str!("../templates/init/deploy/metrics_reader_role.yaml.tpl"),
    ),
    (
        "deploy/manager/kustomization.yaml",
        include_str!("../templates/init/deploy/manager_kustomization.yaml.tpl"),
    ),
    (
        "deploy/manager/manager.yaml",
        include_str!("../templates/init/deploy/manager.yaml.tpl"),
    ),
    (
        "deploy/metrics/kustomization.yaml",
        include_str!("../templates/init/deploy/metrics_kustomization.yaml.tpl"),
    ),
    (
        "deploy/metrics/metrics_service.yaml",
        include_str!("../templates/init/deploy/metrics_service.yaml.tpl"),
    ),
    (
        "deploy/samples/kustomization.yaml",
        include_str!("../templates/init/deploy/samples_kustomization.yaml.tpl"),
    ),
];

fn dir_name(dir: &Path) -> Result<String, ScaffoldError> {
    let absolute = std::path::absolute(dir).map_err(|e| ScaffoldError::io(dir, e))?;
    Ok(absolute
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default())
}

fn check_empty(dir: &Path) -> Result<(), ScaffoldError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(ScaffoldError::io(dir, e)),
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        // A fresh `git init` is still an empty project.
        .filter(|name| name != ".git")
        .collect();
    names.sort();
    let others = names.len().saturating_sub(1);
    match names.into_iter().next() {
        None => Ok(()),
        Some(first) => Err(ScaffoldError::NotEmpty {
            dir: dir.to_path_buf(),
            first,
            others,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_init_template_renders_completely() {
        let project = Project {
            version: LAYOUT_VERSION.into(),
            domain: "my.domain".into(),
            repo: "my.domain/guestbook".into(),
            project_name: "guest-book".into(),
            runtime: Runtime {
                path: Some("../..".into()),
                git: None,
                rev: None,
                version: None,
            },
            resources: Vec::new(),
        };
        let vars = project_vars(&project);
        for (path, template) in INIT_FILES {
            let out = vars.render(template);
            assert!(!out.contains("{{project_name}}"), "{path}");
        }
        assert!(vars.render("{{crate_name}}") == "guest_book");
    }
}
