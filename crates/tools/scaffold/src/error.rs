//! Why a command refused: every error names what to change, and a refused command has
//! written nothing.

use std::path::PathBuf;

/// Why `kcr` refused a command. Nothing was written when one of these is returned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScaffoldError {
    /// A flag's value breaks a rule.
    #[error("invalid {flag} {value:?}: must be {rule}")]
    Invalid {
        /// The flag, e.g. `--group`.
        flag: &'static str,
        /// What was given.
        value: String,
        /// The rule it breaks.
        rule: &'static str,
    },
    /// A kind whose name the generated code cannot use.
    #[error("invalid --kind {kind:?}: {reason}; choose another kind name")]
    ReservedKind {
        /// The kind.
        kind: String,
        /// Why its name cannot be used.
        reason: String,
    },
    /// `init` in a directory that already holds files.
    #[error(
        "{dir} is not empty ({first}{}): `kcr init` writes a new project; run it in an empty directory, or pass --force to write beside those files",
        and_others(*.others)
    )]
    NotEmpty {
        /// The directory.
        dir: PathBuf,
        /// The first entry found (by name).
        first: String,
        /// How many other entries there are.
        others: usize,
    },
    /// `create` outside a project.
    #[error(
        "no PROJECT file in {dir}: run `kcr create` in a project's root directory (made by `kcr init`)"
    )]
    NotAProject {
        /// Where it looked.
        dir: PathBuf,
    },
    /// The PROJECT file cannot be read.
    #[error("{path}: {message}")]
    BadProjectFile {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// `create api` for a kind the project already has.
    #[error(
        "kind {kind} already exists in this project ({group}/{version}): choose another --kind (a second version of a kind needs conversion between versions, which kcr does not scaffold yet)"
    )]
    KindExists {
        /// The kind.
        kind: String,
        /// Its group.
        group: String,
        /// Its version.
        version: String,
    },
    /// `create webhook` for a kind the project does not have.
    #[error(
        "no kind {kind} in group {group} version {version} in this project: run `kcr create api --group {group} --version {version} --kind {kind}` first"
    )]
    NoSuchKind {
        /// The kind.
        kind: String,
        /// Its group.
        group: String,
        /// Its version.
        version: String,
    },
    /// `create webhook` for a kind that already has one.
    #[error("{kind} already has a webhook: edit src/webhook/{module}.rs instead")]
    WebhookExists {
        /// The kind.
        kind: String,
        /// Its module.
        module: String,
    },
    /// A flag combination that means nothing.
    #[error("{0}")]
    Usage(String),
    /// A file the command would create exists with other content: the user wrote or
    /// edited it, and the command will not overwrite it.
    #[error(
        "refusing to overwrite {path}: it exists and differs from what kcr would write (edited by hand?); move it away or undo the edit, then run the command again"
    )]
    WouldOverwrite {
        /// The file.
        path: PathBuf,
    },
    /// A file the command adds a line to has lost the marker the line goes before.
    #[error(
        "refusing to edit {path}: its marker line `{marker}` is gone (edited by hand?); put the marker back where new entries belong, then run the command again"
    )]
    MarkerMissing {
        /// The file.
        path: PathBuf,
        /// The marker.
        marker: String,
    },
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// rustfmt failed on a generated file (a bug in a template).
    #[error("rustfmt on the generated {path}: {message}")]
    Format {
        /// The file.
        path: PathBuf,
        /// rustfmt's message.
        message: String,
    },
}

/// `" and 2 others"`, `" and 1 other"` or nothing.
fn and_others(others: usize) -> String {
    match others {
        0 => String::new(),
        1 => " and 1 other".to_owned(),
        n => format!(" and {n} others"),
    }
}

impl ScaffoldError {
    pub(crate) fn invalid(flag: &'static str, value: &str, rule: &'static str) -> Self {
        Self::Invalid {
            flag,
            value: value.to_owned(),
            rule,
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }
}
