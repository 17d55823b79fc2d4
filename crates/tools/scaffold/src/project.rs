//! The PROJECT file: kubebuilder's record of a project's layout (domain, repo, every
//! resource and what was scaffolded for it), read by every later command so that
//! `create api` knows the domain and `create webhook` knows the kind exists.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::ScaffoldError;

/// The file's name, at the project root (kubebuilder's name).
pub const PROJECT_FILE: &str = "PROJECT";

/// The layout version this `kcr` writes and reads.
pub const LAYOUT_VERSION: &str = "1";

/// A project's PROJECT file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Project {
    /// The layout version ([`LAYOUT_VERSION`]).
    pub version: String,
    /// `--domain`: API groups are `<group>.<domain>`.
    pub domain: String,
    /// `--repo`: where the project lives (its README and image name use it).
    pub repo: String,
    /// `--project-name`: the crate, binary, namespace and name prefix.
    pub project_name: String,
    /// Where the runtime crates come from.
    pub runtime: Runtime,
    /// Every kind, in the order it was created.
    #[serde(default)]
    pub resources: Vec<Resource>,
}

/// Where a project's runtime crates (`kcr-*`) come from: exactly one of a path, a git
/// revision or a registry version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Runtime {
    /// A checkout of this repository (`--runtime-path`), as written in Cargo.toml.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// A git URL (`--runtime-git`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<String>,
    /// The git revision (`--runtime-rev`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rev: Option<String>,
    /// A crates.io version requirement (`--runtime-version`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

impl Runtime {
    /// The Cargo.toml dependency value for the runtime crate `package` (`kcr-manager`)
    /// living in `dir` (`crates/runtime/manager`), with extra `features`.
    pub fn dependency(&self, dir: &str, features: &[&str]) -> String {
        let features = if features.is_empty() {
            String::new()
        } else {
            let list: Vec<String> = features.iter().map(|f| format!("{f:?}")).collect();
            format!(", features = [{}]", list.join(", "))
        };
        if let Some(path) = &self.path {
            let path = format!("{}/{dir}", path.trim_end_matches('/'));
            format!("{{ path = {path:?}{features} }}")
        } else if let Some(git) = &self.git {
            let rev = self.rev.as_deref().unwrap_or("main");
            format!("{{ git = {git:?}, rev = {rev:?}{features} }}")
        } else {
            let version = self.version.as_deref().unwrap_or(env!("CARGO_PKG_VERSION"));
            format!("{{ version = {version:?}{features} }}")
        }
    }
}

/// One kind of the project and what was scaffolded for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Resource {
    /// The group's short name (`webapp`); the API group is `<group>.<domain>`.
    pub group: String,
    /// The domain at creation.
    pub domain: String,
    /// The version (`v1`).
    pub version: String,
    /// The kind (`Guestbook`).
    pub kind: String,
    /// The resource name (`guestbooks`).
    pub plural: String,
    /// Namespaced (true) or cluster-scoped.
    pub namespaced: bool,
    /// Types were scaffolded (`--resource`).
    pub api: bool,
    /// A controller was scaffolded (`--controller`).
    pub controller: bool,
    /// `--image`: the controller deploys this image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// `--image-container-port`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_port: Option<u16>,
    /// The webhooks scaffolded for the kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhooks: Option<Webhooks>,
}

impl Resource {
    /// The API group, `<group>.<domain>`.
    pub fn api_group(&self) -> String {
        format!("{}.{}", self.group, self.domain)
    }
}

/// Which webhooks a kind has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Webhooks {
    /// A mutating (defaulting) webhook.
    pub defaulting: bool,
    /// A validating webhook.
    pub validation: bool,
}

impl Project {
    /// Reads `dir/PROJECT`.
    pub fn load(dir: &Path) -> Result<Self, ScaffoldError> {
        let path = dir.join(PROJECT_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(ScaffoldError::NotAProject {
                    dir: dir.to_path_buf(),
                });
            }
            Err(e) => return Err(ScaffoldError::io(path, e)),
        };
        let project: Project =
            serde_yaml::from_str(&text).map_err(|e| ScaffoldError::BadProjectFile {
                path: path.clone(),
                message: e.to_string(),
            })?;
        if project.version != LAYOUT_VERSION {
            return Err(ScaffoldError::BadProjectFile {
                path,
                message: format!(
                    "layout version {:?}; this kcr reads version {LAYOUT_VERSION:?}",
                    project.version
                ),
            });
        }
        Ok(project)
    }

    /// The file's text: a header saying who writes it, then the YAML.
    pub fn render(&self) -> String {
        let yaml = serde_yaml::to_string(self).expect("a Project always serializes");
        format!(
            "# Written by kcr (kcr init, kcr create ...): the project's layout, read by every\n\
             # later kcr command. Edit it only to undo a kcr command by hand.\n{yaml}"
        )
    }

    /// The resource for `kind`, if the project has it.
    pub fn resource(&self, kind: &str) -> Option<&Resource> {
        self.resources.iter().find(|r| r.kind == kind)
    }

    /// Whether any kind has a webhook.
    pub fn has_webhooks(&self) -> bool {
        self.resources.iter().any(|r| r.webhooks.is_some())
    }

    /// Where the project's PROJECT file is.
    pub fn path(dir: &Path) -> PathBuf {
        dir.join(PROJECT_FILE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_dependencies_in_each_form() {
        let path = Runtime {
            path: Some("../..".into()),
            git: None,
            rev: None,
            version: None,
        };
        assert_eq!(
            path.dependency("crates/runtime/manager", &[]),
            r#"{ path = "../../crates/runtime/manager" }"#
        );
        let git = Runtime {
            path: None,
            git: Some("https://example.com/r.git".into()),
            rev: Some("abc123".into()),
            version: None,
        };
        assert_eq!(
            git.dependency("crates/runtime/controller", &["testing"]),
            r#"{ git = "https://example.com/r.git", rev = "abc123", features = ["testing"] }"#
        );
        let registry = Runtime {
            path: None,
            git: None,
            rev: None,
            version: Some("0.1".into()),
        };
        assert_eq!(
            registry.dependency("crates/runtime/manager", &[]),
            r#"{ version = "0.1" }"#
        );
    }

    #[test]
    fn round_trips() {
        let project = Project {
            version: LAYOUT_VERSION.into(),
            domain: "my.domain".into(),
            repo: "my.domain/guestbook".into(),
            project_name: "guestbook".into(),
            runtime: Runtime {
                path: Some("../..".into()),
                git: None,
                rev: None,
                version: None,
            },
            resources: vec![Resource {
                group: "webapp".into(),
                domain: "my.domain".into(),
                version: "v1".into(),
                kind: "Guestbook".into(),
                plural: "guestbooks".into(),
                namespaced: true,
                api: true,
                controller: true,
                image: None,
                container_port: None,
                webhooks: Some(Webhooks {
                    defaulting: true,
                    validation: false,
                }),
            }],
        };
        let text = project.render();
        let back: Project = serde_yaml::from_str(&text).unwrap();
        assert_eq!(back, project);
        assert!(text.contains("projectName: guestbook"));
    }
}
